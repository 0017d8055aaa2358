#!/usr/bin/env python3
"""Signet consumption benchmark: 1,000 refund questions answered through a fake App Store Server API.

Measures, in one run on this machine:
  * `signet run --pipeline P`, P = the embedded default stdin pipeline (Pipelines/stdin.yaml:
    decode, verify, dedupe, transition with durable SQLite state, fanout; events to /dev/null)
    with the `appstore_consumption` stage added (`consent: all_customers_agreed_in_app_terms`, so
    no ledger entries are needed; default interval 10 s and policy), fed N CONSUMPTION_REQUEST
    notifications (default 1,000) at once on stdin, each about its own purchase of every product
    type, signed by `signet fixtures --type CONSUMPTION_REQUEST --now --environment Production`;
  * against a fake Send Consumption Information v2 (`PUT /inApps/v2/transactions/consumption/{id}`)
    that this script starts (Python standard library, 127.0.0.1, a free port; the JWT checked as
    scripts/bench_backfill.py's fake does), which judges every body by Apple's documented rules
    (docs/consumption.md: customerConsented true; deliveryStatus one of five; sampleContentProvided
    a boolean; consumptionPercentage an integer 0...100000, absent for an auto-renewable
    subscription, 0 unless DELIVERED, strictly between 0 and 100000 with GRANT_PRORATED;
    refundPreference one of three or absent), answers 202 or Apple's 400, and records every
    arrival, duplicate and refusal;
and prints the answer latency (from the moment the notifications were written to Signet's
stdin to the answer's arrival at the fake) p50 / p99 / max, the answers' rate between the first
and the last against Apple's limit (50/s in Production) and the client's budget (80% of it:
40/s), CPU seconds and peak RSS of the signet process, with the targets:
  every request answered, exactly once, zero bodies Apple would refuse, and p99 latency < 60 s.
It exits 1 when a target fails.

Usage: scripts/bench_consumption.py [--count N] [--binary PATH] [--no-build] [--keep DIR]
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "scripts/bench_consumption.py"
APPLE_LIMIT = 50.0  # Send Consumption Information, Production, per app
CLIENT_BUDGET = 0.8 * APPLE_LIMIT  # AppStoreAPIRateLimiter: 80% of Apple's limit
LATENCY_TARGET = 60.0
CONSUMPTION_PATH = "/inApps/v2/transactions/consumption/"
DELIVERY = {"DELIVERED", "UNDELIVERED_QUALITY_ISSUE", "UNDELIVERED_WRONG_ITEM", "UNDELIVERED_SERVER_OUTAGE", "UNDELIVERED_OTHER"}
PREFERENCES = {"DECLINE", "GRANT_FULL", "GRANT_PRORATED"}


def load_backfill_bench():
    """scripts/bench_backfill.py as a module (its fake API server, JWT check, measuring wrapper)."""
    sys.dont_write_bytecode = True  # no scripts/__pycache__ left in the checkout
    spec = importlib.util.spec_from_file_location("bench_backfill", os.path.join(ROOT, "scripts", "bench_backfill.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bb = load_backfill_bench()


def refusal(body, product_type):
    """None when Apple would take this v2 body for a purchase of `product_type`, else why not."""
    try:
        answer = json.loads(body)
    except ValueError:
        return "not JSON"
    if not isinstance(answer, dict):
        return "not an object"
    if answer.get("customerConsented") is not True:
        return "InvalidCustomerConsentedError"
    if answer.get("deliveryStatus") not in DELIVERY:
        return "InvalidDeliveryStatusError"
    if not isinstance(answer.get("sampleContentProvided"), bool):
        return "InvalidSampleContentProvidedError"
    preference = answer.get("refundPreference")
    if preference is not None and preference not in PREFERENCES:
        return "InvalidRefundPreferenceError"
    percentage = answer.get("consumptionPercentage")
    if product_type == "Auto-Renewable Subscription":
        return "ConsumptionPercentageAutoRenewableSubscriptionError" if "consumptionPercentage" in answer else None
    if percentage is not None and (type(percentage) is not int or not 0 <= percentage <= 100000):
        return "ConsumptionPercentageOutOfRangeError"
    if answer["deliveryStatus"] != "DELIVERED" and percentage != 0:
        return "UndeliveredConsumptionPercentageNonZeroError"
    if preference == "GRANT_PRORATED" and (percentage is None or not 0 < percentage < 100000):
        return "ConsumptionPercentageOutOfRangeError (GRANT_PRORATED)"
    return None


class FakeConsumptionAPI(bb.FakeAppStoreAPI):
    """bench_backfill's fake server and JWT check, answering Send Consumption Information v2."""

    def __init__(self, purchases):
        self.purchases = purchases  # transactionId -> product type
        super().__init__([], 0, bb.KEY_ID, bb.ISSUER_ID, bb.BUNDLE_ID)
        fake = self
        self.server.RequestHandlerClass.do_PUT = lambda handler: fake.handle(handler)
        self.answers = {}  # transactionId -> [monotonic arrival of each accepted answer]
        self.refused = []

    def answer(self, request, body):
        if self.jwt_problem(request.headers.get("Authorization")):
            return 401, b""
        path = request.path.partition("?")[0]
        if request.command != "PUT" or not path.startswith(CONSUMPTION_PATH):
            return 404, b'{"errorCode":4040000,"errorMessage":"not served by this fake"}'
        transaction = path[len(CONSUMPTION_PATH):]
        product_type = self.purchases.get(transaction)
        if product_type is None:
            return 404, b'{"errorCode":4040010,"errorMessage":"Transaction id not found."}'
        why = refusal(body, product_type)
        with self.lock:
            if why:
                self.refused.append((transaction, why, body[:300]))
            else:
                self.answers.setdefault(transaction, []).append(time.monotonic())
        return (400, json.dumps({"errorCode": 4000000, "errorMessage": why}).encode()) if why else (202, b"")


