#!/usr/bin/env python3
"""Support console benchmark: how long the customer's page takes with 1,000,000 purchases in the
store (issue 57's target: p99 under 100 ms), SQLite then PostgreSQL.

For each store:
  1. `signet fixtures` and `signet run` (Pipelines/stdin.yaml) apply a few notifications, which
     creates the schema, and the purchases table is filled to --purchases rows in bulk SQL (as
     scripts/bench_retention.py does: copies of the applied purchases under new ids);
  2. `signet run` serves Pipelines/webhook.yaml with a `console:` section; the script signs in
     with a read-only credential made by `signet console credential`;
  3. `wrk` fetches /console/customers/{id} at each --concurrency (closed loop) for ids drawn at
     random (a) among all the purchases (most are copies: one purchase, no history) and (b) among
     the applied ones, which keep their event history (applied with outbox_retention, as the
     webhook pipeline keeps it): their pages carry a timeline. It prints pages/s and p50/p99/max
     latency, with signet's peak RSS. At concurrency 1 the latency is the page's server time plus
     loopback.

Usage: scripts/bench_console.py [--purchases N] [--concurrency 1,8] [--seconds S]
                                [--no-build | --binary PATH] [--no-postgres] [--keep DIR]
"""
import argparse
import http.client
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import PostgresServer  # noqa: E402
from bench_retention import environment_for, peak_rss, seed_postgres, seed_sqlite  # noqa: E402
from bench import free_port  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WRK_SCRIPT = r"""
local cookie = os.getenv("SIGNET_BENCH_COOKIE")
local count = tonumber(os.getenv("SIGNET_BENCH_COUNT"))
local ids = {}
if os.getenv("SIGNET_BENCH_IDS") ~= "" then
  for id in string.gmatch(os.getenv("SIGNET_BENCH_IDS"), "[^,]+") do ids[#ids + 1] = id end
end
function init(args) math.randomseed(os.time() + math.random(1000000)) end
function request()
  local id
  if #ids > 0 then id = ids[math.random(#ids)] else id = string.format("3%015d", math.random(0, count - 1)) end
  return wrk.format("GET", "/console/customers/" .. id, {["Cookie"] = cookie})
end
function done(summary, latency, requests)
  io.write(string.format("RESULT %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), latency.max))
end
"""


