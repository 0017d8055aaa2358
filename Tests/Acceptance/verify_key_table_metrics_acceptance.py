#!/usr/bin/env python3
"""Acceptance tests for verify's per-key ES256 table as an operator sees it: the webhook and its /metrics.

    python3 Tests/Acceptance/verify_key_table_metrics_acceptance.py .build/debug/signet

Written from the documentation only (docs/verification.md "Speed", docs/operations.md "Metrics",
docs/webhook.md, docs/pipelines.md, README.md, Pipelines/webhook.yaml, `signet --help`,
`signet run --help`, `signet fixtures --help`), not from Signet's sources. The promise under test:
after a leaf's chain has verified for 256 signatures in one process, Signet precomputes a table for
that leaf's public key, once per leaf and process; only signatures under a chain that verified
count (keys an attacker makes up never get a table); `signet_verifier_key_tables_total` (a counter,
no labels) counts the tables built; and no verdict changes because of a table.

`signet run --pipeline Pipelines/webhook.yaml` runs with its state store in a temporary directory,
the fixtures' root, environment Sandbox and the fixtures' bundle id (`source fixtures.env`, as
docs/webhook.md says), the webhook and the operators' listener on free ports of 127.0.0.1. Every
notification is POSTed as Apple does (`{"signedPayload": ...}`, keep-alive connections) and
/metrics is scraped with plain HTTP and read as Prometheus reads the text format.

A signature counts as one JWS: the signedPayload and each nested signedTransactionInfo /
signedRenewalInfo (docs/verification.md), and RESCIND_CONSENT's appData.signedAppTransactionInfo
("verified like every nested JWS", docs/state-machine.md). Where it is not certain that a JWS was
verified under its chain (a retry; a forged line whose outer JWS names the trusted leaf), two bounds
are kept: `certain` counts only the JWS of valid notifications posted for the first time, `possible`
also every retry and every JWS under that leaf's x5c in any forged line. The counter must be 0
while `possible` <= 255, and exactly the number of leaves past the threshold once `certain` >= 300
("well past 256"). After the restart nothing but valid notifications reaches the process, so the
count is exact there and the 256th signature itself is checked.

Checks, in order, on one process and then on a restarted one over the same store:
1. Before any notification the series is exposed, typed counter, at 0.
2. A set of forged lines (A is the fixtures' leaf; B a second leaf the fixtures' intermediate issues,
   as when Apple rotates its key): A's signature with a bit of r or s flipped, r = 0, s = n, a
   verification point at infinity, the payload altered after signing (a field, one byte), another
   key's signature under A's x5c, x5c of A signed by B and of B signed by A, B's signature with a
   bit flipped, forged nested signedTransactionInfo (a bit flipped, another key) and
   signedRenewalInfo inside notifications A validly signed, one line per self-made chain, the
   fixtures' forged.ndjson, and a malleated (r, n - s) valid signature, is posted at the start:
   each answered with the reason the docs give it.
3. 1,120 notifications from four self-made chains (a rogue root and intermediate with Apple's
   marker OIDs, two keys under them; a self-issued leaf presented with the fixtures' real
   intermediate and root; A's own key under the rogue root), 280 per key, on 4 connections at once:
   every one 200 dead_lettered invalid_certificate_chain, counted once each in
   signet_records_rejected_total, and the counter stays 0 (also sampled during the flood).
4. A's valid notifications one at a time, a scrape after each, every 8th sent again (Apple's retry):
   each first POST 200 committed, each retry 200 dropped duplicate; the counter is 0 at every scrape
   while `possible` <= 255, never above 1, never falls, and is exactly 1 once `certain` >= 300.
5. 30 more valid notifications (with retries) keep it at 1.
6. The forged set again: the same HTTP status and body as at the start for every line (the malleated
   valid signature now a duplicate, as its first post was committed); the counter stays 1.
7. B's notifications (A's re-signed by B, fresh ids): one at a time while B's `possible` <= 255,
   the counter stays 1; the rest on 4 connections at once (several verify workers near B's 256th
   signature): every one committed, and the counter is exactly 2, and still 2 a moment later.
   Some of B's are sent again: duplicates. The forged set a third time: same answers; counter 2.
8. SIGTERM: exit 0. The same store, a new process: the counter is exposed at 0 again. Notifications
   the first process committed (about 150 signatures) are dropped as duplicates and, as
   docs/webhook.md says a copy goes through decode and verify before dedupe drops it,
   signet_notifications_verified_total grows by one for each; the counter stays 0. Fresh
   notifications of A one at a time: 0 while duplicates + fresh <= 255; 1 right after the
   notification that carries the 256th signature (the build runs on the thread whose verification
   reached the 256th use), and 1 once duplicates + fresh >= 300 (the duplicates counted, because
   they were verified); exactly 1, never more, once the fresh alone are >= 300 (not depending on
   the duplicates). The forged set a fourth time: same answers; counter 1. SIGTERM: exit 0.
9. The dead-letter file: each forged line that was dead-lettered is there once per post (four
   times) with one reason (the one the answer named), one detail, one stage and one id; the
   malleated valid line and the non-JSON body never are.

Everything happens in a fresh temporary directory (removed at the end; no SIGNET_* variable of the
caller's environment is passed on); every process started is stopped. One line per check,
`ok - ...` or `FAIL - ...` (with indented `#` lines saying what was sent, expected and seen); exit 1
when any check failed, 2 when the script could not run at all. Needs Python's `cryptography`.
"""

