#!/usr/bin/env python3
"""Acceptance tests for `POST /v1/offers/signature` on the entitlement API of `signet run`: offer
signatures for an app's backend, signed only when Signet's stored state makes the customer eligible.

    python3 Tests/Acceptance/offer_signature_api_acceptance.py .build/debug/signet

Written from the documentation only: docs/offers.md (Apple's rules for the promotional offer
signature V2 and V1 and for introductory offer eligibility, and the section "Signing for the app"),
docs/operations.md (the entitlement API, its token SIGNET_API_TOKEN, the `http:` section),
docs/webhook.md, docs/pipelines.md, docs/state-machine.md (what the states mean, consent
withdrawn), docs/retention.md (consent restrictions), README.md and the binary's `--help`
(`signet run`, `signet fixtures`, `signet offers sign`), not from Signet's sources. The harness
mechanics (starting `signet run` on free ports, `signet fixtures`' test PKI, re-signing with its
leaf key, the In-App Purchase key variables) follow Tests/Acceptance/retention_records_acceptance.py
and Tests/Acceptance/retention_endpoint_acceptance.py; every expectation comes from the docs.

Set-up: one `signet run` (a Sandbox webhook pipeline, SQLite store, `http:` listener with an API
token, a freshly generated P-256 In-App Purchase key passed as SIGNET_APPSTORE_KEY_ID /
ISSUER_ID / PRIVATE_KEY / BUNDLE_ID). The store is loaded by POSTing every `signet fixtures --now`
notification and notifications crafted and re-signed with the fixtures' PKI: customers (by
appAccountToken) with and without earlier subscriptions in a subscription group, purchases active,
in the grace period, in billing retry, expired, refunded, revoked, a consumable, and a customer whose
app transaction got a RESCIND_CONSENT. Each purchase's state is read back through
GET /v1/subscriptions/{id} and GET /v1/entitlements before anything is judged.

What it checks:

1. Eligibility, per docs/offers.md's table: `promotional` signed for active, grace_period and
   billing_retry purchases, else `not_subscribed`; `win_back` signed for expired ones, else
   `not_lapsed`; `introductory` signed unless one of the customer's auto-renewable purchases is of
   the product or of its subscription group (learned from purchases seen, or given as
   `subscriptionGroupIdentifier`), else `subscribed_before`; for every offer `unknown_purchase`,
   `refunded` (refunded or revoked) and `consent_restricted`. A refusal is
   `200 {"eligible": false, "reason", "detail"}` with no signature.
2. Every signature verified with Python's `cryptography` against the .p8's public key: the V2 and
   introductory JWS (header alg ES256, kid, typ JWT; claims iss, iat whole seconds now, aud, bid,
   a lower-case UUID nonce, productId, offerIdentifier / allowIntroductoryOffer true, transactionId;
   no exp, no other claim; R||S signature) and V1 (`signatureV1` with keyIdentifier, a lower-case
   nonce, a millisecond timestamp, the purchase's appAccountToken lower case, and a base64 DER
   signature over Apple's U+2063-joined message).
3. appAccountToken in UPPER case finds the same customer; a purchase whose transaction carries its
   token UPPER case is signed (V1) with it lower case; the same request sent again gives a new valid
   signature with a fresh nonce each time.
4. 400 for the malformed requests the docs list (missing keys, unknown offer, a token that is no
   UUID, v1 for introductory, not JSON, an empty body); 401 without or with a wrong token; 413 over
   16 KB (a 15 KB request is still answered).
5. A state change (EXPIRED for an active purchase) changes the answer: promotional refused,
   win_back signed.
6. A second `signet run` without SIGNET_APPSTORE_ISSUER_ID starts, and answers the endpoint
   `503 {"error"}` naming that variable.

Everything happens in a fresh temporary directory (no SIGNET_* variable of the caller's environment is
passed on), on 127.0.0.1 and free ports; every process started is stopped at the end. One line per
check, `ok - ...` or `FAIL - ...` (with indented `#` lines saying what was sent, expected and seen);
exit 1 when any check failed, 2 when the script could not run at all. Standard library plus Python's
`cryptography`.
"""

import base64
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
    clip, es256_verify, free_port, jws_payload, ndjson_lines, now_ms, parse_json, read_fixtures_env,
    signet_binary, stop, wait_until,
)

TIME_LIMIT = 88  # seconds: the whole script must finish within 90 s
PATH = "/v1/offers/signature"
FIXTURE_MONTHLY = "com.example.signet.premium.monthly"
# products of this script's own, so no fixture purchase muddles their subscription groups
GOLD_M = "com.example.signet.acceptance.gold.monthly"
GOLD_Y = "com.example.signet.acceptance.gold.yearly"
SILVER_M = "com.example.signet.acceptance.silver.monthly"
BRONZE_M = "com.example.signet.acceptance.bronze.monthly"  # never bought by anyone
GROUP_GOLD = "31000001"
GROUP_SILVER = "31000002"
GROUP_OTHER = "31000003"
DAY_MS = 86_400_000
UUID_LOWER = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
SEPARATOR = "\u2063"

# ----------------------------------------------------------------------------- reporting


def note(text):
    for line in str(text).rstrip().splitlines() or [""]:
        print("# " + line, flush=True)


def wait_past(instant_ms):
    while now_ms() <= instant_ms:
        time.sleep(0.002)


def article(word):
    return "an" if word[:1] in "aeiou" else "a"


def uuid_with_letters():
    """A random UUID with letters in it, so its UPPER and lower forms differ."""
    while True:
        value = str(uuid.uuid4())
        if sum(c.isalpha() for c in value) >= 8:
            return value


def new_id():
    return str(2_300_000_000_000_000 + secrets.randbelow(10 ** 14))


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
    """A long-running `signet run` whose output is collected."""

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
        sent = self.sent if len(self.sent) <= 400 else self.sent[:400] + f"... ({len(self.sent)} bytes)".encode()
        lines = [f"sent: {self.method} http://127.0.0.1:{self.port}{self.path} ({self.label}); body: {sent.decode('utf-8', 'replace')}"]
        if self.error:
            lines.append(f"seen: no answer ({self.error}) after {self.elapsed * 1000:.0f} ms")
        else:
            lines.append(f"seen: status {self.status}, Content-Type {self.header('Content-Type')}, {len(self.body)} body bytes")
            lines.append(f"body: {clip(self.body, 1200)}")
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
        conn.close()


def get(port, path, token):
    headers = {"Authorization": "Bearer " + token} if token else {}
    return send(port, path, method="GET", headers=headers, label="read")


