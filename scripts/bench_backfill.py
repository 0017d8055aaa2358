#!/usr/bin/env python3
"""Signet backfill benchmark: `signet backfill` against a fake App Store Server API.

Measures, in one run on this machine:
  * `signet backfill --since .. --until ..` (the embedded default pipeline, Pipelines/stdin.yaml:
    decode, verify, dedupe, transition with durable SQLite state and outbox, fanout; events to
    /dev/null) pulling N notifications (default 20,000) from Get Notification History served by
    a fake App Store Server API that this script starts (Python standard library only, on
    127.0.0.1 and a free port) and that sleeps --delay-ms (default 50 ms) on every request, as
    Apple's answers take time;
  * the same N notifications as NDJSON `{"signedPayload": ...}` lines through `signet run` (the
    same default pipeline, reading stdin), the reference for what a notification costs;
and prints pages, notifications, wall time, notifications/s, the request rate the fake saw
against the client's configured rate limit, CPU ms per notification of both runs (user + sys of
the signet process, os.wait4) and peak RSS, with the targets:
  backfill notifications/s >= 80% of what the configured rate limit allows (requests/s x 20
  notifications a page; Production's default 40 requests/s, so >= 640 notifications/s);
  CPU per backfilled notification <= 1.2x the stdin pipeline's.
It exits 1 when a target fails, and fails loudly (exit 1, before printing figures) when a run
exited non-zero, processed fewer than N notifications, rejected any, or when the fake answered
any request with 401 (bad JWT) or another error.

The notifications are Production ones, signed with the private test PKI by `signet fixtures
--environment Production` (each with its own notificationUUID, so dedupe drops none), trusted
through SIGNET_ROOT_CERTS: Production's default rate (40 requests/s) makes 20,000 notifications
(about 1,000 pages) take 25 s at best; Sandbox's 4/s would take over 4 minutes a run. Their send
dates are spread evenly over a 48-hour window that is backfilled whole; the API key is a fresh
P-256 key from `openssl genpkey`.

Both commands run --repeat times (default 3), interleaved (backfill, stdin, backfill, ...), each
with a fresh SIGNET_DATA_DIR, and the median counts. A third run per repeat, for reference only
(no target; --no-paced skips it), feeds the stdin pipeline the way the backfill does, 20 lines
every 1/rate s: the difference to the plain stdin run is what small batches cost any pipeline,
the rest of the backfill's extra CPU is the backfill's own (HTTP, page JSON, checkpoints).
Each run's start-up, paging and drain times and the gaps between requests are printed too.

Usage: scripts/bench_backfill.py [--count N] [--repeat N] [--delay-ms MS] [--binary PATH]
                                 [--no-build] [--keep DIR] [--no-paced]
"""
import argparse
import base64
import bisect
import http.server
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE_SIZE = 20  # Apple's page size for Get Notification History
BUNDLE_ID = "com.example.signet"
APP_APPLE_ID = "1234567890"
KEY_ID = "BENCHKEY01"
ISSUER_ID = "57246542-96fe-1a63-e053-0824d011072a"
WINDOW_MS = 48 * 3600 * 1000
PRODUCTION_REQUESTS_PER_SECOND = 40.0  # AppStoreAPIConfiguration's default for Production
RATE_TARGET = 0.80
CPU_TARGET = 1.2
SUMMARY = re.compile(r"(\d+) read, (\d+) passed, (\d+) rejected, (\d+) dropped, (\d+) delivered")
BACKFILL_DONE = re.compile(r"backfill done: (\d+) pages, (\d+) notifications, (\d+) new events")


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


# Runs a command and reports its own rusage. A fresh, small interpreter does the waiting: a
# child's ru_maxrss starts at its parent's peak RSS (Linux keeps the high-water mark across fork
# and exec), and this script holds every payload in memory, so wait4 here would report that.
WRAPPER = """
import json, os, subprocess, sys, time
start = time.perf_counter()
process = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(process.pid, 0)
elapsed = time.perf_counter() - start
with open(sys.argv[1], "w") as out:
    json.dump({"seconds": elapsed, "rss": usage.ru_maxrss / 1024.0, "code": os.waitstatus_to_exitcode(status),
               "cpu": usage.ru_utime + usage.ru_stime}, out)
"""