import http.client
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

from forgery import (
    PKI, N, Forged, Forger, at_infinity, by_another_key, cryptography_missing, flipped, jws_count, jws_in, malleated,
    outer_jws, raw, reforged, resign, xor_rs,
)
from harness import (
    CannotRun, OutOfTime, RunningChild, arm_time_limit, b64url_decode, check, clean_up, clip, free_port, guarded,
    metric_value, ndjson_lines, parse_json, parse_metrics, read_fixtures_env, signet_binary, stop, summarize,
    wait_until,
)

TIME_LIMIT = 170  # seconds: a stop, not a target (the script takes well under 90 s)
THRESHOLD = 256  # docs/verification.md: a table after 256 signatures under a verified chain
WELL_PAST = 300  # signatures certainly verified under a leaf by which its table must exist
FIXTURE_COUNT = 480  # ~1,250 JWS of leaf A
ROGUE_PER_KEY = 280  # notifications per self-made key (each one JWS that is checked)
FURTHER = 30  # valid notifications of A posted after A's table
RETRY_EVERY = 8  # every 8th notification is sent again (Apple's retry)
B_LINES = 140  # notifications re-signed by leaf B (~420 JWS)
DUPLICATE_BUDGET = 150  # JWS in the already-processed notifications posted after the restart
SETTLE = 5.0  # seconds a counter may take to show a table once it must exist
METRIC = "signet_verifier_key_tables_total"
NOTIFICATIONS_PATH = "/notifications"  # Pipelines/webhook.yaml's `path`
REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
WEBHOOK_PIPELINE = os.path.join(REPO, "Pipelines", "webhook.yaml")

NOTES = []  # what a reader should know beside the checks, printed at the end


def note(text):
    NOTES.append(text)
    print("# " + text, flush=True)


# ----------------------------------------------------------------------------- HTTP


class Answer:
    def __init__(self, status, body, sent=""):
        self.status, self.body, self.sent = status, body, sent

    def shape(self):
        """What Apple's side sees: the status and the body (parsed when it is JSON)."""
        parsed = parse_json(self.body)
        return (self.status, parsed if parsed is not None else self.body)

    def is_(self, status, reason=None):
        body = parse_json(self.body)
        if self.status != 200 or not isinstance(body, dict) or body.get("status") != status:
            return False
        return reason is None or body.get("reason") == reason

    def said(self):
        return f"sent: POST {NOTIFICATIONS_PATH} {clip(self.sent, 160)}\ngot: {self.status} {clip(self.body, 400)}"


class Client:
    """One keep-alive connection to the webhook, as Apple's sender keeps one; a connection idle for
    more than a few seconds is opened again before the next request (the server's read_timeout is
    10 s). A request is never resent: a transport error is an answer with status None."""

    def __init__(self, port):
        self.port, self.connection, self.last = port, None, 0.0

    def close(self):
        if self.connection is not None:
            try:
                self.connection.close()
            except OSError:
                pass
        self.connection = None

    def post(self, body):
        data = body.encode()
        if self.connection is None or time.monotonic() - self.last > 3:
            self.close()
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            self.connection.request("POST", NOTIFICATIONS_PATH, body=data,
                                    headers={"Content-Type": "application/json", "User-Agent": "App Store"})
            response = self.connection.getresponse()
            text = response.read().decode("utf-8", "replace")
            if (response.getheader("Connection") or "").lower() == "close":
                self.close()
            self.last = time.monotonic()
            return Answer(response.status, text, body)
        except (OSError, http.client.HTTPException) as error:
            self.close()
            return Answer(None, f"transport error: {error!r}", body)


def get(port, path, timeout=10):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    except (OSError, http.client.HTTPException) as error:
        return None, f"transport error: {error!r}"
    finally:
        connection.close()


