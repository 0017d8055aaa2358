#!/usr/bin/env python3
"""Acceptance tests for issue 56, item 3 (what was answered to Apple's retention requests, and who
stayed) and the frequency cap of item 2.

    python3 Tests/Acceptance/retention_records_acceptance.py .build/debug/signet

Written from the documentation only: docs/retention.md (its "Signet" section, above all "What was
answered, and who stayed" and the `frequency_cap` table), docs/operations.md (the entitlement API,
its bearer token, the metrics), docs/webhook.md, docs/pipelines.md, docs/postgres.md, README.md,
Pipelines/webhook.yaml and the binary's own `--help` (`signet retention report --help`,
`signet components retention`, `signet fixtures --help`, `signet run --help`), not from Signet's
sources. The harness mechanics (starting `signet run` on free ports, `signet fixtures`' test PKI,
re-signing a JWS with its leaf key) follow Tests/Acceptance/retention_endpoint_acceptance.py; every
expectation here comes from the docs. What it checks, against the built binary, with one
`signet run` (a Sandbox webhook pipeline, SQLite store, a `retention:` section of nine rules)
stopped with SIGTERM and started again on the same data directory:

1. Replays. A request Apple sends again (the same requestIdentifier) is answered the same body:
   the same fixture line twice; the same request re-signed with a new signedDate; the
   requestIdentifier UPPER case then lower case; a promotional offer byte for byte, also after the
   purchase was refunded in between (while a new request then gets what the new state calls for);
   a request answered the default message because the purchase was unknown, sent again after the
   purchase's notification arrived: still the default, while a new request gets the rule. Replays
   survive a restart of `signet run`.
2. Metrics as Prometheus scrapes them: the `replayed` series exist at 0 before the first request
   (in each process), count exactly the repeats with the first answer's result as reason, and
   repeats are not counted `answered` (every retention series is compared with what was sent).
3. `frequency_cap`: `{max: 1, within: 30d}` answers a purchase once, then the next rule answers it;
   another purchase is unaffected; a replay does not count as a second answer (`max: 2`); a
   default answer never counts; `across_rules: true` counts other rules' answers (and without it
   they do not count); a `within: 2s` window lets the rule answer again once it passed; the cap
   still holds after a restart.
4. Outcomes and the report: notifications re-signed with the fixtures' PKI (new notificationUUIDs)
   after the answers (AUTO_RENEW_ENABLED, AUTO_RENEW_DISABLED, DID_CHANGE_RENEWAL_PREF,
   OFFER_REDEEMED, DID_RENEW, EXPIRED; a PRICE_INCREASE and a REFUND that decide nothing; one
   signed before the answer that decides nothing; one signed between two answers that decides only
   the first; an out-of-order pair, AUTO_RENEW_ENABLED signed later arriving first and
   AUTO_RENEW_DISABLED signed earlier arriving second: lost; and the same pair in order: lost, not
   overturned). `signet retention report --since MS`
   and `GET /v1/retention/report?since=MS` agree and count requests (a replayed request once),
   answeredByKind, defaultsByReason, per rule answers/kept/lost/undecided and the default
   message's baseline; a window starting at the restart (UNIX ms on the API, ISO-8601 on the CLI);
   the defaults of both windows (30d), `--since 90d`, a `--since` in the
   future (zero requests), a bad `since` on the API (400), no or a wrong token (401).
5. `signet retention report` on a data directory without a store: a clear error, non-zero exit, no
   crash dump.

Everything happens in a fresh temporary directory (SIGNET_DATA_DIR points there; no SIGNET_*
variable of the caller's environment is passed on), on 127.0.0.1 and free ports; every process
started is stopped at the end. One line per check, `ok - ...` or `FAIL - ...` (with indented `#`
lines saying what was sent, expected and seen); exit 1 when any check failed, 2 when the script
could not run at all. Standard library plus Python's `cryptography` (re-signing requests and
notifications with the fixtures' test PKI, generating the In-App Purchase key and checking offer
signatures). SQLite only.
"""

import http.client
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid

try:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
except ImportError:  # pragma: no cover
    print("this script needs Python's `cryptography` package", file=sys.stderr)
    sys.exit(2)

from harness import (
    CHILDREN, RESULTS, CannotRun, OfferKey, OutOfTime, Result, Signer, arm_time_limit, b64url_decode, check,
    clip, es256_verify, free_port, jws_payload, ndjson_lines, now_ms, parse_json, parse_metrics,
    read_fixtures_env, signet_binary, stop, wait_until,
)

TIME_LIMIT = 88  # seconds: the whole script must finish within 90 s
MONTHLY = "com.example.signet.premium.monthly"
YEARLY = "com.example.signet.premium.yearly"
DAY_MS = 86_400_000

# ----------------------------------------------------------------------------- reporting


def wait_past(instant_ms):
    """Sleeps until the wall clock is past `instant_ms` (a few ms at most where it is used)."""
    while now_ms() <= instant_ms:
        time.sleep(0.005)


def message_id():
    return str(uuid.uuid4())


def request_id_with_letters():
    """A UUID with letters in it, so its UPPER and lower forms differ."""
    while True:
        value = str(uuid.uuid4())
        if sum(c.isalpha() for c in value) >= 6:
            return value


# ----------------------------------------------------------------------------- JWS


# ----------------------------------------------------------------------------- processes


class Signet:
    def __init__(self, binary, root):
        self.binary = binary
        self.root = root

    def env(self, extra):
        environment = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET_")}
        environment.update(extra)
        return environment

    def describe(self, args, extra):
        shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(extra.items()) if k != "SIGNET_API_TOKEN")
        return (shown + " " + shlex.join([self.binary] + list(args))).strip()

    def run(self, args, extra, timeout=30):
        started = subprocess.Popen([self.binary] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, env=self.env(extra), cwd=self.root)
        CHILDREN.append(started)
        try:
            out, err = started.communicate(timeout=timeout)
            code = started.returncode
        except subprocess.TimeoutExpired:
            stop(started)
            out, err = started.communicate()
            err += f"\n(still running after {timeout} s: stopped)".encode()
            code = None
        return Result(self.describe(args, extra), code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))

    def start(self, args, extra):
        return Child([self.binary] + list(args), self.env(extra), self.root, self.describe(args, extra))


class Child:
    """A long-running `signet run` whose output we collect."""

    def __init__(self, argv, environment, cwd, command):
        self.command = command
        self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=environment, cwd=cwd)
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

    def stderr(self):
        return bytes(self.err).decode("utf-8", "replace")

    def running(self):
        return self.process.poll() is None

    def terminate(self, timeout=25):
        """SIGTERM (a clean drain), SIGKILL if it lingers; the exit code, or None if it had to be killed."""
        if self.process.poll() is None:
            try:
                self.process.send_signal(signal.SIGTERM)
                code = self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
                code = None
        else:
            code = self.process.returncode
        for reader in self.readers:
            reader.join(timeout=5)
        return code

    def said(self):
        return f"ran: {self.command}\nstderr (tail): {clip(self.stderr()[-2000:], 2000)}"


# ----------------------------------------------------------------------------- HTTP