def run_measured(argv, stdin_path=None, env=None, feed=None):
    """Runs argv to completion (stdin from stdin_path, or written by feed(pipe) on a thread, else
    empty; stdout to /dev/null); returns (seconds, peak RSS in MiB, exit code, stderr, CPU seconds,
    (monotonic start, monotonic end))."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.PIPE if feed else subprocess.DEVNULL
    with tempfile.NamedTemporaryFile("r", suffix=".json") as result:
        started = time.monotonic()
        process = subprocess.Popen([sys.executable, "-c", WRAPPER, result.name, *argv], stdin=stdin,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        # stderr is read on a thread: a chatty run must never block on a full pipe.
        chunks = []
        threads = [threading.Thread(target=lambda: chunks.append(process.stderr.read()), daemon=True)]
        if feed:
            threads.append(threading.Thread(target=feed, args=(process.stdin,), daemon=True))
        for thread in threads:
            thread.start()
        process.wait()
        ended = time.monotonic()
        for thread in threads:
            thread.join()
        process.stderr.close()
        if stdin_path:
            stdin.close()
        stderr = b"".join(chunks).decode(errors="replace")
        try:
            measured = json.load(result)
        except ValueError:
            sys.exit(f"scripts/bench_backfill.py: could not measure {argv[:2]} (exit {process.returncode}): {stderr[-2000:]}")
    return measured["seconds"], measured["rss"], measured["code"], stderr, measured["cpu"], (started, ended)


def paced_feeder(path, lines_per_chunk, period):
    """A feed for run_measured: the file's lines, `lines_per_chunk` every `period` seconds."""
    def feed(pipe):
        with open(path, "rb") as file:
            lines = file.readlines()
        begin = time.monotonic()
        try:
            for chunk, index in enumerate(range(0, len(lines), lines_per_chunk)):
                delay = begin + chunk * period - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                pipe.write(b"".join(lines[index:index + lines_per_chunk]))
                pipe.flush()
        except BrokenPipeError:
            pass
        finally:
            try:
                pipe.close()
            except BrokenPipeError:
                pass
    return feed


