#!/usr/bin/env python3
"""Kafka -> decode -> verify -> dedupe -> transition -> Kafka throughput and latency.

Runs Pipelines/kafka.yaml (`signet run --pipeline`) against `signet dev-broker` on
`signet fixtures` notifications, with kcat as the independent client, and compares with the
stdin pipeline (`signet run` on the same fixtures file, fresh data dir) measured in the same run.

  throughput   all --count notifications are produced first (keyed by originalTransactionId, spread
               over --partitions partitions so no partition nears the mock's 5 MiB limit), then
               the pipeline starts; rate = events/s between the first and the last output message
               timestamp, scaled to notifications (events per notification is the stdin run's
               ratio). The consumer-group join (~3 s) is not counted.
  latency      a fresh topic pair and group; the pipeline runs first, then a paced producer (kcat,
               fed by this script) sends at --latency-fraction (50%) of the measured Kafka rate for
               --latency-seconds; latency = output message timestamp (set by the pipeline's producer)
               - the moment this script handed the line to kcat, matched by notificationUUID (the
               event JSON carries the source notification's). Stricter than the input message's
               own timestamp: kcat's stdin read and produce call count too.

No consumer reads an output topic during a measurement (each is read once the run is over), so
only the pipeline, the broker and the producer share the cores. The latency topic has
--latency-partitions (4) partitions because the mock keeps each partition's log as a list it
walks from the oldest message on every fetch (rdkafka_mock.c): its fetch cost grows with what
it retains, up to 5 MiB per partition, and would take the cores the pipeline needs; a real
broker finds an offset through an index.

Targets: Kafka throughput >= 80% of stdin's; p99 latency < 50 ms at half that rate.
Prints a table and PASS/FAIL; exit status 1 when a target fails.

Usage: scripts/bench_kafka.py [--count 16000] [--partitions 64] [--signet .build/release/signet]
Settings can be overridden for experiments with --env NAME=VALUE (e.g.
--env SIGNET_KAFKA_FETCH_WAIT_MS=50) or --pipeline FILE (a modified copy of Pipelines/kafka.yaml).
"""

import argparse
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def log(message):
    print(message, file=sys.stderr, flush=True)


def newest_source_mtime():
    newest = 0.0
    for folder in ("Sources",):
        for base, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                newest = max(newest, os.path.getmtime(os.path.join(base, name)))
    return newest


def ensure_binary(path, rebuild):
    stale = os.path.exists(path) and os.path.getmtime(path) < newest_source_mtime()
    if os.path.exists(path) and not (stale and rebuild):
        if stale:
            log(f"note: {path} is older than Sources/ (pass --rebuild to rebuild)")
        return
    log("building: swift build -c release --product signet")
    subprocess.run(["swift", "build", "-c", "release", "--product", "signet"], cwd=ROOT, check=True)


def jws_payload(jws):
    part = jws.split(".")[1]
    part += "=" * (-len(part) % 4)
    return json.loads(base64.urlsafe_b64decode(part))


def describe(line):
    """(key, notificationUUID) of a notification line, read without verifying."""
    notification = jws_payload(json.loads(line)["signedPayload"])
    uuid = notification.get("notificationUUID", "")
    original = None
    data = notification.get("data") or {}
    if "signedTransactionInfo" in data:
        original = jws_payload(data["signedTransactionInfo"]).get("originalTransactionId")
    return (original or uuid), uuid


class Children:
    """Every process started here; all are stopped at the end, also on errors."""

    def __init__(self):
        self.processes = []

    def start(self, args, **kwargs):
        process = subprocess.Popen(args, **kwargs)
        self.processes.append(process)
        return process

    def stop_all(self):
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.time() + 15
        for process in self.processes:
            try:
                process.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


KCAT_COMMON = ["-X", "broker.address.family=v4", "-X", "log_level=3"]


def read_json_lines(path):
    messages = []
    if not os.path.exists(path):
        return messages
    with open(path, "rb") as handle:
        for raw in handle:
            raw = raw.strip()
            if raw:
                try:
                    messages.append(json.loads(raw))
                except ValueError:
                    pass  # a line cut at the moment the consumer was stopped
    return messages