# ----------------------------------------------------------------------------- fixtures and the pipeline


class Fixtures:
    """`signet fixtures --now`: the test PKI and signed notifications; templates to craft more."""

    def __init__(self, signet, folder):
        self.folder = folder
        self.made = signet.run(["fixtures", "--out", folder, "--now", "--count", "40"], {}, timeout=60)
        self.ok = self.made.code == 0 and all(os.path.exists(os.path.join(folder, n))
                                              for n in ("notifications.ndjson", "fixtures.env", "root.pem"))
        if not self.ok:
            return
        self.env = read_fixtures_env(folder)
        self.bundle_id = self.env.get("SIGNET_BUNDLE_ID", "com.example.signet")
        self.root_pem = os.path.join(folder, "root.pem")
        self.notifications = ndjson_lines(os.path.join(folder, "notifications.ndjson"))
        self.signer = Signer(folder, parse_json(self.notifications[0])["signedPayload"])
        self.purchases = {}  # otid -> latest transaction payload
        self.subscribed = None  # a SUBSCRIBED notification payload: the template for crafted ones
        self.rescind = None  # a RESCIND_CONSENT payload: the template for crafted ones
        for line in self.notifications:
            payload = jws_payload(parse_json(line)["signedPayload"])
            data = payload.get("data") or {}
            if payload.get("notificationType") == "RESCIND_CONSENT" and self.rescind is None:
                self.rescind = payload
            if "signedTransactionInfo" not in data:
                continue
            transaction = jws_payload(data["signedTransactionInfo"])
            if payload.get("notificationType") == "SUBSCRIBED" and "signedRenewalInfo" in data and self.subscribed is None:
                self.subscribed = {"payload": payload, "transaction": transaction,
                                   "renewal": jws_payload(data["signedRenewalInfo"])}
            self.purchases[str(transaction.get("originalTransactionId"))] = transaction

    def subscription(self, otid, product, group, token, app_transaction_id, state, signed_date):
        """A notification, signed now with the fixtures' PKI, of a purchase in `state` ("active":
        SUBSCRIBED/INITIAL_BUY, a period running for 29 more days; "expired": EXPIRED/VOLUNTARY, the
        period ended yesterday)."""
        transaction = dict(self.subscribed["transaction"])
        renewal = dict(self.subscribed["renewal"])
        if state == "active":
            purchase, expires = signed_date - DAY_MS, signed_date + 29 * DAY_MS
            kind, subtype, status = "SUBSCRIBED", "INITIAL_BUY", 1
            renewal.update({"autoRenewStatus": 1, "isInBillingRetryPeriod": False})
            renewal.pop("expirationIntent", None)
        else:
            purchase, expires = signed_date - 31 * DAY_MS, signed_date - DAY_MS
            kind, subtype, status = "EXPIRED", "VOLUNTARY", 2
            renewal.update({"autoRenewStatus": 0, "isInBillingRetryPeriod": False, "expirationIntent": 1})
        renewal.pop("gracePeriodExpiresDate", None)
        transaction.update({"transactionId": otid, "originalTransactionId": otid, "webOrderLineItemId": new_id(),
                            "productId": product, "subscriptionGroupIdentifier": group, "purchaseDate": purchase,
                            "originalPurchaseDate": purchase, "expiresDate": expires, "appAccountToken": token,
                            "appTransactionId": app_transaction_id, "signedDate": signed_date,
                            "transactionReason": "PURCHASE", "bundleId": self.bundle_id})
        for name in ("offerType", "offerIdentifier", "offerDiscountType", "offerPeriod", "revocationDate",
                     "revocationReason", "revocationType"):
            transaction.pop(name, None)
        renewal.update({"originalTransactionId": otid, "autoRenewProductId": product, "productId": product,
                        "signedDate": signed_date, "recentSubscriptionStartDate": purchase, "renewalDate": expires,
                        "appTransactionId": app_transaction_id, "appAccountToken": token})
        return self._notification(kind, subtype, status, transaction, renewal, signed_date)

    def expire(self, transaction, renewal, signed_date):
        """EXPIRED/VOLUNTARY for a purchase crafted active: its period now ends a second before."""
        transaction = dict(transaction, expiresDate=signed_date - 1000, signedDate=signed_date)
        renewal = dict(renewal, autoRenewStatus=0, expirationIntent=1, renewalDate=signed_date - 1000,
                       signedDate=signed_date)
        return self._notification("EXPIRED", "VOLUNTARY", 2, transaction, renewal, signed_date)

    def _notification(self, kind, subtype, status, transaction, renewal, signed_date):
        data = dict(self.subscribed["payload"]["data"])
        data.update({"bundleId": self.bundle_id, "status": status,
                     "signedTransactionInfo": self.signer.sign(transaction),
                     "signedRenewalInfo": self.signer.sign(renewal)})
        payload = {"notificationType": kind, "subtype": subtype, "notificationUUID": str(uuid.uuid4()), "data": data,
                   "version": "2.0", "signedDate": signed_date}
        return json.dumps({"signedPayload": self.signer.sign(payload)}), transaction, renewal

    def rescind_consent(self, app_transaction_id, signed_date):
        """RESCIND_CONSENT for this app transaction, shaped as the fixtures' own, signed now."""
        shape = json.loads(json.dumps(self.rescind))
        app_transaction = jws_payload(self.rescind["appData"]["signedAppTransactionInfo"])
        app_transaction.update({"appTransactionId": app_transaction_id, "bundleId": self.bundle_id,
                                "signedDate": signed_date, "receiptCreationDate": signed_date - 1000})
        shape.update({"notificationUUID": str(uuid.uuid4()), "signedDate": signed_date})
        shape["appData"]["bundleId"] = self.bundle_id
        shape["appData"]["signedAppTransactionInfo"] = self.signer.sign(app_transaction)
        return json.dumps({"signedPayload": self.signer.sign(shape)})


def pipeline_yaml(data_dir, fixtures, webhook_port, admin_port):
    return f"""\
description: offer signature API acceptance
stores:
  default:
    type: sqlite
    path: {data_dir}/signet.sqlite
source:
  type: http
  address: 127.0.0.1:{webhook_port}
  path: /notifications
stages:
  - type: decode
  - type: verify
    roots: {fixtures.root_pem}
    environment: [Sandbox]
    bundle_id: {fixtures.bundle_id}
  - type: dedupe
  - type: transition
    expiry_sweep: 0s
  - type: fanout
    default_sinks: [stdout]
sinks:
  stdout:
    type: stdout
dead_letter:
  type: file
  path: {data_dir}/dead-letter.ndjson
  format: json
http:
  address: 127.0.0.1:{admin_port}
"""


