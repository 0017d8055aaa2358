#!/usr/bin/env python3
"""Acceptance tests for issue 53, items 1 and 2: appAccountToken is a UUID at every boundary.

    python3 Tests/Acceptance/app_account_token_acceptance.py .build/debug/signet

Written from the documentation only (README.md, docs/*.md), not from Signet's sources:

1. Apple types `appAccountToken` as a UUID and signs it in lower case; a backend in Swift writes
   `uuidString`, which is UPPER case. Every boundary (the consent ledger through the CLI and the
   HTTP API, `signet entitlements`, `GET /v1/entitlements`, the events, the refund-question
   responder) must treat the token as a UUID: any case finds the same customer, one canonical
   form is stored and printed (lower case), and a value that is not a UUID is refused (CLI:
   non-zero exit naming the UUID requirement; HTTP: 400 with a JSON error).
2. A consent written before the first `signet run` (a fresh SIGNET_DATA_DIR) is recorded: the
   ledger opens (creates) the store as `run` would.

Everything happens in a fresh temporary directory (SIGNET_DATA_DIR points there; no SIGNET_*
variable of the caller's environment is passed on), on 127.0.0.1 and free ports. One line per
check, `ok - ...` or `FAIL - ...` (with indented `#` lines saying what was run, expected and seen);
exit 1 when any check failed, 2 when the script could not run at all. Standard library only
(the fake App Store Server API's key is made with the `openssl` command).
"""

import json
import os
import re
import secrets
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harness import (
    CHILDREN, RESULTS, OutOfTime, arm_time_limit, b64url, check, clip, free_port, jws_payload, parse_json,
    read_fixtures_env, signet_binary, stop, wait_until,
)

TIME_LIMIT = 170  # seconds; the whole script must finish within 3 minutes
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

SERVERS = []


# ----------------------------------------------------------------------------- reporting


# ----------------------------------------------------------------------------- tokens


def new_token():
    """A random lower-case UUID with at least four letters, so its cases differ."""
    while True:
        token = str(uuid.uuid4())
        if sum(c.isalpha() for c in token) >= 4:
            return token


def mixed_case(token):
    out, upper = [], False
    for c in token.lower():
        if c.isalpha():
            out.append(c.upper() if upper else c)
            upper = not upper
        else:
            out.append(c)
    return "".join(out)


def is_canonical(token):
    return isinstance(token, str) and UUID_RE.match(token) is not None


def find_key(value, key):
    """The first value of `key` anywhere in a JSON value (depth first), or None."""
    if isinstance(value, dict):
        if key in value:
            return value[key]
        for item in value.values():
            found = find_key(item, key)
            if found is not None:
                return found
    elif isinstance(value, list):
        for item in value:
            found = find_key(item, key)
            if found is not None:
                return found
    return None


def all_values(value, key):
    """Every value of `key` anywhere in a JSON value."""
    found = []
    if isinstance(value, dict):
        for name, item in value.items():
            if name == key:
                found.append(item)
            found.extend(all_values(item, key))
    elif isinstance(value, list):
        for item in value:
            found.extend(all_values(item, key))
    return found


def without_instant(value):
    """An entitlements answer without the instant it was evaluated at (`evaluatedAt`, `asOf.at`),
    which differs between two calls a few milliseconds apart."""
    if isinstance(value, dict):
        out = {}
        for name, item in value.items():
            if name == "evaluatedAt":
                continue
            if name == "asOf" and isinstance(item, dict):
                item = {k: v for k, v in item.items() if k != "at"}
            out[name] = without_instant(item)
        return out
    if isinstance(value, list):
        return [without_instant(item) for item in value]
    return value


def json_lines(text):
    objects = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            parsed = parse_json(line)
            if isinstance(parsed, dict):
                objects.append(parsed)
    return objects


def der_to_raw(der):
    """An ECDSA signature as DER (SEQUENCE of two INTEGERs, as openssl writes it) -> JWS's r || s."""
    if der[0] != 0x30:
        raise ValueError("not a DER ECDSA signature")
    index = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7F)
    parts = []
    for _ in range(2):
        if der[index] != 0x02:
            raise ValueError("not a DER INTEGER")
        length = der[index + 1]
        parts.append(int.from_bytes(der[index + 2:index + 2 + length], "big").to_bytes(32, "big"))
        index += 2 + length
    return b"".join(parts)


def resign(jws, payload, key_file):
    """`jws` with `payload` instead of its own, signed ES256 again with `key_file` (the leaf key of
    `signet fixtures`' test PKI, DIR/pki/leaf.key.pem) under the same header (alg, x5c)."""
    header = jws.split(".")[0]
    body = b64url(json.dumps(payload, separators=(",", ":")).encode())
    signing_input = (header + "." + body).encode()
    signed = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key_file], input=signing_input,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30, check=True)
    return header + "." + body + "." + b64url(der_to_raw(signed.stdout))


# ----------------------------------------------------------------------------- processes


class Signet:
    def __init__(self, binary, root):
        self.binary = binary
        self.root = root

    def env(self, extra):
        environment = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET_")}
        environment.update(extra)
        return environment

    def describe(self, args, extra, stdin_file=None):
        shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(extra.items()) if k in ("SIGNET_DATA_DIR",))
        command = shlex.join([self.binary] + list(args))
        if stdin_file:
            command += " < " + shlex.quote(stdin_file)
        return (shown + " " + command).strip()

    def run(self, args, extra, stdin_file=None, timeout=60):
        stdin = open(stdin_file, "rb") if stdin_file else subprocess.DEVNULL
        started = subprocess.Popen(
            [self.binary] + list(args), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=self.env(extra), cwd=self.root)
        CHILDREN.append(started)
        try:
            out, err = started.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            started.kill()
            out, err = started.communicate()
            err += f"\n(timed out after {timeout} s)".encode()
        finally:
            if stdin_file:
                stdin.close()
        return Result(self.describe(args, extra, stdin_file), started.returncode,
                      out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))

    def start(self, args, extra):
        return Child([self.binary] + list(args), self.env(extra), self.root, self.describe(args, extra))