class Reply:
    def __init__(self, label, method, port, path, status, headers, body, elapsed, error=None, sent=b""):
        self.label, self.method, self.port, self.path = label, method, port, path
        self.status, self.headers, self.body, self.elapsed, self.error, self.sent = status, headers, body, elapsed, error, sent

    def header(self, name):
        for key, value in self.headers or []:
            if key.lower() == name.lower():
                return value
        return None

    def json(self):
        return parse_json(self.body.decode("utf-8", "replace")) if self.body else None

    def said(self):
        sent = self.sent if len(self.sent) <= 300 else self.sent[:300] + f"... ({len(self.sent)} bytes)".encode()
        lines = [f"sent: {self.method} http://127.0.0.1:{self.port}{self.path} ({self.label}); body: {sent.decode('utf-8', 'replace')}"]
        if self.error:
            lines.append(f"seen: no answer ({self.error}) after {self.elapsed * 1000:.0f} ms")
        else:
            lines.append(f"seen: status {self.status}, Content-Type {self.header('Content-Type')}, {len(self.body)} body bytes")
            lines.append(f"body: {clip(self.body, 900)}")
        return "\n".join(lines)


def send(port, path, body=b"", method="POST", headers=None, label="", timeout=15):
    """One HTTP/1.1 request; `headers` None means Content-Type: application/json."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    if isinstance(body, str):
        body = body.encode()
    headers = {"Content-Type": "application/json"} if headers is None else headers
    started = time.monotonic()
    try:
        conn.putrequest(method, path, skip_accept_encoding=True)
        for name, value in headers.items():
            conn.putheader(name, value)
        if method in ("POST", "PUT") or body:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders()
        if body:
            conn.send(body)
        response = conn.getresponse()
        data = response.read()
        return Reply(label, method, port, path, response.status, response.getheaders(), data,
                     time.monotonic() - started, sent=body)
    except (OSError, http.client.HTTPException) as error:
        return Reply(label, method, port, path, None, None, b"", time.monotonic() - started, repr(error), sent=body)
    finally:
        conn.close()


def get(port, path, token=None, label="read"):
    headers = {"Authorization": "Bearer " + token} if token else {}
    return send(port, path, method="GET", headers=headers, label=label)


def scrape(port):
    """Every series of /metrics as {(name, frozenset(labels)): value}, and the reply."""
    reply = send(port, "/metrics", method="GET", headers={}, label="scrape")
    return reply, (parse_metrics(reply.body.decode("utf-8", "replace")) if reply.status == 200 else {})


def retention_series(series):
    """signet_retention_requests_total as {"result/reason": value}."""
    return {dict(labels).get("result", "?") + "/" + dict(labels).get("reason", "?"): value
            for (name, labels), value in series.items() if name == "signet_retention_requests_total"}


# ----------------------------------------------------------------------------- fixtures and the pipeline


class Fixtures:
    """`signet fixtures --now`: the test PKI, notifications, one retention request per subscription."""

    def __init__(self, signet, folder):
        self.folder = folder
        self.made = signet.run(["fixtures", "--out", folder, "--now", "--count", "40"], {}, timeout=60)
        need = ["notifications.ndjson", "realtime-requests.ndjson", "fixtures.env", "root.pem"]
        self.ok = self.made.code == 0 and all(os.path.exists(os.path.join(folder, n)) for n in need)
        if not self.ok:
            return
        self.env = read_fixtures_env(folder)
        self.bundle_id = self.env.get("SIGNET_BUNDLE_ID", "com.example.signet")
        self.root_pem = os.path.join(folder, "root.pem")
        self.notifications = ndjson_lines(os.path.join(folder, "notifications.ndjson"))
        self.request_lines = [(line, jws_payload(parse_json(line)["signedPayload"]))
                              for line in ndjson_lines(os.path.join(folder, "realtime-requests.ndjson"))]
        self.signer = Signer(folder, parse_json(self.request_lines[0][0])["signedPayload"])
        self.app_apple_id = self.request_lines[0][1]["appAppleId"]
        # per purchase: its latest fixture notification (payload, transaction, renewal info, line)
        self.by_purchase = {}
        self.rescinded_app_transactions = set()
        for line in self.notifications:
            payload = jws_payload(parse_json(line)["signedPayload"])
            data = payload.get("data") or {}
            if payload.get("notificationType") == "RESCIND_CONSENT":
                try:
                    info = jws_payload((payload.get("appData") or {})["signedAppTransactionInfo"])
                    self.rescinded_app_transactions.add(str(info.get("appTransactionId")))
                except (KeyError, TypeError, ValueError, IndexError):
                    pass
            if "signedTransactionInfo" not in data or "signedRenewalInfo" not in data:
                continue
            transaction = jws_payload(data["signedTransactionInfo"])
            renewal = jws_payload(data["signedRenewalInfo"])
            otid = transaction.get("originalTransactionId")
            known = self.by_purchase.get(otid)
            if known is None or payload["signedDate"] >= known["payload"]["signedDate"]:
                self.by_purchase[otid] = {"payload": payload, "transaction": transaction, "renewal": renewal,
                                          "line": line, "lines": (known or {}).get("lines", []) + [line]}
            else:
                known["lines"].append(line)

    def request(self, otid, locale, request_identifier=None, signed_date=None, product=None):
        """A request body signed with the fixtures' PKI, as Apple sends it, and its payload."""
        base = next((p for _, p in self.request_lines if p["originalTransactionId"] == otid), self.request_lines[0][1])
        payload = dict(base)
        payload.update({"originalTransactionId": otid, "userLocale": locale,
                        "productId": product or self.by_purchase.get(otid, {}).get("transaction", {}).get("productId", base["productId"]),
                        "requestIdentifier": request_identifier or str(uuid.uuid4()).upper(),
                        "signedDate": signed_date if signed_date is not None else now_ms()})
        return json.dumps({"signedPayload": self.signer.sign(payload)}), payload

    def notification(self, otid, notification_type, subtype, signed_date, status=1, transaction_changes=None,
                     renewal_changes=None, new_transaction=False):
        """The purchase's own transaction and renewal info, re-signed at `signed_date` in a new
        notification (a new notificationUUID) of this type, with the changes given."""
        known = self.by_purchase[otid]
        transaction = dict(known["transaction"])
        renewal = dict(known["renewal"])
        if new_transaction:  # a new period: a renewal or a redeemed offer
            transaction.update({"transactionId": str(2_100_000_000_000_000 + secrets.randbelow(10 ** 14)),
                                "webOrderLineItemId": str(2_100_000_000_000_000 + secrets.randbelow(10 ** 14)),
                                "purchaseDate": signed_date - 1000, "expiresDate": signed_date - 1000 + 30 * DAY_MS,
                                "transactionReason": "RENEWAL"})
            for name in ("offerType", "offerIdentifier", "offerDiscountType", "offerPeriod"):
                transaction.pop(name, None)
            renewal.update({"renewalDate": transaction["expiresDate"]})
        transaction.update(transaction_changes or {})
        transaction["signedDate"] = signed_date
        renewal.update(renewal_changes or {})
        renewal["signedDate"] = signed_date
        data = dict(known["payload"]["data"])
        data.update({"status": status, "signedTransactionInfo": self.signer.sign(transaction),
                     "signedRenewalInfo": self.signer.sign(renewal)})
        payload = {"notificationType": notification_type, "notificationUUID": str(uuid.uuid4()), "data": data,
                   "version": "2.0", "signedDate": signed_date}
        if subtype:
            payload["subtype"] = subtype
        return json.dumps({"signedPayload": self.signer.sign(payload)})


