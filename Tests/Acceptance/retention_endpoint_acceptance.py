#!/usr/bin/env python3
"""Acceptance tests for issue 56: Apple's Get Retention Message requests answered on the webhook.

    python3 Tests/Acceptance/retention_endpoint_acceptance.py .build/debug/signet

Written from the documentation only (README.md, docs/retention.md with Apple's rules and its
"Signet" section, docs/webhook.md, docs/pipelines.md, docs/state-machine.md, docs/consumption.md,
docs/operations.md, docs/reason-codes.md, docs/offers.md) and the binary's own `--help`,
`signet components retention` and `signet fixtures --help`, not from Signet's sources. What it
checks, against the built binary:

1. The section is documented by the binary (`signet components retention`, `--json`), with every
   key and default docs/retention.md names.
2. A verified request (every line of `signet fixtures`' realtime-requests.ndjson, and requests
   re-signed with the fixtures' test PKI) is answered 200, `application/json`, with exactly one
   RealtimeResponseBody variant: the first rule whose every condition (product with prefixes,
   entitlement by product and by subscription group, state, refunded, consent_restricted, locale
   exactly, environment) holds for the purchase as Signet stores it (read back through
   `GET /v1/subscriptions/{id}` and `/v1/entitlements`), else the default message; message
   identifiers written UPPER case in the file come out lower case; promotional offers carry a V2
   JWS (or, with `offer_signature: v1`, a V1 signature) that verifies with the In-App Purchase key
   and names the request's originalTransactionId (V2) or the purchase's appAccountToken (V1).
3. No rule reaches a purchase Signet does not know (or knows under the other environment), nor a
   customer whose consent a RESCIND_CONSENT withdrew unless the rule says `consent_restricted:
   true` (also a rule without `when`); clearing the restriction lets the ordinary rule reach them.
4. Refused: every line of realtime-refused.ndjson, another app's appAppleId (Sandbox and
   Production), a missing or mistyped field, the other environment, a future signedDate, a
   transaction JWS, `{}`: 403 with no body; a wrong method, path or Content-Type, too large a
   body, a body that is not JSON: the webhook's 405/404/415/413/400 guards. Never a retention
   answer; and the shipped webhook pipeline set up from fixtures.env must not answer the
   fixtures' other-app request either.
5. A retried identical request gets the same answer (counted `replayed` with the first answer's result); a keep-alive connection serves several,
   also after a refusal; answering publishes no entitlement event; refusals are logged.
6. 50 requests at once (as Apple's performance test sends them), and 20 beside notification
   traffic on the same listener, are all answered 200 with the right answer, each well under
   Apple's 700 ms (p50/p99 in the ok line).
7. A slow store (every process of a PostgreSQL store stopped with SIGSTOP) and a failing one (the
   server shut down): still 200 with the default message within 700 ms, `max_pending_lookups`
   honoured, counted as timeout / overloaded / store_error; the rule's answer once it is back. A
   key file that stops being a key: the offer or the default (signing_failed), nothing else.
8. Metrics as Prometheus scrapes them: every promised series exists at 0 before the first
   request, and the counts by result and reason match what was sent.
9. Misconfigurations `signet run` refuses at start (retention with a non-http source, no verify
   stage, an unknown store, a rule with two answers or none, two rules of one name, a message id
   that is not a UUID, the notification path, a decision_timeout past Apple's budget, an offer
   rule without the In-App Purchase key) exit 2 with FILE:LINE in the section; `signet lint`
   reports the same (its help says it checks every key and builds every component); the shipped
   Pipelines/webhook.yaml example, uncommented, lints clean.

Everything happens in a fresh temporary directory (SIGNET_DATA_DIR points there; no SIGNET_*
variable of the caller's environment is passed on), on 127.0.0.1 and free ports. One line per
check, `ok - ...` or `FAIL - ...` (with indented `#` lines saying what was sent, expected and
seen); exit 1 when any check failed, 2 when the script could not run at all. Standard library
plus Python's `cryptography` (re-signing requests with the fixtures' test PKI, checking offer
signatures).
"""

import base64
import collections
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
    from cryptography import x509
except ImportError:  # pragma: no cover
    print("this script needs Python's `cryptography` package", file=sys.stderr)
    sys.exit(2)

from harness import (
    CHILDREN, RESULTS, CannotRun, OfferKey, OutOfTime, Result, Signer, arm_time_limit, b64url_decode, check,
    clip, es256_verify, free_port, jws_payload, ndjson_lines, parse_json, parse_metrics, read_fixtures_env,
    signet_binary, stop, wait_until,
)

TIME_LIMIT = 175  # seconds; the whole script must finish within 3 minutes
APPLE_BUDGET = 0.700  # seconds: Apple's timeout for the Get Retention Message endpoint
UUID_LOWER = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
VARIANTS = ("message", "alternateProduct", "promotionalOffer", "advancedCommerceInfo")
MONTHLY = "com.example.signet.premium.monthly"
YEARLY = "com.example.signet.premium.yearly"

POSTGRES = []  # (pg_ctl argv prefix, data dir) of every PostgreSQL server started, stopped at the end
SHARED = {}  # what one case made for another (the Sandbox fixtures)


# ----------------------------------------------------------------------------- reporting


def message_id():
    """A random UUID with letters in it, so its UPPER and lower forms differ."""
    while True:
        value = str(uuid.uuid4())
        if sum(c.isalpha() for c in value) >= 6:
            return value


# ----------------------------------------------------------------------------- JWS


def jws_header(jws):
    return json.loads(b64url_decode(jws.split(".")[0]))


def x5c_leaf_verifies(jws):
    """Whether the JWS signature verifies with its own x5c[0] key (a forged signature does not;
    a foreign chain's does)."""
    try:
        header = jws_header(jws)
        leaf = x509.load_der_x509_certificate(base64.b64decode(header["x5c"][0]))
        head, body, signature = jws.split(".")
        return es256_verify(leaf.public_key(), (head + "." + body).encode(), b64url_decode(signature))
    except Exception:  # noqa: BLE001 - anything unreadable is "does not verify"
        return False


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

    def run(self, args, extra, timeout=60):
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

    def stdout(self):
        return bytes(self.out).decode("utf-8", "replace")

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
        if not self.headers:
            return None
        for key, value in self.headers:
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
            lines.append(f"seen: status {self.status}, Content-Type {self.header('Content-Type')}, "
                         f"{len(self.body)} body bytes, {self.elapsed * 1000:.0f} ms")
            lines.append(f"body: {clip(self.body, 800)}")
        return "\n".join(lines)


