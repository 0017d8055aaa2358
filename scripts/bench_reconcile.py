#!/usr/bin/env python3
"""Signet reconcile benchmark: `signet reconcile --file IDS` against a fake App Store Server API.

Measures, in one run on this machine:
  * `signet reconcile --file IDS` (the embedded default pipeline, Pipelines/stdin.yaml: decode,
    verify, dedupe, transition with durable SQLite state and outbox, fanout; events to
    /dev/null) over N purchases (default 10,000), each asked about with Get All Subscription
    Statuses (`GET /inApps/v1/subscriptions/{transactionId}`) of a fake App Store Server API
    that this script starts (Python standard library only, on 127.0.0.1 and a free port) and
    that sleeps --delay-ms (default 50 ms) on every request, as Apple's answers take time;
and prints purchases, requests, wall time, purchases/s, the request rate the fake saw against
the client's configured rate limit (Production's default 40 requests/s), CPU ms per purchase
(user + sys of the signet process, os.wait4) and peak RSS, with the target:
  reconcile purchases/s (one request each, over the whole wall time) >= 80% of the configured
  rate limit, so >= 32 purchases/s (10,000 purchases in <= 312.5 s; 250 s at best).
It exits 1 when the target fails, and fails loudly (exit 1, before printing figures) when a run
exited non-zero, did not finish every purchase ("reconcile done: N/N purchases"), saw an id as
unknown to Apple, read fewer statuses than purchases, rejected any, or when the fake answered
any request with 401 (bad JWT) or another error.

The statuses are real signed pairs from `signet fixtures --environment Production` (the private
test PKI, trusted through SIGNET_ROOT_CERTS): every notification's data.signedTransactionInfo
and data.signedRenewalInfo (decoded here, not verified: Python has no ECDSA), one status per
distinct originalTransactionId that has both, the one with the latest transaction signedDate
(its renewal info from the same notification). About 3 in 4 notifications give a new purchase,
so the script asks for more notifications than purchases and asks again for more if that was
not enough (it says so, and goes on with fewer, if the fixtures cannot give N). The fake answers
each id with `{"environment", "bundleId", "appAppleId", "data": [{"subscriptionGroupIdentifier",
"lastTransactions": [{"status", "originalTransactionId", "signedTransactionInfo",
"signedRenewalInfo"}]}]}` (status 5 when revoked, 2 when expired, 4 / 3 in grace period /
billing retry, else 1), and an unknown id with 404 / 4040010, as Apple does; it checks the JWT
as scripts/bench_backfill.py's fake does (that script is imported for the fake, the measuring
wrapper and the summary parsing). The API key is a fresh P-256 key from `openssl genpkey`.

The command runs --repeat times (default 2), each with a fresh SIGNET_DATA_DIR (so every
purchase is seeded: an event each), and the median counts. Each run's start-up, request and
drain times and the gaps between requests (the limiter's spacing is 1/rate = 25 ms) are printed.

Usage: scripts/bench_reconcile.py [--count N] [--repeat N] [--delay-ms MS] [--binary PATH]
                                  [--no-build] [--keep DIR]
"""
import argparse
import bisect
import importlib.util
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "scripts/bench_reconcile.py"