def pipeline_yaml(data_dir, fixtures, webhook_port, admin_port, rules, default_message):
    lines = [
        "description: retention records acceptance",
        "stores:",
        "  default:",
        "    type: sqlite",
        f"    path: {data_dir}/signet.sqlite",
        "    outbox_retention: 90d",
        "    entitlements:",
        f"      pro: [{MONTHLY}]",
        f"      yearly: [{YEARLY}]",
        "source:",
        "  type: http",
        f"  address: 127.0.0.1:{webhook_port}",
        "  path: /notifications",
        "stages:",
        "  - type: decode",
        "  - type: verify",
        f"    roots: {fixtures.root_pem}",
        "    environment: [Sandbox]",
        f"    bundle_id: {fixtures.bundle_id}",
        f"    app_apple_id: {fixtures.app_apple_id}",
        "  - type: dedupe",
        "  - type: transition",
        "    expiry_sweep: 0s",
        "  - type: fanout",
        "    default_sinks: [stdout]",
        "sinks:",
        "  stdout:",
        "    type: stdout",
        "dead_letter:",
        "  type: file",
        f"  path: {data_dir}/dead-letter.ndjson",
        "  format: json",
        "http:",
        f"  address: 127.0.0.1:{admin_port}",
        "retention:",
        "  path: /retention",
        f"  default_message: {default_message}",
        "  offer_signature: v2",
        "  rules:",
    ]
    for rule in rules:
        lines.append(f"    - name: {rule['name']}")
        lines.append(f"      when: {json.dumps(rule['when'])}")
        for key in ("message", "alternate_product", "promotional_offer"):
            if key in rule:
                value = rule[key]
                lines.append(f"      {key}: {value if isinstance(value, str) else json.dumps(value)}")
        if "frequency_cap" in rule:
            lines.append(f"      frequency_cap: {rule['frequency_cap']}")
    return "\n".join(lines) + "\n"


def wait_ready(admin_port, child, timeout=30):
    def ready():
        if not child.running():
            return True
        return send(admin_port, "/readyz", method="GET", headers={}, timeout=2).status == 200
    wait_until(ready, timeout, 0.1)
    return child.running() and send(admin_port, "/readyz", method="GET", headers={}, timeout=2).status == 200


# ----------------------------------------------------------------------------- what the docs say


KINDS = {"message": "message", "alternate_product": "alternate_product", "promotional_offer": "promotional_offer"}


def rule_body(rule):
    """The answer docs/retention.md step 4 gives for a message or alternate_product rule."""
    if "message" in rule:
        return {"message": {"messageIdentifier": rule["message"].lower()}}
    spec = rule["alternate_product"]
    inner = {"messageIdentifier": spec["message"].lower(), "productId": spec["product"]}
    if "billing_plan_type" in spec:
        inner["billingPlanType"] = spec["billing_plan_type"]
    return {"alternateProduct": inner}


def rule_kind(rule):
    return next(k for k in KINDS if k in rule)


def offer_problems(reply, rule, key, bundle_id, request):
    """Problems with a promotionalOffer answer (empty: right)."""
    body = reply.json() if reply.status == 200 else None
    if not isinstance(body, dict) or sorted(body) != ["promotionalOffer"]:
        return [f"expected a promotionalOffer (rule {rule['name']}), got status {reply.status}, body keys "
                f"{sorted(body) if isinstance(body, dict) else body}"]
    inner = body["promotionalOffer"]
    problems = []
    if inner.get("messageIdentifier") != rule["promotional_offer"]["message"].lower():
        problems.append(f"messageIdentifier {inner.get('messageIdentifier')!r}, expected {rule['promotional_offer']['message']}")
    jws = inner.get("promotionalOfferSignatureV2")
    try:
        head, payload, signature = jws.split(".")
        claims = json.loads(b64url_decode(payload))
    except (AttributeError, ValueError):
        return problems + [f"promotionalOfferSignatureV2 is not a compact JWS: {jws!r}"]
    if not es256_verify(key.public, (head + "." + payload).encode(), b64url_decode(signature)):
        problems.append("the V2 signature does not verify with the In-App Purchase key")
    for name, value in (("transactionId", request["originalTransactionId"]),
                        ("offerIdentifier", rule["promotional_offer"]["offer"]), ("bid", bundle_id)):
        if claims.get(name) != value:
            problems.append(f"claim {name} = {claims.get(name)!r}, expected {value!r}")
    return problems


DECIDES = {
    ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED"): "kept",
    ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED"): "lost",
    ("DID_CHANGE_RENEWAL_PREF", "*"): "kept",
    ("OFFER_REDEEMED", "*"): "kept",
    ("DID_RENEW", "*"): "kept",
    ("EXPIRED", "*"): "lost",
}


def decides(notification_type, subtype):
    """docs/retention.md "What the customer did next": the outcome a notification decides, or None."""
    return DECIDES.get((notification_type, subtype)) or DECIDES.get((notification_type, "*"))


class Ledger:
    """What was sent: every verified request (its first answer) and every notification about a
    purchase after the first answer, so the report can be predicted from the docs."""

    def __init__(self):
        self.records = []  # dicts: rid, otid, result, name (rule or default reason), kind, lo, hi
        self.notifications = []  # (otid, signedDate, outcome or None)
        self.metrics = {}  # "result/reason" -> expected count in the current process

    def count(self, key):
        self.metrics[key] = self.metrics.get(key, 0) + 1

    def answered(self, rid, otid, result, name, kind, lo, hi):
        self.records.append({"rid": rid.lower(), "otid": otid, "result": result, "name": name, "kind": kind,
                             "lo": lo, "hi": hi})
        self.count(f"{result}/{name}")

    def outcome(self, record):
        decided = [(signed, outcome) for otid, signed, outcome in self.notifications
                   if otid == record["otid"] and outcome and signed > record["hi"]]
        ambiguous = [signed for otid, signed, outcome in self.notifications
                     if otid == record["otid"] and outcome and record["lo"] <= signed <= record["hi"]]
        if ambiguous:
            raise CannotRun(f"a notification signed at {ambiguous} while request {record['rid']} was being answered")
        return min(decided)[1] if decided else "undecided"

    def report(self, since=None):
        """The report docs/retention.md describes, for every answer given at or after `since` (zeros
        left out)."""
        by_kind, by_reason, rules = {}, {}, {}
        baseline = {"answers": 0, "kept": 0, "lost": 0, "undecided": 0}
        records = [r for r in self.records if since is None or r["lo"] >= since]
        if since is not None and any(r["lo"] < since <= r["hi"] for r in self.records):
            raise CannotRun(f"an answer was being given at the window's start {since}")
        for record in records:
            outcome = self.outcome(record)
            if record["result"] == "answered":
                by_kind[record["kind"]] = by_kind.get(record["kind"], 0) + 1
                entry = rules.setdefault(record["name"], {"answers": 0, "kept": 0, "lost": 0, "undecided": 0})
            else:
                by_reason[record["name"]] = by_reason.get(record["name"], 0) + 1
                entry = baseline
            entry["answers"] += 1
            entry[outcome] += 1
        return {"requests": len(records), "answeredByKind": by_kind, "defaultsByReason": by_reason,
                "rules": rules, "defaultMessage": baseline, "truncated": False}


def normalised(report):
    """The parts of a report compared with the prediction; entries that are all zero are dropped
    (the docs do not say whether a rule or reason with nothing to count is listed)."""
    if not isinstance(report, dict):
        return None

    def counts(value):
        return {k: v for k, v in value.items() if v} if isinstance(value, dict) else value

    rules = report.get("rules")
    if isinstance(rules, dict):
        rules = {name: entry for name, entry in rules.items()
                 if not (isinstance(entry, dict) and not any(entry.get(k) for k in ("answers", "kept", "lost", "undecided")))}
    return {"requests": report.get("requests"), "answeredByKind": counts(report.get("answeredByKind")),
            "defaultsByReason": counts(report.get("defaultsByReason")), "rules": rules,
            "defaultMessage": report.get("defaultMessage"), "truncated": report.get("truncated")}


