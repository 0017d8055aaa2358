#!/usr/bin/env python3
"""Webhook benchmark: Pipelines/webhook.yaml against the stdin pipeline, in one run.

Measures on this machine, with the same fixtures (`signet fixtures`, each notification distinct)
and a fresh state database for every phase, each notification posted exactly once:
  1. the stdin pipeline (`signet run`, embedded Pipelines/stdin.yaml): notifications/s and
     signet's CPU per notification (the yardstick), the median of three runs (one run alone
     moved by a fifth from call to call on this 2-core machine);
  2. the webhook pipeline under 64 connections: wrk, a Lua script POSTing every fixture once
     (threads take disjoint slices and stop at the end of theirs); requests/s from the first
     request until the server has committed the last, and signet's CPU per request;
  3. the webhook pipeline at a steady --rate requests/s (default 300, Apple's trickle), open
     loop (an asyncio client with 64 keep-alive connections sends on a fixed schedule; latency
     counts from the scheduled send, so a stall is not hidden): p50/p99/p99.9 response time and
     signet's CPU per request.
  4. the floor under both: `signet-http-floor` (Benchmarks/HTTPFloor: the same Hummingbird, a
     route that reads the same bodies whole and answers 200, no pipeline) under the same two
     loads: what any POST of a notification costs before the webhook does anything
     (--no-floor skips it). The same load under 64 connections is the webhook's rate there:
     each connection waits 64/rate s before its next request (wrk's delay), so requests come in
     bursts as the webhook's batched answers make them come. A floor left to run flat out
     answers ten times as many requests per second and pays less for each (its event loops
     find many sockets ready per wake-up); that figure is printed for scale, not used.
Every 200 is sent only after its record is committed (state written, event on stdout).
signet's CPU is read from /proc for the server process alone; the clients' is not counted.
Targets (issue 37, above the floor a request costs anyway): webhook CPU per request <= floor +
1.2x the stdin pipeline's per notification under 64 connections, <= floor + 2x at the steady
rate; p99 < 25 ms and p99.9 < 100 ms at the steady rate.

Usage: scripts/bench_http.py [--count N] [--rate R] [--seconds S] [--binary PATH] [--floor PATH]
       [--keep DIR] [--linger DURATION]   (the http source's batch_linger, through SIGNET_HTTP_BATCH_LINGER)
       [--no-floor]
(build first: swift build -c release --product signet && swift build -c release --product signet-http-floor)
"""
import argparse
import asyncio
import json
import os
import re
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

LUA = r"""
local bodies = {}
for line in io.lines(os.getenv("BENCH_BODIES")) do bodies[#bodies + 1] = line end
local threads, counter = {}, 0
function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end
function init(args)
  stride = tonumber(os.getenv("BENCH_THREADS"))
  index = id - stride
  headers = { ["Content-Type"] = "application/json" }
end
function request()
  index = index + stride
  if index > #bodies then
    -- This thread's slice is sent (every post was written whole before this call): stop it.
    -- wrk still wants a request from this call; a GET is answered 405 if it goes out at all.
    wrk.thread:stop()
    return wrk.format("GET", "/notifications")
  end
  return wrk.format("POST", "/notifications", headers, bodies[index])
end
"""