def wait_ready(admin_port, child, timeout=30):
    def ready():
        if not child.running():
            return True
        return send(admin_port, "/readyz", method="GET", headers={}, timeout=2).status == 200
    wait_until(ready, timeout, 0.1)
    return child.running() and send(admin_port, "/readyz", method="GET", headers={}, timeout=2).status == 200


class Service:
    """A running `signet run` with the webhook and the entitlement API."""

    def __init__(self, signet, root, name, fixtures, extra):
        self.data_dir = os.path.join(root, "data-" + name)
        os.makedirs(self.data_dir)
        self.webhook, self.admin = free_port(), free_port()
        pipeline = os.path.join(root, name + ".yaml")
        with open(pipeline, "w", encoding="utf-8") as file:
            file.write(pipeline_yaml(self.data_dir, fixtures, self.webhook, self.admin))
        self.token = extra.get("SIGNET_API_TOKEN")
        self.child = signet.start(["run", "--pipeline", pipeline], dict(extra, SIGNET_DATA_DIR=self.data_dir))
        self.ready = wait_ready(self.admin, self.child)

    def notify(self, line, label):
        reply = send(self.webhook, "/notifications", line, label=label)
        return reply, reply.status == 200 and (reply.json() or {}).get("status") == "committed"

    def purchase(self, otid):
        """(state stored, state evaluated now, restricted, appAccountToken, productId) or None."""
        snap = get(self.admin, f"/v1/subscriptions/{otid}", self.token)
        if snap.status == 404:
            return None
        ent = get(self.admin, f"/v1/entitlements?originalTransactionId={otid}", self.token)
        snapshot, entries = snap.json(), ent.json()
        if not isinstance(snapshot, dict) or not isinstance(entries, list) or not entries:
            raise CannotRun(f"could not read purchase {otid}:\n{snap.said()}\n{ent.said()}")
        entry = entries[0]
        return {"id": otid, "state": snapshot.get("state"), "now": entry.get("state"),
                "restricted": bool(entry.get("restricted")), "appAccountToken": snapshot.get("appAccountToken"),
                "productId": snapshot.get("productId"), "type": snapshot.get("productType") or entry.get("productType")}

    def by_token(self, token):
        reply = get(self.admin, f"/v1/entitlements?appAccountToken={token}", self.token)
        return reply, reply.json() if reply.status == 200 else None

    def ask(self, request, label="", token="default", raw=None, headers=None):
        auth = self.token if token == "default" else token
        body = raw if raw is not None else json.dumps(request)
        if headers is None:
            headers = {"Content-Type": "application/json"}
            if auth:
                headers["Authorization"] = "Bearer " + auth
        return send(self.admin, PATH, body, headers=headers, label=label or (request or {}).get("offer", "?"))


# ----------------------------------------------------------------------------- what the docs say


def content_type_json(reply):
    return (reply.header("Content-Type") or "").split(";")[0].strip().lower() == "application/json"


def refusal_problems(reply, reason):
    """`200 {"eligible": false, "reason", "detail"}` with `reason`, and nothing signed."""
    if reply.status != 200:
        return [f"expected 200 eligible:false ({reason}), got status {reply.status}"]
    body = reply.json()
    problems = [] if content_type_json(reply) else [f"Content-Type {reply.header('Content-Type')!r}, expected application/json"]
    if not isinstance(body, dict):
        return problems + ["the body is not a JSON object"]
    if body.get("eligible") is not False:
        problems.append(f"eligible is {body.get('eligible')!r}, expected false")
    if body.get("reason") != reason:
        problems.append(f"reason {body.get('reason')!r}, expected {reason!r}")
    if not (isinstance(body.get("detail"), str) and body["detail"].strip()):
        problems.append(f"detail {body.get('detail')!r} is not a non-empty string")
    if set(body) != {"eligible", "reason", "detail"}:
        problems.append(f"keys {sorted(body)}, expected exactly eligible, reason, detail (nothing signed)")
    return problems


def answer_problems(reply, request):
    """The common part of an eligible answer; returns (problems, body)."""
    if reply.status != 200:
        return [f"expected 200 eligible:true, got status {reply.status}"], None
    body = reply.json()
    problems = [] if content_type_json(reply) else [f"Content-Type {reply.header('Content-Type')!r}, expected application/json"]
    if not isinstance(body, dict):
        return problems + ["the body is not a JSON object"], None
    if body.get("eligible") is not True:
        problems.append(f"eligible is {body.get('eligible')!r}, expected true (reason {body.get('reason')!r})")
    # offer and productId always; offerIdentifier and originalTransactionId are marked "?" in the docs:
    # required (as the request's) for promotional and win_back, where both keys are required; for
    # introductory the docs do not say when they are present, so only a value that is there is judged
    for name in ("offer", "productId", "offerIdentifier", "originalTransactionId"):
        required = name in ("offer", "productId") or request.get("offer") in ("promotional", "win_back")
        if (required or name in body) and body.get(name) != request.get(name):
            problems.append(f"{name} {body.get(name)!r}, expected {request.get(name)!r} (the request's)")
    if not isinstance(body.get("detail"), str):
        problems.append(f"detail {body.get('detail')!r} is not a string")
    return problems, body


def jws_problems(jws, key, bundle_id, aud, feature):
    """Problems with a JWS against docs/offers.md (header, base claims, feature claims, no exp, no
    other claim, the signature), and its nonce."""
    try:
        head, payload, signature = jws.split(".")
        header, claims = json.loads(b64url_decode(head)), json.loads(b64url_decode(payload))
        raw = b64url_decode(signature)
    except Exception as error:  # noqa: BLE001
        return [f"not a compact JWS ({error!r}): {clip(repr(jws), 300)}"], None
    problems = []
    if not es256_verify(key.public, (head + "." + payload).encode(), raw):
        problems.append(f"the ES256 signature ({len(raw)} bytes, R||S expected) does not verify with the .p8's public key")
    if header.get("alg") != "ES256" or header.get("kid") != key.key_id or header.get("typ") != "JWT":
        problems.append(f"header {header}, expected alg ES256, kid {key.key_id}, typ JWT")
    want = {"iss": key.issuer_id, "aud": aud, "bid": bundle_id}
    want.update(feature)
    for name, value in want.items():
        seen = claims.get(name)
        if seen != value or type(seen) is not type(value):
            problems.append(f"claim {name} = {seen!r}, expected {value!r}")
    if "exp" in claims:
        problems.append(f"claim exp present ({claims['exp']!r}); Apple: don't include exp")
    extra = set(claims) - set(want) - {"iat", "nonce"}
    if extra:
        problems.append(f"claims beyond Apple's list: {sorted(extra)}")
    nonce = claims.get("nonce")
    if not (isinstance(nonce, str) and UUID_LOWER.match(nonce)):
        problems.append(f"nonce {nonce!r} is not a lower-case UUID")
    iat = claims.get("iat")
    if not (type(iat) is int and abs(iat - time.time()) < 300):
        problems.append(f"iat {iat!r} is not whole UNIX seconds within 5 minutes of now")
    return problems, nonce