def jws_payload(jws):
    return json.loads(bb.b64url_decode(jws.split(".")[1]))


def percentile(sorted_values, fraction):
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1000, help="refund questions (default 1000)")
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "signet"),
                        help="the signet binary (default .build/release/signet)")
    parser.add_argument("--no-build", action="store_true", help="use the existing binary instead of building the release one")
    parser.add_argument("--keep", help="keep fixtures, key, pipeline and data in this folder")
    args = parser.parse_args()
    if args.count <= 0:
        sys.exit(f"{NAME}: --count must be positive")
    if not args.no_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "signet"], cwd=ROOT, check=True)
    signet = os.path.abspath(args.binary)
    work = args.keep or tempfile.mkdtemp(prefix="signet-bench-consumption-")
    os.makedirs(work, exist_ok=True)

    fixtures = os.path.join(work, "fixtures")
    shutil.rmtree(fixtures, ignore_errors=True)
    subprocess.run([signet, "fixtures", "--out", fixtures, "--count", str(args.count), "--now", "--type", "CONSUMPTION_REQUEST",
                    "--environment", "Production", "--app-apple-id", bb.APP_APPLE_ID, "--bundle-id", bb.BUNDLE_ID],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    notifications = os.path.join(fixtures, "notifications.ndjson")
    purchases = {}
    for line in open(notifications):
        notification = jws_payload(json.loads(line)["signedPayload"])
        transaction = jws_payload(notification["data"]["signedTransactionInfo"])
        purchases[transaction["transactionId"]] = transaction["type"]
    types = {}
    for product_type in purchases.values():
        types[product_type] = types.get(product_type, 0) + 1

    env_file = dict(line.strip().removeprefix("export ").split("=", 1)
                    for line in open(os.path.join(fixtures, "fixtures.env")) if "=" in line and not line.startswith("#"))
    key = os.path.join(work, "AuthKey_bench.p8")
    if not os.path.exists(key):
        subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key], check=True)
    with open(os.path.join(ROOT, "Pipelines", "stdin.yaml")) as file:
        stdin_pipeline = file.read()
    pipeline = os.path.join(work, "consumption.yaml")
    with open(pipeline, "w") as file:
        # After transition: each new request wakes the responder at once.
        file.write(stdin_pipeline.replace(
            "  - type: fanout", "  - type: appstore_consumption\n    consent: all_customers_agreed_in_app_terms\n  - type: fanout", 1))

    fake = FakeConsumptionAPI(purchases)
    for name in ("SIGNET_DATABASE_URL", "SIGNET_APPSTORE_API_URL", "SIGNET_VERIFY_WORKERS"):
        os.environ.pop(name, None)
    data = os.path.join(work, "data")
    shutil.rmtree(data, ignore_errors=True)
    env = dict(os.environ, **env_file, SIGNET_APPSTORE_KEY_ID=bb.KEY_ID, SIGNET_APPSTORE_ISSUER_ID=bb.ISSUER_ID,
               SIGNET_APPSTORE_PRIVATE_KEY=key, SIGNET_APPSTORE_API_URL=fake.url, SIGNET_DATA_DIR=data)
    print(f"machine: {os.cpu_count() or 1} cores; {len(purchases)} CONSUMPTION_REQUESTs ("
          + ", ".join(f"{n} {t}" for t, n in sorted(types.items())) + f"); fake API at {fake.url}; binary {signet}")

    written = {}

    def feed(pipe):
        with open(notifications, "rb") as source:
            lines = source.read()
        written["at"] = time.monotonic()
        pipe.write(lines)
        pipe.flush()
        # Stdin stays open until every question is answered (or 180 s pass): then end of file.
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            with fake.lock:
                if len(fake.answers) + len(fake.refused) >= len(purchases):
                    break
            time.sleep(0.2)
        time.sleep(1)
        pipe.close()

    seconds, rss, code, err, cpu, _ = bb.run_measured(
        [signet, "run", "--pipeline", pipeline, "--log-level", "warning"], env=env, feed=feed)
    fake.stop()
    if code != 0:
        sys.exit(f"signet run failed ({code}): {err[-3000:]}")
    unauthorized = [e for e in fake.errors if e.startswith("401")]
    if unauthorized:
        sys.exit(f"{NAME}: the fake answered {len(unauthorized)} request(s) 401 (bad JWT), first: {unauthorized[0]}")

    arrivals = {transaction: times for transaction, times in fake.answers.items()}
    firsts = sorted(times[0] for times in arrivals.values())
    latencies = sorted(first - written["at"] for first in firsts)
    duplicates = sorted(t for t, times in arrivals.items() if len(times) > 1)
    unanswered = sorted(set(purchases) - set(arrivals))
    span = firsts[-1] - firsts[0] if len(firsts) > 1 else 0
    rate = (len(firsts) - 1) / span if span else 0
    report = subprocess.run([signet, "consumption", "report", "--since", "1d"], env=env, capture_output=True, text=True)
    statuses = json.loads(report.stdout)["total"]["statuses"] if report.returncode == 0 else {}

    print()
    print(f"consumption: {len(arrivals)}/{len(purchases)} answered in {seconds:.1f} s wall; "
          f"{len(fake.refused)} bodies refused, {len(duplicates)} answered twice, {len(unanswered)} never answered")
    if latencies:
        print(f"  latency from stdin to the answer: p50 {percentile(latencies, 0.5):.1f} s, p99 {percentile(latencies, 0.99):.1f} s, "
              f"max {latencies[-1]:.1f} s (target p99 < {LATENCY_TARGET:.0f} s)")
        print(f"  answers: {rate:.1f}/s between the first and the last ({rate / APPLE_LIMIT:.0%} of Apple's {APPLE_LIMIT:g}/s, "
              f"{rate / CLIENT_BUDGET:.0%} of the client's budget {CLIENT_BUDGET:g}/s); first answer {latencies[0]:.1f} s after stdin")
    print(f"  store: {statuses}")
    print(f"  signet: CPU {cpu:.2f} s ({cpu * 1000 / max(1, len(purchases)):.2f} ms per request), peak RSS {rss:.1f} MiB")
    for transaction, why, body in fake.refused[:5]:
        print(f"  refused {transaction}: {why}: {body!r}")
    ok = (not fake.refused and not duplicates and not unanswered and latencies
          and percentile(latencies, 0.99) < LATENCY_TARGET)
    print(f"  targets: every request answered once, zero refused bodies, p99 < {LATENCY_TARGET:.0f} s -> {bb.verdict(ok)}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