def free_port():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def environment(folder, data, linger=None, port=None, admin=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET_")}
    env.update(SIGNET_ROOT_CERTS=os.path.join(folder, "root.pem"), SIGNET_BUNDLE_ID="com.example.signet",
               SIGNET_DATA_DIR=os.path.join(folder, data))
    if port:
        env["SIGNET_HTTP_ADDRESS"] = "127.0.0.1:%d" % port
        env["SIGNET_ADMIN_ADDRESS"] = "127.0.0.1:%d" % admin
    if linger is not None:
        env["SIGNET_HTTP_BATCH_LINGER"] = linger
    return env


def stdin_median(binary, folder, count, runs=3):
    """stdin_run `runs` times: the run with the median CPU, as (notifications/s, CPU seconds)."""
    results = sorted((stdin_run(binary, folder, count, "data-stdin-%d" % run) for run in range(runs)), key=lambda r: r[1])
    return results[len(results) // 2]


def stdin_run(binary, folder, count, data="data-stdin"):
    """Notifications/s of the stdin pipeline, and its CPU seconds."""
    summary = os.path.join(folder, "stdin-summary.json")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.path.join(folder, "notifications.ndjson"), "rb") as stdin:
        start = time.perf_counter()
        subprocess.run([binary, "run", "--summary-json", summary], stdin=stdin, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=environment(folder, data), check=True)
        wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    elapsed = json.load(open(summary)).get("elapsedSeconds") or wall
    return count / elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def process_cpu_seconds(pid):
    """User + system CPU time of one process alone, from /proc (Linux)."""
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_for_port(port, what):
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("%s did not start" % what)


class Server:
    def __init__(self, binary, folder, data, linger):
        self.port, self.admin = free_port(), free_port()
        self.process = subprocess.Popen(
            [binary, "run", "--pipeline", os.path.join(ROOT, "Pipelines", "webhook.yaml")],
            stdout=open(os.path.join(folder, data + "-events.ndjson"), "wb"),
            stderr=open(os.path.join(folder, data + ".err"), "wb"),
            env=environment(folder, data, linger, self.port, self.admin))
        wait_for_port(self.port, "the webhook pipeline")

    def cpu_seconds(self):
        return process_cpu_seconds(self.process.pid)

    def committed(self):
        """Records the pipeline finished (committed, dead-lettered or dropped), from /metrics."""
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.admin, timeout=5).read().decode()
        values = dict(re.findall(r"^(signet_records_read_total|signet_records_in_flight) ([\d.e+]+)$", text, re.M))
        return int(float(values.get("signet_records_read_total", 0)) - float(values.get("signet_records_in_flight", 0)))

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)


def wrk_run(folder, server, count):
    """Posts every fixture once under 64 connections; returns requests/s, signet's CPU, posts committed."""
    script = os.path.join(folder, "post.lua")
    with open(script, "w") as f:
        f.write(LUA)
    threads = 2
    env = dict(os.environ, BENCH_BODIES=os.path.join(folder, "notifications.ndjson"), BENCH_THREADS=str(threads))
    # wrk runs for its whole -d even after its threads stopped: the script times the work itself.
    limit = 30 + count // 200
    cpu_before = server.cpu_seconds()
    start = time.perf_counter()
    wrk = subprocess.Popen(
        ["wrk", "-t%d" % threads, "-c64", "-d%ds" % limit, "--latency", "-s", script,
         "http://127.0.0.1:%d/notifications" % server.port], env=env, stdout=subprocess.DEVNULL)
    # Done when every fixture is committed, or when nothing more was committed for 2 s (wrk
    # loses a request now and then when it reconnects; the figures then count what arrived).
    committed, last_change, seconds = 0, time.perf_counter(), None
    while committed < count:
        now = time.perf_counter()
        if now - start > limit:
            raise SystemExit("the webhook committed %d of %d in %d s" % (committed, count, limit))
        current = server.committed()
        if current != committed:
            committed, last_change = current, now
        elif committed > 0 and now - last_change > 2:
            seconds = last_change - start
            break
        # Each scrape of /metrics costs signet CPU that this phase counts (polled every 20 ms
        # throughout, 5% of it): every 200 ms until the end is near, then every 20 ms.
        time.sleep(0.02 if committed >= count * 0.9 else 0.2)
    seconds = seconds or time.perf_counter() - start
    cpu = server.cpu_seconds() - cpu_before
    wrk.terminate()
    wrk.wait()
    if committed < count:
        print("  note: %d of %d posts arrived (a wrk thread stopped while writing its last)" % (committed, count))
    return committed / seconds, cpu, committed


class FloorServer:
    """signet-http-floor: the same Hummingbird reading each POST's body and answering 200 at once."""

    def __init__(self, binary, folder):
        self.port = free_port()
        self.process = subprocess.Popen([binary, "127.0.0.1:%d" % self.port], stdout=subprocess.DEVNULL,
                                        stderr=open(os.path.join(folder, "floor.err"), "wb"))
        wait_for_port(self.port, "the floor server")

    def cpu_seconds(self):
        return process_cpu_seconds(self.process.pid)

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)


FLOOR_LUA = r"""
local bodies = {}
for line in io.lines(os.getenv("BENCH_BODIES")) do bodies[#bodies + 1] = line end
local index = 0
headers = { ["Content-Type"] = "application/json" }
function request()
  index = index % #bodies + 1
  return wrk.format("POST", "/notifications", headers, bodies[index])
end
"""


