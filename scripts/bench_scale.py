#!/usr/bin/env python3
"""Store-scale benchmark: what a notification, an entitlement answer, a sweep, a lookup and a
restart cost when the store already holds N purchases (issue 58), for SQLite and PostgreSQL.

For each store, one store grows through the sizes asked (default 100k, 1M; --sizes) beside a
baseline store that holds only the purchases the measured notifications name ("N = 0"):
  1. `signet fixtures --now` (seed 99) is applied through the stdin pipeline: its purchases (every
     state, consumables, non-renewing, family-shared), their events, dedupe keys, consent and
     refund-question rows are the templates;
  2. bulk SQL (not the pipeline) copies them under new ids up to N, in the proportions of an app
     some years old (--events, --keys; see SEEDING below). 10M purchases take minutes, not days;
  3. measured, each as its own process, baseline and N interleaved (A B A B, --repeats pairs, on
     the same notifications), because on a shared 2-core machine the order of runs decides more
     than the store does:
     - the stdin pipeline's CPU per notification and notifications/s (all cores, and one core
       with taskset and one verify worker), on a mix of half new purchases (fixtures) and half
       DID_RENEW of stored purchases drawn at random among the N (signed here with the fixtures'
       leaf key, as Apple signs them), through decode, verify, dedupe, transition, fanout;
     - the webhook pipeline's start-up (spawn to /readyz 200) and the entitlement API from 64
       connections: --api-rate questions a second on a fixed schedule (open loop: latency counts
       from when a question was due), by originalTransactionId and by appAccountToken (stored
       lower-case, asked in upper case half the time, as clients send it); then as fast as 64
       clients ask (wrk, closed loop: the most it answers, where p99 is about 64 / rate);
     - `signet reconcile --all` planning: spawn to its "reconciling N purchases" line, and its
       peak RSS (Apple is not asked: the API URL points at a closed port and the run is stopped);
     - `signet expire`: one sweep after a day away, one a minute later (the steady sweep);
     - `signet state show` and `signet state history` of random purchases (whole process);
     - bytes on disk per purchase, per table, indexes included.
  4. PostgreSQL at the largest size (--instances, default 3): that many webhook instances on the
     one database, each sent its share of new notifications at once (throughput) and then
     entitlement queries from 64 connections in all, closed loop (capacity and latency).
Prints a table, writes the figures as JSON (--json) and draws them (--png, matplotlib).

SEEDING (per purchase i, copying template i mod T): the purchase row under id 3{i:015d}, its
appAccountToken and appTransactionId derived from i, its renewal dates moved -15 to +45 days;
--events (default 1) events in the outbox spread over the last 90 days (what the shipped
pipelines keep: a store in its steady state, older ones pruned); --keys (default 0.3) dedupe
keys spread over the last 30 (kept as long); one consent restriction per 1,000 purchases; one
answered refund question per 200. Roughly a third of the purchases of an app some years old
are live monthly subscriptions, each with a renewal a month and a few other notifications.

Usage: scripts/bench_scale.py [--sizes 100000,1000000[,10000000]] [--stores sqlite,postgres]
       [--notifications 3000] [--repeats 2] [--seconds 8] [--events 1] [--keys 0.3]
       [--api-rate 1000] [--instances 3] [--json FILE] [--png FILE] [--no-build | --binary PATH] [--keep DIR]
Needs wrk, sqlite3, Python's cryptography and matplotlib (scripts/install-deps.sh; pip), and for
PostgreSQL Debian's postgresql (the server it starts is given 4 GB of shared buffers: see tune()).
10M purchases take about 20 GB on either store.
"""
import argparse
import asyncio
import base64
import json
import os
import random
import re
import shutil
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench import PostgresServer, free_port  # noqa: E402
from bench_http import LUA as POST_LUA  # noqa: E402  (each notification posted once, threads on disjoint slices)
from bench_http import open_loop, percentile_ms  # noqa: E402
from bench_retention import environment_for, peak_rss  # noqa: E402

from cryptography.hazmat.primitives import hashes, serialization  # noqa: E402
from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "scripts/bench_scale.py"
DAY = 86_400_000
AUTO_RENEWABLE = "Auto-Renewable Subscription"

API_LUA = r"""
local paths = {}
for line in io.lines(os.getenv("BENCH_PATHS")) do paths[#paths + 1] = line end
local index = 1
function init(args) index = math.random(#paths) end
function request()
  index = index % #paths + 1
  return wrk.format("GET", paths[index])
end
function done(summary, latency, requests)
  io.write(string.format("RESULT %d %d %d %d %d\n", summary.requests, summary.duration,
    latency:percentile(50), latency:percentile(99), latency.max))
end
"""



# ---------------------------------------------------------------------------------------------
# Seeding: one SQL per table, written once for both dialects.

class Dialect:
    def __init__(self, postgres):
        self.postgres = postgres
        self.prefix = "signet_" if postgres else ""

    def table(self, name):
        return self.prefix + name

    def digits(self, lead, expression):
        """`lead` then `expression` zero-padded to 15 digits: an id of 16 digits, as Apple's."""
        if self.postgres:
            return f"'{lead}' || lpad(({expression})::text, 15, '0')"
        return f"printf('{lead}%015d', {expression})"

    def uuid(self, expression, tag="0000"):
        if self.postgres:
            return (f"lpad(to_hex({expression}), 8, '0') || '-{tag}-4000-8000-' || "
                    f"lpad(to_hex({expression}), 12, '0')")
        return f"printf('%08x-{tag}-4000-8000-%012x', {expression}, {expression})"

    def ids(self, lo=None, hi=None, values=None):
        """The row source `n(i)` of purchase numbers: a range, or a list."""
        if values is not None:
            listed = ",".join(str(v) for v in values)
            if self.postgres:
                return f"unnest(ARRAY[{listed}]::bigint[]) AS n(i)"
            return f"(SELECT value AS i FROM json_each('[{listed}]')) AS n"
        if self.postgres:
            return f"generate_series({lo}::bigint, {hi - 1}::bigint) AS n(i)"
        return f"(WITH RECURSIVE r(i) AS (SELECT {lo} UNION ALL SELECT i + 1 FROM r WHERE i < {hi - 1}) SELECT i FROM r) AS n"

    def json_set(self, column, pairs):
        if self.postgres:
            expression = column
            for key, value in pairs:
                expression = f"jsonb_set({expression}, '{{{key}}}', to_jsonb({value}))"
            return expression
        return f"json_set({column}, " + ", ".join(f"'$.{key}', {value}" for key, value in pairs) + ")"

    def ignore(self):
        return ("", " ON CONFLICT DO NOTHING") if self.postgres else (" OR IGNORE", "")