class FakeAppStoreAPI:
    """Get Notification History over the given items, the way Apple answers it.

    Items are (sentDate ms, signedPayload) and are served in sentDate order, filtered by the
    body's startDate (inclusive) and endDate (exclusive), 20 a page, with an opaque
    paginationToken bound to the body it was issued for (the same body must come with it, as
    Apple requires; anything else is 400 / 4000014). Every request sleeps `delay` seconds before
    it is answered and has its arrival time recorded.

    The JWT is checked as far as the standard library allows: header alg ES256, the key id, typ
    JWT; claims iss, aud appstoreconnect-v1, bid, iat not in the future, exp not past and at most
    60 minutes after iat; a 64-byte raw r || s signature part. The ES256 signature itself cannot
    be verified without a third-party library (no ECDSA in Python's standard library); the Swift
    test suite's fake (Tests/SignetTestSupport/FakeAppStoreAPIJWTCheck.swift) verifies it.
    A bad JWT gets 401 with no body, like Apple's.
    """

    def __init__(self, items, delay, key_id, issuer_id, bundle_id):
        items = sorted(items)
        self.dates = [date for date, _ in items]
        # Each item's JSON, made once: a page is then a join of 20 precomputed fragments, so the
        # fake spends little of the machine's CPU that the measured process could use.
        self.fragments = [json.dumps({"signedPayload": payload, "sendAttempts": [
            {"attemptDate": date, "sendAttemptResult": "SUCCESS"}]}, separators=(",", ":")).encode() for date, payload in items]
        self.delay = delay
        self.key_id, self.issuer_id, self.bundle_id = key_id, issuer_id, bundle_id
        self.lock = threading.Lock()
        self.tokens = {}
        self.known_jwts = {}
        self.reset()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as Apple's host and the client's pool use

            def log_message(self, *args):
                pass

            def do_POST(self):
                fake.handle(self)

            def do_GET(self):
                fake.handle(self)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def reset(self):
        with self.lock:
            self.arrivals = []  # (monotonic seconds, status) per request
            self.errors = []  # descriptions of every non-200 answer
            self.tokens.clear()

    def stop(self):
        self.server.shutdown()
        self.server.server_close()

    def jwt_problem(self, header):
        """None if the Authorization header carries an acceptable JWT, else what is wrong."""
        if not header or not header.startswith("Bearer "):
            return "no Bearer token"
        token = header[len("Bearer "):]
        now = time.time()
        with self.lock:
            exp = self.known_jwts.get(token)
        if exp is not None and exp > now:
            return None
        parts = token.split(".")
        if len(parts) != 3:
            return "not a compact JWS"
        try:
            head = json.loads(b64url_decode(parts[0]))
            claims = json.loads(b64url_decode(parts[1]))
            signature = b64url_decode(parts[2])
        except ValueError as error:
            return f"undecodable: {error}"
        if head.get("alg") != "ES256" or head.get("kid") != self.key_id or head.get("typ") != "JWT":
            return f"header {head}"
        if claims.get("aud") != "appstoreconnect-v1" or claims.get("iss") != self.issuer_id or claims.get("bid") != self.bundle_id:
            return f"claims {claims}"
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or not isinstance(exp, int):
            return f"iat/exp not integers: {claims}"
        if iat > now + 5 or exp <= now or exp - iat > 3600:
            return f"iat {iat} / exp {exp} against now {now:.0f}"
        if len(signature) != 64:
            return f"signature of {len(signature)} bytes, not a raw 64-byte r || s"
        with self.lock:
            self.known_jwts[token] = exp
        return None

    def handle(self, request):
        arrived = time.monotonic()
        length = int(request.headers.get("Content-Length") or 0)
        body = request.rfile.read(length) if length else b""
        status, payload = self.answer(request, body)
        if self.delay > 0:
            time.sleep(self.delay)
        with self.lock:
            self.arrivals.append((arrived, status))
            if status != 200:
                self.errors.append(f"{status} {request.command} {request.path}: {payload[:200]!r}")
        request.send_response(status)
        if payload:
            request.send_header("Content-Type", "application/json")
        request.send_header("Content-Length", str(len(payload)))
        request.end_headers()
        if payload:
            request.wfile.write(payload)

    def answer(self, request, body):
        problem = self.jwt_problem(request.headers.get("Authorization"))
        if problem:
            return 401, b""
        path, _, query = request.path.partition("?")
        if request.command != "POST" or path != "/inApps/v1/notifications/history":
            return 404, b'{"errorCode":4040000,"errorMessage":"not served by this fake"}'
        try:
            filters = json.loads(body)
            start, end = int(filters["startDate"]), int(filters["endDate"])
        except (ValueError, KeyError, TypeError):
            return 400, b'{"errorCode":4000000,"errorMessage":"bad body"}'
        if start >= end:
            return 400, b'{"errorCode":4000013,"errorMessage":"invalid date range"}'
        if filters.get("onlyFailures"):
            return 400, b'{"errorCode":4000000,"errorMessage":"this fake has no failed deliveries"}'
        window = json.dumps(filters, sort_keys=True)
        token = None
        for pair in query.split("&"):
            name, _, value = pair.partition("=")
            if name == "paginationToken":
                token = value
        offset = 0
        if token is not None:
            with self.lock:
                issued = self.tokens.get(token)
            if issued is None or issued[0] != window:
                return 400, b'{"errorCode":4000014,"errorMessage":"invalid pagination token"}'
            offset = issued[1]
        first = bisect.bisect_left(self.dates, start)
        last = bisect.bisect_left(self.dates, end)
        begin = first + offset
        stop = min(begin + PAGE_SIZE, last)
        has_more = stop < last
        out = b'{"notificationHistory":[' + b",".join(self.fragments[begin:stop]) + b'],"hasMore":' + (b"true" if has_more else b"false")
        if has_more:
            next_token = uuid.uuid4().hex
            with self.lock:
                self.tokens[next_token] = (window, stop - first)
            out += b',"paginationToken":"' + next_token.encode() + b'"'
        return 200, out + b"}"