PACED_LUA = r"""
local wait = tonumber(os.getenv("BENCH_DELAY_MS"))
function delay() return wait end
"""


def floor_wrk(folder, server, seconds=10, rate=None):
    """The fixtures POSTed round and round under 64 connections for `seconds`, flat out or, with
    `rate`, each connection waiting 64/rate s before each request; requests/s and CPU ms per request."""
    script = os.path.join(folder, "floor.lua")
    with open(script, "w") as f:
        f.write(FLOOR_LUA + (PACED_LUA if rate else ""))
    env = dict(os.environ, BENCH_BODIES=os.path.join(folder, "notifications.ndjson"))
    if rate:
        env["BENCH_DELAY_MS"] = "%.3f" % (64000.0 / rate)
    cpu_before = server.cpu_seconds()
    result = subprocess.run(
        ["wrk", "-t2", "-c64", "-d%ds" % seconds, "-s", script, "http://127.0.0.1:%d/notifications" % server.port],
        check=True, capture_output=True, text=True, env=env).stdout
    cpu = server.cpu_seconds() - cpu_before
    requests = int(re.search(r"(\d+) requests in", result).group(1))
    return requests / seconds, cpu * 1000 / requests


async def open_loop(port, request, total, rate, connections=64, reconnect=False):
    """Open loop, as real clients send: request i (the bytes `request(i)`) is due at start + i / rate,
    sent on one of `connections` keep-alive connections; latency counts from that moment, so a
    stall is not hidden. (wrk's `delay` paces only a connection's first request on keep-alive.)
    With `reconnect`, a connection the server closed is opened again and the request sent again,
    the wait counted (a listener closes idle keep-alive connections when its slots are all taken).
    Returns the sorted latencies in seconds, the count of each status, and the seconds it took."""
    start = time.perf_counter() + 0.2
    queue = asyncio.Queue()
    for i in range(total):
        queue.put_nowait(i)
    latencies, statuses = [], {}

    async def worker():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        while True:
            try:
                i = queue.get_nowait()
            except asyncio.QueueEmpty:
                break
            due = start + i / rate
            delay = due - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            for _ in range(3 if reconnect else 1):
                try:
                    writer.write(request(i))
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))
                    await reader.readexactly(length)
                    break
                except (asyncio.IncompleteReadError, ConnectionError):
                    if not reconnect:
                        raise
                    writer.close()
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
            else:
                raise RuntimeError(f"127.0.0.1:{port} closed the connection three times in a row")
            latencies.append(time.perf_counter() - due)
            status = int(head.split(b" ", 2)[1])
            statuses[status] = statuses.get(status, 0) + 1
        writer.close()

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(connections)))
    elapsed = time.perf_counter() - began
    latencies.sort()
    return latencies, statuses, elapsed


def percentile_ms(latencies, q):
    """The q-quantile of sorted latencies in seconds, in milliseconds."""
    return latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000