def seed_statements(dialect, columns, source, now, events, keys, counts):
    """The INSERTs that copy the templates to the purchases `source` names (see SEEDING): `columns`
    are the purchases table's, `counts` the templates' purchases and events."""
    d = dialect
    ignore, conflict = d.ignore()
    # The fixtures' renewal boundaries lie 15 to 45 days ahead: moved by -15 to +45 days, the copies'
    # fall due evenly over the next 90, so a sweep finds a day's worth a day later.
    shift = f"(((n.i * 7919) % {60 * DAY}) - {15 * DAY})"
    moved = {"expires_date", "grace_period_expires_date", "renewal_date", "next_boundary"}
    chosen = []
    for column in columns:
        if column == "original_transaction_id":
            chosen.append(d.digits(3, "n.i"))
        elif column == "transaction_id":
            chosen.append(d.digits(4, "n.i"))
        elif column == "app_account_token":
            chosen.append(d.uuid("n.i"))
        elif column == "app_transaction_id":
            chosen.append(d.digits(7, "n.i"))
        elif column in moved:
            chosen.append(f"t.{column} + {shift}")
        elif column == "previous_original_transaction_id" or column == "migrated_to_original_transaction_id":
            chosen.append("NULL")
        else:
            chosen.append(f"t.{column}")
    statements = [f"""
        INSERT{ignore} INTO {d.table('subscriptions')} ({", ".join(columns)})
        SELECT {", ".join(chosen)} FROM {source}
        JOIN bench_templates t ON t.k = n.i % {counts[0]}{conflict}"""]
    # Events: event j = 0, 1, 2 of purchase i exists when (i + 2j) mod 6 < 2 * events: one a purchase by
    # default, within the 90 days the shipped pipelines keep (a store in its steady state: older ones pruned).
    per_three = max(0, min(6, round(events * 2)))
    if per_three:
        age = f"((n.i * 7919 + j.j * 104729) % {89 * DAY})"
        statements.append(f"""
            INSERT INTO {d.table('outbox')} (event_id, event_type, message_key, environment, product_id, payload,
                                             created_at, delivered_at)
            SELECT {d.uuid("n.i * 3 + j.j", "e000")}, o.event_type, {d.digits(3, "n.i")}, o.environment, o.product_id,
                   o.payload, {now} - {age}, {now} - {age} + 1000
            FROM {source} CROSS JOIN (SELECT 0 AS j UNION ALL SELECT 1 UNION ALL SELECT 2) j
            JOIN bench_events o ON o.k = (n.i + j.j) % {counts[1]}
            WHERE (n.i + j.j * 2) % 6 < {per_three}""")
    per_ten = max(0, min(10, round(keys * 10)))
    if per_ten:
        statements.append(f"""
            INSERT{ignore} INTO {d.table('dedupe_keys')} (key, seen_at)
            SELECT 'n:' || {d.uuid("n.i", "d000")}, {now} - ((n.i * 7919) % {29 * DAY})
            FROM {source} WHERE n.i % 10 < {per_ten}{conflict}""")
    statements.append(f"""
        INSERT{ignore} INTO {d.table('consent_restrictions')} (app_transaction_id, bundle_id, environment, rescinded_at,
                                                          notification_uuid, cleared_at, cleared_by)
        SELECT {d.digits(7, "n.i")}, c.bundle_id, c.environment, {now} - ((n.i * 7919) % {365 * DAY}),
               {d.uuid("n.i", "c000")}, CASE WHEN n.i % 2000 = 0 THEN {now} ELSE NULL END,
               CASE WHEN n.i % 2000 = 0 THEN 'bench' ELSE NULL END
        FROM {source} CROSS JOIN (SELECT bundle_id, environment FROM {d.table('consent_restrictions')} LIMIT 1) c
        WHERE n.i % 1000 = 0{conflict}""")
    record = d.json_set("q.record", [("originalTransactionId", d.digits(3, "n.i")),
                                     ("transactionId", d.digits(4, "n.i")), ("status", "'answered'::text" if d.postgres else "'answered'")])
    status_column = ", status" if d.postgres else ""
    status_value = ", 'answered'" if d.postgres else ""
    statements.append(f"""
        INSERT{ignore} INTO {d.table('consumption_requests')} (transaction_id, requested_at{status_column}, due_at, record)
        SELECT {d.digits(4, "n.i")}, {now} - ((n.i * 7919) % {365 * DAY}){status_value}, NULL, {record}
        FROM {source} CROSS JOIN (SELECT record FROM {d.table('consumption_requests')} LIMIT 1) q
        WHERE n.i % 200 = 0{conflict}""")
    return statements


def template_statements(dialect):
    d = dialect
    return [
        "DROP TABLE IF EXISTS bench_templates", "DROP TABLE IF EXISTS bench_events",
        f"""CREATE TABLE bench_templates AS SELECT *, row_number() OVER (ORDER BY original_transaction_id) - 1 AS k
            FROM {d.table('subscriptions')} WHERE product_type IS NOT NULL""",
        f"""CREATE TABLE bench_events AS SELECT event_type, environment, product_id, payload,
            row_number() OVER (ORDER BY seq) - 1 AS k FROM {d.table('outbox')}""",
        "CREATE UNIQUE INDEX bench_templates_k ON bench_templates (k)",
        "CREATE UNIQUE INDEX bench_events_k ON bench_events (k)",
    ]