def load_items(notifications, window_start, count):
    """(sentDate, signedPayload) for every line, send dates spread evenly over the window; checks
    that every notificationUUID is distinct (dedupe would otherwise drop some)."""
    payloads = []
    uuids = set()
    for line in open(notifications, "rb"):
        payload = json.loads(line)["signedPayload"]
        uuids.add(json.loads(b64url_decode(payload.split(".")[1]))["notificationUUID"])
        payloads.append(payload)
    if len(payloads) != count or len(uuids) != count:
        sys.exit(f"scripts/bench_backfill.py: {len(payloads)} lines with {len(uuids)} distinct notificationUUIDs, expected {count}")
    return [(window_start + i * WINDOW_MS // count, payload) for i, payload in enumerate(payloads)]


def summary_counts(stderr, what):
    matches = SUMMARY.findall(stderr)
    if not matches:
        sys.exit(f"scripts/bench_backfill.py: no summary line in the stderr of {what}:\n{stderr[-3000:]}")
    read, passed, rejected, dropped, delivered = map(int, matches[-1])
    return {"read": read, "passed": passed, "rejected": rejected, "dropped": dropped, "delivered": delivered}


def verdict(ok):
    return "PASS" if ok else "FAIL"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=20000, help="notifications to backfill (default 20000)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command, interleaved; the median counts (default 3)")
    parser.add_argument("--delay-ms", type=float, default=50, help="the fake's delay per request in ms (default 50)")
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "signet"),
                        help="the signet binary (default .build/release/signet)")
    parser.add_argument("--no-build", action="store_true", help="use the existing binary instead of building the release one")
    parser.add_argument("--keep", help="keep fixtures, key and data in this folder (and each run's request arrival times)")
    parser.add_argument("--no-paced", action="store_true",
                        help="skip the reference run of the stdin pipeline fed a page every 1/rate s (no target)")
    args = parser.parse_args()
    if args.count <= 0 or args.repeat <= 0:
        sys.exit("scripts/bench_backfill.py: --count and --repeat must be positive")

    if not args.no_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "signet"], cwd=ROOT, check=True)
    signet = os.path.abspath(args.binary)
    work = args.keep or tempfile.mkdtemp(prefix="signet-bench-backfill-")
    os.makedirs(work, exist_ok=True)

    fixtures = os.path.join(work, "fixtures")
    notifications = os.path.join(fixtures, "notifications.ndjson")
    made = os.path.exists(notifications) and sum(1 for _ in open(notifications, "rb")) == args.count
    if not made:
        shutil.rmtree(fixtures, ignore_errors=True)
        subprocess.run([signet, "fixtures", "--out", fixtures, "--count", str(args.count), "--seed", "11",
                        "--environment", "Production", "--app-apple-id", APP_APPLE_ID, "--bundle-id", BUNDLE_ID],
                       check=True, stdout=subprocess.DEVNULL)
    env_file = dict(line.strip().removeprefix("export ").split("=", 1)
                    for line in open(os.path.join(fixtures, "fixtures.env")) if "=" in line and not line.startswith("#"))
    key = os.path.join(work, "AuthKey_bench.p8")
    if not os.path.exists(key):
        subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key], check=True)

    # The window ends a minute ago (--until must not be in the future) and stays fixed for
    # every run, so each run asks for the same pages.
    window_end = int(time.time() * 1000) - 60_000
    window_start = window_end - WINDOW_MS
    items = load_items(notifications, window_start, args.count)
    fake = FakeAppStoreAPI(items, args.delay_ms / 1000.0, KEY_ID, ISSUER_ID, BUNDLE_ID)

    for name in ("SIGNET_DATABASE_URL", "SIGNET_APPSTORE_API_URL", "SIGNET_VERIFY_WORKERS"):
        os.environ.pop(name, None)
    base_env = dict(os.environ, **env_file)  # SIGNET_ROOT_CERTS, SIGNET_ENVIRONMENT, SIGNET_BUNDLE_ID, SIGNET_APP_APPLE_ID
    if base_env.get("SIGNET_ENVIRONMENT") != "Production" or base_env.get("SIGNET_APP_APPLE_ID") != APP_APPLE_ID:
        sys.exit(f"scripts/bench_backfill.py: {fixtures}/fixtures.env is not the Production fixtures this script makes")
    backfill_env = dict(base_env, SIGNET_APPSTORE_KEY_ID=KEY_ID, SIGNET_APPSTORE_ISSUER_ID=ISSUER_ID,
                        SIGNET_APPSTORE_PRIVATE_KEY=key, SIGNET_APPSTORE_API_URL=fake.url)
    rate = PRODUCTION_REQUESTS_PER_SECOND

    cores = os.cpu_count() or 1
    print(f"machine: {cores} cores; {args.count} Production notifications "
          f"({os.path.getsize(notifications) / args.count / 1024:.1f} KiB per line), send dates over 48 h; "
          f"fake App Store Server API at {fake.url}, {args.delay_ms:g} ms per request; binary {signet}")
    backfills, stdins, paced = [], [], []
    for repeat in range(args.repeat):
        # Backfill: a fresh data dir (no checkpoint, empty dedupe), the whole window.
        data = os.path.join(work, "data-backfill")
        shutil.rmtree(data, ignore_errors=True)
        fake.reset()
        argv = [signet, "backfill", "--since", str(window_start), "--until", str(window_end), "--log-level", "warning"]
        seconds, rss, code, err, cpu, (started, ended) = run_measured(argv, env=dict(backfill_env, SIGNET_DATA_DIR=data))
        with fake.lock:
            arrivals, errors = list(fake.arrivals), list(fake.errors)
        if code != 0:
            sys.exit(f"signet backfill failed ({code}): {err[-3000:]}")
        unauthorized = [e for e in errors if e.startswith("401")]
        if unauthorized:
            sys.exit(f"scripts/bench_backfill.py: the fake answered {len(unauthorized)} request(s) 401 (bad JWT), first: {unauthorized[0]}")
        if errors:
            sys.exit(f"scripts/bench_backfill.py: the fake answered {len(errors)} request(s) with an error, first: {errors[0]}")
        counts = summary_counts(err, "signet backfill")
        done = BACKFILL_DONE.findall(err)
        if not done:
            sys.exit(f"signet backfill did not report 'backfill done':\n{err[-3000:]}")
        pages, fetched, _ = map(int, done[-1])
        if counts["read"] < args.count or fetched < args.count or counts["rejected"]:
            sys.exit(f"signet backfill processed {counts['read']} of {args.count} notifications "
                     f"({fetched} fetched, {counts['rejected']} rejected):\n{err[-3000:]}")
        times = sorted(arrival for arrival, _ in arrivals)
        span = times[-1] - times[0] if len(times) > 1 else 0
        gaps = sorted(b - a for a, b in zip(times, times[1:])) or [0]
        backfills.append({"seconds": seconds, "rss": rss, "cpu": cpu, "requests": len(arrivals), "pages": pages,
                          "read": counts["read"], "counts": counts, "request_rate": (len(times) - 1) / span if span else 0,
                          "span": span})
        # Where the wall time goes: start-up before the first request, the paging itself, and the
        # end (the last answer, the pipeline's drain, the summary) after the last request.
        print(f"  run {repeat + 1}: backfill {seconds:.2f} s = {times[0] - started:.2f} s to the first request + "
              f"{span:.2f} s for {len(arrivals)} requests + {ended - times[-1]:.2f} s after the last; "
              f"gaps between requests median {gaps[len(gaps) // 2] * 1000:.1f} ms, p90 {gaps[len(gaps) * 9 // 10] * 1000:.1f} ms, "
              f"max {gaps[-1] * 1000:.0f} ms; CPU {cpu:.2f} s, peak RSS {rss:.1f} MiB "
              f"({counts['read']} read, {counts['delivered']} delivered)")
        if args.keep:
            with open(os.path.join(work, f"arrivals-{repeat + 1}.json"), "w") as file:
                json.dump([arrival - started for arrival in times], file)

        # The same notifications through the default stdin pipeline.
        data = os.path.join(work, "data-stdin")
        shutil.rmtree(data, ignore_errors=True)
        seconds, rss, code, err, cpu, _ = run_measured([signet, "run", "--log-level", "warning"], stdin_path=notifications,
                                                    env=dict(base_env, SIGNET_DATA_DIR=data))
        if code != 0:
            sys.exit(f"signet run failed ({code}): {err[-3000:]}")
        counts = summary_counts(err, "signet run")
        if counts["read"] < args.count or counts["rejected"]:
            sys.exit(f"signet run processed {counts['read']} of {args.count} notifications ({counts['rejected']} rejected):\n{err[-3000:]}")
        stdins.append({"seconds": seconds, "rss": rss, "cpu": cpu, "read": counts["read"], "counts": counts})
        print(f"  run {repeat + 1}: stdin    {seconds:.2f} s, CPU {cpu:.2f} s, peak RSS {rss:.1f} MiB "
              f"({counts['read']} read, {counts['delivered']} delivered)")
        if backfills[-1]["counts"]["delivered"] != counts["delivered"]:
            print(f"  note: backfill delivered {backfills[-1]['counts']['delivered']} events, stdin {counts['delivered']}")

        # Reference (no target): the stdin pipeline fed the way the backfill feeds it, a page of
        # 20 lines every 1/rate s, which separates what small batches cost any pipeline from what
        # the backfill itself (HTTP, page JSON, envelopes, checkpoints) adds.
        if not args.no_paced:
            data = os.path.join(work, "data-paced")
            shutil.rmtree(data, ignore_errors=True)
            seconds, rss, code, err, cpu, _ = run_measured([signet, "run", "--log-level", "warning"],
                                                        feed=paced_feeder(notifications, PAGE_SIZE, 1 / rate),
                                                        env=dict(base_env, SIGNET_DATA_DIR=data))
            if code != 0:
                sys.exit(f"signet run (paced) failed ({code}): {err[-3000:]}")
            counts = summary_counts(err, "signet run (paced)")
            if counts["read"] < args.count or counts["rejected"]:
                sys.exit(f"signet run (paced) processed {counts['read']} of {args.count} notifications:\n{err[-3000:]}")
            paced.append({"seconds": seconds, "rss": rss, "cpu": cpu})
            print(f"  run {repeat + 1}: paced    {seconds:.2f} s, CPU {cpu:.2f} s, peak RSS {rss:.1f} MiB "
                  f"({counts['read']} read, {counts['delivered']} delivered)")
    fake.stop()

    def median(runs, key):
        return statistics.median(run[key] for run in runs)

    count = args.count
    b_seconds = median(backfills, "seconds")
    b_rate = count / b_seconds
    b_requests = median(backfills, "requests")
    b_request_rate = median(backfills, "request_rate")
    b_cpu_ms = median(backfills, "cpu") * 1000 / count
    s_seconds = median(stdins, "seconds")
    s_cpu_ms = median(stdins, "cpu") * 1000 / count
    allowed = rate * PAGE_SIZE
    ratio = b_rate / allowed
    cpu_ratio = b_cpu_ms / s_cpu_ms
    spread = lambda runs: f"  (runs {min(r['seconds'] for r in runs):.2f}-{max(r['seconds'] for r in runs):.2f} s)" if len(runs) > 1 else ""

    print()
    print(f"backfill: {b_requests:.0f} pages (requests), {count} notifications, {b_seconds:.2f} s wall, "
          f"{b_rate:,.0f} notifications/s{spread(backfills)}")
    print(f"  requests: {b_request_rate:.1f}/s between the first and the last request "
          f"(configured rate limit {rate:g}/s: {b_request_rate / rate:.0%}); {b_requests / b_seconds:.1f}/s over the wall time")
    print(f"  rate: {b_rate:,.0f} notifications/s vs the rate limit's {allowed:,.0f}/s ({rate:g} requests/s x {PAGE_SIZE}) = {ratio:.0%} "
          f"(target {RATE_TARGET:.0%}) -> {verdict(ratio >= RATE_TARGET)}")
    print(f"  CPU: {b_cpu_ms:.3f} ms per notification; peak RSS {max(r['rss'] for r in backfills):.1f} MiB")
    print(f"stdin pipeline (signet run): {s_seconds:.2f} s wall, {count / s_seconds:,.0f} notifications/s, "
          f"CPU {s_cpu_ms:.3f} ms per notification; peak RSS {max(r['rss'] for r in stdins):.1f} MiB{spread(stdins)}")
    print(f"CPU per notification, backfill / stdin: {cpu_ratio:.2f}x (target <= {CPU_TARGET}x) -> {verdict(cpu_ratio <= CPU_TARGET)}")
    if len(backfills) > 1:
        # Each repeat's own ratio (its backfill against the stdin run right after it): the spread
        # says how far one figure can be trusted on this machine. The stdin run, which keeps every
        # core busy, moves more than the backfill.
        pairs = ", ".join(f"{b['cpu'] / s['cpu']:.2f}x" for b, s in zip(backfills, stdins))
        print(f"  per repeat: {pairs}; stdin CPU {min(r['cpu'] for r in stdins):.2f}-{max(r['cpu'] for r in stdins):.2f} s, "
              f"backfill {min(r['cpu'] for r in backfills):.2f}-{max(r['cpu'] for r in backfills):.2f} s")
    if paced:
        p_cpu_ms = median(paced, "cpu") * 1000 / count
        print(f"  reference, the stdin pipeline fed {PAGE_SIZE} lines every {1000 / rate:g} ms like the backfill's pages: "
              f"{median(paced, 'seconds'):.2f} s wall, CPU {p_cpu_ms:.3f} ms per notification ({p_cpu_ms / s_cpu_ms:.2f}x the stdin "
              f"pipeline's); the backfill's is {b_cpu_ms / p_cpu_ms:.2f}x that")

    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    if ratio < RATE_TARGET or cpu_ratio > CPU_TARGET:
        sys.exit(1)


if __name__ == "__main__":
    main()