def sign_in(admin, token):
    """A session cookie, signing in as a browser does (the form's CSRF token and its cookie)."""
    conn = http.client.HTTPConnection("127.0.0.1", admin, timeout=10)
    conn.request("GET", "/console/sign-in")
    response = conn.getresponse()
    form = response.read().decode()
    pre = next(v for v in response.headers.get_all("Set-Cookie") if v.startswith("signet_console_sign_in=")).split(";")[0]
    csrf = re.search(r'name="csrf" value="([^"]+)"', form).group(1)
    conn = http.client.HTTPConnection("127.0.0.1", admin, timeout=10)
    conn.request("POST", "/console/sign-in", body=urllib.parse.urlencode({"csrf": csrf, "token": token}),
                 headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": pre})
    response = conn.getresponse()
    response.read()
    cookies = [v for v in response.headers.get_all("Set-Cookie") or [] if v.startswith("signet_console=")]
    if response.status != 303 or not cookies:
        sys.exit(f"scripts/bench_console.py: sign-in failed ({response.status})")
    return cookies[0].split(";")[0]


def measure(binary, work, name, env, count, applied, concurrencies, seconds, pool_size):
    port, admin = free_port(), free_port()
    credentials = os.path.join(work, "console-credentials")
    made = subprocess.run([binary, "console", "credential", "bench", "--role", "read_only"], capture_output=True, text=True, check=True)
    with open(credentials, "w") as file:
        file.write(made.stdout)
    token = made.stderr.strip().rsplit(" ", 1)[1]
    text = open(os.path.join(ROOT, "Pipelines", "webhook.yaml")).read()
    if pool_size:
        store = "    url: ${SIGNET_DATABASE_URL:}\n"
        text = text.replace(store, store + f"    pool_size: {pool_size}\n")
    pipeline = os.path.join(work, "console.yaml")
    with open(pipeline, "w") as file:
        file.write(text + f"\nconsole:\n  credentials: {credentials}\n")
    env = dict(env, SIGNET_HTTP_ADDRESS=f"127.0.0.1:{port}", SIGNET_ADMIN_ADDRESS=f"127.0.0.1:{admin}")
    log = open(os.path.join(work, f"signet-{name}.log"), "wb")
    process = subprocess.Popen([binary, "run", "--pipeline", pipeline], env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=log)
    try:
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", admin), timeout=1).close()
                break
            except OSError:
                time.sleep(0.1)
        cookie = sign_in(admin, token)
        lua = os.path.join(work, "console.lua")
        with open(lua, "w") as file:
            file.write(WRK_SCRIPT)
        results = []
        for pages, ids in (("any purchase", ""), ("with history", ",".join(applied))):
            wrk_env = dict(os.environ, SIGNET_BENCH_COOKIE=cookie, SIGNET_BENCH_COUNT=str(count), SIGNET_BENCH_IDS=ids)
            subprocess.run(["wrk", "-t1", "-c2", "-d3s", "-s", lua, f"http://127.0.0.1:{admin}/"], env=wrk_env, capture_output=True, check=True)
            for concurrency in concurrencies:
                out = subprocess.run(["wrk", f"-t{min(concurrency, 2)}", f"-c{concurrency}", f"-d{seconds}s", "--timeout", "5s", "-s", lua,
                                      f"http://127.0.0.1:{admin}/"], env=wrk_env, capture_output=True, text=True, check=True).stdout
                requests, duration, p50, p99, worst = map(int, re.search(r"RESULT (.*)", out).group(1).split())
                non200 = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
                results.append((pages, concurrency, requests / (duration / 1e6), p50 / 1000, p99 / 1000, worst / 1000,
                                int(non200.group(1)) if non200 else 0))
        return results, peak_rss(process.pid)
    finally:
        process.terminate()
        process.wait(timeout=60)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--purchases", type=int, default=1_000_000, help="purchases in the store (default 1000000)")
    parser.add_argument("--concurrency", default="1,8", help="comma-separated open connections (default 1,8)")
    parser.add_argument("--seconds", type=int, default=10, help="each measurement's length (default 10)")
    parser.add_argument("--notifications", type=int, default=2000, help="fixture notifications applied with their history (default 2000)")
    parser.add_argument("--no-build", action="store_true", help="use the existing release build")
    parser.add_argument("--binary", help="measure this signet binary instead of building .build/release/signet")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    parser.add_argument("--pool-size", type=int, default=8, help="PostgreSQL connections (default 8)")
    parser.add_argument("--keep", help="work in this folder and keep it")
    args = parser.parse_args()
    binary = args.binary or os.path.join(ROOT, ".build", "release", "signet")
    if not args.binary and not args.no_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "signet"], cwd=ROOT, check=True)
    if not shutil.which("wrk"):
        sys.exit("scripts/bench_console.py: wrk is not installed (scripts/install-deps.sh)")
    concurrencies = [int(c) for c in args.concurrency.split(",")]
    work = args.keep or tempfile.mkdtemp(prefix="signet-bench-console-")
    os.makedirs(work, exist_ok=True)
    fixtures = os.path.join(work, "fixtures")
    shutil.rmtree(fixtures, ignore_errors=True)
    subprocess.run([binary, "fixtures", "--out", fixtures, "--count", str(args.notifications)], check=True, capture_output=True)
    # The default stdin pipeline with the purchases' history kept, as the webhook pipeline keeps it.
    applying = os.path.join(work, "apply.yaml")
    with open(applying, "w") as file:
        file.write(open(os.path.join(ROOT, "Pipelines", "stdin.yaml")).read().replace("# outbox_retention: 90d", "outbox_retention: 90d"))
    for name in ["sqlite"] + ([] if args.no_postgres else ["postgres"]):
        data = os.path.join(work, f"data-{name}")
        shutil.rmtree(data, ignore_errors=True)
        server = url = None
        if name == "postgres":
            try:
                server = PostgresServer(work)
            except (RuntimeError, subprocess.CalledProcessError) as error:
                print(f"postgres: skipped ({error})")
                continue
            url = server.database("signet_console")
        try:
            env = environment_for(fixtures, data, url)
            with open(os.path.join(fixtures, "notifications.ndjson"), "rb") as stdin:
                subprocess.run([binary, "run", "--pipeline", applying], env=env, stdin=stdin, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, check=True)
            started = time.perf_counter()
            if server:
                total, templates, _ = seed_postgres(server, url, args.purchases)
                applied = subprocess.run([os.path.join(server.bin, "psql"), url, "-qAtX", "-c",
                                          "SELECT original_transaction_id FROM signet_subscriptions WHERE original_transaction_id NOT LIKE '3%'"],
                                         capture_output=True, text=True, check=True).stdout.split()
                events = subprocess.run([os.path.join(server.bin, "psql"), url, "-qAtX", "-c", "SELECT count(*) FROM signet_outbox"],
                                        capture_output=True, text=True).stdout.strip()
            else:
                total, templates, _ = seed_sqlite(os.path.join(data, "signet.sqlite"), args.purchases)
                database = sqlite3.connect(os.path.join(data, "signet.sqlite"))
                applied = [row[0] for row in database.execute(
                    "SELECT original_transaction_id FROM subscriptions WHERE original_transaction_id NOT LIKE '3%'")]
                events = database.execute("SELECT count(*) FROM outbox").fetchone()[0]
                database.close()
            print(f"{name}: {total:,} purchases ({templates} applied with {events} events kept, the rest copied in "
                  f"{time.perf_counter() - started:.1f} s)", flush=True)
            results, rss = measure(binary, work, name, env, total - templates, applied, concurrencies, args.seconds,
                                   args.pool_size if server else None)
            for pages, concurrency, rate, p50, p99, worst, non200 in results:
                verdict = "PASS" if p99 < 100 and non200 == 0 else "FAIL"
                print(f"  {pages:>12}, {concurrency:>3} connections: {rate:7.0f} pages/s, p50 {p50:6.2f} ms, p99 {p99:6.2f} ms, "
                      f"max {worst:7.2f} ms, non-200 {non200} -> p99 < 100 ms: {verdict}", flush=True)
            print(f"  signet peak RSS {rss:.0f} MiB", flush=True)
        finally:
            if server:
                server.stop()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