class SQLiteStore:
    kind = "sqlite"

    def __init__(self, work, name):
        self.name = name
        self.dir = os.path.join(work, f"data-sqlite-{name}")
        shutil.rmtree(self.dir, ignore_errors=True)
        self.path = os.path.join(self.dir, "signet.sqlite")
        self.dialect = Dialect(False)

    def env(self, base):
        return dict(base, SIGNET_DATA_DIR=self.dir)

    def run(self, *statements):
        database = sqlite3.connect(self.path, timeout=60)
        try:
            for statement in statements:
                database.execute(statement)
            database.commit()
        finally:
            database.close()

    def rows(self, query):
        database = sqlite3.connect(self.path, timeout=60)
        try:
            return database.execute(query).fetchall()
        finally:
            database.close()

    def columns(self, table):
        return [row[1] for row in self.rows(f"PRAGMA table_info({table})")]

    def table_bytes(self):
        """Bytes each table takes with its indexes (the sqlite3 shell's dbstat; freed pages not counted)."""
        out = subprocess.run(["sqlite3", self.path, "SELECT name, sum(pgsize) FROM dbstat GROUP BY name"],
                             capture_output=True, text=True, check=True).stdout
        sizes = {}
        indexes = dict(self.rows("SELECT name, tbl_name FROM sqlite_master WHERE type = 'index'"))
        for line in out.split("\n"):
            if "|" in line:
                name, size = line.rsplit("|", 1)
                table = indexes.get(name, name)
                if not table.startswith("bench_") and not table.startswith("sqlite_"):
                    sizes[table] = sizes.get(table, 0) + int(size)
        return sizes


class PostgresStore:
    kind = "postgres"

    def __init__(self, server, name):
        self.name = name
        self.server = server
        self.url = server.database(f"signet_scale_{name}")
        self.dir = os.path.join(os.path.dirname(server.dir), f"data-postgres-{name}")
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dialect = Dialect(True)

    def env(self, base):
        return dict(base, SIGNET_DATA_DIR=self.dir, SIGNET_DATABASE_URL=self.url)

    def _psql(self, sql):
        return subprocess.run([os.path.join(self.server.bin, "psql"), self.url, "-qAtX", "-v", "ON_ERROR_STOP=1",
                               "-F", "\t", "-c", sql], capture_output=True, text=True, check=True).stdout

    def run(self, *statements):
        self._psql(";\n".join(statements) + ";")

    def rows(self, query):
        return [tuple(line.split("\t")) for line in self._psql(query).split("\n") if line]

    def columns(self, table):
        return [row[0] for row in self.rows(
            f"SELECT column_name FROM information_schema.columns WHERE table_name = 'signet_{table}' "
            "AND column_name NOT IN ('version', 'updated_at', 'owner') ORDER BY ordinal_position")]

    def table_bytes(self):
        return {name.removeprefix("signet_"): int(size) for name, size in self.rows(
            "SELECT relname, pg_total_relation_size(oid) FROM pg_class WHERE relkind = 'r' AND relname LIKE 'signet_%'")}


def seed(store, lo=None, hi=None, values=None, now=None, events=1.0, keys=0.3, chunk=1_000_000):
    """Copies the templates to purchases lo..<hi (in chunks: one transaction each) or to `values`."""
    columns = store.columns("subscriptions")
    counts = [int(store.rows(f"SELECT count(*) FROM {table}")[0][0]) for table in ("bench_templates", "bench_events")]
    if values is not None:
        for start in range(0, len(values), 20_000):
            source = store.dialect.ids(values=values[start:start + 20_000])
            store.run(*seed_statements(store.dialect, columns, source, now, events, keys, counts))
        return
    for start in range(lo, hi, chunk):
        source = store.dialect.ids(start, min(hi, start + chunk))
        store.run(*seed_statements(store.dialect, columns, source, now, events, keys, counts))
        if hi - lo > chunk:
            print(f"    {store.kind}: seeded {min(hi, start + chunk):,} of {hi:,}", flush=True)
    if store.kind == "postgres":
        store.run("ANALYZE")


# ---------------------------------------------------------------------------------------------
# Notifications: fixtures for new purchases, DID_RENEW of stored ones signed here.

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64(segment):
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


class Renewals:
    """Signs DID_RENEW notifications for stored purchases, shaped as a fixture's (same x5c header)."""

    def __init__(self, binary, pki_folder, work):
        with open(os.path.join(pki_folder, "pki", "leaf.key.pem"), "rb") as file:
            self.key = serialization.load_pem_private_key(file.read(), password=None)
        folder = os.path.join(work, "renew-template")
        shutil.rmtree(folder, ignore_errors=True)
        shutil.copytree(os.path.join(pki_folder, "pki"), os.path.join(folder, "pki"))  # the same keys, so the same chain
        out = subprocess.run([binary, "fixtures", "--out", folder, "--now", "--count", "1",
                              "--stdout", "--type", "DID_RENEW"], capture_output=True, text=True, check=True).stdout
        outer = json.loads(out.strip().split("\n")[0])["signedPayload"]
        self.header = outer.split(".")[0]
        self.payload = json.loads(unb64(outer.split(".")[1]))
        data = self.payload["data"]
        self.transaction = json.loads(unb64(data["signedTransactionInfo"].split(".")[1]))
        self.renewal = json.loads(unb64(data["signedRenewalInfo"].split(".")[1]))
        self.serial = 0

    def sign(self, payload):
        signing_input = self.header + "." + b64url(json.dumps(payload, separators=(",", ":")).encode())
        r, s = decode_dss_signature(self.key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        return signing_input + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))

    def notification(self, i, product):
        self.serial += 1
        now = int(time.time() * 1000)
        original = f"3{i:015d}"
        transaction = dict(self.transaction, originalTransactionId=original, transactionId=f"5{self.serial:06d}{i % 10**9:09d}",
                           webOrderLineItemId=f"6{self.serial:06d}{i % 10**9:09d}", productId=product,
                           appAccountToken=f"{i:08x}-0000-4000-8000-{i:012x}", purchaseDate=now - 60_000,
                           originalPurchaseDate=now - 400 * DAY, expiresDate=now + 30 * DAY, signedDate=now)
        transaction.pop("appTransactionId", None)
        renewal = dict(self.renewal, originalTransactionId=original, autoRenewProductId=product, productId=product,
                       renewalDate=now + 30 * DAY, signedDate=now)
        data = dict(self.payload["data"], signedTransactionInfo=self.sign(transaction), signedRenewalInfo=self.sign(renewal))
        data.pop("appTransactionId", None)
        payload = dict(self.payload, notificationUUID=str(uuid.uuid4()), signedDate=now, data=data)
        return json.dumps({"signedPayload": self.sign(payload)})