def v2_problems(reply, request, key, bundle_id, transaction_id):
    """An eligible promotional/win_back answer with a V2 JWS naming `transaction_id`."""
    problems, body = answer_problems(reply, request)
    if body is None:
        return problems, None
    if "signatureV1" in body:
        problems.append("signatureV1 present in a v2 answer")
    jws = body.get("signature")
    if not isinstance(jws, str):
        return problems + [f"signature {jws!r} is not a JWS string"], None
    more, nonce = jws_problems(jws, key, bundle_id, "promotional-offer",
                               {"productId": request["productId"], "offerIdentifier": request["offerIdentifier"],
                                "transactionId": transaction_id})
    return problems + more, nonce


def intro_problems(reply, request, key, bundle_id, transaction_id):
    problems, body = answer_problems(reply, request)
    if body is None:
        return problems, None
    jws = body.get("signature")
    if not isinstance(jws, str):
        return problems + [f"signature {jws!r} is not a JWS string"], None
    more, nonce = jws_problems(jws, key, bundle_id, "introductory-offer-eligibility",
                               {"productId": request["productId"], "allowIntroductoryOffer": True,
                                "transactionId": transaction_id})
    return problems + more, nonce


def v1_problems(reply, request, key, bundle_id, account_token):
    """An eligible answer carrying `signatureV1` (docs/offers.md, "Signing for the app" and section 2)."""
    problems, body = answer_problems(reply, request)
    if body is None:
        return problems, None
    if "signature" in body:
        problems.append(f"a `signature` ({clip(repr(body['signature']), 80)}) beside signatureV1; the docs say signatureV1 "
                        "comes instead of it")
    v1 = body.get("signatureV1")
    if not isinstance(v1, dict):
        return problems + [f"signatureV1 {v1!r} is not an object"], None
    if set(v1) != {"keyIdentifier", "nonce", "timestamp", "signature", "appAccountToken"}:
        problems.append(f"signatureV1 keys {sorted(v1)}, expected keyIdentifier, nonce, timestamp, signature, appAccountToken")
    token = (account_token or "").lower()
    if v1.get("keyIdentifier") != key.key_id:
        problems.append(f"keyIdentifier {v1.get('keyIdentifier')!r}, expected {key.key_id!r}")
    if v1.get("appAccountToken") != token:
        problems.append(f"appAccountToken {v1.get('appAccountToken')!r}, expected the purchase's, lower case: {token!r}")
    nonce, stamp = v1.get("nonce"), v1.get("timestamp")
    if not (isinstance(nonce, str) and UUID_LOWER.match(nonce)):
        problems.append(f"nonce {nonce!r} is not a lower-case UUID")
    if not (type(stamp) is int and abs(stamp - time.time() * 1000) < 300_000):
        problems.append(f"timestamp {stamp!r} is not UNIX milliseconds within 5 minutes of now")
    try:
        der = base64.b64decode(v1.get("signature", ""), validate=True)
    except (ValueError, TypeError):
        return problems + [f"signature {v1.get('signature')!r} is not standard base64"], nonce
    message = SEPARATOR.join([bundle_id, key.key_id, request["productId"], request["offerIdentifier"], token,
                              str(nonce), str(stamp)]).encode("utf-8")
    try:
        key.public.verify(der, message, ec.ECDSA(hashes.SHA256()))
    except (InvalidSignature, ValueError):
        problems.append("signature does not verify (ECDSA P-256/SHA-256, DER) over appBundleId\u2063keyIdentifier\u2063"
                        "productIdentifier\u2063offerIdentifier\u2063appAccountToken\u2063nonce\u2063timestamp "
                        f"= {message!r}")
    return problems, nonce