def post_all(port, lines, connections):
    """Every line POSTed once, on `connections` keep-alive connections at once; answers in line order."""
    answers = [None] * len(lines)
    order = iter(range(len(lines)))
    lock = threading.Lock()

    def worker():
        client = Client(port)
        while True:
            with lock:
                index = next(order, None)
            if index is None:
                break
            answers[index] = client.post(lines[index])
        client.close()

    workers = [threading.Thread(target=worker, daemon=True) for _ in range(connections)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    return answers


# ----------------------------------------------------------------------------- the webhook process


class Scrape:
    def __init__(self, status, text):
        self.status, self.text = status, text
        self.series = parse_metrics(text) if status == 200 else {}
        self.types = {}
        for line in text.splitlines() if status == 200 else []:
            parts = line.split()
            if len(parts) >= 4 and parts[0] == "#" and parts[1] == "TYPE":
                self.types[parts[2]] = parts[3]

    def exposed(self, name=METRIC):
        return any(metric == name for metric, _ in self.series)

    def value(self, name=METRIC, **labels):
        """The metric's value; None when the scrape failed. An absent series reads 0 (as Prometheus'
        absent counter before its first increment), and each absence is noted once."""
        if self.status != 200:
            return None
        if name == METRIC and not self.exposed():
            if not Webhook.absent_noted:
                Webhook.absent_noted = True
                note(f"FINDING: {METRIC} is absent from /metrics before its first increment (read as 0)")
        return metric_value(self.series, name, **labels)

    def series_lines(self, name=METRIC):
        return "\n".join(line for line in self.text.splitlines() if name in line) or f"(no line names {name})"


class Webhook:
    absent_noted = False

    def __init__(self, binary, root, fixtures_env, data_dir):
        self.binary, self.root, self.data_dir = binary, root, data_dir
        self.environment = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET_")}
        self.environment.update(fixtures_env)
        self.environment["SIGNET_DATA_DIR"] = data_dir
        self.child = None
        self.port = self.admin_port = None

    def start(self, same_ports=False):
        """Starts `signet run --pipeline Pipelines/webhook.yaml` and waits for /readyz 200. Tries once
        more on other ports when the process died at start (a port taken meanwhile, the binary
        rebuilt under us). Returns whether it is ready."""
        for attempt in range(2):
            if not (same_ports and attempt == 0 and self.port):
                self.port, self.admin_port = free_port(), free_port()
                while self.admin_port == self.port:
                    self.admin_port = free_port()
            environment = dict(self.environment, SIGNET_HTTP_ADDRESS=f"127.0.0.1:{self.port}",
                               SIGNET_ADMIN_ADDRESS=f"127.0.0.1:{self.admin_port}")
            shown = (f"SIGNET_DATA_DIR={self.data_dir} SIGNET_HTTP_ADDRESS=127.0.0.1:{self.port} "
                     f"SIGNET_ADMIN_ADDRESS=127.0.0.1:{self.admin_port} (+ fixtures.env) "
                     f"{self.binary} run --pipeline {WEBHOOK_PIPELINE}")
            self.child = RunningChild([self.binary, "run", "--pipeline", WEBHOOK_PIPELINE], environment, self.root,
                                      command=shown)
            wait_until(lambda: not self.child.running() or get(self.admin_port, "/readyz", 2)[0] == 200, 60, 0.1)
            if self.child.running() and get(self.admin_port, "/readyz", 2)[0] == 200:
                return True
            if self.child.running():
                return False
            time.sleep(1)
        return False

    def stop(self):
        """SIGTERM, as an operator's service manager sends it; the exit status (None: had to be killed)."""
        process = self.child.process
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except Exception:  # noqa: BLE001 - a hang must not hang the script
                stop(process)
                return None
        for reader in self.child.readers:
            reader.join(timeout=5)
        return process.returncode

    def scrape(self):
        status, text = get(self.admin_port, "/metrics")
        return Scrape(status, text)

    def tables(self):
        return self.scrape().value()

    def settled(self, value):
        """The counter once it reads `value`, or whatever it reads after SETTLE seconds."""
        wait_until(lambda: self.tables() == value, SETTLE)
        return self.tables()

    def client(self):
        return Client(self.port)


class Sampler(threading.Thread):
    """Scrapes the counter every 0.2 s until stopped (to see it during a flood)."""

    def __init__(self, webhook):
        super().__init__(daemon=True)
        self.webhook, self.values, self.halt = webhook, [], threading.Event()

    def run(self):
        while not self.halt.is_set():
            self.values.append(self.webhook.tables())
            self.halt.wait(0.2)


# ----------------------------------------------------------------------------- JWS under a leaf, the forged set


def leaf_of(jws):
    try:
        x5c = json.loads(b64url_decode(jws.split(".")[0])).get("x5c")
        return x5c[0] if isinstance(x5c, list) and x5c else None
    except (ValueError, IndexError, AttributeError, TypeError):
        return None


def under(line, leaf):
    """How many of the line's JWS name `leaf` (standard base64 DER) as x5c[0]."""
    return sum(1 for jws in jws_in(line) if leaf_of(jws) == leaf)


def forged_lines(pki, base_line, fixtures_forged):
    """The lines posted at every place: Forged(name, line, expect), `expect` ("dead_lettered", reason),
    "committed-then-duplicate" (a valid line: committed the first time, a duplicate after), or None
    (whatever the first post got: the fixtures' own forged lines)."""
    found = []

    def add(name, line, expect):
        found.append(Forged(name, line, expect))

    base = Forger(pki, base_line)
    header, payload_seg, signature, r, s = base.header, base.payload_seg, base.signature, base.r, base.s
    bad = ("dead_lettered", "invalid_signature")

    def outer(name, sig):
        add(f"A's signedPayload: {name}", base.outer(sig), bad)

    outer("lowest bit of r flipped", flipped(signature, 31, 0x01))
    outer("a middle bit of s flipped", flipped(signature, 40, 0x10))
    outer("r = 0", raw(0, s))
    outer("s = n", raw(r, N))
    outer("verification point at infinity (r = -e/d)", at_infinity(header, payload_seg, pki.key_a))
    outer("signed by another P-256 key under A's x5c", by_another_key(header, payload_seg))
    add("A's signedPayload: payload altered after signing (notificationType REFUND)",
        base.altered(notificationType="REFUND"), bad)
    add("A's signedPayload: payload altered after signing (one byte)", base.one_byte_altered(), bad)

    # Nested JWS forged inside notifications A validly signed (each with its own fresh id).
    nested_cases = [
        ("signedTransactionInfo", "a bit of s flipped", lambda h, p, sig: xor_rs(sig, s_bits=1)),
        ("signedTransactionInfo", "signed by another P-256 key", lambda h, p, sig: by_another_key(h, p)),
        ("signedRenewalInfo", "a bit of r flipped", lambda h, p, sig: xor_rs(sig, r_bits=1)),
    ]
    for field, label, forge in nested_cases:
        add(f"nested {field} {label}, in a notification A validly signed", base.nested(field, forge),
            ("dead_lettered", "nested_jws_invalid"))

    # One leaf's x5c, another's signature; B's own signature altered.
    for named, signer, named_header, key in (("B", "A", pki.header_b, pki.key_a), ("A", "B", pki.header_a, pki.key_b)):
        add(f"x5c of leaf {named}, signed by leaf {signer}'s key", base.fresh(named_header, key), bad)
    add("B's signedPayload: a bit of s flipped",
        reforged(resign(base_line, pki.header_b, pki.key_b), lambda sig: xor_rs(sig, s_bits=1)), bad)

    # Self-made chains, one line each.
    for name, line in pki.rogue_lines(payload_seg):
        add(f"{name}: a valid signature", line, ("dead_lettered", "invalid_certificate_chain"))

    # A valid signature in its other form (r, n - s): ECDSA accepts it, with a table or without.
    add("A's valid signature malleated to (r, n - s), a notification of its own", reforged(base.fresh(), malleated),
        "committed-then-duplicate")

    for index, line in enumerate(fixtures_forged, 1):
        add(f"fixtures' forged.ndjson line {index}", line, None)
    return found


# ----------------------------------------------------------------------------- the checks


class Run:
    """State shared by the phases of one script run."""

    def __init__(self, webhook, pki, forged):
        self.webhook, self.pki, self.forged = webhook, pki, forged
        self.places = []  # (place, [Answer per forged line])
        self.forged_a = sum(under(item.line, pki.leaf_a) for item in forged)
        self.forged_b = sum(under(item.line, pki.leaf_b) for item in forged)


def post_forged(run, place, expected_tables):
    """Posts the forged set once, one line at a time; from the second place on, compares each answer
    with the first place's."""
    client = run.webhook.client()
    answers = [client.post(item.line) for item in run.forged]
    client.close()
    run.places.append((place, answers))
    if len(run.places) == 1:
        for item, answer in zip(run.forged, answers):
            if item.expect is None:
                good, want = answer.status in (200, 400), "200 or 400 (recorded, compared later)"
            elif item.expect == "committed-then-duplicate":
                good, want = answer.is_("committed"), '200 {"status":"committed"}'
            else:
                good = answer.is_(*item.expect)
                want = f'200 {{"status":"{item.expect[0]}","reason":"{item.expect[1]}"}}'
            check(f"{place}: {item.name} -> {want}", good, answer.said())
    else:
        first_place, first = run.places[0]
        differ = []
        for item, was, now in zip(run.forged, first, answers):
            if item.expect == "committed-then-duplicate":
                if not now.is_("dropped", "duplicate"):
                    differ.append(f"{item.name}: want 200 dropped duplicate (its first post was committed)\n"
                                  f"  {first_place}: {was.status} {clip(was.body, 200)}\n  {place}: {now.status} {clip(now.body, 200)}")
            elif was.shape() != now.shape() or now.status is None:
                differ.append(f"{item.name}:\n  {first_place}: {was.status} {clip(was.body, 200)}\n"
                              f"  {place}: {now.status} {clip(now.body, 200)}")
        check(f"{place}: each of the {len(run.forged)} forged lines gets the same HTTP status and body as at the start "
              f"(the malleated valid one: a duplicate of its committed first post)", not differ, *differ)
    time.sleep(0.3)
    value = run.webhook.tables()
    check(f"{place}: after the forged set {METRIC} is {expected_tables}", value == expected_tables,
          f"scraped: {value}")


def phase_start(run):
    scrape = run.webhook.scrape()
    if not check("the metrics endpoint answers 200 before any notification", scrape.status == 200,
                 f"GET /metrics -> {scrape.status} {clip(scrape.text, 300)}"):
        return
    exposed = scrape.exposed()
    check(f"before any notification {METRIC} is exposed, typed counter, at 0 "
          f"(docs/operations.md lists it among the metrics /metrics serves)",
          exposed and scrape.types.get(METRIC) == "counter" and scrape.value() == 0,
          f"TYPE: {scrape.types.get(METRIC)}", scrape.series_lines())
    labelled = [labels for name, labels in scrape.series if name == METRIC and labels]
    check(f"{METRIC} carries no labels (docs/operations.md: none)", not labelled, f"labels seen: {labelled}")


def phase_rogue(run, payload_seg):
    names = list(run.pki.rogue)
    lines = [line for _, line in run.pki.rogue_lines(payload_seg, ROGUE_PER_KEY)]  # a fresh signature every line
    before = run.webhook.scrape()
    sampler = Sampler(run.webhook)
    sampler.start()
    started = time.monotonic()
    answers = post_all(run.webhook.port, lines, 4)
    seconds = time.monotonic() - started
    sampler.halt.set()
    sampler.join()
    wrong = [(i, a) for i, a in enumerate(answers) if not a.is_("dead_lettered", "invalid_certificate_chain")]
    check(f"{len(lines)} notifications of {len(names)} self-made chains ({ROGUE_PER_KEY} each, 4 connections, "
          f"{seconds:.1f} s): every one 200 dead_lettered invalid_certificate_chain",
          not wrong, *[f"{names[i % len(names)]}: {a.said()}" for i, a in wrong[:5]])
    time.sleep(0.3)
    after = run.webhook.scrape()
    reason = "invalid_certificate_chain"
    grew = (after.value("signet_records_rejected_total", reason=reason) or 0) - \
        (before.value("signet_records_rejected_total", reason=reason) or 0)
    check(f"signet_records_rejected_total{{reason=\"{reason}\"}} grew by exactly {len(lines)}", grew == len(lines),
          f"grew by {grew}")
    sampled = [v for v in sampler.values if v is not None]
    check(f"{METRIC} stays 0 through the flood of self-made chains ({len(sampled)} scrapes during it, one after)",
          after.value() == 0 and sampled and all(v == 0 for v in sampled),
          f"during: {sorted(set(sampled))}, after: {after.value()}", after.series_lines())


def post_one_at_a_time(run, lines, leaf, bounds, observations, retry_every=RETRY_EVERY, stop_when=None):
    """Posts each line, a scrape after it; every `retry_every`-th line is sent again right away.
    `bounds` is [certain, possible] for `leaf`; observations get (certain, possible, value, what)."""
    client = run.webhook.client()
    firsts, retries = [], []
    for index, line in enumerate(lines):
        count = under(line, leaf)
        answer = client.post(line)
        firsts.append(answer)
        bounds[0] += count
        bounds[1] += count
        observations.append((bounds[0], bounds[1], run.webhook.tables(), f"after notification {index + 1}"))
        if retry_every and index % retry_every == retry_every - 1:
            retries.append(client.post(line))
            bounds[1] += count
            observations.append((bounds[0], bounds[1], run.webhook.tables(), f"after the retry of {index + 1}"))
        if stop_when and stop_when(bounds):
            break
    client.close()
    return firsts, retries


def check_answers(label, firsts, retries):
    if firsts:
        bad = [a for a in firsts if not a.is_("committed")]
        check(f"{label}: each of the {len(firsts)} notifications answered 200 committed", not bad,
              *[a.said() for a in bad[:5]])
    if retries:
        bad = [a for a in retries if not a.is_("dropped", "duplicate")]
        check(f"{label}: each of the {len(retries)} retries (the same body again) answered 200 dropped duplicate",
              not bad, *[a.said() for a in bad[:5]])


def describe(observations, limit=8):
    return "\n".join(f"{what}: certain {c}, possible {p}: {v}" for c, p, v, what in observations[:limit])


def note_first_one(observations, say):
    """Notes say(count, bound, what) of the first observation at which the counter read 1."""
    first_one = next((o for o in observations if o[2] == 1), None)
    if first_one:
        note(say(first_one[0], first_one[1], first_one[3]))


def phase_leaf_a(run, lines):
    bounds = [0, run.forged_a]
    observations = []
    firsts, retries = post_one_at_a_time(run, lines, run.pki.leaf_a, bounds, observations,
                                         stop_when=lambda b: b[0] >= WELL_PAST)
    check_answers("leaf A, one at a time", firsts, retries)
    below = [o for o in observations if o[1] < THRESHOLD]
    wrong = [o for o in below if o[2] != 0]
    check(f"{METRIC} is 0 at each of the {len(below)} scrapes while at most {THRESHOLD - 1} of A's signatures "
          f"could have been verified (retries and forged lines under A's x5c counted too)",
          below and not wrong, describe(wrong or below[-1:]))
    values = [o[2] for o in observations]
    check(f"{METRIC} never above 1 and never falls while A's signatures pass {THRESHOLD}",
          None not in values and max(values) <= 1 and all(x <= y for x, y in zip(values, values[1:])),
          describe([o for o in observations if o[2] is None or o[2] > 1]) or f"values in order: {values}")
    value = run.webhook.settled(1)
    check(f"once {bounds[0]} of A's signatures certainly verified (>= {WELL_PAST}), {METRIC} is exactly 1",
          value == 1, f"scraped: {value}", run.webhook.scrape().series_lines())
    note_first_one(observations, lambda certain, possible, what: f"leaf A: the counter first read 1 {what}, with "
                   f"{certain} of A's signatures certainly and {possible} possibly verified")
    return firsts


def phase_further(run, lines):
    bounds = [0, 0]
    observations = []
    firsts, retries = post_one_at_a_time(run, lines, run.pki.leaf_a, bounds, observations, retry_every=5)
    check_answers(f"{len(lines)} more of A's notifications after its table", firsts, retries)
    wrong = [o for o in observations if o[2] != 1]
    check(f"{METRIC} stays exactly 1 at each of the {len(observations)} scrapes after them", not wrong,
          describe(wrong))


def phase_leaf_b(run, lines):
    bounds = [0, run.forged_b * len(run.places)]  # the forged set so far: B's x5c in some of its lines
    sequential, possible = [], bounds[1]
    for line in lines:
        if possible + under(line, run.pki.leaf_b) >= THRESHOLD:
            break
        sequential.append(line)
        possible += under(line, run.pki.leaf_b)
    observations = []
    firsts, _ = post_one_at_a_time(run, sequential, run.pki.leaf_b, bounds, observations, retry_every=0)
    check_answers("leaf B (a rotated key under the fixtures' intermediate), one at a time", firsts, [])
    wrong = [o for o in observations if o[2] != 1]
    check(f"{METRIC} stays 1 at each of the {len(observations)} scrapes while at most {bounds[1]} (<= {THRESHOLD - 1}) "
          f"of B's signatures could have been verified", observations and not wrong, describe(wrong))
    rest = lines[len(sequential):]
    burst = post_all(run.webhook.port, rest, 4)
    certain = bounds[0] + sum(under(x, run.pki.leaf_b) for x in rest)
    check_answers(f"leaf B, the other {len(rest)} on 4 connections at once", burst, [])
    first = run.webhook.settled(2)
    time.sleep(0.5)
    second = run.webhook.tables()
    check(f"once {certain} of B's signatures certainly verified (>= {WELL_PAST}; B's 256th among concurrent requests), "
          f"{METRIC} is exactly 2, and still 2 half a second later (one build per leaf)",
          first == 2 and second == 2 and certain >= WELL_PAST, f"scraped {first}, then {second}",
          run.webhook.scrape().series_lines())
    client = run.webhook.client()
    retries = [client.post(line) for line in lines[:3]]
    client.close()
    check_answers("leaf B: three of its notifications sent again", [], retries)


def phase_restart(run, already_posted, fresh_lines, webhook_factory):
    code = run.webhook.stop()
    check("SIGTERM: `signet run` exits 0", code == 0, run.webhook.child.said())
    webhook = webhook_factory()
    run.webhook = webhook
    if not check("`signet run` starts again on the same store (and the same ports) and is ready", webhook.start(True),
                 webhook.child.said()):
        return False
    scrape = webhook.scrape()
    check(f"the new process exposes {METRIC} at 0 again (a table lives as long as its process)",
          scrape.status == 200 and scrape.exposed() and scrape.value() == 0, scrape.series_lines())

    duplicates, spent = [], 0
    for line in already_posted:
        if spent + under(line, run.pki.leaf_a) > DUPLICATE_BUDGET:
            break
        duplicates.append(line)
        spent += under(line, run.pki.leaf_a)
    verified_before = scrape.value("signet_notifications_verified_total")
    bounds = [0, 0]
    observations = []
    firsts, _ = post_one_at_a_time(run, duplicates, run.pki.leaf_a, bounds, observations, retry_every=0)
    bad = [a for a in firsts if not a.is_("dropped", "duplicate")]
    check(f"after the restart, {len(duplicates)} notifications the first process committed "
          f"({spent} signatures of A) are each answered 200 dropped duplicate (dedupe's store outlives the process)",
          not bad, *[a.said() for a in bad[:5]])
    time.sleep(0.3)
    verified_after = webhook.scrape().value("signet_notifications_verified_total")
    check(f"signet_notifications_verified_total grew by {len(duplicates)}: each duplicate was verified before dedupe "
          f"dropped it (docs/webhook.md: a copy goes through decode and verify before dedupe drops it)",
          verified_after is not None and verified_before is not None
          and verified_after - verified_before == len(duplicates),
          f"before {verified_before}, after {verified_after}")
    wrong = [o for o in observations if o[2] != 0]
    check(f"{METRIC} stays 0 while the duplicates ({spent} signatures) are posted", observations and not wrong,
          describe(wrong))

    fresh_bounds = [0, 0]
    observations = []
    client = webhook.client()
    firsts = []
    docs_checked = exact_checked = False
    for index, line in enumerate(fresh_lines):
        count = under(line, run.pki.leaf_a)
        firsts.append(client.post(line))
        fresh_bounds[0] += count
        total = spent + fresh_bounds[0]
        observations.append((fresh_bounds[0], total, webhook.tables(), f"after fresh notification {index + 1}"))
        if total >= THRESHOLD and not exact_checked:
            # Nothing else reached this process: every one of A's signatures so far verified, none forged.
            exact_checked = True
            value = webhook.settled(1)
            check(f"after the restart, the notification that carries A's {THRESHOLD}th verified signature "
                  f"({total - count + 1}..{total}: {spent} in duplicates, {fresh_bounds[0]} fresh) makes "
                  f"{METRIC} 1 (docs/verification.md: the build runs on the thread whose verification reached the "
                  f"{THRESHOLD}th use)", value == 1, f"scraped: {value} (just after it: {observations[-1][2]})")
        if total >= WELL_PAST and not docs_checked:
            docs_checked = True
            value = webhook.settled(1)
            check(f"after the restart, once duplicates + fresh = {spent} + {fresh_bounds[0]} = {total} signatures of A "
                  f"were verified (>= {WELL_PAST}; fresh alone {fresh_bounds[0]} < {THRESHOLD}), {METRIC} is 1: "
                  f"the duplicates' verified signatures count too", value == 1, f"scraped: {value}")
        if fresh_bounds[0] >= WELL_PAST:
            break
    client.close()
    check_answers("after the restart, fresh notifications of A, one at a time", firsts, [])
    below = [o for o in observations if o[1] < THRESHOLD]
    wrong = [o for o in below if o[2] != 0]
    check(f"after the restart {METRIC} is 0 at each of the {len(below)} scrapes while duplicates + fresh <= "
          f"{THRESHOLD - 1} signatures of A", below and not wrong,
          "\n".join(f"{w}: fresh {c}, with duplicates {p}: {v}" for c, p, v, w in (wrong or below[-1:])[:8]))
    value = webhook.settled(1)
    values = [o[2] for o in observations]
    check(f"after the restart, once {fresh_bounds[0]} fresh signatures of A alone were verified (>= {WELL_PAST}), "
          f"{METRIC} is exactly 1, and it was never above 1",
          value == 1 and fresh_bounds[0] >= WELL_PAST and None not in values and max(values) <= 1,
          f"scraped: {value}; values in order: {values}")
    note_first_one(observations, lambda fresh, total, what: f"after the restart: the counter first read 1 {what}, "
                   f"with {total} of A's signatures verified ({spent} in duplicates, {fresh} fresh)")
    return True


def check_dead_letters(run, data_dir):
    path = os.path.join(data_dir, "dead-letter.ndjson")
    wanted = {item.line: item for item in run.forged}
    found = {}
    for record in map(parse_json, ndjson_lines(path) if os.path.exists(path) else []):
        if isinstance(record, dict) and record.get("input") in wanted:
            found.setdefault(record["input"], []).append(record)
    places = len(run.places)
    wrong = []
    for index, item in enumerate(run.forged):
        records = found.get(item.line, [])
        first = run.places[0][1][index]
        body = parse_json(first.body)
        dead = isinstance(body, dict) and body.get("status") == "dead_lettered"
        if not dead:
            if records:
                wrong.append(f"{item.name}: answered {first.status} {clip(first.body, 120)}, yet "
                             f"{len(records)} dead letters")
            continue
        keys = ("reason", "detail", "stage", "id")
        distinct = {tuple(json.dumps(r.get(k)) for k in keys) for r in records}
        if len(records) != places or len(distinct) != 1 or records[0].get("reason") != body.get("reason"):
            wrong.append(f"{item.name}: {len(records)} dead letters for {places} posts (answer reason "
                         f"{body.get('reason')}):\n" + "\n".join(
                             "  " + clip(json.dumps({k: r.get(k) for k in keys}), 400) for r in records[:4]))
    check(f"the dead-letter file holds each dead-lettered forged line once per post ({places}) with one reason "
          f"(the answer's), one detail, one stage and one id, before and after every table; the others never",
          not wrong, *wrong[:6])


# ----------------------------------------------------------------------------- main


def main():
    binary = signet_binary(sys.argv)
    if binary is None or cryptography_missing():
        return 2
    if not os.path.exists(WEBHOOK_PIPELINE):
        print(f"not found: {WEBHOOK_PIPELINE}", file=sys.stderr)
        return 2
    root = tempfile.mkdtemp(prefix="signet-key-table-metrics-")
    arm_time_limit(TIME_LIMIT)
    started = time.monotonic()
    try:
        fixtures = os.path.join(root, "fixtures")
        environment = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET_")}
        made = None
        for attempt in range(2):  # once more if the binary was being rebuilt under us
            made = subprocess.run([binary, "fixtures", "--out", fixtures, "--now", "--count", str(FIXTURE_COUNT)],
                                  capture_output=True, text=True, env=environment, cwd=root, timeout=120)
            if made.returncode == 0:
                break
            time.sleep(1)
        if made.returncode != 0:
            print(f"signet fixtures failed: exit {made.returncode}\n{made.stderr}", file=sys.stderr)
            return 2
        fixtures_env = read_fixtures_env(fixtures)
        for name in ("SIGNET_ROOT_CERTS", "SIGNET_ENVIRONMENT", "SIGNET_BUNDLE_ID"):
            if name not in fixtures_env:
                print(f"fixtures.env sets no {name}", file=sys.stderr)
                return 2
        notifications = ndjson_lines(os.path.join(fixtures, "notifications.ndjson"))
        fixtures_forged = ndjson_lines(os.path.join(fixtures, "forged.ndjson"))
        header_a = outer_jws(notifications[0]).split(".")[0]
        if any(outer_jws(line).split(".")[0] != header_a for line in notifications):
            raise CannotRun("the fixtures' notifications do not share one x5c header")
        pki = PKI(fixtures, header_a)
        both = [line for line in notifications if jws_count(line) == 3]
        base_line = both[0]
        b_lines = [resign(line, pki.header_b, pki.key_b) for line in both[-B_LINES:]]
        taken = set(both[-B_LINES:])
        pool = [line for line in notifications if line not in taken]
        # A's notifications: phase 4 until 300 certain signatures, 30 more, then the fresh ones after the restart.
        need, phase_a = 0, []
        for line in pool:
            if need >= WELL_PAST:
                break
            phase_a.append(line)
            need += jws_count(line)
        further = pool[len(phase_a):len(phase_a) + FURTHER]
        fresh = pool[len(phase_a) + FURTHER:]
        if sum(jws_count(line) for line in fresh) < WELL_PAST + 10 or len(b_lines) < B_LINES:
            raise CannotRun(f"not enough fixtures: {len(fresh)} fresh notifications left")
        forged = forged_lines(pki, base_line, fixtures_forged)
        print(f"# {len(notifications)} notifications of leaf A ({sum(jws_count(x) for x in notifications)} JWS), "
              f"{len(b_lines)} re-signed by leaf B, {len(forged)} forged lines "
              f"({sum(under(f.line, pki.leaf_a) for f in forged)} JWS under A's x5c)", flush=True)

        data_dir = os.path.join(root, "signet-data")

        def new_webhook():
            webhook = Webhook(binary, root, fixtures_env, data_dir)
            if run is not None and run.webhook is not None:
                webhook.port, webhook.admin_port = run.webhook.port, run.webhook.admin_port
            return webhook

        run = None
        webhook = new_webhook()
        run = Run(webhook, pki, forged)
        ready = check("`signet run --pipeline Pipelines/webhook.yaml` (fixtures.env, a store in a temporary "
                      "directory) is ready", webhook.start(), webhook.child.said())
        phases = [
            ("1 before any notification", lambda: phase_start(run)),
            ("2 the forged set at the start", lambda: post_forged(run, "at the start", 0)),
            ("3 self-made chains", lambda: phase_rogue(run, outer_jws(base_line).split(".")[1])),
            ("4 leaf A one at a time", lambda: phase_leaf_a(run, phase_a)),
            ("5 more of leaf A", lambda: phase_further(run, further)),
            ("6 the forged set after A's table", lambda: post_forged(run, "after A's table", 1)),
            ("7 leaf B", lambda: phase_leaf_b(run, b_lines)),
            ("7 the forged set after B's table", lambda: post_forged(run, "after B's table", 2)),
        ]
        restarted = {"ready": False}

        def restart():
            restarted["ready"] = phase_restart(run, phase_a, fresh, new_webhook)

        def after_restart():
            if restarted["ready"]:
                post_forged(run, "after the restart and A's new table", 1)
                code = run.webhook.stop()
                check("SIGTERM: the restarted `signet run` exits 0", code == 0, run.webhook.child.said())

        phases += [
            ("8 restart on the same store", restart),
            ("8 the forged set after the restart", after_restart),
            ("9 the dead-letter file", lambda: check_dead_letters(run, data_dir)),
        ]
        for name, phase in phases if ready else []:
            print(f"# phase {name}", flush=True)
            phase_started = time.monotonic()
            guarded(phase, f"phase {name} ran to its end")
            print(f"#   {time.monotonic() - phase_started:.1f} s", flush=True)
    except CannotRun as error:
        print(f"cannot run: {error}", file=sys.stderr)
        return 2
    except OutOfTime:
        check(f"the checks finished within {TIME_LIMIT} s", False, "stopped: out of time")
    finally:
        clean_up(root)
    return summarize(started, NOTES)


if __name__ == "__main__":
    sys.exit(main())