# ---------------------------------------------------------------------------------------------
# Measurements.

def timed(argv, env, stdin=None, stdout=subprocess.DEVNULL, taskset=None, check=True):
    """Runs argv under /usr/bin/time: (user + system CPU s, wall s, peak RSS MiB)."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        prefix = ["taskset", "-c", taskset] if taskset else []
        started = time.perf_counter()
        result = subprocess.run(prefix + ["/usr/bin/time", "-o", report.name, "-f", "%U %S %M"] + argv, env=env,
                                stdin=stdin, stdout=stdout, stderr=subprocess.PIPE)
        wall = time.perf_counter() - started
        if result.returncode != 0 and check:
            sys.exit(f"{NAME}: {' '.join(argv[:3])} failed ({result.returncode}):\n{result.stderr.decode()[-2000:]}")
        user, system, rss = open(report.name).read().split()[-3:]
        return float(user) + float(system), wall, int(rss) / 1024, result.stderr.decode()


def pipeline_run(binary, pipeline, env, lines, work, taskset=None):
    path = os.path.join(work, "chunk.ndjson")
    with open(path, "w") as file:
        file.write("\n".join(lines) + "\n")
    run_env = dict(env, SIGNET_VERIFY_WORKERS="1") if taskset else env
    with open(path, "rb") as stdin:
        cpu, wall, rss, err = timed([binary, "run", "--pipeline", pipeline], run_env, stdin=stdin, taskset=taskset)
    summary = re.search(r"(\d+) read, (\d+) passed, (\d+) rejected", err)
    if not summary or int(summary.group(3)) != 0 or int(summary.group(1)) != len(lines):
        sys.exit(f"{NAME}: the measured run did not pass every notification: {err[-800:]}")
    return cpu, wall, rss


class Server:
    """The webhook pipeline with the operators' listener: start-up time, API load, peak RSS."""

    def __init__(self, binary, env, work, name):
        self.port, self.admin = free_port(), free_port()
        env = dict(env, SIGNET_HTTP_ADDRESS=f"127.0.0.1:{self.port}", SIGNET_ADMIN_ADDRESS=f"127.0.0.1:{self.admin}")
        self.log = open(os.path.join(work, f"signet-{name}.log"), "wb")
        started = time.perf_counter()
        self.process = subprocess.Popen([binary, "run", "--pipeline", os.path.join(ROOT, "Pipelines", "webhook.yaml")],
                                        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log)
        while True:
            if self.process.poll() is not None:
                sys.exit(f"{NAME}: the webhook pipeline exited ({self.process.returncode}); see {self.log.name}")
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{self.admin}/readyz", timeout=2).status == 200:
                    break
            except OSError:
                pass
            if time.perf_counter() - started > 600:
                sys.exit(f"{NAME}: the webhook pipeline was not ready in 600 s")
            time.sleep(0.01)
        self.startup = time.perf_counter() - started

    def rss(self):
        return peak_rss(self.process.pid)

    def committed(self):
        """Records the pipeline finished (committed, dead-lettered or dropped), from /metrics."""
        text = urllib.request.urlopen(f"http://127.0.0.1:{self.admin}/metrics", timeout=5).read().decode()
        values = dict(re.findall(r"^(signet_records_read_total|signet_records_in_flight) ([\d.e+]+)$", text, re.M))
        return int(float(values.get("signet_records_read_total", 0)) - float(values.get("signet_records_in_flight", 0)))

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=120)


def wrk_api(work, port, paths, seconds, connections=64, threads=2):
    """wrk GETs of `paths` from `connections` clients, each asking again as soon as answered (closed loop)."""
    paths_file = os.path.join(work, f"paths-{port}.txt")
    with open(paths_file, "w") as file:
        file.write("\n".join(paths) + "\n")
    lua = os.path.join(work, "api.lua")
    if not os.path.exists(lua):  # once: several wrk may be starting on it at the same time
        with open(lua + ".tmp", "w") as file:
            file.write(API_LUA)
        os.replace(lua + ".tmp", lua)
    return subprocess.Popen(["wrk", f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "--timeout", "5s", "-s", lua,
                             f"http://127.0.0.1:{port}"], env=dict(os.environ, BENCH_PATHS=paths_file),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wrk_result(process):
    out = process.communicate()[0]
    match = re.search(r"RESULT (\d+) (\d+) (\d+) (\d+) (\d+)", out)
    if not match:
        sys.exit(f"{NAME}: wrk failed: {out[-800:]}")
    requests, duration, p50, p99, worst = map(int, match.groups())
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"rate": requests / (duration / 1e6), "p50_ms": p50 / 1000, "p99_ms": p99 / 1000, "max_ms": worst / 1000,
            "non2xx": int(errors.group(1)) if errors else 0}