def error_problems(reply, status):
    if reply.status != status:
        return [f"expected status {status}, got {reply.status}"]
    body = reply.json()
    if not (isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"].strip()):
        return [f"expected a JSON body {{\"error\": ...}}, got {clip(reply.body, 300)!r}"]
    if "signature" in body or "signatureV1" in body:
        return ["a signature in an error answer"]
    return []


# ----------------------------------------------------------------------------- the main case


def case_main(signet, root):
    fixtures = Fixtures(signet, os.path.join(root, "fixtures"))
    if not fixtures.ok or fixtures.subscribed is None or fixtures.rescind is None:
        raise CannotRun("`signet fixtures --now` did not write what is needed (a SUBSCRIBED and a RESCIND_CONSENT "
                        "notification):\n" + fixtures.made.said())
    key = OfferKey(root, "OFFERKEY42", file_prefix="SubscriptionKey")
    token = secrets.token_hex(16)
    extra = {"SIGNET_API_TOKEN": token, "SIGNET_APPSTORE_KEY_ID": key.key_id,
             "SIGNET_APPSTORE_ISSUER_ID": key.issuer_id, "SIGNET_APPSTORE_PRIVATE_KEY": key.path,
             "SIGNET_BUNDLE_ID": fixtures.bundle_id}
    service = Service(signet, root, "main", fixtures, extra)
    bundle = fixtures.bundle_id
    if not service.ready:
        raise CannotRun("`signet run` (webhook pipeline, SQLite, http: listener, In-App Purchase key) did not become "
                        "ready:\n" + service.child.said())

    # ------------------------------------------------------------------ load the store
    loaded = [service.notify(line, "fixture notification") for line in fixtures.notifications]
    check(f"setup: the {len(loaded)} `signet fixtures --now` notifications POSTed to the webhook are committed "
          "(or, for the types that carry no purchase, answered 200)",
          all(r.status == 200 for r, _ in loaded), *[r.said() for r, _ in loaded if r.status != 200][:3])

    t = {name: uuid_with_letters() for name in ("lapsed", "new", "gold_y", "silver", "restricted", "upper")}
    app = {name: new_id() for name in t}
    ids = {name: new_id() for name in ("lapsed", "gold_y", "silver", "restricted_active", "restricted_expired", "upper")}
    signed = now_ms()
    crafted = [  # name, otid, product, group, token, app transaction, state
        ("lapsed", ids["lapsed"], GOLD_M, GROUP_GOLD, t["lapsed"], app["lapsed"], "expired"),
        ("gold_y", ids["gold_y"], GOLD_Y, GROUP_GOLD, t["gold_y"], app["gold_y"], "active"),
        ("silver", ids["silver"], SILVER_M, GROUP_SILVER, t["silver"], app["silver"], "active"),
        ("restricted_active", ids["restricted_active"], GOLD_M, GROUP_GOLD, t["restricted"], app["restricted"], "active"),
        ("restricted_expired", ids["restricted_expired"], SILVER_M, GROUP_SILVER, t["restricted"], app["restricted"],
         "expired"),
        # the transaction carries its appAccountToken UPPER case
        ("upper", ids["upper"], GOLD_M, GROUP_GOLD, t["upper"].upper(), app["upper"], "active"),
    ]
    made = {}
    sent = []
    for name, otid, product, group, account, app_tx, state in crafted:
        line, transaction, renewal = fixtures.subscription(otid, product, group, account, app_tx, state, signed)
        made[name] = (transaction, renewal)
        sent.append((name, service.notify(line, f"crafted {state} {product}")))
    wait_past(signed + 5)
    rescind_reply, rescind_ok = service.notify(fixtures.rescind_consent(app["restricted"], now_ms()), "RESCIND_CONSENT")
    check("setup: crafted notifications re-signed with the fixtures' PKI (SUBSCRIBED/INITIAL_BUY and EXPIRED/VOLUNTARY of "
          "this script's products, a RESCIND_CONSENT for one customer's app transaction) are committed",
          all(ok for _, (_, ok) in sent) and rescind_ok,
          *[r.said() for _, (r, ok) in sent if not ok][:3], "" if rescind_ok else rescind_reply.said())

    # ------------------------------------------------------------------ read every purchase back
    by_state = {}
    fixture_states = {}
    for otid, transaction in fixtures.purchases.items():
        purchase = service.purchase(otid)
        if purchase is None:
            continue
        fixture_states[otid] = purchase
        if purchase["restricted"] or purchase["state"] != purchase["now"]:
            continue
        kind = purchase["state"]
        if kind in ("active", "grace_period", "billing_retry", "expired") and transaction.get("type") != "Auto-Renewable Subscription":
            continue
        by_state.setdefault(kind, []).append(purchase)
    need = ("active", "grace_period", "billing_retry", "expired", "refunded", "revoked")
    missing = [s for s in need if not by_state.get(s)]
    summary = {s: len(v) for s, v in sorted(by_state.items())}
    if not check("setup: read back through GET /v1/subscriptions/{id} and /v1/entitlements, the fixture purchases include "
                 "unrestricted auto-renewable ones in each state active, grace_period, billing_retry, expired, refunded, "
                 "revoked (stored state = state now)", not missing, f"missing: {missing}", f"by state: {summary}"):
        raise CannotRun(f"the fixtures hold no purchase in state(s) {missing}")
    mine = {name: service.purchase(otid) for name, otid in ids.items()}
    want_states = {"lapsed": ("expired", False), "gold_y": ("active", False), "silver": ("active", False),
                   "restricted_active": ("active", True), "restricted_expired": ("expired", True),
                   "upper": ("active", False)}
    wrong = {name: mine[name] for name, (state, restricted) in want_states.items()
             if not mine[name] or mine[name]["state"] != state or mine[name]["now"] != state
             or mine[name]["restricted"] != restricted}
    if not check("setup: the crafted purchases read back as intended: expired, active, active, active + restricted: true, "
                 "expired + restricted: true (RESCIND_CONSENT in force), active", not wrong,
                 f"differ: {json.dumps(wrong)}"):
        raise CannotRun("the crafted purchases are not in the states the checks need")
    reply, listed = service.by_token(t["lapsed"])
    check("setup: GET /v1/entitlements?appAccountToken=<the lapsed customer's> lists exactly its one expired purchase",
          isinstance(listed, list) and [e.get("originalTransactionId") for e in listed] == [ids["lapsed"]], reply.said())
    consumable = next((p for otid, p in fixture_states.items()
                       if fixtures.purchases[otid].get("type") == "Consumable" and p["state"] == "consumed"
                       and not p["restricted"]), None)
    consumable_token = consumable and (fixtures.purchases[consumable["id"]].get("appAccountToken") or "")
    if consumable_token:
        reply, listed = service.by_token(consumable_token)
        if not (isinstance(listed, list) and len(listed) == 1):
            consumable = None

    active, grace, retry = by_state["active"][0], by_state["grace_period"][0], by_state["billing_retry"][0]
    expired, refunded, revoked = by_state["expired"][0], by_state["refunded"][0], by_state["revoked"][0]

    def promo(purchase, offer="promotional", product=None, offer_id="stay.50", signature=None):
        request = {"offer": offer, "productId": product or purchase["productId"], "offerIdentifier": offer_id,
                   "originalTransactionId": purchase["id"]}
        if signature:
            request["signature"] = signature
        return request

    def judge_v2(label, request, purchase):
        reply = service.ask(request, label)
        problems, nonce = v2_problems(reply, request, key, bundle, purchase["id"])
        check(label, not problems, *problems, reply.said())
        return nonce

    def judge_v1(label, request, account_token):
        reply = service.ask(request, label)
        problems, nonce = v1_problems(reply, request, key, bundle, account_token)
        check(label, not problems, *problems, reply.said())
        return nonce

    def judge_refused(label, request, reason):
        reply = service.ask(request, label)
        problems = refusal_problems(reply, reason)
        check(label, not problems, *problems, reply.said())

    def judge_intro(label, request, transaction_id):
        reply = service.ask(request, label)
        problems, nonce = intro_problems(reply, request, key, bundle, transaction_id)
        check(label, not problems, *problems, reply.said())
        return nonce

    # ------------------------------------------------------------------ promotional
    for purchase in (active, grace, retry):
        judge_v2(f"promotional: {article(purchase['state'])} {purchase['state']} purchase ({purchase['id']}) is signed: a V2 JWS verified with the "
                 ".p8's public key (alg ES256, kid, typ JWT; iss, iat now, aud promotional-offer, bid, lower-case UUID "
                 "nonce, productId, offerIdentifier, transactionId = the originalTransactionId; no exp, no other claim)",
                 promo(purchase), purchase)
    judge_v2("promotional: the offer may be for another product than the purchase's (an upgrade offer): the JWS names "
             "the request's productId", promo(mine["gold_y"], product=GOLD_M, offer_id="gold.upgrade.20"), mine["gold_y"])
    judge_v1("promotional, signature v1: an active purchase gets signatureV1 {keyIdentifier, nonce lower case, timestamp "
             "ms now, signature, appAccountToken = the purchase's} whose DER signature verifies over Apple's U+2063-joined "
             "message", promo(active, signature="v1"), active["appAccountToken"])
    judge_v2("promotional, signature v2 given explicitly: the JWS as by default", promo(grace, signature="v2"), grace)
    for purchase in (expired, mine["lapsed"]):
        judge_refused(f"promotional: an expired purchase ({purchase['id']}) is refused: 200 eligible false, reason "
                      "not_subscribed, a detail, no signature", promo(purchase), "not_subscribed")
    for purchase in (refunded, revoked):
        judge_refused(f"promotional: a {purchase['state']} purchase is refused with reason refunded",
                      promo(purchase), "refunded")
    judge_refused("promotional: an originalTransactionId Signet does not know is refused with reason unknown_purchase",
                  promo({"id": new_id(), "productId": FIXTURE_MONTHLY}), "unknown_purchase")
    judge_refused("promotional: an active purchase whose app transaction got a RESCIND_CONSENT (restricted: true) is "
                  "refused with reason consent_restricted", promo(mine["restricted_active"]), "consent_restricted")
    judge_refused("promotional, signature v1: refused the same way (unknown_purchase), nothing signed",
                  promo({"id": new_id(), "productId": FIXTURE_MONTHLY}, signature="v1"), "unknown_purchase")

    # ------------------------------------------------------------------ win_back
    for purchase in (expired, mine["lapsed"]):
        judge_v2(f"win_back: an expired purchase ({purchase['id']}) is signed: a verified V2 JWS (aud promotional-offer, "
                 "transactionId = the originalTransactionId)", promo(purchase, "win_back", offer_id="come.back.3m"), purchase)
    judge_v1("win_back, signature v1: an expired purchase gets a verified signatureV1 with its appAccountToken lower case",
             promo(mine["lapsed"], "win_back", offer_id="come.back.3m", signature="v1"), t["lapsed"])
    for purchase in (active, grace, retry):
        judge_refused(f"win_back: {article(purchase['state'])} {purchase['state']} purchase is refused with reason not_lapsed",
                      promo(purchase, "win_back", offer_id="come.back.3m"), "not_lapsed")
    for purchase in (refunded, revoked):
        judge_refused(f"win_back: a {purchase['state']} purchase is refused with reason refunded",
                      promo(purchase, "win_back", offer_id="come.back.3m"), "refunded")
    judge_refused("win_back: an unknown originalTransactionId is refused with reason unknown_purchase",
                  promo({"id": new_id(), "productId": FIXTURE_MONTHLY}, "win_back"), "unknown_purchase")
    judge_refused("win_back: an expired purchase whose app transaction got a RESCIND_CONSENT is refused with reason "
                  "consent_restricted", promo(mine["restricted_expired"], "win_back"), "consent_restricted")

    # ------------------------------------------------------------------ introductory
    def intro(product, account=None, otid=None, transaction_id=None, group=None):
        request = {"offer": "introductory", "productId": product}
        for name, value in (("appAccountToken", account), ("originalTransactionId", otid),
                            ("transactionId", transaction_id), ("subscriptionGroupIdentifier", group)):
            if value is not None:
                request[name] = value
        return request

    lapsed_tx = ids["lapsed"]
    judge_refused("introductory: a customer (appAccountToken) with an expired purchase of the product is refused with "
                  "reason subscribed_before", intro(GOLD_M, t["lapsed"], transaction_id=lapsed_tx), "subscribed_before")
    # docs/offers.md: without subscriptionGroupIdentifier Signet knows a product's group only from the
    # customer's own purchases of it, and refuses a customer with earlier subscriptions rather than guess.
    judge_refused("introductory: ... and for another product of the same subscription group, the group not given: "
                  "subscription_group_unknown", intro(GOLD_Y, t["lapsed"], transaction_id=lapsed_tx),
                  "subscription_group_unknown")
    judge_refused("introductory: ... and for another product of the same subscription group, the group given: "
                  "subscribed_before", intro(GOLD_Y, t["lapsed"], transaction_id=lapsed_tx, group=GROUP_GOLD),
                  "subscribed_before")
    judge_refused("introductory: the customer's appAccountToken in UPPER case finds the same customer: subscribed_before",
                  intro(GOLD_M, t["lapsed"].upper(), transaction_id=lapsed_tx), "subscribed_before")
    judge_intro("introductory: the same customer, a product of another subscription group: signed, a JWS verified with "
                "the .p8's public key (alg ES256, kid, typ JWT; aud introductory-offer-eligibility, bid, productId, "
                "allowIntroductoryOffer true, transactionId as given; lower-case nonce; no exp, no other claim)",
                intro(SILVER_M, t["lapsed"], transaction_id=lapsed_tx, group=GROUP_OTHER), lapsed_tx)
    judge_intro("introductory: the token in UPPER case, another group: signed as well",
                intro(SILVER_M, t["lapsed"].upper(), transaction_id=lapsed_tx, group=GROUP_OTHER), lapsed_tx)
    judge_refused("introductory: a product Signet never saw bought, with subscriptionGroupIdentifier = the group of the "
                  "customer's earlier subscription: subscribed_before",
                  intro(BRONZE_M, t["lapsed"], transaction_id=lapsed_tx, group=GROUP_GOLD), "subscribed_before")
    judge_intro("introductory: that product with subscriptionGroupIdentifier of a group the customer never subscribed "
                "in: signed", intro(BRONZE_M, t["lapsed"], transaction_id=lapsed_tx, group=GROUP_OTHER), lapsed_tx)
    judge_refused("introductory: that product without subscriptionGroupIdentifier (no group known, never bought), for a "
                  "customer with an earlier subscription: subscription_group_unknown",
                  intro(BRONZE_M, t["lapsed"], transaction_id=lapsed_tx), "subscription_group_unknown")
    app_new = app["new"]
    judge_intro("introductory: a customer with no purchase at all (an appAccountToken Signet has never seen), "
                "transactionId = the appTransactionId: signed, transactionId as given",
                intro(GOLD_M, t["new"], transaction_id=app_new), app_new)
    judge_intro("introductory: the same new customer, token in UPPER case: signed",
                intro(GOLD_Y, t["new"].upper(), transaction_id=app_new), app_new)
    judge_intro("introductory: by originalTransactionId only (an active GOLD yearly purchase), a product of another "
                "group: signed, the JWS's transactionId defaulting to the originalTransactionId",
                intro(SILVER_M, otid=ids["gold_y"], group=GROUP_OTHER), ids["gold_y"])
    judge_refused("introductory: by originalTransactionId only, another product of the purchase's subscription group: "
                  "subscribed_before", intro(GOLD_M, otid=ids["gold_y"], group=GROUP_GOLD), "subscribed_before")
    judge_refused("introductory: the same without the group: subscription_group_unknown", intro(GOLD_M, otid=ids["gold_y"]),
                  "subscription_group_unknown")
    judge_intro("introductory: appAccountToken, originalTransactionId and an explicit transactionId: the JWS names the "
                "transactionId given", intro(BRONZE_M, t["gold_y"], ids["gold_y"], app["gold_y"], group=GROUP_OTHER), app["gold_y"])
    judge_refused("introductory: a purchase whose transaction carries its appAccountToken UPPER case is found by the "
                  "token in lower case: subscribed_before for its product",
                  intro(GOLD_M, t["upper"], transaction_id=ids["upper"]), "subscribed_before")
    judge_refused("introductory: a customer whose app transaction got a RESCIND_CONSENT is refused with reason "
                  "consent_restricted (a product of a group never subscribed in)",
                  intro(BRONZE_M, t["restricted"], transaction_id=app["restricted"], group=GROUP_OTHER), "consent_restricted")
    judge_refused("introductory: by originalTransactionId only, an active purchase whose app transaction got a "
                  "RESCIND_CONSENT is refused with reason consent_restricted",
                  intro(BRONZE_M, otid=ids["restricted_active"], group=GROUP_OTHER), "consent_restricted")
    judge_refused("introductory: an originalTransactionId Signet does not know is refused with reason unknown_purchase",
                  intro(SILVER_M, otid=new_id()), "unknown_purchase")
    judge_refused("introductory: a refunded purchase's originalTransactionId (a product of another group) is refused with "
                  "reason refunded", intro(SILVER_M, otid=refunded["id"]), "refunded")
    if consumable:
        judge_intro("introductory: a customer whose only purchase is a consumable (no auto-renewable purchase) is signed",
                    intro(GOLD_M, consumable_token, transaction_id=consumable["id"]), consumable["id"])
    else:
        note("introductory with a consumable-only customer: skipped (the fixtures hold no such customer)")

    # ------------------------------------------------------------------ UPPER-case token in the purchase, V1
    judge_v1("promotional, signature v1: a purchase whose transaction carries its appAccountToken UPPER case is signed "
             "with the token lower case (in the answer and in the signed message)",
             promo(mine["upper"], signature="v1"), t["upper"])

    # ------------------------------------------------------------------ retries: a fresh nonce each time
    nonces = [judge_v2(f"retry: the same promotional request, attempt {n}, gets a valid V2 signature", promo(active), active)
              for n in (1, 2, 3)]
    check("retry: three identical promotional requests get three different nonces (fresh per signature)",
          None not in nonces and len(set(nonces)) == 3, f"nonces: {nonces}")
    nonces = [judge_v1(f"retry: the same v1 request, attempt {n}, gets a valid signatureV1",
                       promo(mine["lapsed"], "win_back", offer_id="come.back.3m", signature="v1"), t["lapsed"])
              for n in (1, 2, 3)]
    check("retry: three identical v1 requests get three different nonces", None not in nonces and len(set(nonces)) == 3,
          f"nonces: {nonces}")
    nonces = [judge_intro(f"retry: the same introductory request, attempt {n}, gets a valid JWS",
                          intro(GOLD_M, t["new"], transaction_id=app_new), app_new) for n in (1, 2)]
    check("retry: two identical introductory requests get two different nonces", None not in nonces and len(set(nonces)) == 2,
          f"nonces: {nonces}")

    # ------------------------------------------------------------------ malformed requests
    base = promo(active)
    malformed = [
        ("no `offer`", {k: v for k, v in base.items() if k != "offer"}),
        ("no `productId`", {k: v for k, v in base.items() if k != "productId"}),
        ("promotional without `offerIdentifier`", {k: v for k, v in base.items() if k != "offerIdentifier"}),
        ("promotional without `originalTransactionId`", {k: v for k, v in base.items() if k != "originalTransactionId"}),
        ("win_back without `originalTransactionId`",
         {k: v for k, v in promo(expired, "win_back").items() if k != "originalTransactionId"}),
        ("win_back without `offerIdentifier`",
         {k: v for k, v in promo(expired, "win_back").items() if k != "offerIdentifier"}),
        ("an unknown offer (`discount`)", dict(base, offer="discount")),
        ("an appAccountToken that is no UUID", intro(SILVER_M, "not-a-uuid", transaction_id=lapsed_tx)),
        ("an appAccountToken that is almost a UUID (one digit short)",
         intro(SILVER_M, t["lapsed"][:-1], transaction_id=lapsed_tx)),
        ("`signature: v1` for an introductory offer", dict(intro(SILVER_M, t["lapsed"], transaction_id=lapsed_tx),
                                                           signature="v1")),
    ]
    for label, request in malformed:
        reply = service.ask(request, label)
        problems = error_problems(reply, 400)
        check(f"400: {label} is answered 400 {{\"error\"}} and nothing signed", not problems, *problems, reply.said())
    for label, raw in (("a body that is not JSON", "offer=promotional&productId=x"), ("an empty body", ""),
                       ("a JSON array", json.dumps([base])), ("truncated JSON", json.dumps(base)[:-3])):
        reply = service.ask(None, label, raw=raw)
        problems = error_problems(reply, 400)
        check(f"400: {label} is answered 400 {{\"error\"}}", not problems, *problems, reply.said())

    # ------------------------------------------------------------------ token and size
    reply = service.ask(base, "no Authorization header", token=None)
    check("401: a request without the bearer token (one being configured) gets 401 with WWW-Authenticate: Bearer and "
          "no signature", reply.status == 401 and (reply.header("WWW-Authenticate") or "").startswith("Bearer")
          and b"eyJ" not in reply.body, reply.said())
    reply = service.ask(base, "wrong token", token=token + "x")
    check("401: a request with a wrong bearer token gets 401 and no signature",
          reply.status == 401 and b"eyJ" not in reply.body, reply.said())
    reply = service.ask(base, "Basic auth", headers={"Content-Type": "application/json",
                                                     "Authorization": "Basic " + base64.b64encode(token.encode()).decode()})
    check("401: the token sent as Basic instead of Bearer gets 401", reply.status == 401, reply.said())
    padded = json.dumps(base)[:-1] + " " * 15_000 + "}"
    reply = service.ask(None, "15 KB request (whitespace padding)", raw=padded)
    problems, _ = v2_problems(reply, base, key, bundle, active["id"])
    check("size: a valid request padded with whitespace to 15 KB (under 16 KB) is answered as usual (signed)",
          not problems, *problems, reply.said())
    big = json.dumps(base)[:-1] + " " * 20_000 + "}"
    reply = service.ask(None, "20 KB request", raw=big)
    check("413: a request body over 16 KB (20 KB) gets 413 and no signature",
          reply.status == 413 and b"eyJ" not in reply.body, reply.said())
    big = json.dumps(dict(base, pad="x" * 17_000))
    reply = service.ask(None, "17 KB request", raw=big)
    check("413: a 17 KB request body gets 413", reply.status == 413, reply.said())

    # ------------------------------------------------------------------ a state change changes the answer
    silver = mine["silver"]
    judge_v2("state change: before, the active SILVER purchase is signed for promotional", promo(silver), silver)
    judge_refused("state change: before, win_back for it is refused (not_lapsed)", promo(silver, "win_back"), "not_lapsed")
    transaction, renewal = made["silver"]
    wait_past(max(transaction["signedDate"], now_ms()) + 5)
    line, _, _ = fixtures.expire(transaction, renewal, now_ms())
    reply, ok = service.notify(line, "EXPIRED/VOLUNTARY for the active SILVER purchase")
    after = service.purchase(silver["id"])
    if check("state change: an EXPIRED/VOLUNTARY notification for it is committed and GET /v1/subscriptions then says "
             "expired", ok and after and after["state"] == "expired", reply.said(), f"read back: {after}"):
        judge_refused("state change: after EXPIRED, promotional for the same purchase is refused (not_subscribed)",
                      promo(silver), "not_subscribed")
        judge_v2("state change: after EXPIRED, win_back for the same purchase is signed", promo(silver, "win_back"), silver)
        judge_v1("state change: after EXPIRED, win_back v1 for it is signed with its appAccountToken",
                 promo(silver, "win_back", signature="v1"), t["silver"])

    # ------------------------------------------------------------------ what is left undocumented, for the report
    for label, request in (("introductory with appAccountToken only, no transactionId, no originalTransactionId "
                            "(a new customer)", intro(SILVER_M, str(uuid.uuid4()))),
                           ("introductory with neither appAccountToken nor originalTransactionId",
                            intro(SILVER_M, transaction_id=app_new))):
        reply = service.ask(request, label)
        note(f"undocumented: {label}: status {reply.status}, body {clip(reply.body, 300)!r}")
    request = intro(SILVER_M, t["gold_y"], ids["gold_y"])
    reply = service.ask(request, "introductory answer's keys")
    body = reply.json() if reply.status == 200 else None
    note(f"undocumented: the keys of an eligible introductory answer (request with appAccountToken and "
         f"originalTransactionId): {sorted(body) if isinstance(body, dict) else reply.status}")

    code = service.child.terminate()
    check("the main `signet run` stops on SIGTERM with exit 0", code == 0, f"exit {code}", service.child.said())


# ----------------------------------------------------------------------------- without the key


def case_no_key(signet, root):
    fixtures = Fixtures(signet, os.path.join(root, "fixtures-nokey"))
    if not fixtures.ok or fixtures.subscribed is None:
        raise CannotRun("`signet fixtures --now` failed:\n" + fixtures.made.said())
    key = OfferKey(root, "NOISSUER01", file_prefix="SubscriptionKey")
    token = secrets.token_hex(16)
    extra = {"SIGNET_API_TOKEN": token, "SIGNET_APPSTORE_KEY_ID": key.key_id, "SIGNET_APPSTORE_PRIVATE_KEY": key.path,
             "SIGNET_BUNDLE_ID": fixtures.bundle_id}  # SIGNET_APPSTORE_ISSUER_ID left out
    service = Service(signet, root, "nokey", fixtures, extra)
    try:
        if not check("no key: `signet run` without SIGNET_APPSTORE_ISSUER_ID (the other key variables set) starts and "
                     "becomes ready (the key is needed only by this endpoint)", service.ready, service.child.said()):
            return
        otid = new_id()
        line, _, _ = fixtures.subscription(otid, GOLD_M, GROUP_GOLD, str(uuid.uuid4()), new_id(), "active", now_ms())
        reply, ok = service.notify(line, "an active purchase")
        purchase = service.purchase(otid) if ok else None
        check("no key: an active purchase is committed and reads back active", purchase and purchase["state"] == "active",
              reply.said(), f"read back: {purchase}")
        request = {"offer": "promotional", "productId": GOLD_M, "offerIdentifier": "stay.50", "originalTransactionId": otid}
        reply = service.ask(request, "promotional without the key")
        problems = error_problems(reply, 503)
        error = (reply.json() or {}).get("error", "") if isinstance(reply.json(), dict) else ""
        if not problems and "SIGNET_APPSTORE_ISSUER_ID" not in error:
            problems.append(f"the error does not name the missing variable SIGNET_APPSTORE_ISSUER_ID: {error!r}")
        check("no key: POST /v1/offers/signature for an eligible purchase answers 503 {\"error\"} naming "
              "SIGNET_APPSTORE_ISSUER_ID, nothing signed", not problems, *problems, reply.said())
        request = {"offer": "introductory", "productId": SILVER_M, "appAccountToken": str(uuid.uuid4()),
                   "transactionId": new_id()}
        reply = service.ask(request, "introductory without the key")
        problems = error_problems(reply, 503)
        check("no key: an introductory request answers 503 {\"error\"} as well", not problems, *problems, reply.said())
        reply = get(service.admin, f"/v1/subscriptions/{otid}", token)
        check("no key: the rest of the entitlement API still answers (GET /v1/subscriptions/{id}: 200)",
              reply.status == 200, reply.said())
    finally:
        service.child.terminate()


# ----------------------------------------------------------------------------- main


def main():
    binary = signet_binary(sys.argv)
    if binary is None:
        return 2
    root = tempfile.mkdtemp(prefix="signet-offer-signature-")
    signet = Signet(binary, root)

    arm_time_limit(TIME_LIMIT)
    started = time.monotonic()
    could_not_run = []
    try:
        for case in (case_main, case_no_key):
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
