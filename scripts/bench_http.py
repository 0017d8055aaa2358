#!/usr/bin/env python3
"""Webhook benchmark: Pipelines/webhook.yaml against the stdin pipeline, in one run.

Measures on this machine, with the same fixtures (`signet fixtures`, each notification distinct)
and a fresh state database for every phase:
  1. the stdin pipeline (`signet run`, embedded Pipelines/stdin.yaml): notifications/s;
  2. the webhook pipeline at full load: wrk, 64 connections, a Lua script POSTing every fixture
     once (threads take disjoint slices): requests/s answered 200, wrk's latency percentiles;
  3. the webhook pipeline at half the rate of (1), open loop (an asyncio client with 64
     keep-alive connections sends on a fixed schedule; latency counts from the scheduled send,
     so a stall is not hidden): p50/p99 response time.
Every 200 is sent only after its record is committed (state written, event on stdout).
Targets: webhook throughput >= 0.8 x stdin; p99 < 25 ms at half the stdin rate.

Usage: scripts/bench_http.py [--count N] [--duration S] [--binary PATH] [--keep DIR]
(build first: swift build -c release --product signet)
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
  if index > #bodies then index = ((index - 1) % #bodies) + 1 end
  return wrk.format("POST", "/notifications", headers, bodies[index])
end
"""


def free_port():
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def environment(folder, data, port=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET_")}
    env.update(SIGNET_ROOT_CERTS=os.path.join(folder, "root.pem"), SIGNET_BUNDLE_ID="com.example.signet",
               SIGNET_DATA_DIR=os.path.join(folder, data))
    if port:
        env["SIGNET_HTTP_ADDRESS"] = "127.0.0.1:%d" % port
        env["SIGNET_ADMIN_ADDRESS"] = "127.0.0.1:0"  # the admin listener is not what is measured
    return env


def stdin_rate(binary, folder, count):
    """Notifications/s of the stdin pipeline, and its CPU seconds."""
    summary = os.path.join(folder, "stdin-summary.json")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(os.path.join(folder, "notifications.ndjson"), "rb") as stdin:
        start = time.perf_counter()
        subprocess.run([binary, "run", "--summary-json", summary], stdin=stdin, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=environment(folder, "data-stdin"), check=True)
        wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    elapsed = json.load(open(summary)).get("elapsedSeconds") or wall
    return count / elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


class Server:
    def __init__(self, binary, folder, data):
        self.port = free_port()
        self.process = subprocess.Popen(
            [binary, "run", "--pipeline", os.path.join(ROOT, "Pipelines", "webhook.yaml")],
            stdout=open(os.path.join(folder, data + "-events.ndjson"), "wb"),
            stderr=open(os.path.join(folder, data + ".err"), "wb"), env=environment(folder, data, self.port))
        for _ in range(600):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("the webhook pipeline did not start")

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)


def process_cpu_seconds(pid):
    """User + system CPU time of a running process, from /proc (Linux)."""
    fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wrk_run(folder, port, duration, count):
    script = os.path.join(folder, "post.lua")
    with open(script, "w") as f:
        f.write(LUA)
    threads = 2
    env = dict(os.environ, BENCH_BODIES=os.path.join(folder, "notifications.ndjson"), BENCH_THREADS=str(threads))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    output = subprocess.run(
        ["wrk", "-t%d" % threads, "-c64", "-d%ds" % duration, "--latency", "-s", script,
         "http://127.0.0.1:%d/notifications" % port], env=env, capture_output=True, text=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    client_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    requests = int(re.search(r"(\d+) requests in", output).group(1))
    seconds = float(re.search(r"requests in ([\d.]+)s", output).group(1))
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", output)
    errors = int(non2xx.group(1)) if non2xx else 0
    latencies = dict(re.findall(r"^\s+(50|99)(?:\.\d+)?%\s+([\d.]+\w+)", output, re.M))
    if requests > count:
        print("  note: wrk sent %d requests for %d fixtures; repeats were deduplicated" % (requests, count))
    return (requests - errors) / seconds, errors, latencies, output, requests, client_cpu


async def paced(port, bodies, rate, seconds):
    """Open loop: request i is due at start + i / rate; latency counts from that moment."""
    total = int(rate * seconds)
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
            body = bodies[i % len(bodies)]
            writer.write(b"POST /notifications HTTP/1.1\r\nHost: bench\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(body) + body)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = int(re.search(rb"(?i)content-length: (\d+)", head).group(1))
            await reader.readexactly(length)
            latencies.append(time.perf_counter() - due)
            statuses[status] = statuses.get(status, 0) + 1
        writer.close()

    await asyncio.gather(*(worker() for _ in range(64)))
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000
    return pick(0.50), pick(0.99), statuses, total


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=40000, help="fixtures (distinct notifications)")
    parser.add_argument("--duration", type=int, default=10, help="seconds of wrk load")
    parser.add_argument("--binary", default=os.path.join(ROOT, ".build", "release", "signet"))
    parser.add_argument("--keep", help="keep the work folder here")
    args = parser.parse_args()
    if not os.access(args.binary, os.X_OK):
        raise SystemExit("%s not found: swift build -c release --product signet" % args.binary)
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (apt-get install wrk)")
    folder = args.keep or tempfile.mkdtemp(prefix="signet-bench-http-")
    os.makedirs(folder, exist_ok=True)
    try:
        subprocess.run([args.binary, "fixtures", "--out", folder, "--count", str(args.count)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cores = os.cpu_count()
        print("signet webhook benchmark: %d fixtures, %d cores" % (args.count, cores))

        stdin, stdin_cpu = stdin_rate(args.binary, folder, args.count)
        print("  stdin pipeline:          %8.0f notifications/s" % stdin)

        server = Server(args.binary, folder, "data-wrk")
        server_cpu = process_cpu_seconds(server.process.pid)
        rate, errors, wrk_latency, _, requests, client_cpu = wrk_run(folder, server.port, args.duration, args.count)
        server_cpu = process_cpu_seconds(server.process.pid) - server_cpu
        code = server.stop()
        print("  webhook, wrk -c64:       %8.0f requests/s answered 200 (%d other answers; wrk p50 %s, p99 %s; exit %d)"
              % (rate, errors, wrk_latency.get("50", "?"), wrk_latency.get("99", "?"), code))

        print("  CPU per request:         signet %.3f ms, wrk %.3f ms (stdin pipeline: %.3f ms per notification)"
              % (server_cpu * 1000 / requests, client_cpu * 1000 / requests, stdin_cpu * 1000 / args.count))

        half = stdin / 2
        bodies = [line.encode() for line in open(os.path.join(folder, "notifications.ndjson")).read().splitlines()]
        seconds = min(8.0, len(bodies) / half)
        server = Server(args.binary, folder, "data-paced")
        p50, p99, statuses, total = asyncio.run(paced(server.port, bodies, half, seconds))
        code = server.stop()
        print("  webhook at %5.0f req/s:  p50 %.1f ms, p99 %.1f ms over %d requests (answers %s; exit %d)"
              % (half, p50, p99, total, statuses, code))

        ratio = rate / stdin
        print("targets:")
        print("  throughput >= 0.8 x stdin: %.2f x  %s" % (ratio, "met" if ratio >= 0.8 else "NOT MET"))
        print("  p99 < 25 ms at half rate:  %.1f ms  %s" % (p99, "met" if p99 < 25 else "NOT MET"))
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