async def paced(port, bodies, rate, seconds):
    """Open loop: notification i is posted when due at start + i / rate, from 64 connections."""
    total = min(len(bodies), int(rate * seconds))

    def request(i):
        return (b"POST /notifications HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                b"Content-Length: %d\r\n\r\n" % len(bodies[i]) + bodies[i])

    latencies, statuses, _ = await open_loop(port, request, total, rate)
    return percentile_ms(latencies, 0.50), percentile_ms(latencies, 0.99), percentile_ms(latencies, 0.999), statuses, total


def verdict(ok):
    return "met" if ok else "NOT MET"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=20000, help="fixtures (distinct notifications)")
    parser.add_argument("--rate", type=float, default=300, help="requests/s of the steady phase")
    parser.add_argument("--seconds", type=float, default=20, help="length of the steady phase")
    parser.add_argument("--linger", help="the http source's batch_linger (e.g. 0s, 2ms); default: the pipeline's")
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "signet"))
    parser.add_argument("--floor", help="the floor server (default: signet-http-floor beside --binary)")
    parser.add_argument("--keep", help="keep the work folder here")
    parser.add_argument("--no-floor", action="store_true", help="skip the floor (targets are then against zero)")
    args = parser.parse_args()
    if not os.access(args.binary, os.X_OK):
        raise SystemExit("%s not found: swift build -c release --product signet" % args.binary)
    args.floor = args.floor or os.path.join(os.path.dirname(args.binary), "signet-http-floor")
    if not args.no_floor and not os.access(args.floor, os.X_OK):
        raise SystemExit("%s not found: swift build -c release --product signet-http-floor (or --no-floor)" % args.floor)
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (apt-get install wrk)")
    folder = args.keep or tempfile.mkdtemp(prefix="signet-bench-http-")
    os.makedirs(folder, exist_ok=True)
    try:
        # Dated just before now: the purchases are current, so no expiry sweep fires mid-run.
        subprocess.run([args.binary, "fixtures", "--out", folder, "--count", str(args.count), "--now"], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        bodies = [line.encode() for line in open(os.path.join(folder, "notifications.ndjson")).read().splitlines()]
        print("signet webhook benchmark: %d fixtures, %d cores, batch_linger %s"
              % (len(bodies), os.cpu_count(), args.linger or "as in Pipelines/webhook.yaml"))

        stdin, stdin_cpu = stdin_median(args.binary, folder, len(bodies))
        per_notification = stdin_cpu * 1000 / len(bodies)
        print("  stdin pipeline:       %6.0f notifications/s, CPU %.3f ms per notification (median of 3 runs)"
              % (stdin, per_notification))

        server = Server(args.binary, folder, "data-wrk", args.linger)
        rate, cpu, posted = wrk_run(folder, server, len(bodies))
        code = server.stop()
        loaded = cpu * 1000 / posted
        print("  webhook, 64 conns:    %6.0f requests/s, CPU %.3f ms per request = %.2fx stdin (exit %d)"
              % (rate, loaded, loaded / per_notification, code))

        server = Server(args.binary, folder, "data-steady", args.linger)
        cpu_before = server.cpu_seconds()
        p50, p99, p999, statuses, total = asyncio.run(paced(server.port, bodies, args.rate, args.seconds))
        steady = (server.cpu_seconds() - cpu_before) * 1000 / total
        code = server.stop()
        print("  webhook at %3.0f/s:     p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms over %d requests; "
              "CPU %.3f ms per request = %.2fx stdin (answers %s; exit %d)"
              % (args.rate, p50, p99, p999, total, steady, steady / per_notification, statuses, code))

        floor_loaded = floor_steady = 0.0
        if not args.no_floor:
            floor = FloorServer(args.floor, folder)
            flat_rate, flat_loaded = floor_wrk(folder, floor)
            floor_rate, floor_loaded = floor_wrk(folder, floor, rate=rate)
            cpu_before = floor.cpu_seconds()
            _, _, _, floor_statuses, floor_total = asyncio.run(paced(floor.port, bodies, args.rate, args.seconds))
            floor_steady = (floor.cpu_seconds() - cpu_before) * 1000 / floor_total
            code = floor.stop()
            print("  floor (POST, no pipeline): 64 conns at the webhook's rate (%.0f requests/s), CPU %.3f ms per request "
                  "= %.2fx stdin; at %.0f/s CPU %.3f ms per request = %.2fx stdin (answers %s; exit %d)"
                  % (floor_rate, floor_loaded, floor_loaded / per_notification, args.rate, floor_steady,
                     floor_steady / per_notification, floor_statuses, code))
            print("    for scale, not a target: 64 conns flat out, %.0f requests/s, CPU %.3f ms per request = %.2fx stdin"
                  % (flat_rate, flat_loaded, flat_loaded / per_notification))

        above_loaded = (loaded - floor_loaded) / per_notification
        above_steady = (steady - floor_steady) / per_notification
        print("targets (CPU per request above the floor, in stdin notifications):")
        print("  64 connections <= floor + 1.2x stdin: floor + %.2fx  %s" % (above_loaded, verdict(above_loaded <= 1.2)))
        print("  at %.0f/s <= floor + 2x stdin:         floor + %.2fx  %s" % (args.rate, above_steady, verdict(above_steady <= 2)))
        print("  p99 < 25 ms at %.0f/s:                 %.1f ms  %s" % (args.rate, p99, verdict(p99 < 25)))
        print("  p99.9 < 100 ms at %.0f/s:              %.1f ms  %s" % (args.rate, p999, verdict(p999 < 100)))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