def paced(port, paths, rate, seconds, connections=64):
    """Open loop, as an app backend asks (bench_http.open_loop): `rate` questions a second from
    `connections` keep-alive connections, latency counted from when each was due."""
    total = int(rate * seconds)

    def request(i):
        return f"GET {paths[i % len(paths)]} HTTP/1.1\r\nHost: bench\r\n\r\n".encode()

    latencies, statuses, elapsed = asyncio.run(open_loop(port, request, total, rate, connections, reconnect=True))
    return {"rate": total / elapsed, "p50_ms": percentile_ms(latencies, 0.5), "p99_ms": percentile_ms(latencies, 0.99),
            "max_ms": latencies[-1] * 1000, "non2xx": sum(count for status, count in statuses.items() if status != 200)}


def api_paths(ids, count=20_000):
    by_id, by_token = [], []
    for _ in range(count):
        i = random.choice(ids)
        by_id.append(f"/v1/entitlements?originalTransactionId=3{i:015d}")
        token = f"{i:08x}-0000-4000-8000-{i:012x}"
        by_token.append(f"/v1/entitlements?appAccountToken={token.upper() if i % 2 else token}")
    return by_id, by_token


def reconcile_planning(binary, env, work):
    """Spawn to `signet reconcile --all`'s first progress line ("0/N purchases": the ids are
    counted and the checkpoint written); its peak RSS then."""
    key = os.path.join(work, "AuthKey_bench.p8")
    if not os.path.exists(key):
        subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key],
                       check=True, capture_output=True)
    closed = free_port()
    env = dict(env, SIGNET_APPSTORE_KEY_ID="BENCHKEY01", SIGNET_APPSTORE_ISSUER_ID=str(uuid.uuid4()),
               SIGNET_APPSTORE_PRIVATE_KEY=key, SIGNET_APPSTORE_API_URL=f"http://127.0.0.1:{closed}")
    started = time.perf_counter()
    process = subprocess.Popen([binary, "reconcile", "--all", "--restart", "--progress-interval", "0.1"], env=env,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for line in process.stderr:
            if re.search(r"\d+/[1-9]\d* purchases", line):
                return time.perf_counter() - started, peak_rss(process.pid)
        sys.exit(f"{NAME}: signet reconcile --all ended without planning ({process.wait()})")
    finally:
        process.kill()
        process.wait()


def sweeps(binary, pipeline, env):
    later = int(time.time() * 1000) + DAY
    results = []
    for at in (later, later + 60_000):
        output = tempfile.TemporaryFile()
        cpu, wall, rss, _ = timed([binary, "expire", "--pipeline", pipeline, "--at", str(at)], env, stdout=output)
        output.seek(0)
        results.append({"wall_s": wall, "events": sum(1 for _ in output), "rss_mib": rss})
    return results


def lookups(binary, env, ids, count=10):
    walls = {"show": [], "history": []}
    for _ in range(count):
        i = random.choice(ids)
        for command in walls:
            _, wall, _, _ = timed([binary, "state", command, f"3{i:015d}"], env, check=False)
            walls[command].append(wall * 1000)
    return {command: statistics.median(values) for command, values in walls.items()}


def disk(store, purchases):
    sizes = store.table_bytes()
    return {"bytes_per_purchase": sum(sizes.values()) / max(purchases, 1),
            "tables": {table: size / max(purchases, 1) for table, size in sorted(sizes.items(), key=lambda x: -x[1])}}


# ---------------------------------------------------------------------------------------------

def write_pipelines(work):
    """stdin.yaml with the shipped history retention (90 days), as the webhook and Kafka pipelines keep."""
    text = open(os.path.join(ROOT, "Pipelines", "stdin.yaml")).read()
    anchor = "    path: ${SIGNET_DATA_DIR:signet-data}/signet.sqlite\n"
    if anchor not in text:
        sys.exit(f"{NAME}: could not find the store's path in Pipelines/stdin.yaml")
    path = os.path.join(work, "stdin-90d.yaml")
    with open(path, "w") as file:
        file.write(text.replace(anchor, anchor + "    outbox_retention: 90d\n"))
    return path


def tune(server):
    """Settings for a database of tens of GB (the defaults are for a small one: 128 MB of shared
    buffers and 1 GB of WAL between checkpoints, so random updates across a 10M-row table write
    full pages again and again). What an operator of a store this size would set (docs/scaling.md)."""
    psql = [os.path.join(server.bin, "psql"), "-h", "127.0.0.1", "-p", str(server.port), "-U", "postgres", "-qAtX", "-c"]
    for setting in ("shared_buffers = '4GB'", "max_wal_size = '8GB'", "checkpoint_timeout = '15min'",
                    "effective_cache_size = '12GB'", "random_page_cost = 1.1"):
        subprocess.run(psql + [f"ALTER SYSTEM SET {setting}"], check=True, capture_output=True)
    server._run("pg_ctl", "-D", server.dir + "/data", "-l", server.dir + "/server.log", "-w", "restart",
                "-o", f"-p {server.port} -k {server.dir} -c listen_addresses=127.0.0.1")


def make_store(kind, work, server, name):
    return SQLiteStore(work, name) if kind == "sqlite" else PostgresStore(server, name)


def prepare(binary, pipeline, store, env, templates_file, now):
    """Applies the template notifications and records them as the seeding templates."""
    with open(templates_file, "rb") as stdin:
        timed([binary, "run", "--pipeline", pipeline], store.env(env), stdin=stdin)
    store.run(*template_statements(store.dialect))
    templates = store.rows("SELECT k, product_id, product_type FROM bench_templates ORDER BY k")
    return [(int(k), product, kind) for k, product, kind in templates]


def renewal_targets(size, templates, count):
    renewable = [(k, product) for k, product, kind in templates if kind == AUTO_RENEWABLE]
    span = max(size // len(templates), 1)
    targets = []
    for _ in range(count):
        k, product = random.choice(renewable)
        targets.append((random.randrange(span) * len(templates) + k, product))
    return targets


def measure_store(kind, args, binary, pipeline, work, base_env, templates_file, new_lines, renewals, server, rows):
    """Measures one store at every size, appending a row to `rows` (every store's) after each."""
    now = int(time.time() * 1000)
    big, small = make_store(kind, work, server, "big"), make_store(kind, work, server, "base")
    templates = prepare(binary, pipeline, big, base_env, templates_file, now)
    prepare(binary, pipeline, small, base_env, templates_file, now)
    print(f"{kind}: {len(templates)} template purchases applied", flush=True)
    held, cursor, small_ids = 0, 0, set()
    half = args.notifications // 2
    for size in args.sizes:
        started = time.perf_counter()
        seed(big, max(held, 0), size, now=now, events=args.events, keys=args.keys)
        held = size
        seeded = time.perf_counter() - started
        print(f"  {kind} {size:,}: seeded in {seeded:.0f} s", flush=True)
        big_env, small_env = big.env(base_env), small.env(base_env)
        runs = {"base": [], "big": []}
        single = {}
        for repeat in range(args.repeats + 1):
            targets = renewal_targets(size, templates, half)
            fresh = sorted({i for i, _ in targets} - small_ids)
            small_ids.update(fresh)
            seed(small, values=fresh, now=now, events=args.events, keys=args.keys)
            lines = new_lines[cursor:cursor + half] + [renewals.notification(i, product) for i, product in targets]
            cursor += half
            random.shuffle(lines)
            one_core = repeat == args.repeats
            for name, env in (("base", small_env), ("big", big_env)):
                cpu, wall, rss = pipeline_run(binary, pipeline, env, lines, work, taskset="0" if one_core else None)
                entry = {"cpu_us": cpu / len(lines) * 1e6, "rate": len(lines) / wall, "rss_mib": rss}
                if one_core:
                    single[name] = entry
                else:
                    runs[name].append(entry)
        cpu = {name: statistics.median(e["cpu_us"] for e in entries) for name, entries in runs.items()}
        rate = {name: statistics.median(e["rate"] for e in entries) for name, entries in runs.items()}
        row = {"store": kind, "purchases": size, "seed_s": seeded,
               "cpu_us": cpu["big"], "cpu_us_base": cpu["base"], "cpu_ratio": cpu["big"] / cpu["base"],
               "rate": rate["big"], "rate_base": rate["base"], "rate_one_core": single["big"]["rate"],
               "rate_one_core_base": single["base"]["rate"],
               "run_rss_mib": max(e["rss_mib"] for e in runs["big"]), "run_rss_mib_base": max(e["rss_mib"] for e in runs["base"])}
        # Every purchase asked is stored: in the N store any of the N, in the baseline the ones it holds.
        ids = random.sample(range(size), min(size, 10_000))
        for name, env in (("base", small_env), ("big", big_env)):
            by_id, by_token = api_paths(ids if name == "big" else sorted(small_ids))
            server_process = Server(binary, env, work, f"{kind}-{name}")
            try:
                suffix = "" if name == "big" else "_base"
                row["startup_s" + suffix] = server_process.startup
                subprocess.run(["wrk", "-t1", "-c8", "-d2s", f"http://127.0.0.1:{server_process.admin}/healthz"],
                               capture_output=True)
                # --api-rate answers a second over 64 connections (open loop), then as fast as 64 clients ask.
                row["api_id" + suffix] = paced(server_process.admin, by_id, args.api_rate, args.seconds)
                row["api_token" + suffix] = paced(server_process.admin, by_token, args.api_rate, args.seconds)
                row["api_saturated" + suffix] = wrk_result(wrk_api(work, server_process.admin, by_id, args.seconds))
                row["server_rss_mib" + suffix] = server_process.rss()
            finally:
                server_process.stop()
        row["reconcile_plan_s"], row["reconcile_rss_mib"] = reconcile_planning(binary, big_env, work)
        row["lookup_ms"] = lookups(binary, big_env, ids)
        row["sweeps"] = sweeps(binary, pipeline, big_env)
        row["disk"] = disk(big, size)
        print_row(row)
        rows.append(row)
        if args.json:  # after every size, so a long run stopped early keeps what it measured
            save(args.json, rows, None)
    multi = None
    if kind == "postgres" and args.instances > 1:
        multi = instances(args, binary, work, big.env(base_env), templates, args.sizes[-1], new_lines[cursor:], renewals)
    return multi


def instances(args, binary, work, env, templates, size, new_lines, renewals):
    """Several webhook instances on one PostgreSQL database: notifications/s, then API latency."""
    count = args.instances
    servers = [Server(binary, env, work, f"instance-{n}") for n in range(count)]
    try:
        half = min(len(new_lines), args.notifications)
        lines = new_lines[:half] + [renewals.notification(i, product) for i, product in renewal_targets(size, templates, half)]
        random.shuffle(lines)
        lua = os.path.join(work, "post.lua")
        with open(lua, "w") as file:
            file.write(POST_LUA)
        processes = []
        started = time.perf_counter()
        for n, server_process in enumerate(servers):
            bodies = os.path.join(work, f"bodies-{n}.ndjson")
            with open(bodies, "w") as file:
                file.write("\n".join(lines[n::count]) + "\n")
            processes.append(subprocess.Popen(
                ["wrk", "-t2", "-c32", "-d600s", "--timeout", "30s", "-s", lua, f"http://127.0.0.1:{server_process.port}"],
                env=dict(os.environ, BENCH_BODIES=bodies, BENCH_THREADS="2"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        # wrk runs for its whole -d after its threads stopped: done when every post is committed, or when
        # nothing more was for 3 s (wrk loses a request now and then when it reconnects).
        committed, last_change = 0, time.perf_counter()
        while committed < len(lines) and time.perf_counter() - last_change < 3:
            time.sleep(0.1)
            current = sum(s.committed() for s in servers)
            if current != committed:
                committed, last_change = current, time.perf_counter()
        elapsed = last_change - started
        for process in processes:
            process.terminate()
            process.wait()
        ids = [i for i, _ in renewal_targets(size, templates, 5000)]
        by_id, _ = api_paths(ids)
        per = max(1, 64 // count)
        results = [wrk_result(p) for p in [wrk_api(work, s.admin, by_id, args.seconds, connections=per, threads=1)
                                           for s in servers]]
        result = {"instances": count, "purchases": size, "notifications": committed, "rate": committed / elapsed,
                  "api_rate": sum(r["rate"] for r in results), "api_p50_ms": max(r["p50_ms"] for r in results),
                  "api_p99_ms": max(r["p99_ms"] for r in results), "rss_mib": max(s.rss() for s in servers)}
        print(f"  postgres, {count} instances at {size:,}: {result['rate']:.0f} notifications/s posted once each; "
              f"entitlements {result['api_rate']:.0f}/s, p50 {result['api_p50_ms']:.2f} ms, p99 {result['api_p99_ms']:.2f} ms",
              flush=True)
        return result
    finally:
        for server_process in servers:
            server_process.stop()


def print_row(row):
    print(f"  {row['store']} {row['purchases']:,} purchases (baseline in brackets):", flush=True)
    print(f"    pipeline: {row['cpu_us']:.0f} us CPU per notification [{row['cpu_us_base']:.0f}] = {row['cpu_ratio']:.2f}x; "
          f"{row['rate']:.0f}/s [{row['rate_base']:.0f}] all cores, {row['rate_one_core']:.0f}/s "
          f"[{row['rate_one_core_base']:.0f}] one core; peak RSS {row['run_rss_mib']:.0f} MiB [{row['run_rss_mib_base']:.0f}]")
    for key, label in (("api_id", "by originalTransactionId"), ("api_token", "by appAccountToken")):
        big, base = row[key], row[key + "_base"]
        print(f"    entitlements {label}, paced: {big['rate']:.0f}/s p50 {big['p50_ms']:.2f} ms p99 {big['p99_ms']:.2f} ms "
              f"[{base['p99_ms']:.2f}], non-2xx {big['non2xx']}")
    big, base = row["api_saturated"], row["api_saturated_base"]
    print(f"    entitlements as fast as 64 clients ask: {big['rate']:.0f}/s [{base['rate']:.0f}] p50 {big['p50_ms']:.2f} ms "
          f"p99 {big['p99_ms']:.2f} ms [{base['p99_ms']:.2f}]")
    print(f"    start-up {row['startup_s']:.2f} s [{row['startup_s_base']:.2f}], server peak RSS {row['server_rss_mib']:.0f} MiB "
          f"[{row['server_rss_mib_base']:.0f}]; reconcile --all planning {row['reconcile_plan_s']:.2f} s, "
          f"RSS {row['reconcile_rss_mib']:.0f} MiB")
    first, steady = row["sweeps"]
    print(f"    expiry sweep after a day away: {first['events']} events in {first['wall_s']:.2f} s; a minute later: "
          f"{steady['events']} in {steady['wall_s']:.2f} s; signet state show {row['lookup_ms']['show']:.0f} ms, "
          f"history {row['lookup_ms']['history']:.0f} ms")
    tables = ", ".join(f"{t} {b:.0f}" for t, b in list(row["disk"]["tables"].items())[:5])
    print(f"    disk: {row['disk']['bytes_per_purchase']:.0f} B per purchase with indexes ({tables})", flush=True)


def markdown(rows, multi, api_rate):
    lines = [f"| store | purchases | CPU/notification | vs N=0 | notifications/s (all, 1 core) | API at {api_rate}/s: p50/p99 by id | "
             "p99 by token | API flat out: answers/s, p99 | start-up | server RSS | reconcile plan | bytes/purchase |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(
            f"| {row['store']} | {row['purchases']:,} | {row['cpu_us']:.0f} µs | {row['cpu_ratio']:.2f}x | "
            f"{row['rate']:.0f}, {row['rate_one_core']:.0f} | {row['api_id']['p50_ms']:.2f}/{row['api_id']['p99_ms']:.2f} ms | "
            f"{row['api_token']['p99_ms']:.2f} ms | {row['api_saturated']['rate']:.0f}, {row['api_saturated']['p99_ms']:.1f} ms | "
            f"{row['startup_s']:.2f} s | {row['server_rss_mib']:.0f} MiB | "
            f"{row['reconcile_plan_s']:.1f} s, {row['reconcile_rss_mib']:.0f} MiB | "
            f"{row['disk']['bytes_per_purchase']:.0f} |")
    if multi:
        lines.append("")
        lines.append(f"PostgreSQL, {multi['instances']} instances at {multi['purchases']:,} purchases: "
                     f"{multi['rate']:.0f} notifications/s; entitlements flat out from 64 connections {multi['api_rate']:.0f}/s, "
                     f"p50 {multi['api_p50_ms']:.2f} ms, p99 {multi['api_p99_ms']:.2f} ms.")
    return "\n".join(lines)


def save(path, rows, multi):
    with open(path, "w") as file:
        json.dump({"rows": rows, "instances": multi, "machine_cores": os.cpu_count()}, file, indent=1)


def draw(rows, path):
    try:
        import matplotlib
    except ImportError:
        print(f"{NAME}: no PNG: matplotlib is not installed (pip install matplotlib); the figures are in --json")
        return
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    figure, axes = plt.subplots(2, 2, figsize=(11, 8))
    for kind, marker in (("sqlite", "o"), ("postgres", "s")):
        mine = [r for r in rows if r["store"] == kind]
        if not mine:
            continue
        xs = [r["purchases"] for r in mine]
        axes[0][0].plot(xs, [r["cpu_ratio"] for r in mine], marker=marker, label=kind)
        axes[0][1].plot(xs, [r["api_id"]["p99_ms"] for r in mine], marker=marker, label=f"{kind} by id")
        axes[0][1].plot(xs, [r["api_token"]["p99_ms"] for r in mine], marker=marker, linestyle="--", label=f"{kind} by token")
        axes[1][0].plot(xs, [r["server_rss_mib"] for r in mine], marker=marker, label=f"{kind} server")
        axes[1][0].plot(xs, [r["reconcile_rss_mib"] for r in mine], marker=marker, linestyle="--", label=f"{kind} reconcile --all")
        axes[1][1].plot(xs, [r["startup_s"] for r in mine], marker=marker, label=f"{kind} start-up")
        axes[1][1].plot(xs, [r["reconcile_plan_s"] for r in mine], marker=marker, linestyle="--", label=f"{kind} reconcile plan")
    titles = [("CPU per notification, x the N=0 store", "x", 1.3), ("entitlement API p99 (open loop, 64 connections)", "ms", 5),
              ("peak RSS", "MiB", None), ("start-up and reconcile planning", "s", 1)]
    for axis, (title, unit, target) in zip([a for pair in axes for a in pair], titles):
        axis.set_xscale("log")
        axis.set_title(title)
        axis.set_xlabel("purchases in the store")
        axis.set_ylabel(unit)
        if target:
            axis.axhline(target, color="grey", linestyle=":", label="target")
        axis.set_ylim(bottom=0)
        axis.legend(fontsize=8)
        axis.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=90)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100000,1000000", help="purchases, comma-separated, ascending")
    parser.add_argument("--stores", default="sqlite,postgres")
    parser.add_argument("--notifications", type=int, default=3000, help="notifications per measured run (default 3000)")
    parser.add_argument("--repeats", type=int, default=2, help="baseline/N pairs on all cores (default 2), plus one on one core")
    parser.add_argument("--seconds", type=int, default=8, help="each API measurement's length (default 8)")
    parser.add_argument("--events", type=float, default=1.0, help="outbox events per purchase, last 90 days (default 1; steps of 0.5)")
    parser.add_argument("--keys", type=float, default=0.3, help="dedupe keys per purchase, last 30 days (default 0.3; steps of 0.1)")
    parser.add_argument("--api-rate", type=int, default=1000,
                        help="entitlement questions a second, open loop over 64 connections (default 1000)")
    parser.add_argument("--instances", type=int, default=3, help="PostgreSQL instances at the largest size (default 3; 1: skip)")
    parser.add_argument("--json", help="write the figures here")
    parser.add_argument("--png", help="draw the curves here (matplotlib)")
    parser.add_argument("--no-build", action="store_true", help="use the existing release build")
    parser.add_argument("--binary", help="measure this signet binary")
    parser.add_argument("--keep", help="work in this folder and keep it")
    parser.add_argument("--replot", nargs="+", metavar="JSON",
                        help="measure nothing: print the table of these --json files and draw --png from them")
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    if args.replot:
        rows, multi = [], None
        for path in args.replot:
            figures = json.load(open(path))
            rows += figures["rows"]
            multi = figures.get("instances") or multi
        print(markdown(rows, multi, args.api_rate))
        if args.png:
            draw(rows, args.png)
        return
    binary = args.binary or os.path.join(ROOT, ".build", "release", "signet")
    if not args.binary and not args.no_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "signet"], cwd=ROOT, check=True)
    for tool in ("wrk", "sqlite3", "taskset"):
        if not shutil.which(tool):
            sys.exit(f"{NAME}: {tool} is not installed (scripts/install-deps.sh)")
    work = args.keep or tempfile.mkdtemp(prefix="signet-bench-scale-")
    os.makedirs(work, exist_ok=True)
    random.seed(58)
    fixtures = os.path.join(work, "fixtures")
    shutil.rmtree(fixtures, ignore_errors=True)
    subprocess.run([binary, "fixtures", "--out", fixtures, "--now", "--seed", "99", "--count", "3000"], check=True,
                   capture_output=True)
    templates_file = os.path.join(work, "templates.ndjson")
    shutil.copy(os.path.join(fixtures, "notifications.ndjson"), templates_file)
    half = args.notifications // 2
    wanted = half * (len(args.sizes) * (args.repeats + 1) + 1)
    new = os.path.join(work, "new")
    shutil.rmtree(new, ignore_errors=True)
    # Signed by the templates' PKI: `signet fixtures` reuses DIR/pki when it exists.
    shutil.copytree(os.path.join(fixtures, "pki"), os.path.join(new, "pki"))
    subprocess.run([binary, "fixtures", "--out", new, "--now", "--seed", "7", "--count", str(wanted)], check=True,
                   capture_output=True)
    new_lines = [line for line in open(os.path.join(new, "notifications.ndjson")).read().split("\n") if line]
    renewals = Renewals(binary, fixtures, work)
    base_env = environment_for(fixtures, os.path.join(work, "unused"))
    pipeline = write_pipelines(work)
    print(f"machine: {os.cpu_count()} cores; {len(new_lines):,} new notifications, DID_RENEW signed per run; "
          f"{args.notifications} per run, {args.repeats} pairs + 1 on one core", flush=True)
    rows, multi = [], None
    for kind in args.stores.split(","):
        server = None
        if kind == "postgres":
            try:
                server = PostgresServer(work)
                tune(server)
            except (RuntimeError, subprocess.CalledProcessError) as error:
                print(f"postgres: skipped ({error})")
                continue
        try:
            multi = measure_store(kind, args, binary, pipeline, work, base_env, templates_file, new_lines, renewals, server,
                                  rows) or multi
        finally:
            if server:
                server.stop()
            # 10M purchases take 10-30 GB a store: give the disk back before the next store.
            for folder in (f"data-{kind}-big", f"data-{kind}-base", "postgres"):
                shutil.rmtree(os.path.join(work, folder), ignore_errors=True)
    print()
    print(markdown(rows, multi, args.api_rate))
    if args.json:
        save(args.json, rows, multi)
    if args.png:
        draw(rows, args.png)
        print(f"drew {args.png}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