class Result:
    def __init__(self, command, code, out, err):
        self.command, self.code, self.out, self.err = command, code, out, err

    def json(self):
        return parse_json(self.out)

    def said(self):
        return f"ran: {self.command}\nexit {self.code}\nstdout: {clip(self.out)}\nstderr: {clip(self.err)}"


class Child:
    """A long-running `signet run` whose stdin we write and whose output we collect."""

    def __init__(self, argv, environment, cwd, command):
        self.command = command
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment, cwd=cwd)
        CHILDREN.append(self.process)
        self.out, self.err = bytearray(), bytearray()
        self.readers = [threading.Thread(target=self._drain, args=(self.process.stdout, self.out), daemon=True),
                        threading.Thread(target=self._drain, args=(self.process.stderr, self.err), daemon=True)]
        for reader in self.readers:
            reader.start()

    @staticmethod
    def _drain(pipe, buffer):
        while True:
            chunk = pipe.read1(65536) if hasattr(pipe, "read1") else pipe.read(65536)
            if not chunk:
                return
            buffer.extend(chunk)

    def write(self, text):
        self.process.stdin.write(text.encode())
        self.process.stdin.flush()

    def stdout(self):
        return bytes(self.out).decode("utf-8", "replace")

    def stderr(self):
        return bytes(self.err).decode("utf-8", "replace")

    def running(self):
        return self.process.poll() is None

    def finish(self, timeout=30):
        """Closes stdin (the end of the input) and waits; SIGTERM, then SIGKILL, if it lingers."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            stop(self.process)
            code = None
        for reader in self.readers:
            reader.join(timeout=5)
        return code

    def said(self):
        return f"ran: {self.command}\nstderr (tail): {clip(self.stderr()[-1500:])}"


# ----------------------------------------------------------------------------- HTTP client

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Answer:
    def __init__(self, method, url, status, body, headers):
        self.method, self.url, self.status, self.body, self.headers = method, url, status, body, headers

    def text(self):
        return self.body.decode("utf-8", "replace")

    def json(self):
        return parse_json(self.text())

    def said(self):
        return f"sent: {self.method} {self.url}\nstatus {self.status}, content-type {self.headers.get('Content-Type') if self.headers else None}\nbody: {clip(self.text())}"


def http(method, url, token=None, timeout=10):
    request = urllib.request.Request(url, method=method, data=b"" if method in ("POST", "PUT") else None)
    if token:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with OPENER.open(request, timeout=timeout) as response:
            return Answer(method, url, response.status, response.read(), response.headers)
    except urllib.error.HTTPError as error:
        return Answer(method, url, error.code, error.read(), error.headers)
    except (urllib.error.URLError, OSError) as error:
        return Answer(method, url, None, str(error).encode(), None)


# ----------------------------------------------------------------------------- fake App Store Server API


class FakeAppStoreAPI:
    """Records every request; answers Send Consumption Information (v2 and V1) with 202."""

    def __init__(self):
        self.requests = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with fake.lock:
                    fake.requests.append({"method": self.command, "path": self.path, "body": body,
                                          "authorization": self.headers.get("Authorization", "")})
                match = re.match(r"^/inApps/v[12]/transactions/consumption/([^/?]+)", self.path)
                if self.command == "PUT" and match:
                    self.send_response(202)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                answer = json.dumps({"errorCode": 4040010, "errorMessage": "Transaction id not found."}).encode()
                self.send_response(404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            do_GET = do_POST = do_PUT = do_DELETE = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        SERVERS.append(self.server)

    def consumption_answers(self):
        with self.lock:
            answers = []
            for request in self.requests:
                match = re.match(r"^/inApps/v[12]/transactions/consumption/([^/?]+)", request["path"])
                if request["method"] == "PUT" and match:
                    answers.append((match.group(1), request))
            return answers

    def answered(self, transaction_id):
        return [r for tid, r in self.consumption_answers() if tid == transaction_id]


# ----------------------------------------------------------------------------- the store, read directly


def store_snapshot(data_dir):
    """(row count per table, every text cell) of SIGNET_DATA_DIR/signet.sqlite, read only; None if absent."""
    path = os.path.join(data_dir, "signet.sqlite")
    if not os.path.exists(path):
        return None
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        tables = [row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        counts, texts = {}, []
        for table in tables:
            rows = connection.execute(f'SELECT * FROM "{table}"').fetchall()
            counts[table] = len(rows)
            for row in rows:
                for cell in row:
                    if isinstance(cell, bytes):
                        cell = cell.decode("utf-8", "replace")
                    if isinstance(cell, str):
                        texts.append(cell)
        return counts, texts
    finally:
        connection.close()


# ----------------------------------------------------------------------------- fixtures and pipelines


def pipeline_yaml(http_address=None, consumption=False):
    """The shipped stdin pipeline's shape (Pipelines/stdin.yaml), optionally with the operators'
    listener (docs/operations.md) and the refund-question responder (docs/consumption.md)."""
    text = """\
description: issue 53 acceptance - stdin -> decode -> verify -> dedupe -> transition -> fanout -> stdout
stores:
  default:
    type: auto
    url: ${SIGNET_DATABASE_URL:}
    path: ${SIGNET_DATA_DIR:signet-data}/signet.sqlite
source:
  type: stdin
stages:
  - type: decode
  - type: verify
    roots: ${SIGNET_ROOT_CERTS:apple}
    environment: ${SIGNET_ENVIRONMENT:Sandbox}
    bundle_id: ${SIGNET_BUNDLE_ID}
    app_apple_id: ${SIGNET_APP_APPLE_ID:}
  - type: dedupe
  - type: transition
"""
    if consumption:
        text += """\
  - type: appstore_consumption
    interval: 1s
    retry_delay: 1s
"""
    text += """\
  - type: fanout
    default_sinks: [stdout]
sinks:
  stdout:
    type: stdout
dead_letter:
  type: file
  path: ${SIGNET_DATA_DIR:signet-data}/dead-letter.ndjson
  format: json