def load_backfill_bench():
    """scripts/bench_backfill.py as a module (its fake API, measuring wrapper, JWT checks, ...)."""
    path = os.path.join(ROOT, "scripts", "bench_backfill.py")
    sys.dont_write_bytecode = True  # no scripts/__pycache__ left in the checkout
    spec = importlib.util.spec_from_file_location("bench_backfill", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bb = load_backfill_bench()
BUNDLE_ID, APP_APPLE_ID, KEY_ID, ISSUER_ID = bb.BUNDLE_ID, bb.APP_APPLE_ID, bb.KEY_ID, bb.ISSUER_ID
RATE = bb.PRODUCTION_REQUESTS_PER_SECOND  # AppStoreAPIConfiguration's default for Production
RATE_TARGET = bb.RATE_TARGET
PARALLELISM = 8  # AppStoreStatusSource.Options.parallelism
STATUSES_PATH = "/inApps/v1/subscriptions/"
RECONCILE_DONE = re.compile(r"reconcile done: (\d+)/(\d+) purchases, (\d+) statuses, (\d+) unknown to Apple")
NOT_FOUND = b'{"errorCode":4040010,"errorMessage":"Transaction id not found."}'


class FakeStatusesAPI(bb.FakeAppStoreAPI):
    """bench_backfill's fake (the same server, JWT check, delay and arrival log) answering Get All
    Subscription Statuses instead of Get Notification History: `GET /inApps/v1/subscriptions/{id}`
    with the precomputed answer of a known id, 404 / 4040010 for any other; 401 for a bad JWT
    (before anything else, as Apple does)."""

    def __init__(self, answers, delay):
        self.answers = answers  # id -> response body bytes
        self.not_found = 0
        super().__init__([], delay, KEY_ID, ISSUER_ID, BUNDLE_ID)

    def reset(self):
        super().reset()
        self.not_found = 0

    def answer(self, request, body):
        if self.jwt_problem(request.headers.get("Authorization")):
            return 401, b""
        path, _, query = request.path.partition("?")
        if request.command != "GET" or not path.startswith(STATUSES_PATH):
            return 404, b'{"errorCode":4040000,"errorMessage":"not served by this fake"}'
        if query:
            return 400, b'{"errorCode":4000000,"errorMessage":"this fake serves no status filter"}'
        answer = self.answers.get(path[len(STATUSES_PATH):])
        if answer is None:
            with self.lock:
                self.not_found += 1
            return 404, NOT_FOUND
        return 200, answer


def make_fixtures(signet, fixtures, count):
    shutil.rmtree(fixtures, ignore_errors=True)
    subprocess.run([signet, "fixtures", "--out", fixtures, "--count", str(count), "--seed", "11",
                    "--environment", "Production", "--app-apple-id", APP_APPLE_ID, "--bundle-id", BUNDLE_ID],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def jws_payload(jws):
    return json.loads(bb.b64url_decode(jws.split(".")[1]))


def collect_statuses(notifications):
    """originalTransactionId -> (transaction signedDate, transaction payload, JWS transaction,
    JWS renewal) for every purchase with both parts in one notification, the latest by signedDate."""
    best = {}
    for line in open(notifications, "rb"):
        data = jws_payload(json.loads(line)["signedPayload"]).get("data") or {}
        signed_transaction, signed_renewal = data.get("signedTransactionInfo"), data.get("signedRenewalInfo")
        if not signed_transaction or not signed_renewal:
            continue
        transaction = jws_payload(signed_transaction)
        original = transaction.get("originalTransactionId")
        if not original or jws_payload(signed_renewal).get("originalTransactionId") != original:
            continue
        date = transaction.get("signedDate", 0)
        if original not in best or date > best[original][0]:
            best[original] = (date, transaction, signed_transaction, signed_renewal)
    return best


def status_number(transaction, renewal, now_ms):
    """Apple's status (1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked) for a pair."""
    if transaction.get("revocationDate"):
        return 5
    if (renewal.get("gracePeriodExpiresDate") or 0) > now_ms and renewal.get("isInBillingRetryPeriod"):
        return 4
    if (transaction.get("expiresDate") or math.inf) > now_ms:
        return 1
    return 3 if renewal.get("isInBillingRetryPeriod") else 2


def build_answers(statuses, count):
    """The first `count` purchases (in id order): id -> Get All Subscription Statuses body."""
    now_ms = int(time.time() * 1000)
    answers = {}
    for original in sorted(statuses)[:count]:
        _, transaction, signed_transaction, signed_renewal = statuses[original]
        body = {"environment": "Production", "bundleId": BUNDLE_ID, "appAppleId": int(APP_APPLE_ID), "data": [{
            "subscriptionGroupIdentifier": transaction.get("subscriptionGroupIdentifier", "21031880"),
            "lastTransactions": [{"status": status_number(transaction, jws_payload(signed_renewal), now_ms),
                                  "originalTransactionId": original, "signedTransactionInfo": signed_transaction,
                                  "signedRenewalInfo": signed_renewal}]}]}
        answers[original] = json.dumps(body, separators=(",", ":")).encode()
    return answers


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=10000, help="purchases to reconcile (default 10000)")
    parser.add_argument("--repeat", type=int, default=2, help="runs; the median counts (default 2)")
    parser.add_argument("--delay-ms", type=float, default=50, help="the fake's delay per request in ms (default 50)")
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "signet"),
                        help="the signet binary (default .build/release/signet)")
    parser.add_argument("--no-build", action="store_true", help="use the existing binary instead of building the release one")
    parser.add_argument("--keep", help="keep fixtures, key, ids and data in this folder (and each run's request arrival times)")
    args = parser.parse_args()
    if args.count <= 0 or args.repeat <= 0:
        sys.exit(f"{NAME}: --count and --repeat must be positive")

    if not args.no_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "signet"], cwd=ROOT, check=True)
    signet = os.path.abspath(args.binary)
    work = args.keep or tempfile.mkdtemp(prefix="signet-bench-reconcile-")
    os.makedirs(work, exist_ok=True)

    # Fixtures: about 3 in 4 notifications carry a new purchase with both parts; ask for a third
    # more than needed (plus a margin), then scale up by what the last attempt gave, at most 3 tries.
    fixtures = os.path.join(work, "fixtures")
    notifications = os.path.join(fixtures, "notifications.ndjson")
    statuses = collect_statuses(notifications) if os.path.exists(notifications) else {}
    notification_count = sum(1 for _ in open(notifications, "rb")) if os.path.exists(notifications) else 0
    wanted = int(args.count * 1.4) + 100
    for _ in range(3):
        if len(statuses) >= args.count:
            break
        if statuses:
            wanted = max(wanted, int(notification_count * args.count / len(statuses) * 1.1) + 100)
        made = time.monotonic()
        make_fixtures(signet, fixtures, wanted)
        notification_count = wanted
        statuses = collect_statuses(notifications)
        print(f"fixtures: {wanted} notifications -> {len(statuses)} distinct purchases with a signed transaction and "
              f"renewal info ({time.monotonic() - made:.1f} s)")
    count = min(args.count, len(statuses))
    if count < args.count:
        print(f"{NAME}: the fixtures give only {count} distinct purchases with both a transaction and a renewal info "
              f"(of {args.count} asked for): benchmarking {count}")
    if count == 0:
        sys.exit(f"{NAME}: no purchase to reconcile")
    answers = build_answers(statuses, count)
    ids_file = os.path.join(work, "purchases.txt")
    with open(ids_file, "w") as out:
        out.write("".join(original + "\n" for original in answers))

    env_file = dict(line.strip().removeprefix("export ").split("=", 1)
                    for line in open(os.path.join(fixtures, "fixtures.env")) if "=" in line and not line.startswith("#"))
    key = os.path.join(work, "AuthKey_bench.p8")
    if not os.path.exists(key):
        subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key], check=True)

    fake = FakeStatusesAPI(answers, args.delay_ms / 1000.0)
    for name in ("SIGNET_DATABASE_URL", "SIGNET_APPSTORE_API_URL", "SIGNET_VERIFY_WORKERS"):
        os.environ.pop(name, None)
    base_env = dict(os.environ, **env_file)  # SIGNET_ROOT_CERTS, SIGNET_ENVIRONMENT, SIGNET_BUNDLE_ID, SIGNET_APP_APPLE_ID
    if base_env.get("SIGNET_ENVIRONMENT") != "Production" or base_env.get("SIGNET_APP_APPLE_ID") != APP_APPLE_ID:
        sys.exit(f"{NAME}: {fixtures}/fixtures.env is not the Production fixtures this script makes")
    env = dict(base_env, SIGNET_APPSTORE_KEY_ID=KEY_ID, SIGNET_APPSTORE_ISSUER_ID=ISSUER_ID,
               SIGNET_APPSTORE_PRIVATE_KEY=key, SIGNET_APPSTORE_API_URL=fake.url)

    body_sizes = sorted(len(body) for body in answers.values())
    print(f"machine: {os.cpu_count() or 1} cores; {count} Production purchases (answers of "
          f"{statistics.mean(body_sizes) / 1024:.1f} KiB on average); fake App Store Server API at {fake.url}, "
          f"{args.delay_ms:g} ms per request; client: {PARALLELISM} requests at a time within {RATE:g}/s "
          f"(at most {PARALLELISM / (args.delay_ms / 1000.0) if args.delay_ms > 0 else math.inf:g}/s from the delay alone); "
          f"binary {signet}")
    runs = []
    for repeat in range(args.repeat):
        data = os.path.join(work, "data")
        shutil.rmtree(data, ignore_errors=True)
        fake.reset()
        argv = [signet, "reconcile", "--file", ids_file, "--log-level", "warning"]
        seconds, rss, code, err, cpu, (started, ended) = bb.run_measured(argv, env=dict(env, SIGNET_DATA_DIR=data))
        with fake.lock:
            arrivals, errors, not_found = list(fake.arrivals), list(fake.errors), fake.not_found
        if code != 0:
            sys.exit(f"signet reconcile failed ({code}): {err[-3000:]}")
        unauthorized = [e for e in errors if e.startswith("401")]
        if unauthorized:
            sys.exit(f"{NAME}: the fake answered {len(unauthorized)} request(s) 401 (bad JWT), first: {unauthorized[0]}")
        if errors:
            sys.exit(f"{NAME}: the fake answered {len(errors)} request(s) with an error ({not_found} unknown ids), "
                     f"first: {errors[0]}")
        counts = bb.summary_counts(err, "signet reconcile")
        done = RECONCILE_DONE.findall(err)
        if not done:
            sys.exit(f"signet reconcile did not report 'reconcile done':\n{err[-3000:]}")
        finished, total, statuses_read, unknown = map(int, done[-1])
        if finished != count or total != count or unknown or statuses_read != count or counts["read"] != count \
                or counts["rejected"]:
            sys.exit(f"signet reconcile did {finished}/{total} of {count} purchases ({statuses_read} statuses, {unknown} "
                     f"unknown to Apple; {counts['read']} read, {counts['rejected']} rejected):\n{err[-3000:]}")
        times = sorted(arrival for arrival, _ in arrivals)
        span = times[-1] - times[0] if len(times) > 1 else 0
        gaps = sorted(b - a for a, b in zip(times, times[1:])) or [0]
        # The most requests that arrived within any 1 s (the limiter grants one every 1/rate s;
        # arrivals jitter around that by what lies between the grant and the fake's accept).
        busiest = max(bisect.bisect_left(times, t + 1.0) - i for i, t in enumerate(times))
        runs.append({"seconds": seconds, "rss": rss, "cpu": cpu, "requests": len(arrivals),
                     "request_rate": (len(times) - 1) / span if span else 0, "counts": counts})
        # Where the wall time goes: start-up before the first request, the requests themselves, and
        # the end (the last answer, the pipeline's drain, the summary) after the last request.
        print(f"  run {repeat + 1}: reconcile {seconds:.2f} s = {times[0] - started:.2f} s to the first request + "
              f"{span:.2f} s for {len(arrivals)} requests + {ended - times[-1]:.2f} s after the last; "
              f"gaps between requests median {gaps[len(gaps) // 2] * 1000:.1f} ms, p10 {gaps[len(gaps) // 10] * 1000:.1f} ms, "
              f"p90 {gaps[len(gaps) * 9 // 10] * 1000:.1f} ms, max {gaps[-1] * 1000:.0f} ms, at most {busiest} in any 1 s; CPU {cpu:.2f} s, "
              f"peak RSS {rss:.1f} MiB ({counts['read']} read, {counts['passed']} passed, {counts['dropped']} dropped, "
              f"{counts['delivered']} delivered)")
        if args.keep:
            with open(os.path.join(work, f"arrivals-{repeat + 1}.json"), "w") as file:
                json.dump([arrival - started for arrival in times], file)
    fake.stop()

    def median(key):
        return statistics.median(run[key] for run in runs)

    seconds = median("seconds")
    requests = median("requests")
    purchase_rate = count / seconds
    request_rate = median("request_rate")
    ratio = purchase_rate / RATE
    spread = f"  (runs {min(r['seconds'] for r in runs):.2f}-{max(r['seconds'] for r in runs):.2f} s)" if len(runs) > 1 else ""
    print()
    print(f"reconcile: {count} purchases, {requests:.0f} requests, {seconds:.2f} s wall, {purchase_rate:.1f} purchases/s{spread}")
    print(f"  requests: {request_rate:.1f}/s between the first and the last request "
          f"({request_rate / RATE:.0%} of the configured rate limit {RATE:g}/s); {requests / seconds:.1f}/s over the wall time")
    print(f"  rate: {purchase_rate:.1f} purchases/s (one request each) vs the rate limit's {RATE:g}/s = {ratio:.0%} "
          f"(target {RATE_TARGET:.0%}) -> {bb.verdict(ratio >= RATE_TARGET)}")
    print(f"  CPU: {median('cpu') * 1000 / count:.3f} ms per purchase; peak RSS {max(r['rss'] for r in runs):.1f} MiB")

    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    if ratio < RATE_TARGET:
        sys.exit(1)


if __name__ == "__main__":
    main()