def wait_for(predicate, timeout, interval=0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def percentile(values, fraction):
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, int(round(fraction * (len(ordered) - 1)))))
    return ordered[index]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=16000, help="notifications for the throughput run (default 16000)")
    parser.add_argument("--partitions", type=int, default=64, help="partitions of the throughput run's topics (default 64)")
    parser.add_argument("--signet", default=os.path.join(ROOT, ".build/release/signet"))
    parser.add_argument("--rebuild", action="store_true", help="rebuild the release binary when older than Sources/")
    parser.add_argument("--pipeline", default=os.path.join(ROOT, "Pipelines/kafka.yaml"))
    parser.add_argument("--latency-fraction", type=float, default=0.5)
    parser.add_argument("--latency-partitions", type=int, default=4,
                        help="partitions of the latency run's topics (default 4; see above)")
    parser.add_argument("--latency-rate", type=float, help="pace the latency run at this rate instead (comparisons)")
    parser.add_argument("--latency-seconds", type=float, default=6.0, help="length of the paced latency run (default 6)")
    parser.add_argument("--latency-count", type=int, default=16000,
                        help="notifications generated for the latency run, at most (default 16000)")
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the pipeline (repeatable)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()

    ensure_binary(args.signet, args.rebuild)
    work = tempfile.mkdtemp(prefix="signet-bench-kafka-")
    children = Children()
    try:
        return run(args, work, children)
    finally:
        children.stop_all()
        if args.keep:
            log(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def run(args, work, children):
    signet = args.signet
    fixtures = os.path.join(work, "fixtures")
    generated = max(args.count, args.latency_count)
    log(f"generating {generated} notifications ...")
    subprocess.run([signet, "fixtures", "--out", fixtures, "--count", str(generated)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    notifications = os.path.join(fixtures, "notifications.ndjson")
    with open(notifications) as handle:
        all_lines = [line.rstrip("\n") for line in handle if line.strip()]
    all_described = [describe(line) for line in all_lines]
    uuid_of_line = {line: uuid for line, (_, uuid) in zip(all_lines, all_described)}
    lines, described = all_lines[:args.count], all_described[:args.count]
    stdin_input = os.path.join(work, "throughput.ndjson")
    with open(stdin_input, "w") as handle:
        handle.writelines(line + "\n" for line in lines)
    keyed = "".join(f"{key}\t{line}\n" for line, (key, _) in zip(lines, described))
    size = sum(len(line) for line in lines) / len(lines)

    base_env = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET_")}
    base_env.update({
        "SIGNET_ROOT_CERTS": os.path.join(fixtures, "root.pem"), "SIGNET_ENVIRONMENT": "Sandbox",
        "SIGNET_BUNDLE_ID": "com.example.signet",
        # Pipelines/kafka.yaml has an operators' listener: a free port, beside anything running.
        "SIGNET_ADMIN_ADDRESS": "127.0.0.1:0",
    })

    # 1. stdin pipeline, fresh data dir.
    log(f"stdin pipeline on {len(lines)} notifications ...")
    env = dict(base_env, SIGNET_DATA_DIR=os.path.join(work, "stdin-data"))
    summary_path = os.path.join(work, "stdin-summary.json")
    started = time.time()
    with open(stdin_input, "rb") as stdin, open(os.path.join(work, "stdin-events.ndjson"), "wb") as stdout:
        subprocess.run([signet, "run", "--summary-json", summary_path], stdin=stdin, stdout=stdout,
                       stderr=subprocess.DEVNULL, env=env, check=True)
    stdin_wall = time.time() - started
    stdin_summary = json.load(open(summary_path))
    stdin_rate = stdin_summary["read"] / stdin_summary["elapsedSeconds"]
    stdin_events = stdin_summary["delivered"]
    events_per_notification = stdin_events / len(lines)

    # 2. dev-broker.
    parts = args.partitions
    broker = children.start(
        [signet, "dev-broker", "--topic", f"in:{parts}", "--topic", f"out:{parts}", "--topic", "dlq:1",
         "--topic", f"in2:{args.latency_partitions}", "--topic", f"out2:{parts}", "--topic", "dlq2:1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    brokers = broker.stdout.readline().strip()
    if not brokers.startswith("127.0.0.1:"):
        raise SystemExit(f"dev-broker printed no address: {brokers!r}")
    overrides = dict(item.split("=", 1) for item in args.env)

    def pipeline_env(suffix, group):
        env = dict(base_env)
        env.update({
            "SIGNET_KAFKA_BROKERS": brokers, "SIGNET_KAFKA_GROUP": group,
            "SIGNET_INPUT_TOPIC": "in" + suffix, "SIGNET_OUTPUT_TOPIC": "out" + suffix,
            "SIGNET_DEAD_LETTER_TOPIC": "dlq" + suffix, "SIGNET_KAFKA_SESSION_TIMEOUT_MS": "6000",
            "SIGNET_KAFKA_HEARTBEAT_MS": "1000", "SIGNET_DATA_DIR": os.path.join(work, f"kafka-data{suffix}"),
        })
        env.update(overrides)
        return env

    def end_offsets(topic, partitions):
        """Messages in `topic` (sum of its partitions' high watermarks), asked with kcat -Q."""
        query = []
        for partition in range(partitions):
            query += ["-t", f"{topic}:{partition}:-1"]
        result = subprocess.run(["kcat", "-Q", "-b", brokers] + query + KCAT_COMMON,
                                capture_output=True, text=True, timeout=30)
        return sum(int(line.rsplit(" ", 1)[1]) for line in result.stdout.splitlines() if " offset " in line)

    def read_topic(topic):
        """Every message of `topic` as kcat's JSON envelopes (read once the run is over)."""
        path = os.path.join(work, f"{topic}.jsonl")
        with open(path, "wb") as handle:
            subprocess.run(["kcat", "-C", "-b", brokers, "-t", topic, "-o", "beginning", "-e", "-q", "-J"] + KCAT_COMMON,
                           stdout=handle, stderr=subprocess.DEVNULL, timeout=120)
        return read_json_lines(path)

    def wait_for_output(topic, partitions, wanted, process, timeout):
        """Waits until `topic` holds `wanted` messages, or stopped growing for 2 s after
        its first message (the events-per-notification ratio is an estimate), or `process` exited."""
        seen = {"count": -1, "since": time.time()}

        def settled():
            current = end_offsets(topic, partitions)
            if current != seen["count"]:
                seen.update(count=current, since=time.time())
            stalled = current > 0 and time.time() - seen["since"] > 2.0
            return current >= wanted or stalled or process.poll() is not None

        return wait_for(settled, timeout=timeout, interval=0.5)

    # No consumer reads the output topics during a measurement, so none competes with the
    # pipeline for the cores: they are read afterwards, and the timestamps in them are
    # the ones the pipeline's producer set when it produced.
    # 3. Throughput: backlog first, then the pipeline.
    log(f"kafka throughput: producing {len(lines)} keyed notifications to {parts} partitions ...")
    subprocess.run(["kcat", "-P", "-b", brokers, "-t", "in", "-K\t"] + KCAT_COMMON, input=keyed.encode(), check=True)
    stderr_path = os.path.join(work, "pipeline1.stderr")
    pipeline = children.start(
        [signet, "run", "--pipeline", args.pipeline, "--summary-json", os.path.join(work, "kafka-summary.json")],
        env=pipeline_env("", "bench"), stdout=subprocess.DEVNULL, stderr=open(stderr_path, "wb"))
    launched = time.time()
    # The group join (~3 s) comes first; the window below starts at the first output.
    done = wait_for_output("out", parts, stdin_events, pipeline, timeout=120 + len(lines) / 50)
    pipeline.send_signal(signal.SIGTERM)
    pipeline.wait(timeout=40)
    outputs = read_topic("out")
    if not done or not outputs:
        raise SystemExit(f"the Kafka pipeline published {len(outputs)}/{stdin_events} events; see {stderr_path}")
    stamps = sorted(message["ts"] for message in outputs)
    window = max((stamps[-1] - stamps[0]) / 1000.0, 1e-3)
    kafka_event_rate = (len(stamps) - 1) / window
    kafka_rate = kafka_event_rate / events_per_notification
    first_output_after = stamps[0] / 1000.0 - launched
    kafka_summary = json.load(open(os.path.join(work, "kafka-summary.json")))

    # 4. Latency: pipeline first, then a paced producer at a fraction of the measured rate.
    rate = args.latency_rate or kafka_rate * args.latency_fraction
    count = min(len(all_lines), max(50, int(rate * args.latency_seconds)))
    log(f"kafka latency: {count} notifications paced at {rate:.0f}/s ...")
    stderr2_path = os.path.join(work, "pipeline2.stderr")
    summary2_path = os.path.join(work, "kafka-latency-summary.json")
    pipeline2 = children.start([signet, "run", "--pipeline", args.pipeline, "--summary-json", summary2_path],
                               env=pipeline_env("2", "bench-latency"), stdout=subprocess.DEVNULL,
                               stderr=open(stderr2_path, "wb"))
    if not wait_for(lambda: b"kafka: assigned" in open(stderr2_path, "rb").read(), timeout=30):
        raise SystemExit(f"the latency pipeline never joined its group; see {stderr2_path}")
    time.sleep(1.0)  # let the first fetches settle
    producer = children.start(["kcat", "-P", "-b", brokers, "-t", "in2", "-K\t", "-X", "linger.ms=0"] + KCAT_COMMON,
                              stdin=subprocess.PIPE)
    interval = 1.0 / rate
    sent_at = {}
    began = time.time()
    for index in range(count):
        target = began + index * interval
        delay = target - time.time()
        if delay > 0:
            time.sleep(delay)
        line = all_lines[index]
        sent_at[all_described[index][1]] = int(time.time() * 1000)
        producer.stdin.write(f"{all_described[index][0]}\t{line}\n".encode())
        producer.stdin.flush()
    producer.stdin.close()
    producer.wait(timeout=30)
    produced_for = time.time() - began
    expected_uuids = {all_described[index][1] for index in range(count)}

    wanted_events = int(round(count * events_per_notification))
    wait_for_output("out2", parts, wanted_events, pipeline2, timeout=60)
    pipeline2.send_signal(signal.SIGTERM)
    pipeline2.wait(timeout=40)
    outputs2 = read_topic("out2")
    input_ts = sent_at
    output_ts = {}
    for message in outputs2:
        uuid = json.loads(message["payload"]).get("notificationUUID")
        if uuid in input_ts:
            output_ts[uuid] = min(message["ts"], output_ts.get(uuid, message["ts"]))
    latencies = [output_ts[uuid] - input_ts[uuid] for uuid in output_ts]
    by_second = {}
    for uuid in output_ts:
        by_second.setdefault(int((input_ts[uuid] / 1000.0) - began), []).append(output_ts[uuid] - input_ts[uuid])
    per_second = " ".join(f"{percentile(by_second[second], 0.99):.0f}" for second in sorted(by_second))
    p50, p99 = percentile(latencies, 0.50), percentile(latencies, 0.99)
    worst = max(latencies) if latencies else float("nan")
    with_events = len(expected_uuids & set(output_ts))

    ratio = kafka_rate / stdin_rate
    throughput_ok = ratio >= 0.8
    latency_ok = bool(latencies) and p99 < 50
    rows = [
        ("fixtures", f"{len(lines)} notifications, {size / 1024:.1f} KiB each, {stdin_events} events"),
        ("stdin pipeline", f"{stdin_rate:,.0f} notifications/s (runner: {stdin_summary['read']} in "
                           f"{stdin_summary['elapsedSeconds']:.2f} s; wall {stdin_wall:.2f} s incl. start)"),
        ("kafka pipeline", f"{kafka_rate:,.0f} notifications/s ({kafka_event_rate:,.0f} events/s over "
                           f"{window:.2f} s between first and last output; {parts} partitions)"),
        ("kafka runner summary", f"{kafka_summary['read']} read in {kafka_summary['elapsedSeconds']:.2f} s incl. "
                                 f"group join; first output {first_output_after:.1f} s after launch"),
        ("kafka / stdin", f"{ratio * 100:.0f}%  (target >= 80%)  {'PASS' if throughput_ok else 'FAIL'}"),
        ("latency run", f"{count} notifications paced at {rate:,.0f}/s ({count / produced_for:,.0f}/s achieved), "
                        f"{len(latencies)} matched ({with_events} of the paced ones had events)"),
        ("latency p50 / p99 / max", f"{p50:.0f} / {p99:.0f} / {worst:.0f} ms  (target p99 < 50 ms)  "
                                    f"{'PASS' if latency_ok else 'FAIL'}"),
    ]
    rows.append(("p99 per second", f"{per_second} ms"))
    own = (json.load(open(summary2_path)) if os.path.exists(summary2_path) else {}).get("latency")
    if own:
        rows.append(("signet's own view", f"p50 / p99 / max {own['p50Milliseconds']} / {own['p99Milliseconds']} / "
                                          f"{own['maxMilliseconds']} ms from input message timestamp to commit "
                                          f"({own['count']} records; includes the events' acknowledgement)"))
    if overrides:
        rows.insert(0, ("overrides", " ".join(args.env)))
    width = max(len(name) for name, _ in rows)
    print(f"signet Kafka benchmark ({os.path.relpath(signet, ROOT)}, {os.cpu_count()} cores)")
    for name, value in rows:
        print(f"  {name.ljust(width)}  {value}")
    print("RESULT:", "PASS" if throughput_ok and latency_ok else "FAIL")
    return 0 if throughput_ok and latency_ok else 1


if __name__ == "__main__":
    sys.exit(main())