"""
    if http_address:
        text += f"http:\n  address: {http_address}\n"
    return text


def make_fixtures(signet, folder, extra_args):
    made = signet.run(["fixtures", "--out", folder, "--now"] + extra_args, {}, timeout=120)
    ok = made.code == 0 and os.path.exists(os.path.join(folder, "notifications.ndjson")) \
        and os.path.exists(os.path.join(folder, "fixtures.env"))
    return made, ok


def wait_ready(port, child, timeout=40):
    def ready():
        if not child.running():
            return True
        return http("GET", f"http://127.0.0.1:{port}/readyz", timeout=2).status == 200
    wait_until(ready, timeout, 0.25)
    return child.running() and http("GET", f"http://127.0.0.1:{port}/readyz", timeout=2).status == 200


# ----------------------------------------------------------------------------- the cases


def consent_entry(result):
    """The consent entry a `consent show` printed (JSON), or None."""
    parsed = result.json()
    return parsed if isinstance(parsed, (dict, list)) else None


def case_fresh_data_dir(signet, root):
    """Item 2: consent recorded before the first `signet run`."""
    data = os.path.join(root, "fresh")  # does not exist yet: the very first command creates it
    extra = {"SIGNET_DATA_DIR": data}
    token = new_token()
    granted = signet.run(["consumption", "consent", "grant", "--app-account-token", token, "--by", "acceptance"], extra)
    check("item 2: `consumption consent grant` as the very first command in a fresh SIGNET_DATA_DIR succeeds (exit 0)",
          granted.code == 0 and "no state database" not in granted.err, "expected exit 0 and no 'no state database'", granted.said())
    check("item 2: the grant created the state store ($SIGNET_DATA_DIR/signet.sqlite) as `signet run` would",
          os.path.exists(os.path.join(data, "signet.sqlite")),
          f"expected {os.path.join(data, 'signet.sqlite')} to exist; data dir holds: "
          f"{sorted(os.listdir(data)) if os.path.isdir(data) else 'nothing (no directory)'}", granted.said())
    shown = signet.run(["consumption", "consent", "show", "--app-account-token", token], extra)
    entry = consent_entry(shown)
    check("item 2: a later `consumption consent show` finds that consent (exit 0, consented: true)",
          shown.code == 0 and find_key(entry, "consented") is True, "expected exit 0 and consented true", shown.said())
    # A run over the same folder afterwards opens the store the ledger created, and keeps the entry.
    ran = signet.run(["run"], dict(extra, SIGNET_BUNDLE_ID="com.example.signet"), stdin_file=os.devnull, timeout=60)
    again = signet.run(["consumption", "consent", "show", "--app-account-token", token.upper()], extra)
    check("item 2: `signet run` then opens that store (exit 0) and the consent is still there (shown by the UPPER-case token)",
          ran.code == 0 and again.code == 0 and find_key(consent_entry(again), "consented") is True,
          "expected both exit 0 and consented true", ran.said(), again.said())
    # A withdrawal (written UPPER case, as Swift's uuidString writes it) as the first command of another fresh folder.
    data = os.path.join(root, "fresh-withdrawal")
    extra = {"SIGNET_DATA_DIR": data}
    token = new_token()
    withdrawn = signet.run(["consumption", "consent", "withdraw", "--app-account-token", token.upper(), "--by", "acceptance"], extra)
    shown = signet.run(["consumption", "consent", "show", "--app-account-token", token], extra)
    check("item 2: `consumption consent withdraw` (UPPER-case token) as the very first command succeeds and `show` (lower) finds the withdrawal",
          withdrawn.code == 0 and shown.code == 0 and find_key(consent_entry(shown), "consented") is False,
          withdrawn.said(), shown.said())


def case_cli_ledger(signet, root):
    data = os.path.join(root, "ledger")
    extra = {"SIGNET_DATA_DIR": data}

    def grant(token, by="acceptance"):
        return signet.run(["consumption", "consent", "grant", "--app-account-token", token, "--by", by], extra)

    def withdraw(token, by="acceptance-withdraw"):
        return signet.run(["consumption", "consent", "withdraw", "--app-account-token", token, "--by", by], extra)

    def show(token):
        return signet.run(["consumption", "consent", "show", "--app-account-token", token], extra)

    # Granted lower case, shown UPPER case (uuidString).
    t1 = new_token()
    g = grant(t1)
    lower, upper = show(t1), show(t1.upper())
    check("CLI ledger: grant lower-case token succeeds (exit 0)", g.code == 0, g.said())
    check("CLI ledger: grant lower, `show` with the UPPER-case token: exit 0, consented",
          upper.code == 0 and find_key(consent_entry(upper), "consented") is True, "expected exit 0 and consented true", upper.said())
    check("CLI ledger: grant lower, `show` UPPER prints the same entry as `show` lower",
          upper.code == 0 and lower.code == 0 and consent_entry(upper) == consent_entry(lower) and consent_entry(lower) is not None,
          lower.said(), upper.said())
    tokens_shown = [v for v in all_values(consent_entry(upper), "appAccountToken") if isinstance(v, str)]
    check("CLI ledger: the entry shown for an UPPER-case query names the token in lower case (if it names it)",
          all(v == t1 for v in tokens_shown), f"expected every appAccountToken printed to be {t1}", upper.said())

    # Granted UPPER case, shown lower case.
    t2 = new_token()
    g = grant(t2.upper())
    lower, upper = show(t2), show(t2.upper())
    check("CLI ledger: grant with the UPPER-case token (Swift's uuidString) succeeds (exit 0)", g.code == 0, g.said())
    check("CLI ledger: grant UPPER, `show` with the lower-case token: exit 0, consented",
          lower.code == 0 and find_key(consent_entry(lower), "consented") is True, "expected exit 0 and consented true", lower.said())
    check("CLI ledger: grant UPPER, `show` UPPER and `show` lower print the same entry",
          upper.code == 0 and consent_entry(upper) == consent_entry(lower), lower.said(), upper.said())

    # Mixed case in, every case out.
    t3 = new_token()
    g = grant(mixed_case(t3))
    lower, upper = show(t3), show(t3.upper())
    check(f"CLI ledger: grant with a mixed-case token ({mixed_case(t3)}) is found by lower and UPPER case",
          g.code == 0 and lower.code == 0 and upper.code == 0 and find_key(consent_entry(lower), "consented") is True
          and consent_entry(lower) == consent_entry(upper), g.said(), lower.said(), upper.said())

    # Withdrawal in UPPER case after a grant in lower case.
    t4 = new_token()
    g = grant(t4)
    time.sleep(0.01)
    w = withdraw(t4.upper())
    lower, upper = show(t4), show(t4.upper())
    check("CLI ledger: withdraw with the UPPER-case token after a lower-case grant succeeds (exit 0)",
          g.code == 0 and w.code == 0, g.said(), w.said())
    check("CLI ledger: after grant lower + withdraw UPPER, `show` lower says withdrawn (consented: false)",
          lower.code == 0 and find_key(consent_entry(lower), "consented") is False, "expected exit 0 and consented false", lower.said())
    check("CLI ledger: after grant lower + withdraw UPPER, `show` UPPER says withdrawn (consented: false)",
          upper.code == 0 and find_key(consent_entry(upper), "consented") is False, "expected exit 0 and consented false", upper.said())

    # And the other way round: grant UPPER, withdraw lower.
    t5 = new_token()
    g = grant(t5.upper())
    time.sleep(0.01)
    w = withdraw(t5)
    upper = show(t5.upper())
    check("CLI ledger: grant UPPER + withdraw lower: `show` UPPER says withdrawn",
          g.code == 0 and w.code == 0 and upper.code == 0 and find_key(consent_entry(upper), "consented") is False,
          g.said(), w.said(), upper.said())

    # A retried grant (the same call twice, as a backend retries) is harmless.
    t6 = new_token()
    first, second = grant(t6.upper(), by="retry"), grant(t6.upper(), by="retry")
    shown = show(t6)
    check("CLI ledger: the same UPPER-case grant sent twice (a retry): both exit 0, one consenting entry stands",
          first.code == 0 and second.code == 0 and shown.code == 0 and find_key(consent_entry(shown), "consented") is True,
          first.said(), second.said(), shown.said())

    # One canonical form is stored: the store holds the lower-case form, never the UPPER one.
    snapshot = store_snapshot(data)
    if snapshot is None:
        check("CLI ledger: the store exists after the grants", False, f"no {data}/signet.sqlite")
    else:
        _, texts = snapshot
        stored = "\n".join(texts)
        missing = [t for t in (t1, t2, t3, t4, t6) if t not in stored]
        upper_kept = [t.upper() for t in (t1, t2, t3, t4, t6) if t.upper() in stored]
        mixed_kept = [mixed_case(t3)] if mixed_case(t3) in stored else []
        check("CLI ledger: the store keeps one canonical (lower-case) form of every token, whatever case it was written in",
              not missing and not upper_kept and not mixed_kept,
              f"lower-case forms not found in any text cell: {missing}",
              f"UPPER/mixed forms found stored: {upper_kept + mixed_kept}")

    # Values that are not a UUID are refused, and nothing is written.
    before = store_snapshot(data)
    t7 = new_token()
    refusals = [("not-a-uuid", "not-a-uuid"), ("an empty value", ""), ("a UUID without hyphens", t7.replace("-", "")),
                ("a UUID in braces", "{" + t7 + "}"), ("a UUID one digit short", t7[:-1])]
    for label, value in refusals:
        for verb, run in (("grant", grant), ("withdraw", withdraw)):
            result = run(value)
            check(f"CLI ledger: `consent {verb} --app-account-token {value!r}` ({label}) is refused: non-zero exit, message mentions UUID",
                  result.code not in (0, None) and "uuid" in (result.err + result.out).lower(),
                  "expected a non-zero exit and a message naming the UUID requirement", result.said())
    for value in ("not-a-uuid", ""):
        shown = show(value)
        check(f"CLI ledger: `consent show --app-account-token {value!r}` is refused: non-zero exit, message mentions UUID",
              shown.code not in (0, None) and "uuid" in (shown.err + shown.out).lower(), shown.said())
    after = store_snapshot(data)
    written = []
    if before and after:
        changed = {t: (before[0].get(t), n) for t, n in after[0].items() if before[0].get(t) != n}
        if changed:
            written.append(f"row counts changed: {changed}")
        for label, value in refusals:
            if value.strip() and any(value.strip() in text for text in after[1]):
                written.append(f"{value!r} found in the store")
    check("CLI ledger: the refused values wrote nothing (every table's row count unchanged, no refused value stored)",
          before is not None and after is not None and not written, *written)


def events_of(text):
    return [e for e in json_lines(text) if "eventId" in e or "type" in e]


def case_entitlements_and_api(signet, root):
    fixtures = os.path.join(root, "fixtures-entitlements")
    made, ok = make_fixtures(signet, fixtures, ["--count", "24"])
    if not check("entitlements: `signet fixtures --out DIR --count 24 --now` made signed notifications", ok, made.said()):
        return
    env = read_fixtures_env(fixtures)
    data = os.path.join(root, "entitlements")
    extra = dict(env, SIGNET_DATA_DIR=data)
    notifications = os.path.join(fixtures, "notifications.ndjson")
    ran = signet.run(["run"], extra, stdin_file=notifications, timeout=90)
    events = events_of(ran.out)
    check("entitlements: `signet run` (the embedded stdin pipeline) over the fixtures exits 0 with events on stdout",
          ran.code == 0 and events, ran.said())
    tokens_in_events = [e.get("appAccountToken") for e in events if e.get("appAccountToken") is not None]
    # The tokens Apple signed, from the notifications themselves (the nested transaction).
    signed_tokens = set()
    with open(notifications, encoding="utf-8") as file:
        for line in file:
            try:
                payload = jws_payload(json.loads(line)["signedPayload"])
                transaction = payload.get("data", {}).get("signedTransactionInfo")
                if transaction:
                    token = jws_payload(transaction).get("appAccountToken")
                    if token:
                        signed_tokens.add(token)
            except (ValueError, KeyError, IndexError, AttributeError):
                pass
    check("entitlements: the events carry appAccountTokens", tokens_in_events,
          f"no event with an appAccountToken among {len(events)} events", ran.said())
    bad = sorted({t for t in tokens_in_events if not is_canonical(t)})
    check("entitlements: every event prints its appAccountToken in the canonical lower-case UUID form",
          tokens_in_events and not bad, f"not canonical: {bad[:5]}")
    if signed_tokens:
        check("entitlements: the tokens in events are the signed tokens, lower-cased",
              set(tokens_in_events) <= {t.lower() for t in signed_tokens},
              f"in events but not signed: {sorted(set(tokens_in_events) - {t.lower() for t in signed_tokens})[:5]}")

    # Tokens to ask about: those whose purchases the store holds.
    at = str(int(time.time() * 1000))
    candidates = []
    for token in sorted(set(t.lower() for t in tokens_in_events if isinstance(t, str))):
        answer = signet.run(["entitlements", "--app-account-token", token, "--at", at], extra)
        if answer.code == 0 and isinstance(answer.json(), list) and answer.json():
            entitled = any(isinstance(e, dict) and e.get("entitled") is True for e in answer.json())
            candidates.append((not entitled, token, answer))
    candidates.sort(key=lambda c: (c[0], c[1]))
    chosen = [(token, answer) for _, token, answer in candidates[:3]]
    if not check("entitlements: `signet entitlements --app-account-token <lower>` answers a non-empty list for a token from the events",
                 chosen, f"tokens tried: {sorted(set(tokens_in_events))[:5]}"):
        return
    for token, lower in chosen:
        upper = signet.run(["entitlements", "--app-account-token", token.upper(), "--at", at], extra)
        mixed = signet.run(["entitlements", "--app-account-token", mixed_case(token), "--at", at], extra)
        check(f"entitlements: `signet entitlements --app-account-token {token.upper()}` (UPPER) answers exit 0 and the same non-empty list as lower case (both --at the same instant)",
              upper.code == 0 and upper.json() == lower.json() and upper.json(), "expected the lower-case answer:", lower.said(), upper.said())
        check(f"entitlements: the mixed-case token {mixed_case(token)} answers the same list",
              mixed.code == 0 and mixed.json() == lower.json(), lower.said(), mixed.said())
        printed = [v for v in all_values(upper.json(), "appAccountToken") if isinstance(v, str)]
        check("entitlements: the answer to an UPPER-case query names the token in lower case",
              all(v == token for v in printed), f"expected {token}; printed: {printed}")
    refused = signet.run(["entitlements", "--app-account-token", "not-a-uuid"], extra)
    check("entitlements: `signet entitlements --app-account-token not-a-uuid` is refused: non-zero exit, message mentions UUID",
          refused.code not in (0, None) and "uuid" in (refused.err + refused.out).lower(), refused.said())
    for label, value in (("a token in braces", "{" + chosen[0][0] + "}"), ("a token without hyphens", chosen[0][0].replace("-", "")),
                         ("an empty value", "")):
        refused = signet.run(["entitlements", "--app-account-token", value], extra)
        check(f"entitlements: {label} ({value!r}) is refused the same way",
              refused.code not in (0, None) and "uuid" in (refused.err + refused.out).lower(), refused.said())

    case_http_api(signet, root, extra, notifications, chosen)


def case_http_api(signet, root, extra, notifications, chosen):
    port = free_port()
    api_token = secrets.token_hex(16)
    pipeline = os.path.join(root, "api.yaml")
    with open(pipeline, "w", encoding="utf-8") as file:
        file.write(pipeline_yaml(http_address=f"127.0.0.1:{port}"))
    extra = dict(extra, SIGNET_API_TOKEN=api_token)
    child = signet.start(["run", "--pipeline", pipeline], extra)
    try:
        # The same notifications again: dedupe drops them (nothing new), and the store stays open
        # while stdin does.
        with open(notifications, encoding="utf-8") as file:
            child.write(file.read())
        if not check(f"HTTP API: `signet run --pipeline api.yaml` with `http: address: 127.0.0.1:{port}` becomes ready (/readyz 200)",
                     wait_ready(port, child), child.said()):
            return
        base = f"http://127.0.0.1:{port}"

        def get(path):
            return http("GET", base + path, api_token)

        def post(path):
            return http("POST", base + path, api_token)

        for token, cli in chosen[:2]:
            lower = get(f"/v1/entitlements?appAccountToken={token}")
            upper = get(f"/v1/entitlements?appAccountToken={token.upper()}")
            mixed = get(f"/v1/entitlements?appAccountToken={mixed_case(token)}")
            check(f"HTTP API: GET /v1/entitlements?appAccountToken=<lower> answers 200 and a non-empty list",
                  lower.status == 200 and isinstance(lower.json(), list) and lower.json(), lower.said())
            check(f"HTTP API: GET /v1/entitlements?appAccountToken=<UPPER> answers 200 and the same non-empty list as lower case",
                  upper.status == 200 and without_instant(upper.json()) == without_instant(lower.json()) and upper.json(),
                  "compared without evaluatedAt / asOf.at", lower.said(), upper.said())
            check(f"HTTP API: GET /v1/entitlements?appAccountToken=<mixed case> answers the same list",
                  mixed.status == 200 and without_instant(mixed.json()) == without_instant(lower.json()),
                  "compared without evaluatedAt / asOf.at", lower.said(), mixed.said())
            check("HTTP API: GET /v1/entitlements answers what `signet entitlements` printed (apart from the instant evaluated at)",
                  without_instant(lower.json()) == without_instant(cli.json()), "CLI printed:", cli.said(), lower.said())

        for label, value in (("not-a-uuid", "not-a-uuid"), ("a UUID in braces", "%7B" + new_token() + "%7D"),
                             ("a UUID without hyphens", new_token().replace("-", "")), ("a UUID one digit short", new_token()[:-1])):
            answer = get(f"/v1/entitlements?appAccountToken={value}")
            body = answer.json()
            check(f"HTTP API: GET /v1/entitlements?appAccountToken=<{label}> answers 400 with a JSON body naming the UUID requirement",
                  answer.status == 400 and isinstance(body, dict) and "uuid" in answer.text().lower(), answer.said())
        answer = get("/v1/entitlements?appAccountToken=")
        check("HTTP API: GET /v1/entitlements?appAccountToken= (empty) answers 400 with a JSON error, not a list",
              answer.status == 400 and isinstance(answer.json(), dict) and answer.json().get("error"), answer.said())

        # Consent written UPPER case, read lower case; a retried POST changes nothing.
        t = new_token()
        first = post(f"/v1/consumption/consent?appAccountToken={t.upper()}&consented=true&by=acceptance")
        check("HTTP API: POST /v1/consumption/consent?appAccountToken=<UPPER>&consented=true answers 200 with the entry",
              first.status == 200 and isinstance(first.json(), dict) and find_key(first.json(), "consented") is True, first.said())
        read_lower = get(f"/v1/consumption/consent?appAccountToken={t}")
        check("HTTP API: GET /v1/consumption/consent?appAccountToken=<lower> finds the consent POSTed UPPER case",
              read_lower.status == 200 and find_key(read_lower.json(), "consented") is True, read_lower.said())
        retried = post(f"/v1/consumption/consent?appAccountToken={t.upper()}&consented=true&by=acceptance")
        check("HTTP API: the same POST again (a retry) answers 200 with the same consenting entry",
              retried.status == 200 and find_key(retried.json(), "consented") is True
              and find_key(retried.json(), "by") == find_key(first.json(), "by"), first.said(), retried.said())
        read_upper = get(f"/v1/consumption/consent?appAccountToken={t.upper()}")
        read_lower2 = get(f"/v1/consumption/consent?appAccountToken={t}")
        check("HTTP API: after the retry, GET UPPER and GET lower answer the same single consenting entry",
              read_upper.status == 200 and read_lower2.status == 200 and read_upper.json() == read_lower2.json()
              and find_key(read_upper.json(), "consented") is True, read_upper.said(), read_lower2.said())
        printed = [v for v in all_values(read_upper.json(), "appAccountToken") if isinstance(v, str)]
        check("HTTP API: the consent entry names the token in lower case (if it names it)",
              all(v == t for v in printed), f"expected {t}; printed {printed}", read_upper.said())

        # Withdrawn in lower case after the UPPER-case grant: every case reads the withdrawal.
        time.sleep(0.01)
        withdrawn = post(f"/v1/consumption/consent?appAccountToken={t}&consented=false&by=acceptance-withdraw")
        read_upper = get(f"/v1/consumption/consent?appAccountToken={t.upper()}")
        check("HTTP API: a withdrawal POSTed lower case after an UPPER-case grant: GET UPPER says consented false",
              withdrawn.status == 200 and read_upper.status == 200 and find_key(read_upper.json(), "consented") is False,
              withdrawn.said(), read_upper.said())

        # Calls reordered on the way (each with its own `at`), in different cases: one customer,
        # so the newest entry stands whatever case each call used.
        t3 = new_token()
        now = int(time.time() * 1000)
        newer = post(f"/v1/consumption/consent?appAccountToken={t3}&consented=true&by=acceptance&at={now - 1000}")
        older = post(f"/v1/consumption/consent?appAccountToken={t3.upper()}&consented=false&by=acceptance-late&at={now - 5000}")
        kept = get(f"/v1/consumption/consent?appAccountToken={mixed_case(t3)}")
        check("HTTP API: a withdrawal with an older `at` sent UPPER case after a lower-case grant changes nothing (still consented)",
              newer.status == 200 and older.status == 200 and kept.status == 200 and find_key(kept.json(), "consented") is True,
              newer.said(), older.said(), kept.said())
        latest = post(f"/v1/consumption/consent?appAccountToken={t3.upper()}&consented=false&by=acceptance-withdraw&at={now}")
        kept = get(f"/v1/consumption/consent?appAccountToken={t3}")
        check("HTTP API: a withdrawal with a newer `at` sent UPPER case replaces the lower-case grant (consented false)",
              latest.status == 200 and kept.status == 200 and find_key(kept.json(), "consented") is False, latest.said(), kept.said())

        for label, value in (("not-a-uuid", "not-a-uuid"), ("a UUID in braces", "%7B" + t + "%7D"),
                             ("a UUID without hyphens", t.replace("-", "")), ("a UUID one digit short", t[:-1])):
            answer = post(f"/v1/consumption/consent?appAccountToken={value}&consented=true&by=acceptance")
            check(f"HTTP API: POST /v1/consumption/consent?appAccountToken=<{label}> answers 400 with a JSON body naming the UUID requirement",
                  answer.status == 400 and isinstance(answer.json(), dict) and "uuid" in answer.text().lower(), answer.said())
        answer = post("/v1/consumption/consent?appAccountToken=&consented=true&by=acceptance")
        check("HTTP API: POST /v1/consumption/consent?appAccountToken= (empty) answers 400 with a JSON error",
              answer.status == 400 and isinstance(answer.json(), dict) and answer.json().get("error"), answer.said())
        answer = get("/v1/consumption/consent?appAccountToken=not-a-uuid")
        check("HTTP API: GET /v1/consumption/consent?appAccountToken=not-a-uuid answers 400 with a JSON body naming the UUID requirement",
              answer.status == 400 and isinstance(answer.json(), dict) and "uuid" in answer.text().lower(), answer.said())

        # A consent POSTed through the API, read through the CLI while the run holds the store.
        t2 = new_token()
        posted = post(f"/v1/consumption/consent?appAccountToken={t2.upper()}&consented=true&by=acceptance")
        shown = signet.run(["consumption", "consent", "show", "--app-account-token", t2], extra)
        check("HTTP API + CLI: a consent POSTed UPPER case is shown by `signet consumption consent show` with the lower-case token",
              posted.status == 200 and shown.code == 0 and find_key(consent_entry(shown), "consented") is True,
              posted.said(), shown.said())
    finally:
        code = child.finish(timeout=30)
    check("HTTP API: the run ends cleanly when its stdin closes (exit 0)", code == 0, f"exit {code}", child.said())


def case_signed_tokens_in_other_cases(signet, root):
    """Apple signs lower case; a token signed in another case (the app's own forwarded transaction,
    a proxy that rewrote it) is still one customer: events and answers print the canonical form."""
    fixtures = os.path.join(root, "fixtures-signed-case")
    made, ok = make_fixtures(signet, fixtures, ["--count", "3", "--type", "SUBSCRIBED/INITIAL_BUY"])
    if not check("signed tokens: `signet fixtures --type SUBSCRIBED/INITIAL_BUY --count 3 --now` made three purchases", ok, made.said()):
        return
    key_file = os.path.join(fixtures, "pki", "leaf.key.pem")
    upper_token, mixed_token, forwarded_token = new_token(), new_token(), new_token()
    lines, purchases = [], {}
    try:
        with open(os.path.join(fixtures, "notifications.ndjson"), encoding="utf-8") as file:
            originals = [json.loads(line) for line in file if line.strip()]
        for original, (token, written) in zip(originals, ((upper_token, upper_token.upper()), (mixed_token, mixed_case(mixed_token)))):
            outer = original["signedPayload"]
            notification = jws_payload(outer)
            data = notification["data"]
            for field in ("signedTransactionInfo", "signedRenewalInfo"):
                if field in data:
                    inner = jws_payload(data[field])
                    inner["appAccountToken"] = written
                    if field == "signedTransactionInfo":
                        purchases[token] = inner["originalTransactionId"]
                    data[field] = resign(data[field], inner, key_file)
            notification["notificationUUID"] = str(uuid.uuid4())
            lines.append(json.dumps({"signedPayload": resign(outer, notification, key_file)}))
        # The third purchase as the app's own forwarded transaction ({"signedTransaction": ...}, as
        # /v1/purchases takes it), not as a notification.
        forwarded = jws_payload(originals[2]["signedPayload"])["data"]["signedTransactionInfo"]
        transaction = jws_payload(forwarded)
        transaction["appAccountToken"] = forwarded_token.upper()
        purchases[forwarded_token] = transaction["originalTransactionId"]
        lines.append(json.dumps({"signedTransaction": resign(forwarded, transaction, key_file)}))
    except (OSError, ValueError, KeyError, IndexError, subprocess.SubprocessError) as error:
        check("signed tokens: re-signing fixtures with the test PKI's leaf key (openssl)", False, repr(error))
        return
    if not check("signed tokens: three distinct purchases to sign with UPPER / mixed-case tokens",
                 len(set(purchases.values())) == 3, f"purchases: {purchases}"):
        return
    source = os.path.join(root, "signed-case.ndjson")
    with open(source, "w", encoding="utf-8") as file:
        file.write("\n".join(lines) + "\n")
    data_dir = os.path.join(root, "signed-case")
    extra = dict(read_fixtures_env(fixtures), SIGNET_DATA_DIR=data_dir)
    ran = signet.run(["run"], extra, stdin_file=source, timeout=90)
    dead = os.path.join(data_dir, "dead-letter.ndjson")
    dead_letters = open(dead, encoding="utf-8").read() if os.path.exists(dead) else ""
    events = events_of(ran.out)
    check("signed tokens: `signet run` verifies the re-signed notifications and transaction (exit 0, no dead letter, events)",
          ran.code == 0 and not dead_letters.strip() and events, ran.said(), f"dead letters: {clip(dead_letters)}")
    printed = sorted({e.get("appAccountToken") for e in events if e.get("appAccountToken") is not None})
    check("signed tokens: tokens signed UPPER / mixed case appear in the events in lower case only",
          set(printed) == set(purchases), f"expected exactly {sorted(purchases)}; events printed {printed}", ran.said())
    at = str(int(time.time() * 1000))
    for token, original_transaction_id in purchases.items():
        lower = signet.run(["entitlements", "--app-account-token", token, "--at", at], extra)
        upper = signet.run(["entitlements", "--app-account-token", token.upper(), "--at", at], extra)
        answer = lower.json() if lower.code == 0 else None
        check(f"signed tokens: `signet entitlements` finds purchase {original_transaction_id} by the lower-case and the UPPER-case token alike",
              isinstance(answer, list) and answer and upper.code == 0 and upper.json() == answer
              and any(isinstance(e, dict) and e.get("originalTransactionId") == original_transaction_id for e in answer),
              lower.said(), upper.said())
        names = [v for v in all_values(answer, "appAccountToken") if isinstance(v, str)]
        check(f"signed tokens: the answer names the token of {original_transaction_id} in lower case",
              names and all(v == token for v in names), f"expected {token}; printed {names}")


def case_refund_question(signet, root):
    """The decisive case: consent granted lower case, withdrawn UPPER case, then Apple's
    CONSUMPTION_REQUEST for a purchase with that token: Apple must receive no answer."""
    fixtures = os.path.join(root, "fixtures-consumption")
    made, ok = make_fixtures(signet, fixtures, ["--count", "4", "--type", "CONSUMPTION_REQUEST"])
    if not check("refund question: `signet fixtures --type CONSUMPTION_REQUEST --count 4 --now` made signed refund questions", ok, made.said()):
        return
    lines = []
    with open(os.path.join(fixtures, "notifications.ndjson"), encoding="utf-8") as file:
        for line in file:
            line = line.strip()
            if not line:
                continue
            try:
                payload = jws_payload(json.loads(line)["signedPayload"])
                transaction = jws_payload(payload["data"]["signedTransactionInfo"])
            except (ValueError, KeyError, IndexError, TypeError):
                continue
            if payload.get("notificationType") == "CONSUMPTION_REQUEST" and transaction.get("appAccountToken"):
                lines.append((line, transaction["transactionId"], transaction["appAccountToken"], transaction.get("type")))
    distinct = {token.lower() for _, _, token, _ in lines}
    if not check("refund question: the fixtures hold 4 refund questions with distinct appAccountTokens and transactions",
                 len(lines) == 4 and len(distinct) == 4 and len({tid for _, tid, _, _ in lines}) == 4,
                 f"found {[(tid, token, kind) for _, tid, token, kind in lines]}"):
        return
    (cli_withdrawn, cli_granted, api_withdrawn, api_granted) = lines

    env = read_fixtures_env(fixtures)
    data = os.path.join(root, "consumption")
    key_file = os.path.join(root, "AuthKey_ACCEPT0001.p8")
    made_key = subprocess.run(["openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key_file],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    if not check("refund question: an In-App Purchase key (P-256, PKCS#8) for the fake App Store Server API",
                 made_key.returncode == 0, made_key.stderr.decode("utf-8", "replace")):
        return
    fake = FakeAppStoreAPI()
    port = free_port()
    api_token = secrets.token_hex(16)
    extra = dict(env, SIGNET_DATA_DIR=data, SIGNET_API_TOKEN=api_token, SIGNET_APPSTORE_KEY_ID="ACCEPT0001",
                 SIGNET_APPSTORE_ISSUER_ID=str(uuid.uuid4()), SIGNET_APPSTORE_PRIVATE_KEY=key_file,
                 SIGNET_APPSTORE_API_URL=fake.url)

    def cli(verb, token):
        return signet.run(["consumption", "consent", verb, "--app-account-token", token, "--by", "acceptance-" + verb], extra)

    # Through the CLI, before the first run (fresh data dir): granted lower, withdrawn UPPER;
    # and another customer granted UPPER only (the control: this one must be answered).
    steps = [cli("grant", cli_withdrawn[2].lower())]
    time.sleep(0.01)
    steps.append(cli("withdraw", cli_withdrawn[2].upper()))
    steps.append(cli("grant", cli_granted[2].upper()))
    check("refund question: consent through the CLI before the first run: grant lower, withdraw UPPER; another grant UPPER (all exit 0)",
          all(step.code == 0 for step in steps), *[s.said() for s in steps if s.code != 0])

    pipeline = os.path.join(root, "consumption.yaml")
    with open(pipeline, "w", encoding="utf-8") as file:
        file.write(pipeline_yaml(http_address=f"127.0.0.1:{port}", consumption=True))
    child = signet.start(["run", "--pipeline", pipeline], extra)
    try:
        if not check("refund question: `signet run` with appstore_consumption against the fake API becomes ready",
                     wait_ready(port, child), child.said()):
            return
        base = f"http://127.0.0.1:{port}/v1/consumption/consent?appAccountToken="
        posts = [http("POST", base + api_withdrawn[2].lower() + "&consented=true&by=acceptance", api_token)]
        time.sleep(0.01)
        posts.append(http("POST", base + api_withdrawn[2].upper() + "&consented=false&by=acceptance-withdraw", api_token))
        posts.append(http("POST", base + api_granted[2].upper() + "&consented=true&by=acceptance", api_token))
        check("refund question: consent through the API: grant lower, withdraw UPPER; another grant UPPER (all 200)",
              all(p.status == 200 for p in posts), *[p.said() for p in posts if p.status != 200])

        child.write("".join(line + "\n" for line, _, _, _ in lines))
        granted_ids = [cli_granted[1], api_granted[1]]
        withdrawn_ids = [cli_withdrawn[1], api_withdrawn[1]]

        def listing():
            result = signet.run(["consumption", "requests"], extra, timeout=30)
            rows = find_key(result.json(), "requests") if result.code == 0 else None
            return result, {row.get("transactionId"): row for row in rows or [] if isinstance(row, dict)}

        def settled():
            if not child.running():
                return True
            _, rows = listing()
            return all(tid in rows and rows[tid].get("status") not in (None, "pending") for tid in granted_ids + withdrawn_ids) \
                and all(fake.answered(tid) for tid in granted_ids)

        wait_until(settled, 45, 0.5)
        time.sleep(3)  # a few more sweeps (interval 1s): nothing more may go out
        result, rows = listing()
        for label, (_, tid, token, kind) in (("CLI", cli_withdrawn), ("API", api_withdrawn)):
            check(f"refund question ({label}): consent granted lower case then withdrawn UPPER case: Apple receives NO answer for {tid}",
                  not fake.answered(tid),
                  f"token {token} ({kind}); PUTs received: {[(t, r['body'][:200]) for t, r in fake.consumption_answers() if t == tid]}")
            row = rows.get(tid, {})
            check(f"refund question ({label}): the withdrawn customer's request is `skipped` in `signet consumption requests`",
                  row.get("status") == "skipped", f"row: {row}", result.said())
        for label, (_, tid, token, kind) in (("CLI", cli_granted), ("API", api_granted)):
            answers = fake.answered(tid)
            check(f"refund question ({label}) control: consent granted UPPER case only: Apple receives exactly one answer for {tid}",
                  len(answers) == 1, f"token {token} ({kind}); {len(answers)} answers; row: {rows.get(tid)}; "
                  f"all requests to the fake: {[(r['method'], r['path']) for r in fake.requests][:10]}", child.said())
            check(f"refund question ({label}) control: its request is `answered` in `signet consumption requests`",
                  rows.get(tid, {}).get("status") == "answered", f"row: {rows.get(tid)}", result.said())
    finally:
        code = child.finish(timeout=30)
    check("refund question: the run ends cleanly when its stdin closes (exit 0)", code == 0, f"exit {code}", child.said())


# ----------------------------------------------------------------------------- main


def main():
    binary = signet_binary(sys.argv)
    if binary is None:
        return 2
    root = tempfile.mkdtemp(prefix="signet-app-account-token-")
    signet = Signet(binary, root)

    arm_time_limit(TIME_LIMIT)
    started = time.monotonic()
    try:
        for case in (case_fresh_data_dir, case_cli_ledger, case_entitlements_and_api, case_signed_tokens_in_other_cases,
                     case_refund_question):
            try:
                case(signet, root)
            except OutOfTime:
                raise
            except Exception as error:  # a broken case must not hide the others
                import traceback
                check(f"{case.__name__} ran to its end", False, traceback.format_exc())
    except OutOfTime:
        check(f"the checks finished within {TIME_LIMIT} s", False, "stopped: out of time")
    finally:
        signal.alarm(0)
        for process in CHILDREN:
            stop(process)
        for server in SERVERS:
            server.shutdown()
            server.server_close()
        shutil.rmtree(root, ignore_errors=True)
    failed = [name for name, ok in RESULTS if not ok]
    print(f"# {len(RESULTS)} checks, {len(failed)} failed, {time.monotonic() - started:.1f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