def send(port, path, body=b"", method="POST", headers=None, label="", timeout=15, conn=None):
    """One HTTP/1.1 request; `headers` None means Content-Type: application/json."""
    own = conn is None
    if own:
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
            try:
                conn.send(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the server answered before reading it all (413): read that answer
        response = conn.getresponse()
        data = response.read()
        return Reply(label, method, port, path, response.status, response.getheaders(), data,
                     time.monotonic() - started, sent=body)
    except (OSError, http.client.HTTPException) as error:
        return Reply(label, method, port, path, None, None, b"", time.monotonic() - started, repr(error), sent=body)
    finally:
        if own:
            conn.close()


def send_chunked(port, path, body, label="", timeout=15):
    """POST with Transfer-Encoding: chunked (4 KiB chunks), Content-Type: application/json."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    started = time.monotonic()
    try:
        conn.putrequest("POST", path, skip_accept_encoding=True)
        conn.putheader("Content-Type", "application/json")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.endheaders()
        try:
            for index in range(0, len(body), 4096):
                chunk = body[index:index + 4096]
                conn.send(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            conn.send(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass
        response = conn.getresponse()
        data = response.read()
        return Reply(label, "POST", port, path, response.status, response.getheaders(), data, time.monotonic() - started,
                     sent=body)
    except (OSError, http.client.HTTPException) as error:
        return Reply(label, "POST", port, path, None, None, b"", time.monotonic() - started, repr(error), sent=body)
    finally:
        conn.close()


def get_json(port, path, token=None):
    headers = {"Authorization": "Bearer " + token} if token else {}
    reply = send(port, path, method="GET", headers=headers, label="read")
    return reply, (reply.json() if reply.status == 200 else None)


def scrape(port):
    """Every series of /metrics as {(name, frozenset(labels)): value}, and the reply."""
    reply = send(port, "/metrics", method="GET", headers={}, label="scrape")
    return reply, (parse_metrics(reply.body.decode("utf-8", "replace")) if reply.status == 200 else {})


def series_value(series, name, **labels):
    return series.get((name, frozenset(labels.items())))


def retention_series(series):
    return {dict(labels).get("result", "?") + "/" + dict(labels).get("reason", "?"): value
            for (name, labels), value in series.items() if name == "signet_retention_requests_total"}


# ----------------------------------------------------------------------------- fixtures and pipelines


class FixtureSet:
    def __init__(self, signet, folder, args):
        self.folder = folder
        self.made = signet.run(["fixtures", "--out", folder, "--now"] + args, {}, timeout=120)
        need = ["notifications.ndjson", "realtime-requests.ndjson", "realtime-refused.ndjson", "fixtures.env", "root.pem"]
        self.ok = self.made.code == 0 and all(os.path.exists(os.path.join(folder, n)) for n in need)
        if not self.ok:
            return
        self.env = read_fixtures_env(folder)
        self.root_pem = os.path.join(folder, "root.pem")
        self.notifications = ndjson_lines(os.path.join(folder, "notifications.ndjson"))
        self.request_lines = ndjson_lines(os.path.join(folder, "realtime-requests.ndjson"))
        self.refused_lines = ndjson_lines(os.path.join(folder, "realtime-refused.ndjson"))
        self.requests = []  # (line, payload)
        for line in self.request_lines:
            parsed = parse_json(line)
            self.requests.append((line, jws_payload(parsed["signedPayload"])))
        self.signer = Signer(folder, parse_json(self.request_lines[0])["signedPayload"])
        with open(os.path.join(folder, "pki", "leaf.pem"), "rb") as file:
            self.leaf_der = x509.load_pem_x509_certificate(file.read()).public_bytes(serialization.Encoding.DER)
        self.app_apple_id = self.requests[0][1]["appAppleId"]
        self.bundle_id = self.env.get("SIGNET_BUNDLE_ID", "com.example.signet")

    def request_body(self, base, **changes):
        """A request body re-signed with the fixtures' PKI: `base`'s payload with `changes`, a fresh
        requestIdentifier (UPPER case, as Apple's case varies) and signedDate now, unless given;
        a change to None removes the field."""
        payload = dict(base)
        payload["requestIdentifier"] = str(uuid.uuid4()).upper()
        payload["signedDate"] = int(time.time() * 1000)
        for name, value in changes.items():
            if value is None:
                payload.pop(name, None)
            else:
                payload[name] = value
        return json.dumps({"signedPayload": self.signer.sign(payload)}), payload


def classify_refused(fixture, line):
    """What a realtime-refused.ndjson line is, from its own content (the docs list: another app's,
    the other environment's, a forged signature, a foreign chain, a missing field, a notification,
    a body that is not JSON)."""
    body = parse_json(line)
    if not isinstance(body, dict) or not isinstance(body.get("signedPayload"), str) or body["signedPayload"].count(".") != 2:
        return "not_json", None
    jws = body["signedPayload"]
    try:
        payload = jws_payload(jws)
    except Exception:  # noqa: BLE001
        return "not_json", None
    if "notificationType" in payload:
        return "notification", "malformed_payload"
    required = ("originalTransactionId", "appAppleId", "productId", "userLocale", "requestIdentifier", "environment", "signedDate")
    if any(k not in payload for k in required):
        return "missing_field", "malformed_payload"
    if payload.get("appAppleId") != fixture.app_apple_id:
        return "other_app", "app_apple_id_mismatch"
    if payload.get("environment") != fixture.requests[0][1]["environment"]:
        return "other_environment", "environment_mismatch"
    try:
        leaf = base64.b64decode(jws_header(jws)["x5c"][0])
    except Exception:  # noqa: BLE001
        leaf = b""
    if not x5c_leaf_verifies(jws):
        return "forged_signature", "invalid_signature"
    if leaf != fixture.leaf_der:
        return "foreign_chain", "invalid_certificate_chain"
    return "unknown", None


def rules_yaml(rules, indent="  "):
    lines = [indent + "rules:"]
    for rule in rules:
        lines.append(f"{indent}  - name: {rule['name']}")
        if rule.get("when") is not None:
            lines.append(f"{indent}    when: {json.dumps(rule['when'])}")
        for key in ("message", "alternate_product", "promotional_offer"):
            if key in rule:
                value = rule[key]
                lines.append(f"{indent}    {key}: {value if isinstance(value, str) else json.dumps(value)}")
    return "\n".join(lines)


def pipeline_yaml(data_dir, root_pem, bundle_id, environments, app_apple_id, webhook_port, admin_port, retention,
                  source_type="http", verify=True, entitlements=True, group=None):
    stores = f"""\
stores:
  default:
    type: sqlite
    path: {data_dir}/signet.sqlite
    outbox_retention: 90d
"""
    if entitlements:
        stores += f"""\
    entitlements:
      pro: [{MONTHLY}]
      yearly: [{YEARLY}]
"""
        if group:
            stores += f'      family: ["{group}"]\n'
    if source_type == "http":
        source = f"""\
source:
  type: http
  address: 127.0.0.1:{webhook_port}
  path: /notifications
"""
    else:
        source = f"source:\n  type: {source_type}\n"
    stages = "stages:\n  - type: decode\n"
    if verify:
        stages += f"""\
  - type: verify
    roots: {root_pem}
    environment: {json.dumps(environments)}
    bundle_id: {bundle_id}
    app_apple_id: {app_apple_id}
  - type: dedupe
  - type: transition
    expiry_sweep: 0s
  - type: fanout
    default_sinks: [stdout]
"""
    text = f"""\
description: retention acceptance
{stores}{source}{stages}sinks:
  stdout:
    type: stdout
dead_letter:
  type: file
  path: {data_dir}/dead-letter.ndjson
  format: json
"""
    if admin_port:
        text += f"http:\n  address: 127.0.0.1:{admin_port}\n"
    text += retention
    return text


def retention_yaml(path, default_message, rules, extra_lines=()):
    if any(line.startswith("path:") for line in extra_lines):
        path = None
    lines = ["retention:"] + ([f"  path: {path}"] if path else []) + [f"  default_message: {default_message}"]
    lines.extend("  " + line for line in extra_lines)
    return "\n".join(lines) + "\n" + rules_yaml(rules) + "\n"


def wait_ready(admin_port, child, timeout=45):
    def ready():
        if not child.running():
            return True
        return send(admin_port, "/readyz", method="GET", headers={}, timeout=2).status == 200
    wait_until(ready, timeout, 0.25)
    return child.running() and send(admin_port, "/readyz", method="GET", headers={}, timeout=2).status == 200


# ----------------------------------------------------------------------------- what the docs say the answer is


def product_listed(product, patterns):
    return any(product == p or (p.endswith("*") and product.startswith(p[:-1])) for p in patterns)


def rule_holds(rule, request, purchase):
    when = rule.get("when") or {}
    if "product" in when and not product_listed(request["productId"], when["product"]):
        return False
    if "entitlement" in when and not set(purchase["entitlements"]) & set(when["entitlement"]):
        return False
    if "state" in when and purchase["state"] not in when["state"]:
        return False
    if "refunded" in when and purchase["refunded"] != when["refunded"]:
        return False
    if purchase["restricted"] != when.get("consent_restricted", False):
        return False
    if "locale" in when and request["userLocale"] not in when["locale"]:
        return False
    if "environment" in when and request["environment"] not in when["environment"]:
        return False
    return True


def expected_answer(rules, default_message, request, purchase):
    """(result, reason, rule or None): docs/retention.md "Signet", steps 3 and 4."""
    if purchase is None or purchase["environment"] != request["environment"]:
        return "default", "unknown_purchase", None
    for rule in rules:
        if rule_holds(rule, request, purchase):
            return "answered", rule["name"], rule
    return "default", "no_rule", None


def read_purchase(admin_port, token, original_transaction_id):
    """The purchase as Signet keeps it (GET /v1/subscriptions/{id}) and its names and consent
    restriction (GET /v1/entitlements), or None when Signet does not know it."""
    snap_reply, snapshot = get_json(admin_port, f"/v1/subscriptions/{original_transaction_id}", token)
    if snap_reply.status == 404:
        return None, snap_reply
    ent_reply, entitlements = get_json(admin_port, f"/v1/entitlements?originalTransactionId={original_transaction_id}", token)
    if not isinstance(snapshot, dict) or not isinstance(entitlements, list) or not entitlements:
        raise RuntimeError(f"could not read purchase {original_transaction_id}:\n{snap_reply.said()}\n{ent_reply.said()}")
    evaluated = entitlements[0]
    return {
        "id": original_transaction_id,
        "state": snapshot.get("state"),
        "evaluated_state": evaluated.get("state"),
        "productId": snapshot.get("productId"),
        "environment": snapshot.get("environment"),
        # "the purchase's latest transaction was refunded or revoked"
        "refunded": snapshot.get("revocationDate") is not None or snapshot.get("state") in ("refunded", "revoked"),
        "entitlements": evaluated.get("entitlements") or [],
        "restricted": bool(evaluated.get("restricted")),
        "appAccountToken": snapshot.get("appAccountToken"),
        "appTransactionId": snapshot.get("appTransactionId"),
    }, snap_reply


def judge_answer(reply, rules, default_message, request, purchase, offer_key=None, bundle_id=None, v1=False):
    """Problems with one 200 answer against what the docs call for (empty list: right)."""
    result, reason, rule = expected_answer(rules, default_message, request, purchase)
    problems = []
    if reply.status != 200:
        return [f"expected status 200 ({result}/{reason}), got {reply.status}"], (result, reason)
    content_type = (reply.header("Content-Type") or "").split(";")[0].strip().lower()
    if content_type != "application/json":
        problems.append(f"Content-Type {reply.header('Content-Type')!r}, expected application/json")
    body = reply.json()
    if not isinstance(body, dict):
        return problems + ["the body is not a JSON object"], (result, reason)
    keys = sorted(body)
    if len(keys) != 1 or keys[0] not in VARIANTS:
        problems.append(f"expected exactly one RealtimeResponseBody variant, got keys {keys}")
        return problems, (result, reason)
    variant, inner = keys[0], body[keys[0]]
    if not isinstance(inner, dict):
        return problems + [f"{variant} is not an object"], (result, reason)
    identifier = inner.get("messageIdentifier")
    if not (isinstance(identifier, str) and UUID_LOWER.match(identifier)):
        problems.append(f"messageIdentifier {identifier!r} is not a lower-case UUID")
    if rule is None:
        want = {"message": {"messageIdentifier": default_message.lower()}}
        if body != want:
            problems.append(f"expected the default message ({reason}): {json.dumps(want)}")
        return problems, (result, reason)
    if "message" in rule:
        want = {"message": {"messageIdentifier": rule["message"].lower()}}
        if body != want:
            problems.append(f"expected rule {rule['name']!r}: {json.dumps(want)}")
    elif "alternate_product" in rule:
        spec = rule["alternate_product"]
        want_inner = {"messageIdentifier": spec["message"].lower(), "productId": spec["product"]}
        if "billing_plan_type" in spec:
            want_inner["billingPlanType"] = spec["billing_plan_type"]
        want = {"alternateProduct": want_inner}
        if body != want:
            problems.append(f"expected rule {rule['name']!r}: {json.dumps(want)}")
    else:
        spec = rule["promotional_offer"]
        if variant != "promotionalOffer":
            problems.append(f"expected rule {rule['name']!r}: a promotionalOffer, got {variant}")
            return problems, (result, reason)
        if identifier != spec["message"].lower():
            problems.append(f"messageIdentifier {identifier!r}, expected {spec['message'].lower()}")
        product = spec.get("product", request["productId"])
        if v1:
            problems += judge_offer_v1(inner, offer_key, bundle_id, product, spec["offer"], purchase)
        else:
            problems += judge_offer_v2(inner, offer_key, bundle_id, product, spec["offer"], request)
    return problems, (result, reason)


def judge_offer_v2(inner, key, bundle_id, product, offer, request):
    problems = []
    if sorted(inner) != ["messageIdentifier", "promotionalOfferSignatureV2"]:
        return [f"promotionalOffer keys {sorted(inner)}, expected messageIdentifier and promotionalOfferSignatureV2 only"]
    jws = inner["promotionalOfferSignatureV2"]
    try:
        head, body, signature = jws.split(".")
        header, claims = json.loads(b64url_decode(head)), json.loads(b64url_decode(body))
    except Exception as error:  # noqa: BLE001
        return [f"promotionalOfferSignatureV2 is not a compact JWS: {error!r}"]
    if not es256_verify(key.public, (head + "." + body).encode(), b64url_decode(signature)):
        problems.append("the V2 signature does not verify with the In-App Purchase key's public key")
    if header.get("alg") != "ES256" or header.get("kid") != key.key_id or header.get("typ") != "JWT":
        problems.append(f"header {header}, expected alg ES256, kid {key.key_id}, typ JWT")
    want = {"iss": key.issuer_id, "aud": "promotional-offer", "bid": bundle_id, "productId": product,
            "offerIdentifier": offer, "transactionId": request["originalTransactionId"]}
    for name, value in want.items():
        if claims.get(name) != value:
            problems.append(f"claim {name} = {claims.get(name)!r}, expected {value!r}")
    if "exp" in claims:
        problems.append("claim exp present (Apple: don't include exp)")
    if not (isinstance(claims.get("nonce"), str) and UUID_LOWER.match(claims["nonce"])):
        problems.append(f"nonce {claims.get('nonce')!r} is not a lower-case UUID")
    iat = claims.get("iat")
    if not (isinstance(iat, int) and abs(iat - time.time()) < 300):
        problems.append(f"iat {iat!r} is not whole seconds within 5 minutes of now")
    return problems


def judge_offer_v1(inner, key, bundle_id, product, offer, purchase):
    problems = []
    if sorted(inner) != ["messageIdentifier", "promotionalOfferSignatureV1"]:
        return [f"promotionalOffer keys {sorted(inner)}, expected messageIdentifier and promotionalOfferSignatureV1 only"]
    v1 = inner["promotionalOfferSignatureV1"]
    if not isinstance(v1, dict):
        return ["promotionalOfferSignatureV1 is not an object"]
    token = (purchase.get("appAccountToken") or "").lower()
    want = {"productId": product, "keyId": key.key_id, "offerIdentifier": offer}
    if token:
        want["appAccountToken"] = token
    for name, value in want.items():
        if v1.get(name) != value:
            problems.append(f"{name} = {v1.get(name)!r}, expected {value!r}")
    allowed = {"encodedSignature", "productId", "nonce", "timestamp", "keyId", "offerIdentifier", "appAccountToken"}
    if set(v1) - allowed:
        problems.append(f"keys Apple does not define: {sorted(set(v1) - allowed)}")
    nonce, stamp = v1.get("nonce"), v1.get("timestamp")
    if not (isinstance(nonce, str) and UUID_LOWER.match(nonce)):
        problems.append(f"nonce {nonce!r} is not a lower-case UUID")
    if not (isinstance(stamp, int) and abs(stamp - time.time() * 1000) < 300_000):
        problems.append(f"timestamp {stamp!r} is not UNIX milliseconds within 5 minutes of now")
    try:
        signed = "\u2063".join([bundle_id, key.key_id, product, offer, token, str(nonce), str(stamp)]).encode()
        key.public.verify(base64.b64decode(v1.get("encodedSignature", "")), signed, ec.ECDSA(hashes.SHA256()))
    except (InvalidSignature, ValueError, TypeError):
        problems.append("encodedSignature does not verify over appBundleId\u2063keyId\u2063productId\u2063offer\u2063appAccountToken\u2063nonce\u2063timestamp")
    return problems


def no_retention_answer(reply):
    """True when the reply carries no RealtimeResponseBody (any status but 200, no variant)."""
    if reply.status == 200:
        return False
    body = reply.json()
    return not (isinstance(body, dict) and any(k in body for k in VARIANTS))


# ----------------------------------------------------------------------------- the cases


def case_components(signet, root):
    listed = signet.run(["components", "retention"], {})
    text = listed.out + listed.err
    keys = ["path", "default_message", "decision_timeout", "offer_signature", "rules", "store", "max_pending_lookups",
            "key_id", "issuer_id", "private_key", "bundle_id", "product", "entitlement", "state", "refunded",
            "consent_restricted", "locale", "environment", "message", "alternate_product", "promotional_offer",
            "billing_plan_type", "offer"]
    missing = [k for k in keys if not re.search(r"(?<![A-Za-z_])" + re.escape(k) + r"(?![A-Za-z_])", text)]
    check("components: `signet components retention` lists the section with every key docs/retention.md names",
          listed.code == 0 and not missing, f"keys not found in the output: {missing}", listed.said())
    as_json = signet.run(["components", "--json"], {})
    document = parse_json(as_json.out)
    sections = document.get("sections") if isinstance(document, dict) else None
    section = next((s for s in sections or [] if isinstance(s, dict) and s.get("name") in ("retention", "retention:")), None)

    def field(fields, name):
        return next((f for f in fields or [] if isinstance(f, dict) and f.get("name") == name), None)

    fields = section.get("fields") if section else None
    problems = []
    for name, default in (("decision_timeout", "150ms"), ("max_pending_lookups", "256")):
        found = field(fields, name)
        if found is None:
            problems.append(f"no field {name}")
        elif str(found.get("default")) != default:
            problems.append(f"{name} default {found.get('default')!r}, docs say {default}")
    check("components: `signet components --json` has a `retention` section whose decision_timeout defaults to 150ms "
          "and max_pending_lookups to 256, as docs/retention.md says",
          section is not None and not problems, *problems,
          f"sections: {[s.get('name') for s in sections or [] if isinstance(s, dict)]}", clip(json.dumps(section), 2500))


def case_sandbox(signet, root):
    """The main case: a Sandbox webhook pipeline with a `retention:` section and nine rules."""
    fixtures = FixtureSet(signet, os.path.join(root, "fixtures-sandbox"), ["--count", "40"])
    if not check("sandbox: `signet fixtures --out DIR --now --count 40` writes notifications, realtime-requests.ndjson, "
                 "realtime-refused.ndjson and fixtures.env", fixtures.ok, fixtures.made.said()):
        return
    SHARED["sandbox"] = fixtures
    check("sandbox: realtime-requests.ndjson has a request per subscription (at least 20), signed for the set's app",
          len(fixtures.requests) >= 20 and all(p.get("appAppleId") == fixtures.app_apple_id for _, p in fixtures.requests),
          f"{len(fixtures.requests)} requests; appAppleIds {sorted({p.get('appAppleId') for _, p in fixtures.requests})}")

    # the subscription group of the monthly product, mapped to the entitlement name `family` (a whole group)
    group = None
    for line in fixtures.notifications:
        try:
            transaction = jws_payload(jws_payload(parse_json(line)["signedPayload"])["data"]["signedTransactionInfo"])
        except (KeyError, TypeError, ValueError, IndexError):
            continue
        if transaction.get("productId") == MONTHLY and transaction.get("subscriptionGroupIdentifier"):
            group = str(transaction["subscriptionGroupIdentifier"])
            break
    if not check("sandbox: the fixtures' monthly product names its subscriptionGroupIdentifier (mapped to entitlement `family`)",
                 group is not None):
        return
    data_dir = os.path.join(root, "data-sandbox")
    webhook, admin = free_port(), free_port()
    token = secrets.token_hex(16)
    key = OfferKey(root, "ACCEPTKEY1")
    ids = {name: message_id() for name in ("default", "prod", "restricted", "refunded", "offer", "fr", "de", "switch",
                                           "yearly", "winback", "family", "else", "ja")}
    up = {name: value.upper() for name, value in ids.items()}  # written UPPER case in the file
    rules = [
        {"name": "japanese-unrefunded", "when": {"locale": ["ja-JP"], "refunded": False}, "message": up["ja"]},
        {"name": "production-only", "when": {"environment": ["Production"]}, "message": up["prod"]},
        {"name": "restricted-care", "when": {"consent_restricted": True, "state": ["active"]}, "message": up["restricted"]},
        {"name": "refunded-goodbye", "when": {"refunded": True}, "message": up["refunded"]},
        {"name": "retry-offer", "when": {"entitlement": ["pro"], "state": ["billing_retry", "grace_period"], "refunded": False},
         "promotional_offer": {"message": up["offer"], "offer": "stay.50"}},
        {"name": "yearly-fr", "when": {"entitlement": ["yearly"], "locale": ["fr-FR"]}, "message": up["fr"]},
        {"name": "german", "when": {"locale": ["de-DE"]}, "alternate_product": {"message": up["de"], "product": YEARLY}},
        {"name": "yearly-switch", "when": {"product": [MONTHLY], "state": ["active"], "locale": ["en-US", "en-GB"]},
         "alternate_product": {"message": up["switch"], "product": YEARLY, "billing_plan_type": "MONTHLY"}},
        {"name": "yearly-keep", "when": {"product": ["com.example.signet.premium.year*"], "entitlement": ["yearly"]},
         "message": up["yearly"]},
        {"name": "winback", "when": {"state": ["expired"]}, "message": up["winback"]},
        {"name": "family-it", "when": {"entitlement": ["family"], "locale": ["it-IT"]}, "message": up["family"]},
        {"name": "anyone-else", "message": up["else"]},  # no `when`: every known purchase, but not a restricted one
    ]
    default_message = up["default"]
    retention = retention_yaml("/retention", default_message, rules, ["offer_signature: v2"])
    pipeline = os.path.join(root, "sandbox.yaml")
    with open(pipeline, "w", encoding="utf-8") as file:
        file.write(pipeline_yaml(data_dir, fixtures.root_pem, fixtures.bundle_id, ["Sandbox"], fixtures.app_apple_id,
                                 webhook, admin, retention, group=group))
    extra = {"SIGNET_DATA_DIR": data_dir, "SIGNET_API_TOKEN": token, "SIGNET_APPSTORE_KEY_ID": key.key_id,
             "SIGNET_APPSTORE_ISSUER_ID": key.issuer_id, "SIGNET_APPSTORE_PRIVATE_KEY": key.path,
             "SIGNET_BUNDLE_ID": fixtures.bundle_id}
    child = signet.start(["run", "--pipeline", pipeline], extra)
    expected_counts = collections.Counter()  # "result/reason" -> requests sent that the docs count so
    statuses = collections.Counter()
    guard_refusals = 0

    def post(body, label, headers=None, method="POST", path="/retention", conn=None):
        reply = send(webhook, path, body, method=method, headers=headers, label=label, conn=conn)
        statuses[reply.status] += 1
        return reply

    try:
        if not check(f"sandbox: `signet run` with a `retention:` section (http source, verify, {len(rules)} rules, offers signed "
                     "V2 with the SIGNET_APPSTORE_* key) becomes ready", wait_ready(admin, child), child.said()):
            return

        # -- metrics before the first request
        scraped, series = scrape(admin)
        names = [r["name"] for r in rules]
        wanted = [("answered", n) for n in names] + [("default", r) for r in (
            "no_rule", "unknown_purchase", "timeout", "store_error", "overloaded", "signing_failed")]
        absent = [f"{a}/{b}" for a, b in wanted if series_value(series, "signet_retention_requests_total", result=a, reason=b) != 0]
        check("metrics: before the first request, signet_retention_requests_total{result,reason} exists at 0 for every rule "
              "(answered) and every default reason (no_rule, unknown_purchase, timeout, store_error, overloaded, signing_failed)",
              scraped.status == 200 and not absent, f"missing or not 0: {absent}",
              f"retention series seen: {retention_series(series)}", scraped.said() if scraped.status != 200 else "")
        refusal_reasons = ["app_apple_id_mismatch", "environment_mismatch", "invalid_signature", "invalid_certificate_chain",
                           "malformed_payload"]
        absent = [r for r in refusal_reasons
                  if series_value(series, "signet_retention_requests_total", result="refused", reason=r) != 0]
        check("metrics: before the first request, result=\"refused\" series exist at 0 for the verify reason codes a request "
              "is refused with (app_apple_id_mismatch, environment_mismatch, invalid_signature, invalid_certificate_chain, "
              "malformed_payload) (reading: \"every series exists at 0 from the start\" covers the refusal reasons too)",
              not absent, f"missing or not 0: {absent}", f"retention series seen: {retention_series(series)}")
        count = series_value(series, "signet_retention_decision_seconds_count")
        buckets = {dict(l).get("le") for (n, l) in series if n == "signet_retention_decision_seconds_bucket"}
        check("metrics: signet_retention_decision_seconds exists before the first request (count 0) with buckets from "
              "1 ms (le=\"0.001\") to 2.5 s (le=\"2.5\")",
              count == 0 and "0.001" in buckets and "2.5" in buckets and "+Inf" in buckets,
              f"_count {count}; buckets {sorted(buckets, key=lambda b: float(b) if b != '+Inf' else 1e9)}")

        # -- a request before its purchase is known: the default, not a guess
        # Re-signed with a fresh requestIdentifier: the fixture line itself is sent again once the
        # purchase is known, and a request identifier Signet answered is answered the same again.
        first_line, first_request = fixtures.request_body(fixtures.requests[0][1])
        reply = post(first_line, "fixture request before any notification")
        problems, key_seen = judge_answer(reply, rules, default_message, first_request, None)
        expected_counts["/".join(key_seen)] += 1
        check("unknown purchase: a verified request for a purchase the store does not know yet gets 200 with the default "
              "message", not problems, *problems, reply.said())

        # -- load the store through the webhook's notification path
        answers = [send(webhook, "/notifications", line, label="notification") for line in fixtures.notifications]
        bad = [a for a in answers if a.status != 200 or (a.json() or {}).get("status") != "committed"]
        check(f"setup: the {len(answers)} fixture notifications POSTed to /notifications are all answered 200 committed",
              not bad, *[b.said() for b in bad[:3]])

        # -- read back each purchase as Signet keeps it
        purchases = {}
        for _, request in fixtures.requests:
            purchases[request["originalTransactionId"]], _ = read_purchase(admin, token, request["originalTransactionId"])
        known = {k: v for k, v in purchases.items() if v is not None}
        differ = {k: (v["state"], v["evaluated_state"]) for k, v in known.items() if v["state"] != v["evaluated_state"]}
        check("setup: the stored state of every purchase (GET /v1/subscriptions) agrees with its state now (/v1/entitlements), "
              "so the expected answers do not depend on which one `state:` means", not differ, f"differ: {differ}")
        by_state = collections.defaultdict(list)
        for request_line, request in fixtures.requests:
            purchase = purchases[request["originalTransactionId"]]
            if purchase is not None:
                by_state[(purchase["state"], purchase["productId"])].append((request_line, request))
        actives = by_state[("active", MONTHLY)]
        yearlies = by_state[("active", YEARLY)]
        expireds = by_state[("expired", MONTHLY)]
        refundeds = [r for k, v in by_state.items() for r in v if purchases[r[1]["originalTransactionId"]]["refunded"]]
        retries = by_state[("billing_retry", MONTHLY)] + by_state[("grace_period", MONTHLY)]
        if not check("setup: the fixtures hold active monthly (>= 6), active yearly, expired, refunded or revoked, billing "
                     "retry or grace period purchases and one the store does not know",
                     len(actives) >= 6 and yearlies and len(expireds) >= 2 and refundeds and retries
                     and any(v is None for v in purchases.values()),
                     f"by state: { {f'{s}/{p}': len(v) for (s, p), v in by_state.items()} }; "
                     f"unknown: {[k for k, v in purchases.items() if v is None]}"):
            return

        # -- withdraw consent (RESCIND_CONSENT) for one active and one expired purchase
        restricted_active, restricted_expired = actives[1], expireds[0]
        rescinds = []
        sample = signet.run(["fixtures", "--out", os.path.join(root, "fixtures-rescind-shape"), "--now", "--count", "1",
                             "--type", "RESCIND_CONSENT"], {}, timeout=60)
        shape = None
        try:
            shape = jws_payload(json.loads(ndjson_lines(os.path.join(root, "fixtures-rescind-shape", "notifications.ndjson"))[0])["signedPayload"])
        except (OSError, ValueError, KeyError, IndexError):
            pass
        if not check("setup: `signet fixtures --type RESCIND_CONSENT` shows the notification's shape (appData with signedAppTransactionInfo)",
                     sample.code == 0 and isinstance(shape, dict) and isinstance((shape.get("appData") or {}).get("signedAppTransactionInfo"), str),
                     sample.said()):
            return
        notification_signer = Signer(fixtures.folder, parse_json(fixtures.notifications[0])["signedPayload"])
        for _, request in (restricted_active, restricted_expired):
            purchase = purchases[request["originalTransactionId"]]
            now = int(time.time() * 1000)
            app_transaction = jws_payload(shape["appData"]["signedAppTransactionInfo"])
            app_transaction.update({"appTransactionId": purchase["appTransactionId"], "bundleId": fixtures.bundle_id,
                                    "signedDate": now, "receiptCreationDate": now - 1000})
            notification = json.loads(json.dumps(shape))
            notification.update({"notificationUUID": str(uuid.uuid4()), "signedDate": now})
            notification["appData"]["bundleId"] = fixtures.bundle_id
            notification["appData"]["signedAppTransactionInfo"] = notification_signer.sign(app_transaction)
            rescinds.append(send(webhook, "/notifications", json.dumps({"signedPayload": notification_signer.sign(notification)}),
                                 label="RESCIND_CONSENT"))
        for _, request in (restricted_active, restricted_expired):
            purchases[request["originalTransactionId"]], _ = read_purchase(admin, token, request["originalTransactionId"])
        if not check("setup: a RESCIND_CONSENT for the app transaction of one active and one expired purchase is committed and "
                     "both purchases then answer restricted: true (/v1/entitlements)",
                     all(r.status == 200 and (r.json() or {}).get("status") == "committed" for r in rescinds)
                     and all(purchases[r["originalTransactionId"]]["restricted"] for _, r in (restricted_active, restricted_expired)),
                     *[r.said() for r in rescinds],
                     f"purchases: {[purchases[r['originalTransactionId']] for _, r in (restricted_active, restricted_expired)]}"):
            return
        events_before = len([l for l in child.stdout().splitlines() if l.strip()])

        # -- every fixture request: the first matching rule, or the default
        wrong, offers_seen, variants_seen, latencies = [], 0, collections.Counter(), []
        for request_line, request in fixtures.requests:
            purchase = purchases[request["originalTransactionId"]]
            reply = post(request_line, f"realtime-requests.ndjson, {purchase['state'] if purchase else 'unknown purchase'}")
            problems, key_seen = judge_answer(reply, rules, default_message, request, purchase, key, fixtures.bundle_id)
            expected_counts["/".join(key_seen)] += 1
            body = reply.json() if reply.status == 200 else None
            if isinstance(body, dict) and len(body) == 1:
                variants_seen[next(iter(body))] += 1
                offers_seen += "promotionalOffer" in body
            if problems:
                wrong.append((reply, problems, key_seen, purchase))
            latencies.append(reply)
        slowest = max(latencies, key=lambda r: r.elapsed)
        check(f"answers: each fixture request, sent one at a time, is answered within Apple's 700 ms (slowest "
              f"{slowest.elapsed * 1000:.0f} ms)", slowest.elapsed < APPLE_BUDGET, slowest.said())
        check(f"answers: every fixture request ({len(fixtures.requests)}) gets 200, application/json, exactly one variant, "
              "the first rule whose conditions hold for the stored purchase (else the default), message ids lower case "
              f"(variants seen: {dict(variants_seen)})",
              not wrong, *[f"{r.said()}\nexpected {k} for purchase {p}\nproblems: {pr}" for r, pr, k, p in wrong[:4]],
              f"({len(wrong)} wrong)" if wrong else "")
        check("answers: billing-retry and grace-period purchases get the promotional offer, its V2 JWS signed with the "
              "In-App Purchase key (alg ES256, kid, aud promotional-offer, bid, offerIdentifier, a lower-case nonce, "
              "no exp) naming the request's originalTransactionId as transactionId",
              offers_seen == len(retries) and not [w for w in wrong if w[2] == ("answered", "retry-offer")],
              f"{offers_seen} offers for {len(retries)} such purchases",
              *[f"{r.said()}\nproblems: {pr}" for r, pr, k, _ in wrong if k == ("answered", "retry-offer")][:2])

        # -- crafted requests: one condition at a time
        def crafted(label, base, expect_status=200, purchase_override=None, count_as=None, **changes):
            body, payload = fixtures.request_body(base[1], **changes)
            reply = post(body, label)
            if expect_status != 200:
                return reply, payload, []
            purchase = purchase_override if purchase_override is not None else purchases.get(payload["originalTransactionId"])
            problems, key_seen = judge_answer(reply, rules, default_message, payload, purchase, key, fixtures.bundle_id)
            expected_counts["/".join(count_as or key_seen)] += 1
            return reply, payload, problems

        active = actives[0]
        cases = [
            ("locale de-DE on an active monthly purchase: rule `german`, an alternateProduct without billing_plan_type has no "
             "billingPlanType key (not null)", active, {"userLocale": "de-DE"}, ("answered", "german")),
            ("locale ja-JP on an active purchase: rule `japanese-unrefunded` (refunded: false holds)", active,
             {"userLocale": "ja-JP"}, ("answered", "japanese-unrefunded")),
            ("locale ja-JP on a refunded purchase: not `japanese-unrefunded` (refunded: false fails), `refunded-goodbye`",
             next((r for r in refundeds if purchases[r[1]["originalTransactionId"]]["state"] == "refunded"), refundeds[0]),
             {"userLocale": "ja-JP"}, ("answered", "refunded-goodbye")),
            ("locale ja-JP on a revoked (Family Sharing) purchase: revoked counts as refunded, `refunded-goodbye`",
             next((r for r in refundeds if purchases[r[1]["originalTransactionId"]]["state"] == "revoked"), refundeds[-1]),
             {"userLocale": "ja-JP"}, ("answered", "refunded-goodbye")),
            ("locale en-GB on an active monthly purchase: rule `yearly-switch` (alternateProduct with billingPlanType)",
             active, {"userLocale": "en-GB"}, ("answered", "yearly-switch")),
            ("locale en-us (not Apple's en-US: locales are case-sensitive) on an active monthly purchase: not `yearly-switch`, "
             "the rule without conditions `anyone-else`", active, {"userLocale": "en-us"}, ("answered", "anyone-else")),
            ("locale it-IT on an active monthly purchase: rule `family-it` (entitlement `family` granted by the subscription "
             "group's id)", active, {"userLocale": "it-IT"}, ("answered", "family-it")),
            ("locale it-IT on an active yearly purchase: `family-it` exactly when the stored purchase is granted `family` (its "
             "group), else the rule after it",
             yearlies[0], {"userLocale": "it-IT"}, None),
            ("locale fr-FR on an active yearly purchase: rule `yearly-fr` (entitlement yearly)", yearlies[0],
             {"userLocale": "fr-FR"}, ("answered", "yearly-fr")),
            ("locale fr-FR on an active monthly purchase (entitlement pro, not yearly): not `yearly-fr`, `anyone-else`", active,
             {"userLocale": "fr-FR"}, ("answered", "anyone-else")),
            ("locale de-DE on a refunded/revoked purchase: the earlier rule `refunded-goodbye` wins over `german`",
             refundeds[0], {"userLocale": "de-DE"}, ("answered", "refunded-goodbye")),
            ("the request's productId decides `product:` (docs: \"the request's productId is listed\"): productId monthly about "
             "a purchase stored as yearly gets rule `yearly-switch`", yearlies[0], {"productId": MONTHLY},
             ("answered", "yearly-switch")),
            ("a purchase the store does not know (en-US): the default", active,
             {"originalTransactionId": str(2000000000000000 + secrets.randbelow(10 ** 15))}, ("default", "unknown_purchase")),
            ("a purchase the store does not know, locale de-DE: the default, not rule `german` (nothing is offered from what "
             "Signet has not verified)", active,
             {"originalTransactionId": str(2000000000000000 + secrets.randbelow(10 ** 15)), "userLocale": "de-DE"},
             ("default", "unknown_purchase")),
        ]
        for label, base, changes, want in cases:
            reply, payload, problems = crafted(label, base, **changes)
            _, key_seen = judge_answer(reply, rules, default_message, payload, purchases.get(payload["originalTransactionId"]))
            want = want or key_seen  # None: whatever the stored purchase calls for
            check(f"rules: {label}", key_seen == want and not problems, f"expected {want}", *problems, reply.said())

        # -- consent withdrawn (RESCIND_CONSENT)
        for label, base, want in (("an active purchase whose consent was withdrawn is reached only by the rule that says "
                                   "consent_restricted: true (`restricted-care`), not by `yearly-switch`",
                                   restricted_active, ("answered", "restricted-care")),
                                  ("an expired purchase whose consent was withdrawn is reached neither by the ordinary rule "
                                   "`winback` nor by `anyone-else` (no `when` at all): the default", restricted_expired,
                                   ("default", "no_rule"))):
            reply, payload, problems = crafted(label, base)
            _, key_seen = judge_answer(reply, rules, default_message, payload, purchases[payload["originalTransactionId"]])
            check(f"consent: {label}", key_seen == want and not problems, f"expected {want}", *problems, reply.said())
        expired_purchase = purchases[restricted_expired[1]["originalTransactionId"]]
        cleared = send(admin, f"/v1/consent/{expired_purchase['appTransactionId']}/clear?by=acceptance", method="POST",
                       headers={"Authorization": "Bearer " + token}, label="clear")
        purchases[restricted_expired[1]["originalTransactionId"]], _ = read_purchase(admin, token, restricted_expired[1]["originalTransactionId"])
        reply, payload, problems = crafted("after clear", restricted_expired)
        _, key_seen = judge_answer(reply, rules, default_message, payload, purchases[payload["originalTransactionId"]])
        check("consent: after the backend clears the restriction (POST /v1/consent/{appTransactionId}/clear), the ordinary "
              "rule `winback` reaches the expired customer again",
              cleared.status == 200 and key_seen == ("answered", "winback") and not problems, *problems, cleared.said(), reply.said())

        # -- a retry of the same body: the same answer
        same = {}
        for label, base in (("yearly-switch", active), ("offer", retries[0])):
            body, payload = fixtures.request_body(base[1])
            first, second = post(body, f"retry 1 ({label})"), post(body, f"retry 2 ({label})")
            _, key_seen = judge_answer(first, rules, default_message, payload, purchases[payload["originalTransactionId"]],
                                       key, fixtures.bundle_id)
            expected_counts["/".join(key_seen)] += 1
            # The repeat is answered from the record of the first (docs/retention.md): counted `replayed`.
            expected_counts["replayed/" + key_seen[0]] += 1
            same[label] = (first, second)
        first, second = same["yearly-switch"]
        check("retry: the identical request sent twice gets 200 and byte-for-byte the same answer",
              first.status == second.status == 200 and first.body == second.body, first.said(), second.said())
        first, second = same["offer"]

        def offer_claims(reply):
            try:
                inner = reply.json()["promotionalOffer"]
                claims = jws_payload(inner["promotionalOfferSignatureV2"])
                return inner["messageIdentifier"], {k: v for k, v in claims.items() if k not in ("nonce", "iat")}
            except (TypeError, KeyError, ValueError, IndexError):
                return None
        check("retry: the identical offer request sent twice gets the same message and the same offer claims (only the "
              "one-time nonce and iat may differ)",
              first.status == second.status == 200 and offer_claims(first) is not None and offer_claims(first) == offer_claims(second),
              first.said(), second.said())

        # -- keep-alive: Apple may reuse a connection, also after a refusal
        refused_by_reason = collections.Counter()
        conn = http.client.HTTPConnection("127.0.0.1", webhook, timeout=10)
        try:
            replies = []
            for base, changes in ((active, {}), (yearlies[0], {}), (active, {"appAppleId": fixtures.app_apple_id + 1}),
                                  (expireds[1], {})):
                body, payload = fixtures.request_body(base[1], **changes)
                reply = post(body, "keep-alive" + (" (another app's)" if changes else ""), conn=conn)
                if changes:
                    refused_by_reason["app_apple_id_mismatch"] += 1
                    replies.append((reply, [] if reply.status == 403 and not reply.body else ["expected 403 with no body"]))
                    continue
                problems, key_seen = judge_answer(reply, rules, default_message, payload, purchases[payload["originalTransactionId"]])
                expected_counts["/".join(key_seen)] += 1
                replies.append((reply, problems))
        finally:
            conn.close()
        check("keep-alive: four requests on one HTTP/1.1 connection (the third another app's) are answered 200, 200, 403, 200, "
              "each with its own right answer: a refusal does not cost Apple its connection",
              all(not p for r, p in replies), *[f"{r.said()}\n{p}" for r, p in replies])

        # -- refused: every line of realtime-refused.ndjson, and more
        kinds = []
        for line in fixtures.refused_lines:
            kind, reason = classify_refused(fixtures, line)
            kinds.append(kind)
            reply = post(line, f"realtime-refused.ndjson: {kind}")
            if kind == "not_json":
                ok = reply.status in (400, 403) and no_retention_answer(reply) and (reply.status == 400 or not reply.body)
                guard_refusals += reply.status == 400
                wanted_text = "400 (the webhook's guard) or 403 with no body (reading: docs/retention.md step 1 lists the guards without the 400 one)"
            else:
                ok = reply.status == 403 and not reply.body
                wanted_text = f"403 with no body (reason {reason})"
                if reason:
                    refused_by_reason[reason] += 1
            check(f"refused: realtime-refused.ndjson line `{kind}` gets no retention answer: {wanted_text}", ok, reply.said())
        check("refused: realtime-refused.ndjson holds what `signet fixtures --help` and docs/retention.md list (another app's, "
              "the other environment's, a forged signature, a foreign chain, a missing field, a notification, not JSON)",
              sorted(kinds) == sorted(["other_app", "other_environment", "forged_signature", "foreign_chain", "missing_field",
                                       "notification", "not_json"]), f"classified as {kinds}")
        refusals = [
            ("another app's appAppleId in the Sandbox (compared in every environment)", {"appAppleId": fixtures.app_apple_id + 7},
             "app_apple_id_mismatch"),
            ("appAppleId missing", {"appAppleId": None}, "malformed_payload"),
            ("appAppleId as a string", {"appAppleId": str(fixtures.app_apple_id)}, "malformed_payload"),
            ("signedDate as a string (Apple: a timestamp, UNIX ms)", {"signedDate": str(int(time.time() * 1000))},
             "malformed_payload"),
            ("originalTransactionId as a number (Apple: a string)",
             {"originalTransactionId": int(active[1]["originalTransactionId"])}, "malformed_payload"),
            ("environment Production on a Sandbox pipeline", {"environment": "Production"}, "environment_mismatch"),
            ("signedDate one hour in the future", {"signedDate": int(time.time() * 1000) + 3_600_000}, "signed_date_in_future"),
        ]
        for label, changes, reason in refusals:
            reply, _, _ = crafted(label, active, expect_status=403, **changes)
            refused_by_reason[reason] += 1
            check(f"refused: a request re-signed with the fixtures' PKI but {label} gets 403 with no body", reply.status == 403
                  and not reply.body, f"expected 403 ({reason})", reply.said())
        transaction = jws_payload(parse_json(fixtures.notifications[0])["signedPayload"])["data"]["signedTransactionInfo"]
        reply = post(json.dumps({"signedPayload": transaction}), "a signed transaction as signedPayload")
        refused_by_reason["malformed_payload"] += 1
        check("refused: a signed transaction (a valid JWS of another kind) as signedPayload gets 403 with no body "
              "(docs: refused as malformed_payload, not mistaken for a request)", reply.status == 403 and not reply.body, reply.said())
        reply = post("{}", "{}")
        check("refused: `{}` (no signedPayload: cannot be verified, Apple's model notwithstanding) gets 403 with no body",
              reply.status == 403 and not reply.body, reply.said())

        # -- the webhook's guards on the retention path
        valid_body, valid_payload = fixtures.request_body(active[1])
        reply = post(b"", "GET", headers={}, method="GET")
        guard_refusals += 1
        check("guards: GET /retention gets 405 with Allow: POST and no retention answer",
              reply.status == 405 and "POST" in (reply.header("Allow") or "") and no_retention_answer(reply), reply.said())
        reply = post(valid_body, "PUT of a valid request", method="PUT")
        guard_refusals += 1
        check("guards: PUT /retention with a valid request gets 405, no retention answer", reply.status == 405
              and no_retention_answer(reply), reply.said())
        reply = post(valid_body, "Content-Type text/plain", headers={"Content-Type": "text/plain"})
        guard_refusals += 1
        check("guards: a valid request sent as Content-Type: text/plain gets 415, no retention answer",
              reply.status == 415 and no_retention_answer(reply), reply.said())
        big = json.dumps({"signedPayload": "A" * 70000})
        reply = post(big, "70 KB body")
        guard_refusals += 1
        check("guards: a body over max_body_bytes (65536) gets 413, no retention answer",
              reply.status == 413 and no_retention_answer(reply), reply.said())
        for label, body in (("an empty body", b""), ("a JSON array", b"[1,2,3]"), ("plain text", b"hello apple")):
            reply = post(body, label)
            guard_refusals += reply.status == 400
            check(f"guards: {label} gets no retention answer: 400 or 403 with no body", reply.status in (400, 403)
                  and no_retention_answer(reply) and (reply.status == 400 or not reply.body), reply.said())
        reply = post(valid_body, "another path", path="/retention/extra")
        guard_refusals += 1
        check("guards: POST /retention/extra (another path) gets 404, no retention answer",
              reply.status == 404 and no_retention_answer(reply), reply.said())
        body, payload = fixtures.request_body(active[1])
        reply = send_chunked(webhook, "/retention", body.encode(), label="chunked")
        statuses[reply.status] += 1
        problems, key_seen = judge_answer(reply, rules, default_message, payload, purchases[payload["originalTransactionId"]])
        expected_counts["/".join(key_seen)] += 1
        check("guards: a verified request sent with Transfer-Encoding: chunked (docs/webhook.md reads chunked bodies) is "
              "answered 200 with its rule", not problems, *problems, reply.said())
        reply = send_chunked(webhook, "/retention", json.dumps({"signedPayload": "A" * 70000}).encode(), label="70 KB chunked")
        statuses[reply.status] += 1
        guard_refusals += 1
        check("guards: a chunked body over max_body_bytes gets 413, no retention answer",
              reply.status == 413 and no_retention_answer(reply), reply.said())
        for label, headers in (("no Content-Type at all (Apple does not document its headers; a missing one is accepted)", {}),
                               ("Content-Type: application/json; charset=utf-8", {"Content-Type": "application/json; charset=utf-8"})):
            body, payload = fixtures.request_body(active[1])
            reply = post(body, label, headers=headers)
            problems, key_seen = judge_answer(reply, rules, default_message, payload, purchases[payload["originalTransactionId"]])
            expected_counts["/".join(key_seen)] += 1
            check(f"guards: a verified request with {label} is answered 200 with its rule", not problems, *problems, reply.said())

        # -- 50 at once
        case_concurrency(fixtures, rules, default_message, purchases, actives, yearlies, expireds, retries, refundeds,
                         webhook, expected_counts, key, statuses)

        # -- beside notification traffic on the same listener
        case_mixed_load(fixtures, rules, default_message, purchases, actives, webhook, expected_counts, key, statuses)

        # -- read-only: no event from any of it
        events_after = len([l for l in child.stdout().splitlines() if l.strip()])
        check("read-only: answering retention requests publishes no entitlement event (stdout lines unchanged)",
              events_after == events_before, f"{events_before} event lines before the retention traffic, {events_after} after")
        log = child.stderr()
        missing = [r for r in ("app_apple_id_mismatch", "invalid_signature", "malformed_payload") if r not in log]
        check("log: refused requests are logged with their reason code (docs: logged at info with the reason)",
              not missing, f"reason codes not found in stderr: {missing}", child.said())

        # -- metrics after everything
        time.sleep(0.3)
        scraped, series = scrape(admin)
        seen = retention_series(series)
        mismatched = []
        for name in [r["name"] for r in rules]:
            want = expected_counts.get(f"answered/{name}", 0)
            if seen.get(f"answered/{name}") != want:
                mismatched.append(f"answered/{name}: expected {want}, scraped {seen.get(f'answered/{name}')}")
        for reason in ("no_rule", "unknown_purchase", "signing_failed"):
            want = expected_counts.get(f"default/{reason}", 0)
            if seen.get(f"default/{reason}") != want:
                mismatched.append(f"default/{reason}: expected {want}, scraped {seen.get(f'default/{reason}')}")
        for reason in ("timeout", "store_error", "overloaded"):
            if seen.get(f"default/{reason}") != 0:
                mismatched.append(f"default/{reason}: expected 0 (the store was never slow here), scraped {seen.get(f'default/{reason}')}")
        check("metrics: signet_retention_requests_total counts every answered and default request by its rule or reason, "
              f"exactly as sent ({sum(expected_counts.values())} verified requests)",
              scraped.status == 200 and not mismatched, *mismatched, f"scraped: {seen}", f"expected: {dict(expected_counts)}")
        mismatched = [f"refused/{r}: expected {n}, scraped {seen.get(f'refused/{r}')}" for r, n in refused_by_reason.items()
                      if seen.get(f"refused/{r}") != n]
        check("metrics: result=\"refused\" counts each refusal by its reason code (another app, other environment, forged "
              "signature, foreign chain, malformed payload, future signedDate)", not mismatched, *mismatched, f"scraped: {seen}")
        refused_total = sum(v for k, v in seen.items() if k.startswith("refused/"))
        check("metrics: every 403 is counted as refused, and nothing else is (at most the guards' own refusals besides)",
              statuses[403] <= refused_total <= statuses[403] + guard_refusals,
              f"{statuses[403]} answers were 403, {guard_refusals} refused by the webhook's guards; refused series sum to "
              f"{refused_total}: {[(k, v) for k, v in seen.items() if k.startswith('refused/')]}")
        count = series_value(series, "signet_retention_decision_seconds_count")
        answered = sum(expected_counts.values())
        check("metrics: signet_retention_decision_seconds counted every verified request answered (count between the "
              "verified requests and all requests that reached verification)",
              count is not None and answered <= count <= answered + statuses[403],
              f"_count {count}; {answered} verified requests answered, {statuses[403]} refused with 403")
    finally:
        code = child.terminate()
    check("sandbox: `signet run` stops cleanly on SIGTERM (exit 0)", code == 0, f"exit {code}", child.said())


def postgres_tools():
    found = {}
    for tool in ("initdb", "pg_ctl"):
        path = shutil.which(tool)
        if not path:
            for base in sorted(os.listdir("/usr/lib/postgresql"), reverse=True) if os.path.isdir("/usr/lib/postgresql") else []:
                candidate = os.path.join("/usr/lib/postgresql", base, "bin", tool)
                if os.path.exists(candidate):
                    path = candidate
                    break
        found[tool] = path
    return found if all(found.values()) else None


def start_postgres(root):
    """A throw-away PostgreSQL on 127.0.0.1 and a free port (as the `postgres` user when run as
    root, as the repository's own tests do); (url, postmaster pid, pg_ctl argv prefix, data dir)."""
    tools = postgres_tools()
    if tools is None:
        raise CannotRun("no initdb/pg_ctl")
    folder = os.path.join(root, "postgres")
    os.makedirs(folder)
    prefix = []
    if os.geteuid() == 0:
        import pwd
        user = pwd.getpwnam("postgres")
        os.chmod(root, 0o755)
        os.chown(folder, user.pw_uid, user.pw_gid)
        prefix = ["runuser", "-u", "postgres", "--"]
    data = os.path.join(folder, "data")
    made = subprocess.run(prefix + [tools["initdb"], "-D", data, "-A", "trust", "-U", "postgres", "--no-sync"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, cwd=folder)
    if made.returncode != 0:
        raise CannotRun("initdb failed: " + made.stderr.decode("utf-8", "replace")[-800:])
    port = free_port()
    ctl = prefix + [tools["pg_ctl"]]
    started = subprocess.run(ctl + ["-D", data, "-l", os.path.join(folder, "log"), "-w", "-t", "30", "-o",
                                    f"-p {port} -k {folder} -c listen_addresses=127.0.0.1 -c fsync=off", "start"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, cwd=folder)
    if started.returncode != 0:
        raise CannotRun("pg_ctl start failed: " + started.stderr.decode("utf-8", "replace")[-800:])
    POSTGRES.append((ctl, data))
    with open(os.path.join(data, "postmaster.pid"), encoding="utf-8") as file:
        postmaster = int(file.readline().strip())
    return f"postgres://postgres@127.0.0.1:{port}/postgres?sslmode=disable", postmaster, ctl, data


def process_tree(pid):
    """pid and every descendant (read from /proc)."""
    children = collections.defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as file:
                    fields = file.read().rsplit(")", 1)[1].split()
                children[int(fields[1])].append(int(entry))
            except (OSError, IndexError, ValueError):
                pass
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def stop_postgres(ctl, data):
    subprocess.run(ctl + ["-D", data, "-m", "immediate", "-w", "-t", "20", "stop"], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=30)


def case_slow_store(signet, root):
    """The store slow (every PostgreSQL process stopped with SIGSTOP) and then failing (the server
    shut down): a verified request is still answered 200 with the default message, at once."""
    fixtures = SHARED.get("sandbox")
    if fixtures is None:
        return
    if os.environ.get("SIGNET_TEST_POSTGRES") == "0" or postgres_tools() is None:
        check("slow store: skipped (SIGNET_TEST_POSTGRES=0, or no initdb/pg_ctl on this machine)", True)
        return
    url, postmaster, ctl, data = start_postgres(root)
    webhook, admin = free_port(), free_port()
    token = secrets.token_hex(16)
    default_message, thanks = message_id(), message_id()
    rules = [{"name": "active-thanks", "when": {"state": ["active"]}, "message": thanks.upper()}]
    text = pipeline_yaml(os.path.join(root, "data-postgres"), fixtures.root_pem, fixtures.bundle_id, ["Sandbox"],
                         fixtures.app_apple_id, webhook, admin,
                         retention_yaml("/retention", default_message.upper(), rules, ["max_pending_lookups: 2"]))
    text = text.replace("    type: sqlite\n", f"    type: postgres\n    url: {url}\n", 1)
    text = "\n".join(l for l in text.splitlines() if not l.startswith("    path: ")) + "\n"
    path = os.path.join(root, "postgres.yaml")
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)
    child = signet.start(["run", "--pipeline", path], {"SIGNET_DATA_DIR": os.path.join(root, "data-postgres"),
                                                       "SIGNET_API_TOKEN": token})
    stopped = []
    counted = collections.Counter()
    try:
        if not check("slow store: `signet run` with the retention section (max_pending_lookups 2) on a PostgreSQL store becomes ready",
                     wait_ready(admin, child), child.said()):
            return
        answers = [send(webhook, "/notifications", line, label="notification") for line in fixtures.notifications]
        check("slow store: the fixture notifications are committed to PostgreSQL", all(a.status == 200 for a in answers),
              *[a.said() for a in answers if a.status != 200][:2])
        actives = []
        for _, request in fixtures.requests:
            purchase, _ = read_purchase(admin, token, request["originalTransactionId"])
            if purchase and purchase["state"] == "active" and not purchase["restricted"]:
                actives.append(request)
        if not check("slow store: the store holds at least 4 active purchases", len(actives) >= 4, f"{len(actives)}"):
            return
        body, _ = fixtures.request_body(actives[0])
        reply = send(webhook, "/retention", body, label="store healthy")
        counted["answered/active-thanks"] += 1
        check("slow store: with PostgreSQL healthy, an active purchase gets its rule's answer",
              reply.status == 200 and reply.json() == {"message": {"messageIdentifier": thanks}}, reply.said())

        # every PostgreSQL process stopped: each lookup hangs
        stopped = process_tree(postmaster)
        for pid in stopped:
            os.kill(pid, signal.SIGSTOP)
        replies = []
        for request in actives[1:4]:
            body, _ = fixtures.request_body(request)
            replies.append(send(webhook, "/retention", body, label="store stopped (SIGSTOP)", timeout=10))
        time.sleep(0.3)
        scraped, series = scrape(admin)
        during = retention_series(series)
        for pid in stopped:
            os.kill(pid, signal.SIGCONT)
        stopped = []
        counted["default/slow"] += len(replies)
        want = {"message": {"messageIdentifier": default_message}}
        check("slow store: with every PostgreSQL process stopped (SIGSTOP), requests about known active purchases get 200 "
              "with the default message (past decision_timeout), not the rule and not an error",
              all(r.status == 200 and r.json() == want for r in replies), *[r.said() for r in replies])
        check(f"slow store: ... and within Apple's 700 ms ({', '.join(f'{r.elapsed * 1000:.0f} ms' for r in replies)}; "
              "decision_timeout is 150 ms by default)", all(r.status is not None and r.elapsed < APPLE_BUDGET for r in replies),
              *[r.said() for r in replies])
        check("slow store: with max_pending_lookups 2, the first two hung lookups answer after decision_timeout "
              "(counted `timeout`) and the third, with two still running, at once (counted `overloaded`)",
              during.get("default/timeout") == 2 and during.get("default/overloaded") == 1
              and all(r.elapsed >= 0.15 for r in replies[:2]),
              f"scraped while stopped: {during}", f"answer times: {[round(r.elapsed * 1000) for r in replies]} ms")
        time.sleep(0.5)
        body, _ = fixtures.request_body(actives[1])
        reply = send(webhook, "/retention", body, label="store resumed (SIGCONT)")
        counted["answered/active-thanks"] += 1
        check("slow store: once PostgreSQL resumes, the same purchase gets its rule's answer again",
              reply.status == 200 and reply.json() == {"message": {"messageIdentifier": thanks}}, reply.said())

        # the server gone: each lookup fails
        stop_postgres(ctl, data)
        replies = []
        for request in actives[1:3]:
            body, _ = fixtures.request_body(request)
            replies.append(send(webhook, "/retention", body, label="store shut down", timeout=10))
        counted["default/slow"] += len(replies)
        check("failing store: with PostgreSQL shut down, verified requests get 200 with the default message within 700 ms "
              f"({', '.join(f'{r.elapsed * 1000:.0f} ms' for r in replies)})",
              all(r.status == 200 and r.json() == want and r.elapsed < APPLE_BUDGET for r in replies), *[r.said() for r in replies])
        scraped, series = scrape(admin)
        seen = retention_series(series)
        slow = sum(seen.get(f"default/{r}", 0) for r in ("timeout", "store_error", "overloaded"))
        check(f"slow store: the metrics count those {counted['default/slow']} answers as default with reason timeout, "
              "store_error or overloaded, and the healthy ones under the rule",
              slow == counted["default/slow"] and seen.get("answered/active-thanks") == counted["answered/active-thanks"]
              and seen.get("default/no_rule") == 0 and seen.get("default/unknown_purchase") == 0,
              f"scraped: {seen}", f"expected: {dict(counted)}")
        check("failing store: the shut-down server's answers are counted as `store_error` (reading: a lookup that fails "
              "at once is the store failing, not a timeout)",
              seen.get("default/store_error", 0) == 2, f"scraped: {seen}")
    finally:
        for pid in stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        child.terminate(timeout=15)
        stop_postgres(ctl, data)


def case_mixed_load(fixtures, rules, default_message, purchases, actives, port, expected_counts, key, statuses):
    """Retention requests while Apple's notifications (retries of those already committed, so
    nothing changes) keep the pipeline busy on the same listener."""
    prepared = [fixtures.request_body(actives[i % len(actives)][1]) for i in range(20)]
    notification_answers = []
    lock = threading.Lock()

    def notifications(lines):
        for line in lines:
            reply = send(port, "/notifications", line, label="notification retry")
            with lock:
                notification_answers.append(reply)

    senders = [threading.Thread(target=notifications, args=(fixtures.notifications[i::4],)) for i in range(4)]
    for sender in senders:
        sender.start()
    replies = []
    for body, payload in prepared:
        replies.append((send(port, "/retention", body, label="beside notifications"), payload))
        time.sleep(0.01)
    for sender in senders:
        sender.join(timeout=60)
    wrong = []
    for reply, payload in replies:
        statuses[reply.status] += 1
        problems, key_seen = judge_answer(reply, rules, default_message, payload, purchases.get(payload["originalTransactionId"]),
                                          key, fixtures.bundle_id)
        expected_counts["/".join(key_seen)] += 1
        if problems or reply.elapsed >= APPLE_BUDGET:
            wrong.append(f"{reply.said()}\n{problems}")
    dropped = [a for a in notification_answers if a.status != 200]
    slowest = max(r.elapsed for r, _ in replies)
    check(f"mixed load: 20 retention requests sent while {len(notification_answers)} notifications are re-posted on the same "
          f"listener are each answered 200 with their right answer within 700 ms (slowest {slowest * 1000:.0f} ms)",
          not wrong, *wrong[:3])
    check("mixed load: the notifications meanwhile are all answered 200 (retries dropped as duplicates)",
          not dropped, *[a.said() for a in dropped[:3]])


def case_concurrency(fixtures, rules, default_message, purchases, actives, yearlies, expireds, retries, refundeds, port,
                     expected_counts, key, statuses):
    # Apple's performance test sends many requests about one purchase; mix in the others too.
    bases = [actives[0]] * 25
    pool = [r for r in fixtures.requests if r[1]["originalTransactionId"] in purchases]
    while len(bases) < 50:
        bases.append(pool[len(bases) % len(pool)])
    prepared = [fixtures.request_body(base[1]) for base in bases]
    barrier = threading.Barrier(len(prepared))
    replies = [None] * len(prepared)

    def one(index):
        body, _ = prepared[index]
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
        try:
            conn.connect()
            barrier.wait(timeout=30)
            replies[index] = send(port, "/retention", body, label=f"concurrent #{index}", conn=conn)
        except Exception as error:  # noqa: BLE001
            replies[index] = Reply(f"concurrent #{index}", "POST", port, "/retention", None, None, b"", 0, repr(error))
        finally:
            conn.close()

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(prepared))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    wrong = []
    for (body, payload), reply in zip(prepared, replies):
        statuses[reply.status] += 1
        problems, key_seen = judge_answer(reply, rules, default_message, payload, purchases.get(payload["originalTransactionId"]),
                                          key, fixtures.bundle_id)
        expected_counts["/".join(key_seen)] += 1
        if problems:
            wrong.append((reply, problems))
    check(f"concurrency: {len(prepared)} verified requests sent at once are all answered 200 with their right answer",
          not wrong, *[f"{r.said()}\n{p}" for r, p in wrong[:4]], f"({len(wrong)} wrong)" if wrong else "")
    times = sorted(r.elapsed for r in replies if r.status is not None)
    if not times:
        check("concurrency: latency", False, "no answer at all")
        return
    p50 = times[len(times) // 2]
    p99 = times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]
    slow = [r for r in replies if r.status is None or r.elapsed >= APPLE_BUDGET]
    check(f"concurrency: each of the {len(prepared)} answered within Apple's 700 ms (p50 {p50 * 1000:.0f} ms, "
          f"p99 {p99 * 1000:.0f} ms, max {times[-1] * 1000:.0f} ms)", not slow, *[r.said() for r in slow[:4]])


def case_production(signet, root):
    """A Production pipeline: another app's request refused, offers signed V1, a non-default path;
    then the same store under Production+Sandbox: a purchase known under the other environment
    gets the default."""
    fixtures = FixtureSet(signet, os.path.join(root, "fixtures-production"),
                          ["--count", "40", "--environment", "Production", "--app-apple-id", "6450000123"])
    if not check("production: `signet fixtures --environment Production --app-apple-id 6450000123` writes signed requests "
                 "for that app", fixtures.ok and fixtures.app_apple_id == 6450000123
                 and all(p["environment"] == "Production" for _, p in fixtures.requests), fixtures.made.said()):
        return
    data_dir = os.path.join(root, "data-production")
    webhook, admin = free_port(), free_port()
    token = secrets.token_hex(16)
    key = OfferKey(root, "ACCEPTKEY2")
    ids = {name: message_id() for name in ("default", "sandbox", "v1", "thanks")}
    rules = [
        {"name": "sandbox-only", "when": {"environment": ["Sandbox"]}, "message": ids["sandbox"].upper()},
        {"name": "retry-v1", "when": {"state": ["billing_retry", "grace_period"]},
         "promotional_offer": {"message": ids["v1"].upper(), "offer": "winback.v1", "product": YEARLY}},
        {"name": "production-thanks", "when": {"environment": ["Production"]}, "message": ids["thanks"].upper()},
    ]
    default_message = ids["default"].upper()
    retention = retention_yaml("/apple/retention", default_message, rules, [
        "offer_signature: v1", f"key_id: {key.key_id}", f"issuer_id: {key.issuer_id}", f"private_key: {key.path}",
        f"bundle_id: {fixtures.bundle_id}"])

    def write(environments):
        nonlocal webhook, admin
        webhook, admin = free_port(), free_port()
        path = os.path.join(root, f"production-{len(environments)}.yaml")
        with open(path, "w", encoding="utf-8") as file:
            file.write(pipeline_yaml(data_dir, fixtures.root_pem, fixtures.bundle_id, environments, fixtures.app_apple_id,
                                     webhook, admin, retention))
        return path

    extra = {"SIGNET_DATA_DIR": data_dir, "SIGNET_API_TOKEN": token}
    child = signet.start(["run", "--pipeline", write(["Production"])], extra)
    expected = collections.Counter()
    refused = collections.Counter()
    try:
        if not check("production: `signet run` (Production, app_apple_id, offers V1 with the section's own key settings, "
                     "path /apple/retention) becomes ready", wait_ready(admin, child), child.said()):
            return
        answers = [send(webhook, "/notifications", line, label="notification") for line in fixtures.notifications]
        check("production: the fixture notifications are committed", all(a.status == 200 and (a.json() or {}).get("status")
              == "committed" for a in answers), *[a.said() for a in answers if a.status != 200][:2])
        purchases = {}
        for _, request in fixtures.requests:
            purchases[request["originalTransactionId"]], _ = read_purchase(admin, token, request["originalTransactionId"])
        wrong, v1_seen = [], 0
        for line, request in fixtures.requests:
            purchase = purchases[request["originalTransactionId"]]
            reply = send(webhook, "/apple/retention", line, label="realtime-requests.ndjson (Production)")
            problems, key_seen = judge_answer(reply, rules, default_message, request, purchase, key, fixtures.bundle_id, v1=True)
            expected["/".join(key_seen)] += 1
            v1_seen += key_seen == ("answered", "retry-v1") and not problems
            if problems:
                wrong.append((reply, problems, key_seen, purchase))
        check(f"production: every fixture request ({len(fixtures.requests)}) gets 200 with the first matching rule "
              "(`environment: [Sandbox]` never matches, `[Production]` does) or the default",
              not wrong, *[f"{r.said()}\nexpected {k} for {p}\n{pr}" for r, pr, k, p in wrong[:4]])
        check("production: billing-retry and grace-period purchases get promotionalOfferSignatureV1 (keyId, offerIdentifier, "
              "the rule's product, the purchase's appAccountToken lower case, a lower-case nonce, a timestamp in ms) whose "
              "encodedSignature verifies over Apple's U+2063-joined string",
              v1_seen >= 1 and not [w for w in wrong if w[2] == ("answered", "retry-v1")],
              f"{v1_seen} verified V1 offers", *[f"{r.said()}\n{pr}" for r, pr, k, _ in wrong if k == ("answered", "retry-v1")][:2])
        for line in fixtures.refused_lines:
            kind, reason = classify_refused(fixtures, line)
            reply = send(webhook, "/apple/retention", line, label=f"realtime-refused.ndjson: {kind}")
            if reason:
                refused[reason] += 1
            ok = no_retention_answer(reply) and (reply.status in (400, 403) if kind == "not_json" else reply.status == 403)
            check(f"production: realtime-refused.ndjson line `{kind}` gets no retention answer (403, or 400 for a body that "
                  "is not JSON)", ok and (reply.status != 403 or not reply.body), reply.said())
        for app in (1, fixtures.app_apple_id - 1):
            body, _ = fixtures.request_body(fixtures.requests[0][1], appAppleId=app)
            reply = send(webhook, "/apple/retention", body, label=f"appAppleId {app}")
            refused["app_apple_id_mismatch"] += 1
            check(f"production: a request Apple signed for another app (appAppleId {app}) gets 403 with no body: never an "
                  "answer for another app", reply.status == 403 and not reply.body, reply.said())
        reply = send(webhook, "/retention", fixtures.request_lines[0], label="the default path, not configured here")
        check("production: with `path: /apple/retention`, POST /retention is not a retention endpoint (404)",
              reply.status == 404 and no_retention_answer(reply), reply.said())

        # The key file replaced by something that is no key while running: whenever Signet reads it, an
        # offer it cannot sign must become the default message (signing_failed), never an error or a bad offer.
        retry = next(((l, r) for l, r in fixtures.requests if (purchases.get(r["originalTransactionId"]) or {}).get("state")
                      in ("billing_retry", "grace_period")), None)
        if retry is not None:
            with open(key.path, "rb") as file:
                saved = file.read()
            try:
                with open(key.path, "w", encoding="utf-8") as file:
                    file.write("-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n")
                body, payload = fixtures.request_body(retry[1])
                reply = send(webhook, "/apple/retention", body, label="key file no longer a key")
            finally:
                with open(key.path, "wb") as file:
                    file.write(saved)
            purchase = purchases[payload["originalTransactionId"]]
            problems, key_seen = judge_answer(reply, rules, default_message, payload, purchase, key, fixtures.bundle_id, v1=True)
            is_default = reply.status == 200 and reply.json() == {"message": {"messageIdentifier": default_message.lower()}}
            if is_default:
                expected["default/signing_failed"] += 1
            else:
                expected["/".join(key_seen)] += 1
            seen_as = "the default" if is_default else ("a valid offer" if not problems else "neither")
            check("production: with the key file no longer a key after start, an offer request gets 200 with either the offer "
                  f"(signed with the key read at start) or the default message (signing_failed), nothing else (seen: {seen_as})",
                  is_default or not problems, *problems, reply.said())
        scraped, series = scrape(admin)
        seen = retention_series(series)
        keys = [f"answered/{r['name']}" for r in rules] + ["default/no_rule", "default/unknown_purchase", "default/signing_failed"]
        mismatched = [f"{k}: expected {expected.get(k, 0)}, scraped {seen.get(k)}" for k in keys if seen.get(k) != expected.get(k, 0)]
        mismatched += [f"refused/{r}: expected {n}, scraped {seen.get('refused/' + r)}" for r, n in refused.items()
                       if seen.get("refused/" + r) != n]
        check("production: the metrics count the answers by rule and the refusals by reason "
              f"(refused/app_apple_id_mismatch = {refused['app_apple_id_mismatch']})", not mismatched, *mismatched, f"scraped: {seen}")
    finally:
        code = child.terminate()
    check("production: `signet run` stops cleanly on SIGTERM (exit 0)", code == 0, f"exit {code}", child.said())

    # The same store under Production and Sandbox: a Sandbox request about a Production purchase.
    other = None
    for line in fixtures.refused_lines:
        if classify_refused(fixtures, line)[0] == "other_environment":
            other = line
    if not check("both environments: realtime-refused.ndjson has the other environment's (Sandbox) request", other is not None):
        return
    child = signet.start(["run", "--pipeline", write(["Production", "Sandbox"])], extra)
    try:
        if not check("both environments: `signet run` on the same store with environment [Production, Sandbox] becomes ready",
                     wait_ready(admin, child), child.said()):
            return
        payload = jws_payload(parse_json(other)["signedPayload"])
        reply = send(webhook, "/apple/retention", other, label="Sandbox request for a Production purchase")
        known, _ = read_purchase(admin, token, payload["originalTransactionId"])
        problems, key_seen = judge_answer(reply, rules, default_message, payload, known)
        check("both environments: a verified Sandbox request about a purchase known only under Production gets 200 with the "
              "default message, not the `sandbox-only` rule", key_seen == ("default", "unknown_purchase") and not problems
              and known is not None and known["environment"] == "Production", *problems, f"stored purchase: {known}", reply.said())
        scraped, series = scrape(admin)
        seen = retention_series(series)
        check("both environments: it is counted as result=\"default\", reason=\"unknown_purchase\" (reading: \"knows under "
              "the other environment\" is the unknown-purchase case)",
              seen.get("default/unknown_purchase") == 1 and seen.get("answered/sandbox-only") == 0, f"scraped: {seen}")
    finally:
        code = child.terminate()
    check("both environments: `signet run` stops cleanly on SIGTERM (exit 0)", code == 0, f"exit {code}", child.said())


def case_misconfigurations(signet, root):
    fixtures_root = os.path.join(root, "fixtures-sandbox", "root.pem")
    root_pem = fixtures_root if os.path.exists(fixtures_root) else "apple"
    data_dir = os.path.join(root, "data-misconfigured")
    message = message_id().upper()
    good_rule = {"name": "thanks", "when": {"state": ["active"]}, "message": message}
    offer_rule = {"name": "offer", "when": {"state": ["billing_retry"]}, "promotional_offer": {"message": message, "offer": "o.1"}}
    variants = [
        ("retention with a stdin source", dict(source_type="stdin"), [good_rule], [], ["retention"], ["http"]),
        ("no verify stage", dict(verify=False), [good_rule], [], ["retention"], ["verify"]),
        ("store naming no state store", {}, [good_rule], ["store: nosuchstore"], ["retention"], ["nosuchstore"]),
        ("a rule with two answers (message and alternate_product)", {},
         [dict(good_rule, alternate_product={"message": message, "product": YEARLY})], [], [], ["thanks", "rules[0]"]),
        ("a rule with no answer", {}, [{"name": "mute", "when": {"state": ["active"]}}], [], [], ["mute", "rules[0]"]),
        ("two rules named alike", {}, [good_rule, dict(good_rule, message=message_id())], [], ["thanks"], []),
        ("a message id that is not a UUID (Apple's messageIdentifier is a uuid)", {},
         [dict(good_rule, message="welcome-back")], [], [], ["welcome-back", "rules[0]"]),
        ("the retention path equal to the notification path", {}, [good_rule], ["path: /notifications"], [], ["path"]),
        ("decision_timeout 1s, beyond Apple's 700 ms (signet components: 1ms...650ms)", {}, [good_rule],
         ["decision_timeout: 1s"], [], ["decision_timeout"]),
        ("an offer rule without the In-App Purchase key (SIGNET_APPSTORE_* unset)", {}, [offer_rule], [], [],
         ["key_id", "SIGNET_APPSTORE_KEY_ID"]),
    ]
    lint_missed, lint_total = [], 0
    for index, (label, options, rules, extra_lines, must_name, any_name) in enumerate(variants):
        retention = retention_yaml("/retention", message, rules, extra_lines)
        text = pipeline_yaml(data_dir, root_pem, "com.example.signet", ["Sandbox"], 1234567890, free_port(), None, retention,
                             **options)
        path = os.path.join(root, f"misconfigured-{index}.yaml")
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        lines = text.splitlines()
        start = next(i for i, l in enumerate(lines, 1) if l.startswith("retention:"))
        ran = signet.run(["run", "--pipeline", path], {"SIGNET_DATA_DIR": data_dir, "SIGNET_BUNDLE_ID": "com.example.signet"},
                         timeout=20)
        said = ran.err + ran.out
        located = [int(n) for n in re.findall(re.escape(path) + r":(\d+)", said)]
        names = all(n in said for n in must_name) and (not any_name or any(n in said for n in any_name))
        if "SIGNET_APPSTORE" in label:
            ok = ran.code == 2 and names
            wanted = "exit 2 naming the first missing key setting (key_id / SIGNET_APPSTORE_KEY_ID)"
        else:
            ok = ran.code == 2 and names and any(n >= start for n in located)
            wanted = (f"exit 2, an error at {os.path.basename(path)}:LINE within the retention section (line {start} on), "
                      f"naming {must_name + ([' or '.join(any_name)] if any_name else [])}")
        check(f"misconfiguration: {label}: `signet run` stops at start", ok, f"expected {wanted}", ran.said())
        if "SIGNET_APPSTORE" in label:
            continue
        linted = signet.run(["lint", path], {"SIGNET_DATA_DIR": data_dir}, timeout=30)
        said = linted.err + linted.out
        located = [int(n) for n in re.findall(re.escape(path) + r":(\d+)", said)]
        lint_total += 1
        if not (linted.code == 1 and any(n >= start for n in located)):
            lint_missed.append(f"{label}: `signet run` said: {ran.err.strip()[:300]}\n  {linted.said()}")
    check(f"misconfiguration: `signet lint` reports each of the {lint_total} files `signet run` refuses above (exit 1, "
          "FILE:LINE in the retention section) (reading: lint \"checks pipeline files without running them\", every key and "
          "every component, per its --help; a file lint calls ok should start)",
          not lint_missed, f"lint called {len(lint_missed)} of {lint_total} ok:", *lint_missed)
    # And the shipped example, once uncommented with a message id, is a valid file.
    text = shipped_webhook_with_retention()
    if text is not None:
        path = os.path.join(root, "webhook-with-retention-lint.yaml")
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        # docs/retention.md: the section needs the app Apple ID (SIGNET_APP_APPLE_ID), in Sandbox too.
        linted = signet.run(["lint", "--strict-env", path], {"SIGNET_BUNDLE_ID": "com.example.app", "SIGNET_APP_APPLE_ID": "1234567890",
                                                             "SIGNET_RETENTION_DEFAULT_MESSAGE": message_id()}, timeout=30)
        check("shipped: Pipelines/webhook.yaml with its `retention:` example uncommented lints clean",
              linted.code == 0, linted.said())


def shipped_webhook_with_retention():
    """Pipelines/webhook.yaml with its commented `retention:` example uncommented, or None."""
    shipped = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "Pipelines",
                           "webhook.yaml")
    if not os.path.exists(shipped):
        return None
    with open(shipped, encoding="utf-8") as file:
        text = file.read()
    block = re.search(r"^# retention:\n(?:#.*\n)+", text, re.M)
    if not block:
        return None
    uncommented = "\n".join(l[2:] if l.startswith("# ") else l for l in block.group(0).splitlines()) + "\n"
    return text.replace(block.group(0), uncommented)


def case_fixtures_env_alone(signet, root):
    """The shipped webhook pipeline with its retention example uncommented, set up the documented way
    (`source fixtures.env`, SIGNET_RETENTION_DEFAULT_MESSAGE), must not answer the fixtures' other-app
    request: realtime-refused.ndjson holds "requests to refuse", and Apple's rule is never to answer
    another app. fixtures.env sets no SIGNET_APP_APPLE_ID for a Sandbox set, so either the request is
    refused anyway or `signet run` must refuse a retention section that cannot tell apps apart."""
    fixtures = SHARED.get("sandbox")
    if fixtures is None:
        return
    text = shipped_webhook_with_retention()
    if not check("never another app's: Pipelines/webhook.yaml carries the commented `retention:` example", text is not None):
        return
    other_app = next((l for l in fixtures.refused_lines if classify_refused(fixtures, l)[0] == "other_app"), None)
    if other_app is None:
        return
    path = os.path.join(root, "webhook-with-retention.yaml")
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)
    webhook, admin = free_port(), free_port()
    env = dict(fixtures.env, SIGNET_DATA_DIR=os.path.join(root, "data-shipped"), SIGNET_HTTP_ADDRESS=f"127.0.0.1:{webhook}",
               SIGNET_ADMIN_ADDRESS=f"127.0.0.1:{admin}", SIGNET_RETENTION_DEFAULT_MESSAGE=message_id())
    setting = "set" if "SIGNET_APP_APPLE_ID" in fixtures.env else "not set"
    name = ("never another app's: Pipelines/webhook.yaml with its retention example uncommented and the settings of "
            f"`source fixtures.env` (SIGNET_APP_APPLE_ID {setting}) does not answer the fixtures' other-app request: 403, "
            "or `signet run` refuses to start (reading: `signet fixtures --help` makes fixtures.env for the default pipeline "
            "and realtime-refused.ndjson \"requests to refuse\"; the issue and Apple: never answer for another app)")
    child = signet.start(["run", "--pipeline", path], env)
    try:
        if not wait_ready(admin, child, timeout=30):
            code = child.terminate()
            check(name, code == 2, f"did not become ready; exit {code}", child.said())
            return
        reply = send(webhook, "/retention", other_app, label="realtime-refused.ndjson: other_app")
        check(name, reply.status == 403 and not reply.body, f"fixtures.env: {fixtures.env}", reply.said())
    finally:
        child.terminate()


# ----------------------------------------------------------------------------- main


def main():
    binary = signet_binary(sys.argv)
    if binary is None:
        return 2
    root = tempfile.mkdtemp(prefix="signet-retention-")
    signet = Signet(binary, root)

    arm_time_limit(TIME_LIMIT)
    started = time.monotonic()
    could_not_run = []
    try:
        for case in (case_components, case_sandbox, case_slow_store, case_fixtures_env_alone, case_production,
                     case_misconfigurations):
            try:
                case(signet, root)
            except OutOfTime:
                raise
            except CannotRun as error:
                could_not_run.append(f"{case.__name__} could read what it needs")
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
        for ctl, data in POSTGRES:
            try:
                stop_postgres(ctl, data)
            except (OSError, subprocess.SubprocessError):
                pass
        shutil.rmtree(root, ignore_errors=True)
    failed = [name for name, ok in RESULTS if not ok]
    print(f"# {len(RESULTS)} checks, {len(failed)} failed, {time.monotonic() - started:.1f} s", flush=True)
    if not RESULTS or (failed and set(failed) <= set(could_not_run)):
        return 2  # nothing but the environment failed: the script could not run
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