def differences(want, seen):
    if seen is None:
        return ["no report"]
    out = []
    for key in want:
        if key == "rules":
            for name in sorted(set(want["rules"]) | set(seen.get("rules") or {})):
                a, b = want["rules"].get(name), (seen.get("rules") or {}).get(name)
                if a != b:
                    out.append(f"rules.{name}: expected {a}, seen {b}")
        elif want[key] != seen.get(key):
            out.append(f"{key}: expected {want[key]}, seen {seen.get(key)}")
    return out


# ----------------------------------------------------------------------------- the case


REPORT_KEYS = {"since", "asOf", "requests", "answeredByKind", "defaultsByReason", "rules", "defaultMessage", "truncated"}


def case_records(signet, root):
    fixtures = Fixtures(signet, os.path.join(root, "fixtures"))
    if not fixtures.ok:
        raise CannotRun("`signet fixtures` did not write its files:\n" + fixtures.made.said())
    data_dir = os.path.join(root, "data")
    os.makedirs(data_dir)
    token = secrets.token_hex(16)
    key = OfferKey(root, "RECORDKEY1")
    ids = {name: message_id() for name in ("default", "offer_active", "offer_fr", "fr", "de_switch", "de", "it", "brief",
                                           "brief_fallback", "en")}
    rules = [
        {"name": "offer-active", "when": {"locale": ["es-ES"], "state": ["active"]},
         "promotional_offer": {"message": ids["offer_active"], "offer": "stay.50"}},
        {"name": "offer-fr", "when": {"locale": ["fr-FR"]},
         "promotional_offer": {"message": ids["offer_fr"], "offer": "reste.30"}, "frequency_cap": "{max: 1, within: 30d}"},
        {"name": "message-fr", "when": {"locale": ["fr-FR"]}, "message": ids["fr"]},
        {"name": "across-de", "when": {"locale": ["de-DE"]},
         "alternate_product": {"message": ids["de_switch"], "product": YEARLY},
         "frequency_cap": "{max: 1, within: 30d, across_rules: true}"},
        {"name": "message-de", "when": {"locale": ["de-DE"]}, "message": ids["de"]},
        {"name": "twice-it", "when": {"locale": ["it-IT"]}, "message": ids["it"], "frequency_cap": "{max: 2}"},
        {"name": "brief-cap", "when": {"locale": ["pt-BR"]}, "message": ids["brief"],
         "frequency_cap": "{max: 1, within: 2s}"},
        {"name": "brief-fallback", "when": {"locale": ["pt-BR"]}, "message": ids["brief_fallback"]},
        {"name": "message-en", "when": {"locale": ["en-US"]}, "message": ids["en"]},
    ]
    rule = {r["name"]: r for r in rules}
    default_body = {"message": {"messageIdentifier": ids["default"]}}
    extra = {"SIGNET_DATA_DIR": data_dir, "SIGNET_API_TOKEN": token, "SIGNET_APPSTORE_KEY_ID": key.key_id,
             "SIGNET_APPSTORE_ISSUER_ID": key.issuer_id, "SIGNET_APPSTORE_PRIVATE_KEY": key.path,
             "SIGNET_BUNDLE_ID": fixtures.bundle_id}
    pipeline = os.path.join(root, "pipeline.yaml")
    ports = {}

    def start():
        ports["webhook"], ports["admin"] = free_port(), free_port()
        with open(pipeline, "w", encoding="utf-8") as file:
            file.write(pipeline_yaml(data_dir, fixtures, ports["webhook"], ports["admin"], rules, ids["default"]))
        child = signet.start(["run", "--pipeline", pipeline], extra)
        return child, wait_ready(ports["admin"], child)

    ledger = Ledger()
    started_ms = now_ms() - 1000  # the report window of this run: everything it sent
    state = {"report_usable": True}

    def api_report(since=None, auth=token):
        path = "/v1/retention/report" + (f"?since={since}" if since is not None else "")
        reply = get(ports["admin"], path, auth, label="retention report")
        return reply, (reply.json() if reply.status == 200 else None)

    def wait_recorded():
        """Polls the report until every answer sent is recorded (written just after the reply)."""
        want = len(ledger.records)
        if not state["report_usable"]:
            time.sleep(0.4)
            return
        if not wait_until(lambda: (api_report(started_ms)[1] or {}).get("requests") == want, 5, 0.02):
            reply, _ = api_report(started_ms)
            check(f"records: GET /v1/retention/report counts each answered request within 5 s of its answer "
                  f"({want} expected)", False, reply.said())
            state["report_usable"] = False

    def post_request(body, label):
        lo = now_ms()
        reply = send(ports["webhook"], "/retention", body, label=label)
        return reply, lo, now_ms()

    def ask(otid, locale, label, want, request_identifier=None):
        """A new request: `want` is ("answered", rule name) or ("default", reason). Returns the reply
        and the request (body, payload), after the answer is recorded."""
        body, payload = fixtures.request(otid, locale, request_identifier)
        reply, lo, hi = post_request(body, label)
        result, name = want
        kind = rule_kind(rule[name]) if result == "answered" else None
        ledger.answered(payload["requestIdentifier"], otid, result, name, kind, lo, hi)
        wait_recorded()
        ledger.records[-1]["hi"] = now_ms()  # recorded by now: answered at the latest now
        return reply, body, payload

    def body_problems(reply, want, payload):
        result, name = want
        if result == "answered" and "promotional_offer" in rule[name]:
            return offer_problems(reply, rule[name], key, fixtures.bundle_id, payload)
        expected = rule_body(rule[name]) if result == "answered" else default_body
        if reply.status != 200 or reply.json() != expected:
            return [f"expected 200 {json.dumps(expected)} ({result}/{name})"]
        return []

    def replay(body, label, first, first_result):
        """The same request again: the same bytes expected; counted replayed/<first result>."""
        reply, _, _ = post_request(body, label)
        ledger.count(f"replayed/{first_result}")
        return reply, reply.status == 200 and first.status == 200 and reply.body == first.body

    def post_notification(line, label):
        reply = send(ports["webhook"], "/notifications", line, label=label)
        return reply, reply.status == 200 and (reply.json() or {}).get("status") == "committed"

    def metrics_match(label):
        scraped, series = scrape(ports["admin"])
        seen = retention_series(series)
        wrong = {k: (v, seen.get(k)) for k, v in ledger.metrics.items() if seen.get(k) != v}
        extra_counts = {k: v for k, v in seen.items()
                        if v and k not in ledger.metrics and not k.startswith("refused/")}
        check(label, scraped.status == 200 and not wrong and not extra_counts,
              f"expected (result/reason: expected, seen): {wrong}" if wrong else "",
              f"counted but not sent: {extra_counts}" if extra_counts else "",
              f"all retention series seen: {seen}")
        return seen

    # ------------------------------------------------------------------ start; choose purchases
    child, ready = start()
    if not ready:
        raise CannotRun("`signet run` with the retention section did not become ready:\n" + child.said())
    try:
        scraped, series = scrape(ports["admin"])
        seen = retention_series(series)
        check("metrics: before the first request, signet_retention_requests_total{result=\"replayed\"} exists at 0 with "
              "reason=\"answered\" and reason=\"default\" (docs: every series exists at 0 from the start)",
              scraped.status == 200 and seen.get("replayed/answered") == 0 and seen.get("replayed/default") == 0,
              f"retention series seen: {seen}", scraped.said() if scraped.status != 200 else "")
        zero_rules = [r["name"] for r in rules if seen.get("answered/" + r["name"]) != 0]
        check("metrics: before the first request, result=\"answered\" exists at 0 for every rule, the capped ones included",
              not zero_rules, f"missing or not 0: {zero_rules}", f"retention series seen: {seen}")

        # the purchase that stays unknown at first: a new subscription with a fixture request in en-US
        with_request = {p["originalTransactionId"]: (line, p) for line, p in fixtures.request_lines}
        candidates = [otid for otid, known in fixtures.by_purchase.items()
                      if otid in with_request and known["transaction"].get("productId") in (MONTHLY, YEARLY)
                      and str(known["transaction"].get("appTransactionId")) not in fixtures.rescinded_app_transactions]
        unknown = next((o for o in candidates if fixtures.by_purchase[o]["payload"]["notificationType"] == "SUBSCRIBED"
                        and with_request[o][1]["userLocale"] == "en-US"), None)
        if unknown is None:
            raise CannotRun("no SUBSCRIBED purchase with an en-US fixture request to hold back")
        held_back = set(fixtures.by_purchase[unknown]["lines"])
        loaded = [post_notification(line, "fixture notification") for line in fixtures.notifications if line not in held_back]
        if not check(f"setup: the fixture notifications but those of purchase {unknown} ({len(loaded)}) are committed "
                     "through /notifications", all(ok for _, ok in loaded), *[r.said() for r, ok in loaded if not ok][:3]):
            return
        active = []
        for otid in candidates:
            if otid == unknown:
                continue
            snapshot = get(ports["admin"], f"/v1/subscriptions/{otid}", token).json() or {}
            evaluated = get(ports["admin"], f"/v1/entitlements?originalTransactionId={otid}", token).json() or []
            restricted = any(isinstance(e, dict) and e.get("restricted") for e in evaluated)
            if snapshot.get("state") == "active" and not restricted and snapshot.get("environment") == "Sandbox":
                active.append(otid)
        en_lines = [o for o in active if with_request[o][1]["userLocale"] == "en-US"]
        if len(active) < 13 or not en_lines:
            raise CannotRun(f"the fixtures hold {len(active)} active purchases without a consent restriction (13 needed, "
                            f"one with an en-US fixture request: {len(en_lines)})")
        p1 = en_lines[0]
        others = [o for o in active if o != p1]
        p2, p3, d, e, a, b, c, f, g, h, k = others[:11]

        # ------------------------------------------------------------------ replays
        line1 = with_request[p1][0]
        first, lo, hi = post_request(line1, "realtime-requests.ndjson line")
        ledger.answered(with_request[p1][1]["requestIdentifier"], p1, "answered", "message-en", "message", lo, hi)
        wait_recorded()
        ledger.records[-1]["hi"] = now_ms()
        again, same = replay(line1, "the same line again", first, "answered")
        check("replay: a realtime-requests.ndjson line sent twice is answered 200 with the same body both times (rule "
              "message-en)", same and not body_problems(first, ("answered", "message-en"), with_request[p1][1]),
              *body_problems(first, ("answered", "message-en"), with_request[p1][1]), first.said(), again.said())
        resigned, _ = fixtures.request(p1, "en-US", with_request[p1][1]["requestIdentifier"])
        again, same = replay(resigned, "the same request re-signed with a new signedDate", first, "answered")
        check("replay: the same request re-signed (new signedDate, new signature, same requestIdentifier) gets the same "
              "body", same, first.said(), again.said())
        p1_first = first

        rid = request_id_with_letters()
        first, body, payload = ask(p2, "en-US", "requestIdentifier UPPER case", ("answered", "message-en"), rid.upper())
        lower, _ = fixtures.request(p2, "en-US", rid.lower())
        again, same = replay(lower, "the same requestIdentifier in lower case, re-signed", first, "answered")
        check("replay: a requestIdentifier sent UPPER case, then lower case (re-signed) is the same request: the same body",
              same and not body_problems(first, ("answered", "message-en"), payload), first.said(), again.said())

        first, offer_body, payload = ask(p3, "es-ES", "es-ES on an active purchase", ("answered", "offer-active"))
        problems = offer_problems(first, rule["offer-active"], key, fixtures.bundle_id, payload)
        check("setup: es-ES on an active purchase gets rule offer-active's promotional offer (V2, signed with the "
              "In-App Purchase key, transactionId the request's originalTransactionId)", not problems, *problems, first.said())
        refund_at = now_ms()
        refund, committed = post_notification(fixtures.notification(
            p3, "REFUND", None, refund_at, status=5,
            transaction_changes={"revocationDate": refund_at - 1000, "revocationReason": 0, "revocationType": "REFUND_FULL"},
            renewal_changes={"autoRenewStatus": 0}), "REFUND")
        ledger.notifications.append((p3, refund_at, decides("REFUND", None)))
        snapshot = get(ports["admin"], f"/v1/subscriptions/{p3}", token).json() or {}
        check("setup: a REFUND of that purchase's transaction is committed and the purchase is then `refunded`",
              committed and snapshot.get("state") == "refunded", refund.said(), f"snapshot: {clip(json.dumps(snapshot), 600)}")
        again, same = replay(offer_body, "the offer request again, after the refund", first, "answered")
        check("replay: the promotional-offer request sent again after the purchase was refunded gets the same body byte "
              "for byte (the same signed offer, nonce and all)", same, first.said(), again.said())
        fresh, _, payload = ask(p3, "es-ES", "a new es-ES request for the refunded purchase", ("default", "no_rule"))
        problems = body_problems(fresh, ("default", "no_rule"), payload)
        check("replay: a new request (new requestIdentifier) for the refunded purchase is decided afresh: no rule holds "
              "(offer-active needs state active), the default message", not problems, *problems, fresh.said())

        line_u = with_request[unknown][0]
        first, lo, hi = post_request(line_u, "request for a purchase not yet known")
        ledger.answered(with_request[unknown][1]["requestIdentifier"], unknown, "default", "unknown_purchase", None, lo, hi)
        wait_recorded()
        ledger.records[-1]["hi"] = now_ms()
        problems = body_problems(first, ("default", "unknown_purchase"), None)
        loaded = [post_notification(line, "the held-back notification") for line in sorted(held_back)]
        snapshot = get(ports["admin"], f"/v1/subscriptions/{unknown}", token)
        again, same = replay(line_u, "the same request once the purchase is known", first, "default")
        check("replay: a request answered the default message because the purchase was unknown, sent again after the "
              "purchase's notification was committed, gets the same default body",
              not problems and all(ok for _, ok in loaded) and snapshot.status == 200 and same,
              *problems, *[r.said() for r, ok in loaded if not ok], f"/v1/subscriptions: {snapshot.status}",
              first.said(), again.said())
        u_first = first
        fresh, _, payload = ask(unknown, "en-US", "a new request for the now known purchase", ("answered", "message-en"))
        problems = body_problems(fresh, ("answered", "message-en"), payload)
        check("replay: a new request for that purchase, now known, gets the rule's answer (message-en)", not problems,
              *problems, fresh.said())

        # ------------------------------------------------------------------ frequency caps
        d_first, d_offer, payload = ask(d, "fr-FR", "fr-FR, first", ("answered", "offer-fr"))
        problems = offer_problems(d_first, rule["offer-fr"], key, fixtures.bundle_id, payload)
        check("cap: a first fr-FR request for a purchase gets the capped rule offer-fr (frequency_cap {max: 1, within: 30d})",
              not problems, *problems, d_first.said())
        again, same = replay(d_offer, "fr-FR, first, sent again", d_first, "answered")
        check("cap: that request sent again gets the same offer byte for byte (a replay, not a second answer)", same,
              d_first.said(), again.said())
        second, _, payload = ask(d, "fr-FR", "fr-FR, second", ("answered", "message-fr"))
        problems = body_problems(second, ("answered", "message-fr"), payload)
        check("cap: a second fr-FR request (new requestIdentifier) for the same purchase falls through to the next rule, "
              "message-fr", not problems, *problems, second.said())
        other, _, payload = ask(e, "fr-FR", "fr-FR, another purchase", ("answered", "offer-fr"))
        problems = offer_problems(other, rule["offer-fr"], key, fixtures.bundle_id, payload)
        check("cap: another purchase is unaffected: its first fr-FR request gets offer-fr", not problems, *problems,
              other.said())

        reply, _, payload = ask(a, "en-US", "en-US before de-DE", ("answered", "message-en"))
        first_problems = body_problems(reply, ("answered", "message-en"), payload)
        reply, _, payload = ask(a, "de-DE", "de-DE after another rule answered", ("answered", "message-de"))
        problems = body_problems(reply, ("answered", "message-de"), payload)
        check("cap: across_rules: true: a purchase another rule (message-en) already answered is not answered by "
              "across-de ({max: 1, across_rules: true}): the next rule, message-de", not problems and not first_problems,
              *first_problems, *problems, reply.said())
        reply, _, payload = ask(a, "fr-FR", "fr-FR after two other rules answered", ("answered", "offer-fr"))
        problems = offer_problems(reply, rule["offer-fr"], key, fixtures.bundle_id, payload)
        check("cap: without across_rules, other rules' answers do not count: the same purchase's first fr-FR request gets "
              "offer-fr", not problems, *problems, reply.said())
        reply, _, payload = ask(b, "de-DE", "de-DE, first answer of the purchase", ("answered", "across-de"))
        problems = body_problems(reply, ("answered", "across-de"), payload)
        check("cap: a purchase nothing answered yet gets across-de (alternateProduct)", not problems, *problems, reply.said())
        reply, _, payload = ask(c, "ja-JP", "ja-JP: no rule", ("default", "no_rule"))
        first_problems = body_problems(reply, ("default", "no_rule"), payload)
        reply, _, payload = ask(c, "de-DE", "de-DE after a default answer", ("answered", "across-de"))
        problems = body_problems(reply, ("answered", "across-de"), payload)
        check("cap: the default message never counts: a purchase answered only the default (no_rule) still gets across-de",
              not problems and not first_problems, *first_problems, *problems, reply.said())

        f1, f1_body, payload = ask(f, "it-IT", "it-IT 1", ("answered", "twice-it"))
        problems = body_problems(f1, ("answered", "twice-it"), payload)
        again, same = replay(f1_body, "it-IT 1 again", f1, "answered")
        f2, _, payload2 = ask(f, "it-IT", "it-IT 2", ("answered", "twice-it"))
        problems2 = body_problems(f2, ("answered", "twice-it"), payload2)
        mid = now_ms() + 30  # a renewal turned off between the second and the third answer
        wait_past(mid + 30)
        f3, _, payload3 = ask(f, "it-IT", "it-IT 3", ("default", "no_rule"))
        problems3 = body_problems(f3, ("default", "no_rule"), payload3)
        check("cap: frequency_cap {max: 2} (within by default 30d): two requests get twice-it, a replay of the first in "
              "between does not count, the third gets the next rule (none: the default, no_rule)",
              not problems and same and not problems2 and not problems3, *problems, *problems2, *problems3,
              f1.said(), again.said(), f2.said(), f3.said())
        reply, ok = post_notification(fixtures.notification(f, "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", mid,
                                                            renewal_changes={"autoRenewStatus": 0}),
                                      "AUTO_RENEW_DISABLED signed between the 2nd and 3rd answers")
        ledger.notifications.append((f, mid, "lost"))
        check("setup: an AUTO_RENEW_DISABLED signed between the second and the third answer (arriving after the third) "
              "is committed", ok, reply.said())

        h1, _, payload = ask(h, "pt-BR", "pt-BR 1", ("answered", "brief-cap"))
        h1_recorded = ledger.records[-1]["hi"]
        problems = body_problems(h1, ("answered", "brief-cap"), payload)
        h2, _, payload = ask(h, "pt-BR", "pt-BR 2, within 2 s", ("answered", "brief-fallback"))
        in_time = ledger.records[-1]["lo"] < ledger.records[-2]["lo"] + 1900
        problems += body_problems(h2, ("answered", "brief-fallback"), payload)
        wait_past(h1_recorded + 2150)
        h3, _, payload = ask(h, "pt-BR", "pt-BR 3, after the 2 s window", ("answered", "brief-cap"))
        problems += body_problems(h3, ("answered", "brief-cap"), payload)
        check("cap: frequency_cap {max: 1, within: 2s}: pt-BR gets brief-cap, again at once brief-fallback, and brief-cap "
              "again once the first answer is more than 2 s old", not problems and in_time, *problems,
              "" if in_time else "(the second request left more than 1.9 s after the first: the machine was too slow)",
              h1.said(), h2.said(), h3.said())

        reply, _, payload = ask(g, "en-US", "en-US", ("answered", "message-en"))
        before = ledger.records[-1]["lo"] - 10_000
        note, ok = post_notification(fixtures.notification(g, "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", before,
                                                           renewal_changes={"autoRenewStatus": 1}),
                                     "AUTO_RENEW_ENABLED signed 10 s before the answer")
        ledger.notifications.append((g, before, "kept"))
        check("setup: rule message-en answers another purchase; an AUTO_RENEW_ENABLED Apple signed 10 s before that "
              "answer (arriving after it) is committed", ok and not body_problems(reply, ("answered", "message-en"), payload),
              reply.said(), note.said())
        reply, _, payload = ask(k, "ja-JP", "ja-JP: no rule", ("default", "no_rule"))
        check("setup: ja-JP (no rule) gets the default message (no_rule)",
              not body_problems(reply, ("default", "no_rule"), payload), reply.said())

        seen = metrics_match("metrics: signet_retention_requests_total counts, per result and reason, exactly what was sent: "
                             "each first answer once (answered/<rule>, default/<reason>), each repeat as replayed/<first "
                             "answer's result>")
        replayed_rules = {k: v for k, v in seen.items() if k.startswith("answered/")}
        first_answers = {}
        for record in ledger.records:
            if record["result"] == "answered":
                first_answers["answered/" + record["name"]] = first_answers.get("answered/" + record["name"], 0) + 1
        check("metrics: replays are not counted as answered: answered/<rule> equals the number of distinct requests the "
              "rule answered", all(replayed_rules.get(k) == v for k, v in first_answers.items()),
              f"expected {first_answers}", f"seen {replayed_rules}")

        # ------------------------------------------------------------------ restart
        code = child.terminate()
        stderr_first = child.stderr()
        check("restart: `signet run` stops on SIGTERM with exit 0", code == 0, f"exit {code}",
              f"stderr (tail): {clip(stderr_first[-1500:])}")
        child, ready = start()
        if not check("restart: `signet run` starts again on the same data directory and becomes ready", ready, child.said()):
            return
        ledger.metrics = {}
        scraped, series = scrape(ports["admin"])
        seen = retention_series(series)
        check("metrics: in the restarted process the replayed series exist at 0 again before its first request",
              seen.get("replayed/answered") == 0 and seen.get("replayed/default") == 0, f"retention series seen: {seen}")
        # a report window that starts here: only the answers given after the restart
        window_start = (now_ms() // 1000 + 1) * 1000
        wait_past(window_start + 5)

        # replays after the restart: answered from the store, counted in this process
        again, same = replay(line1, "the fixture line again, after the restart", p1_first, "answered")
        check("restart: the fixture request line sent again after the restart gets the same body as before it", same,
              p1_first.said(), again.said())
        again, same = replay(d_offer, "the first fr-FR offer request again, after the restart", d_first, "answered")
        check("restart: the promotional-offer request sent again after the restart gets the same offer byte for byte",
              same, d_first.said(), again.said())
        again, same = replay(line_u, "the unknown-purchase request again, after the restart", u_first, "default")
        check("restart: the request first answered the default (unknown purchase) gets the same default after the restart",
              same, u_first.said(), again.said())
        reply, _, payload = ask(d, "fr-FR", "fr-FR, third, after the restart", ("answered", "message-fr"))
        problems = body_problems(reply, ("answered", "message-fr"), payload)
        check("cap: after the restart the purchase offer-fr answered is still capped: a new fr-FR request gets message-fr "
              "(the count comes from the store)", not problems, *problems, reply.said())
        reply, _, payload = ask(b, "de-DE", "de-DE, second, after the restart", ("answered", "message-de"))
        problems = body_problems(reply, ("answered", "message-de"), payload)
        check("cap: after the restart across-de is still capped for the purchase it answered: message-de", not problems,
              *problems, reply.said())
        metrics_match("metrics: after the restart the counters start again and count exactly this process's requests "
                      "(replayed/answered 2, replayed/default 1, first answers by rule)")

        # ------------------------------------------------------------------ outcomes
        base = now_ms() + 20
        wait_past(base + 700)
        outcomes = [
            (p1, "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", base, 1, {}, {"autoRenewStatus": 1}, False),
            (p2, "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", base, 1, {}, {"autoRenewStatus": 0}, False),
            (unknown, "DID_RENEW", None, base, 1, {}, {"autoRenewStatus": 1}, True),
            (d, "EXPIRED", "VOLUNTARY", base, 2, {}, {"autoRenewStatus": 0, "expirationIntent": 1}, False),
            (e, "OFFER_REDEEMED", None, base, 1, {"offerType": 2, "offerIdentifier": "reste.30",
                                                   "offerDiscountType": "PAY_AS_YOU_GO"}, {}, True),
            (a, "DID_CHANGE_RENEWAL_PREF", "DOWNGRADE", base, 1, {}, {"autoRenewProductId": None}, False),
            # the out-of-order pair: the later-signed ENABLED arrives first
            (b, "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", base + 400, 1, {}, {"autoRenewStatus": 1}, False),
            (b, "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", base + 200, 1, {}, {"autoRenewStatus": 0}, False),
            # in order: the earlier-signed DISABLED arrives first and is not overturned by the later ENABLED
            (h, "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", base + 200, 1, {}, {"autoRenewStatus": 0}, False),
            (h, "DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_ENABLED", base + 400, 1, {}, {"autoRenewStatus": 1}, False),
            (c, "PRICE_INCREASE", "PENDING", base, 1, {}, {"priceIncreaseStatus": 0}, False),
            (k, "EXPIRED", "VOLUNTARY", base, 2, {}, {"autoRenewStatus": 0, "expirationIntent": 1}, False),
        ]
        sent = []
        for otid, kind, subtype, signed, status, tx, renewal, new_tx in outcomes:
            if renewal.get("autoRenewProductId", "") is None:  # a switch of plan: the other product of the group
                current = fixtures.by_purchase[otid]["renewal"].get("autoRenewProductId")
                renewal = {"autoRenewProductId": YEARLY if current != YEARLY else MONTHLY}
            line = fixtures.notification(otid, kind, subtype, signed, status, tx, renewal, new_tx)
            reply, ok = post_notification(line, f"{kind} {subtype or ''} for {otid}")
            ledger.notifications.append((otid, signed, decides(kind, subtype)))
            sent.append((reply, ok))
        check(f"setup: {len(sent)} notifications re-signed after the answers (new notificationUUIDs: AUTO_RENEW_ENABLED, "
              "AUTO_RENEW_DISABLED, DID_RENEW, EXPIRED, OFFER_REDEEMED, DID_CHANGE_RENEWAL_PREF, the out-of-order pair, "
              "PRICE_INCREASE) are committed", all(ok for _, ok in sent), *[r.said() for r, ok in sent if not ok][:3])

        want = ledger.report()
        since = started_ms
        holder = {}

        def settled():
            holder["api"] = api_report(since)
            return normalised(holder["api"][1]) is not None and not differences(want, normalised(holder["api"][1]))
        wait_until(settled, 8, 0.1)
        reply, api = holder["api"]
        shape = sorted(REPORT_KEYS - set(api)) if isinstance(api, dict) else None
        check("report: GET /v1/retention/report?since=MS (bearer token) answers 200 with JSON holding requests, "
              "answeredByKind, defaultsByReason, rules, defaultMessage, truncated, since and asOf",
              reply.status == 200 and shape == [], f"missing keys: {shape}", reply.said())
        problems = differences(want, normalised(api))
        check(f"report: the API's report counts {want['requests']} requests (each replayed request once), answers by "
              "kind, defaults by reason, and per rule and for the default message answers/kept/lost/undecided as the "
              "docs' outcome table decides them (the earliest deciding notification Apple signed after each answer)",
              not problems, *problems, f"expected: {json.dumps(want)}", f"seen: {clip(json.dumps(api), 2500)}")

        # the individual outcome rules, read from the same report
        rules_seen = (api or {}).get("rules") or {}

        def rule_entry(name):
            entry = rules_seen.get(name)
            return entry if isinstance(entry, dict) else {}
        for label, name, field, count in (
                ("an out-of-order pair (AUTO_RENEW_ENABLED signed later arriving first, AUTO_RENEW_DISABLED signed "
                 "earlier arriving second) counts as lost: across-de", "across-de", "lost", 1),
                ("a notification signed between two answers decides the earlier ones only: twice-it lost 2", "twice-it",
                 "lost", 2),
                ("an in-order pair (AUTO_RENEW_DISABLED signed and arriving first, AUTO_RENEW_ENABLED signed and arriving "
                 "later): the earliest decides, lost: brief-cap lost 2", "brief-cap", "lost", 2),
                ("the same pair: brief-fallback lost 1", "brief-fallback", "lost", 1),
                ("a notification Apple signed before the answer decides nothing, nor do REFUND or PRICE_INCREASE: "
                 "offer-active undecided 1", "offer-active", "undecided", 1),
                ("EXPIRED after two answers of the capped rule and its fallback decides both lost: message-fr lost 2",
                 "message-fr", "lost", 2)):
            check(f"report: {label}", rule_entry(name).get(field) == count,
                  f"rules.{name} seen: {rule_entry(name)}; expected {field} = {count}")
        baseline = (api or {}).get("defaultMessage")
        check("report: defaultMessage is the baseline of the default answers (unknown_purchase then DID_RENEW: kept; "
              "no_rule then EXPIRED: lost; the others undecided)", baseline == want["defaultMessage"],
              f"expected {want['defaultMessage']}", f"seen {baseline}")
        check("report: since is the `since` asked for and asOf is now (UNIX ms)",
              isinstance(api, dict) and api.get("since") == since and isinstance(api.get("asOf"), int)
              and abs(api["asOf"] - now_ms()) < 60_000, f"since sent {since}",
              f"seen since {api.get('since') if isinstance(api, dict) else None}, asOf "
              f"{api.get('asOf') if isinstance(api, dict) else None}, now {now_ms()}")

        cli = signet.run(["retention", "report", "--since", str(since)], {"SIGNET_DATA_DIR": data_dir})
        printed = parse_json(cli.out)
        same = (isinstance(printed, dict) and isinstance(api, dict)
                and {k: v for k, v in printed.items() if k != "asOf"} == {k: v for k, v in api.items() if k != "asOf"})
        check("report: `signet retention report --since MS` (while `signet run` holds the store) exits 0 and prints the "
              "same report as GET /v1/retention/report?since=MS (all but asOf)", cli.code == 0 and same,
              cli.said(), f"API: {clip(json.dumps(api), 1500)}")
        problems = differences(want, normalised(printed))
        check("report: the CLI's report has the expected counts too", not problems, *problems)

        window_want = ledger.report(window_start)
        reply, windowed = api_report(window_start)
        problems = differences(window_want, normalised(windowed))
        check(f"report: GET /v1/retention/report?since=<the restart> counts only the answers given at or after it "
              f"({window_want['requests']} requests: replays of earlier requests are not new answers)", not problems,
              *problems, f"expected: {json.dumps(window_want)}", reply.said())
        iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(window_start // 1000))
        cli = signet.run(["retention", "report", "--since", iso], {"SIGNET_DATA_DIR": data_dir})
        printed = parse_json(cli.out)
        problems = differences(window_want, normalised(printed))
        check(f"report: `signet retention report --since {iso}` (ISO-8601 date-time, the same instant) counts the same "
              "answers and names that instant as since", cli.code == 0 and not problems
              and isinstance(printed, dict) and printed.get("since") == window_start, *problems, cli.said())

        cli = signet.run(["retention", "report"], {"SIGNET_DATA_DIR": data_dir})
        printed = parse_json(cli.out)
        default_since = now_ms() - 30 * DAY_MS
        ok = (cli.code == 0 and isinstance(printed, dict) and isinstance(printed.get("since"), int)
              and abs(printed["since"] - default_since) < 120_000 and not differences(want, normalised(printed)))
        check("report: `signet retention report` without --since covers the last 30 days (since = now - 30d) and counts "
              "the same", ok, cli.said())
        reply, by_default = api_report(None)
        ok = (isinstance(by_default, dict) and isinstance(by_default.get("since"), int)
              and abs(by_default["since"] - default_since) < 120_000 and not differences(want, normalised(by_default)))
        check("report: GET /v1/retention/report without since covers the last 30 days and counts the same", ok, reply.said())
        cli = signet.run(["retention", "report", "--since", "90d"], {"SIGNET_DATA_DIR": data_dir})
        printed = parse_json(cli.out)
        ok = (cli.code == 0 and isinstance(printed, dict) and isinstance(printed.get("since"), int)
              and abs(printed["since"] - (now_ms() - 90 * DAY_MS)) < 120_000 and not differences(want, normalised(printed)))
        check("report: `signet retention report --since 90d` starts 90 days back and counts the same", ok, cli.said())
        future = now_ms() + DAY_MS
        cli = signet.run(["retention", "report", "--since", str(future)], {"SIGNET_DATA_DIR": data_dir})
        printed = parse_json(cli.out)
        ok = (cli.code == 0 and isinstance(printed, dict) and printed.get("requests") == 0
              and (printed.get("defaultMessage") or {}).get("answers", 0) == 0
              and not any((v or {}).get("answers") for v in (printed.get("rules") or {}).values()))
        check("report: `signet retention report --since <tomorrow, UNIX ms>` exits 0 with zero requests and no answers",
              ok, cli.said())
        reply, in_future = api_report(future)
        check("report: GET /v1/retention/report?since=<tomorrow> counts zero requests",
              isinstance(in_future, dict) and in_future.get("requests") == 0, reply.said())
        for bad in ("abc", "12abc"):
            reply, _ = api_report(bad)
            check(f"report: GET /v1/retention/report?since={bad} is refused with 400", reply.status == 400, reply.said())
        reply, _ = api_report(since, auth=None)
        check("report: GET /v1/retention/report without a token, one being configured, gets 401 with "
              "WWW-Authenticate: Bearer", reply.status == 401 and (reply.header("WWW-Authenticate") or "").startswith("Bearer"),
              reply.said())
        reply, _ = api_report(since, auth=token + "x")
        check("report: GET /v1/retention/report with a wrong token gets 401", reply.status == 401, reply.said())
    finally:
        child.terminate()


def case_no_store(signet, root):
    empty = os.path.join(root, "empty-data")
    os.makedirs(empty)
    result = signet.run(["retention", "report"], {"SIGNET_DATA_DIR": empty})
    text = result.out + result.err
    crash = [m for m in ("Fatal error", "Stack dump", "Current stack trace", "Backtrace", "Traceback", "Segmentation fault",
                         "SIGSEGV", "SIGILL", "SIGTRAP") if m in text]
    names_it = "signet.sqlite" in text or empty in text
    check("no store: `signet retention report` on a data directory without a store exits non-zero with an "
          "error naming the database it looked for, no report on stdout and no crash dump",
          result.code not in (0, None) and result.code < 128 and result.err.strip() and names_it and not crash
          and parse_json(result.out) is None, result.said(),
          f"crash markers: {crash}" if crash else "", "" if names_it else "the error does not name the database path")
    # what it leaves behind, for the report (not a documented promise)
    print(f"# no store: `signet retention report` exit {result.code}; stderr: {clip(result.err.strip(), 300)!r}; "
          f"files left in the empty data dir: {sorted(os.listdir(empty))}", flush=True)


# ----------------------------------------------------------------------------- main


def main():
    binary = signet_binary(sys.argv)
    if binary is None:
        return 2
    root = tempfile.mkdtemp(prefix="signet-retention-records-")
    signet = Signet(binary, root)

    arm_time_limit(TIME_LIMIT)
    started = time.monotonic()
    could_not_run = []
    try:
        for case in (case_no_store, case_records):
            try:
                case(signet, root)
            except OutOfTime:
                raise
            except CannotRun as error:
                could_not_run.append(f"{case.__name__} could set up what it needs")
                check(could_not_run[-1], False, str(error))
            except Exception:  # a broken case must not hide the others
                import traceback
                check(f"{case.__name__} ran to its end", False, traceback.format_exc())
    except OutOfTime:
        check(f"the checks finished within {TIME_LIMIT} s", False, "stopped: out of time")
    finally:
        signal.alarm(0)
        for process in CHILDREN:
            stop(process)
        shutil.rmtree(root, ignore_errors=True)
    failed = [name for name, ok in RESULTS if not ok]
    print(f"# {len(RESULTS)} checks, {len(failed)} failed, {time.monotonic() - started:.1f} s", flush=True)
    if not RESULTS or (failed and set(failed) <= set(could_not_run)):
        return 2  # nothing but the environment failed: the script could not run
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
