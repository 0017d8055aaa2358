#!/usr/bin/env python3
"""Peak memory and throughput of the full default pipeline (`signet run`: stdin -> decode ->
verify -> dedupe -> transition with durable SQLite state and outbox -> fanout -> stdout) at
large notification counts, without writing the notifications to disk.

`signet fixtures --out DIR --count N --stdout` signs the notifications and streams them
straight into `signet run` through a pipe (1M notifications would be ~12 GB on disk). Both
processes are reaped with os.wait4, so the pipeline's peak RSS (ru_maxrss) is reported
separately from the generator's. Events go to /dev/null; counts come from --summary-json.

Throughput caveat: the generator signs three ES256 JWS per notification while the pipeline
verifies three, and both share the machine's cores, so the end-to-end rate measured here is
bounded by the generator; it is NOT the pipeline's own throughput (see scripts/bench.py for
that, from a file). The generator's standalone rate is measured too, as the ceiling.

Usage: scripts/bench_memory.py [--counts 100000,1000000] [--no-build] [--workers N] [--keep DIR]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIGNET = os.path.join(ROOT, ".build", "release", "signet")


def fixtures_env(directory):
    """The variables `signet fixtures` wrote to DIR/fixtures.env."""
    env = {}
    with open(os.path.join(directory, "fixtures.env")) as handle:
        for line in handle:
            line = line.strip()
            if line.startswith("export ") and "=" in line:
                key, value = line[len("export "):].split("=", 1)
                env[key] = value
    return env


def rss_mib(usage):
    return usage.ru_maxrss / 1024.0  # Linux: KiB


def generator_rate(work, count):
    """Notifications/s of the generator alone (signing), writing to /dev/null."""
    start = time.perf_counter()
    process = subprocess.Popen(
        [SIGNET, "fixtures", "--out", work, "--count", str(count), "--stdout"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("generator failed")
    return count / elapsed, rss_mib(usage)


def measure(count, workers, keep):
    work = keep and os.path.join(keep, f"n{count}") or tempfile.mkdtemp(prefix=f"signet-bench-memory-{count}-")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    fixtures = os.path.join(work, "fixtures")
    # Count 0 writes the PKI, root.pem and fixtures.env first, so `signet run` can load the root
    # before the streaming generator (which reuses DIR/pki) has produced anything.
    subprocess.run([SIGNET, "fixtures", "--out", fixtures, "--count", "0"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    env = dict(os.environ)
    env.update(fixtures_env(fixtures))
    data = os.path.join(work, "data")
    env["SIGNET_DATA_DIR"] = data
    env["SIGNET_VERIFY_WORKERS"] = str(workers)
    env.pop("SIGNET_FAULT", None)
    summary_path = os.path.join(work, "summary.json")
    stderr_path = os.path.join(work, "run.stderr")

    start = time.perf_counter()
    generator = subprocess.Popen(
        [SIGNET, "fixtures", "--out", fixtures, "--count", str(count), "--stdout"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    with open(stderr_path, "wb") as stderr:
        pipeline = subprocess.Popen(
            [SIGNET, "run", "--summary-json", summary_path], stdin=generator.stdout,
            stdout=subprocess.DEVNULL, stderr=stderr, env=env)
    generator.stdout.close()  # the pipeline holds the read end

    # Sample the pipeline's RSS over time (VmRSS) to show it stays flat, besides the peak.
    samples = []
    stop = threading.Event()

    def sample():
        while not stop.wait(2.0):
            try:
                with open(f"/proc/{pipeline.pid}/status") as status:
                    for line in status:
                        if line.startswith("VmRSS:"):
                            samples.append((time.perf_counter() - start, int(line.split()[1]) / 1024.0))
            except OSError:
                return

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, run_status, run_usage = os.wait4(pipeline.pid, 0)
    elapsed = time.perf_counter() - start
    stop.set()
    _, gen_status, gen_usage = os.wait4(generator.pid, 0)
    pipeline.returncode = os.waitstatus_to_exitcode(run_status)
    generator.returncode = os.waitstatus_to_exitcode(gen_status)
    if pipeline.returncode != 0 or generator.returncode != 0:
        with open(stderr_path) as handle:
            sys.exit(f"n={count}: run exit {pipeline.returncode}, generator exit {generator.returncode}\n{handle.read()[-2000:]}")
    with open(summary_path) as handle:
        summary = json.load(handle)
    db_bytes = sum(os.path.getsize(os.path.join(data, name)) for name in os.listdir(data) if name.startswith("signet.sqlite"))
    result = {
        "count": count,
        "seconds": elapsed,
        "rate": count / elapsed,
        "run_rss": rss_mib(run_usage),
        "gen_rss": rss_mib(gen_usage),
        "run_cpu": run_usage.ru_utime + run_usage.ru_stime,
        "gen_cpu": gen_usage.ru_utime + gen_usage.ru_stime,
        "summary": summary,
        "db_mib": db_bytes / 1048576.0,
        "samples": samples,
    }
    if not keep:
        shutil.rmtree(work, ignore_errors=True)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="100000,1000000", help="comma-separated notification counts")
    parser.add_argument("--workers", type=int, default=0, help="SIGNET_VERIFY_WORKERS (0: every core)")
    parser.add_argument("--no-build", action="store_true", help="never build; fail if the release binary is missing")
    parser.add_argument("--keep", help="keep fixtures and data under this folder")
    args = parser.parse_args()

    if not os.path.exists(SIGNET):
        if args.no_build:
            sys.exit(f"{SIGNET} is missing (build: swift build -c release --product signet)")
        subprocess.run(["swift", "build", "-c", "release", "--product", "signet"], cwd=ROOT, check=True)

    cores = os.cpu_count()
    scratch = tempfile.mkdtemp(prefix="signet-bench-gen-")
    gen_rate, _ = generator_rate(scratch, 20000)
    shutil.rmtree(scratch, ignore_errors=True)
    print(f"signet bench_memory: {SIGNET}, {cores} cores, SIGNET_VERIFY_WORKERS={args.workers}")
    print(f"generator alone (signing 3 JWS per notification, 20k to /dev/null): {gen_rate:,.0f} notifications/s")
    print()

    results = []
    for count in [int(c) for c in args.counts.split(",") if c]:
        print(f"running n={count:,} ...", file=sys.stderr, flush=True)
        results.append(measure(count, args.workers, args.keep))

    header = f"{'notifications':>13} | {'wall s':>7} | {'notif/s':>7} | {'run peak RSS':>12} | {'gen peak RSS':>12} | {'run CPU s':>9} | {'gen CPU s':>9} | {'events':>9} | {'SQLite MiB':>10}"
    print(header)
    print("-" * len(header))
    for r in results:
        s = r["summary"]
        print(f"{r['count']:>13,} | {r['seconds']:>7.1f} | {r['rate']:>7,.0f} | {r['run_rss']:>8.1f} MiB | {r['gen_rss']:>8.1f} MiB | "
              f"{r['run_cpu']:>9.1f} | {r['gen_cpu']:>9.1f} | {s.get('delivered', 0):>9,} | {r['db_mib']:>10.1f}")
    print()
    for r in results:
        s = r["summary"]
        rss = [mib for _, mib in r["samples"]]
        trend = ""
        if len(rss) >= 4:
            quarter = len(rss) // 4
            trend = f"; pipeline RSS sampled every 2 s: first quarter max {max(rss[:quarter]):.1f} MiB, last quarter max {max(rss[-quarter:]):.1f} MiB"
        print(f"n={r['count']:,}: read {s.get('read')}, passed {s.get('passed')}, rejected {s.get('rejected')}, "
              f"dropped {s.get('dropped')}, delivered {s.get('delivered')}{trend}")
    print()
    print("notif/s is end to end with the generator and the pipeline sharing "
          f"{cores} cores: it is bounded by the generator's signing (3 ES256 signatures per notification; "
          f"{gen_rate:,.0f}/s alone), not a measure of the pipeline's own throughput (scripts/bench.py measures that from a file). "
          "Peak RSS is ru_maxrss from os.wait4 of each process.")


if __name__ == "__main__":
    main()
