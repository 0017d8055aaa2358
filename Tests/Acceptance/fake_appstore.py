"""A fake App Store answering the support console's calls, and the set-up both the console's browser
tests (console_browser_acceptance.py) and the console demo (scripts/console-demo.py) build on:
`signet fixtures` in Production with its test PKI (`Fixtures`, which also crafts signed
notifications of any purchase), named console credentials (`make_credential`), a webhook pipeline
with a `console:` section (`PIPELINE`), `signet run`'s environment pointing the In-App Purchase key
variables at the fake (`console_run_env`), and POSTing a notification as Apple does
(`send_notification`).

Only mechanics live here: what to expect of the console stays in the browser tests.
"""

import http.client
import json
import os
import re
import secrets
import sys
import urllib.parse
import uuid

from harness import (
    CannotRun, FakeAppleServer, Signer, apple_jwt_problem, clip, jws_payload, ndjson_lines, parse_json,
    read_fixtures_env,
)

APP_APPLE_ID = 1234567890
DAY_MS = 86_400_000
UUID_LOWER = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def new_id():
    """A fresh Apple-like transaction id (16 digits)."""
    return str(2_300_000_000_000_000 + secrets.randbelow(10 ** 14))


def lettered_uuid():
    """A UUID with at least 8 letters (so an UPPER case copy differs from it)."""
    while True:
        value = str(uuid.uuid4())
        if sum(c.isalpha() for c in value) >= 8:
            return value


# ----------------------------------------------------------------------------- HTTP replies


class Reply:
    def __init__(self, method, path, status, headers, body, error=None, sent=b""):
        self.method, self.path, self.status, self.headers, self.body, self.error, self.sent = \
            method, path, status, headers or [], body, error, sent

    def header(self, name):
        for key, value in self.headers:
            if key.lower() == name.lower():
                return value
        return None

    def all(self, name):
        return [v for k, v in self.headers if k.lower() == name.lower()]

    def text(self):
        return self.body.decode("utf-8", "replace")

    def json(self):
        return parse_json(self.text()) if self.body else None

    def said(self):
        lines = [f"sent: {self.method} {self.path}" + (f" body: {clip(self.sent, 400)}" if self.sent else "")]
        if self.error:
            lines.append(f"no answer: {self.error}")
        else:
            lines.append(f"status {self.status}; headers: " + "; ".join(f"{k}: {v}" for k, v in self.headers))
            lines.append(f"body: {clip(self.body, 900)}")
        return "\n".join(lines)


def send_notification(port, payload_jws, path="/notifications"):
    """POSTs {"signedPayload": JWS} to the webhook on 127.0.0.1:port, as Apple does."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    body = json.dumps({"signedPayload": payload_jws}).encode()
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        return Reply("POST", path, response.status, response.getheaders(), response.read(), sent=body[:200])
    except (OSError, http.client.HTTPException) as error:
        return Reply("POST", path, None, [], b"", repr(error))
    finally:
        conn.close()


# ----------------------------------------------------------------------------- the fake Apple


class FakeApple(FakeAppleServer):
    """Look Up Order ID (Production only), Get Transaction Info, Extend a Subscription Renewal Date,
    Set App Account Token; every request's JWT checked (401 without a body when wrong).

    What it knows: `purchases` (originalTransactionId -> {"payload", "jws", "expires", "extensions":
    {requestIdentifier: answer}, "token", optionally "refuse": (status, errorCode, message)}),
    `transactions` (any transactionId -> JWS) and `orders` (orderId -> [JWS]); `learn` fills the
    first two from a signed transaction. `after_extend(otid, answer)`, when set, is called (under the
    fake's lock: it must not block) after each extension it granted for the first time."""

    def __init__(self, key_id, issuer_id, public_key, bundle_id):
        super().__init__()
        self.key_id, self.issuer_id, self.public_key, self.bundle_id = key_id, issuer_id, public_key, bundle_id
        self.purchases = {}
        self.transactions = {}
        self.orders = {}
        self.after_extend = None

    def learn(self, transaction_jws):
        """Knows the purchase a signed transaction belongs to (its latest transaction wins) and the
        transaction by its id; returns the transaction's payload."""
        payload = jws_payload(transaction_jws)
        otid, tid = str(payload.get("originalTransactionId")), str(payload.get("transactionId"))
        with self.lock:
            self.transactions[tid] = transaction_jws
            known = self.purchases.get(otid)
            if known is None or (payload.get("purchaseDate") or 0) >= (known["payload"].get("purchaseDate") or 0):
                self.purchases[otid] = {"payload": payload, "jws": transaction_jws,
                                        "expires": payload.get("expiresDate") or 0,
                                        "extensions": known["extensions"] if known else {},
                                        "token": payload.get("appAccountToken")}
        return payload

    @staticmethod
    def error(status, code, message):
        return status, json.dumps({"errorCode": code, "errorMessage": message}).encode()

    def handle(self, seen):
        problem = apple_jwt_problem(seen.headers.get("authorization"), self.key_id, self.issuer_id, self.bundle_id,
                                    self.public_key)
        if problem:
            seen.violations.append("401: " + problem)
            return 401, b""
        parts = [urllib.parse.unquote(p) for p in seen.path.split("/")]
        with self.lock:
            if seen.method == "GET" and len(parts) == 5 and parts[1:4] == ["inApps", "v1", "lookup"]:
                if seen.env != "Production":
                    seen.violations.append("Look Up Order ID on the Sandbox host: Apple serves it in Production only")
                    return 404, b""
                if parts[4] not in self.orders:
                    return 200, json.dumps({"status": 1}).encode()
                return 200, json.dumps({"status": 0, "signedTransactions": self.orders[parts[4]]}).encode()
            if seen.method == "GET" and len(parts) == 5 and parts[1:4] == ["inApps", "v1", "transactions"]:
                jws = self.transactions.get(parts[4])
                if jws is None:
                    return self.error(404, 4040010, "Transaction id not found.")
                return 200, json.dumps({"signedTransactionInfo": jws}).encode()
            if seen.method == "PUT" and len(parts) == 6 and parts[1:5] == ["inApps", "v1", "subscriptions", "extend"] \
                    and parts[5] != "mass":
                return self.extend(seen, parts[5])
            if seen.method == "PUT" and len(parts) == 6 and parts[1:4] == ["inApps", "v1", "transactions"] \
                    and parts[5] == "appAccountToken":
                return self.set_token(seen, parts[4])
        seen.violations.append(f"an endpoint this fake does not serve: {seen.method} {seen.path}")
        return 404, b""

    def body(self, seen, fields):
        if seen.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            seen.violations.append(f"Content-Type {seen.headers.get('content-type')!r}, Apple wants application/json")
        body = seen.json()
        if not isinstance(body, dict):
            seen.violations.append("the body is not a JSON object")
            return None
        extra = sorted(set(body) - set(fields))
        if extra:
            seen.violations.append(f"fields Apple does not define here: {extra}")
        return body

    def extend(self, seen, otid):
        body = self.body(seen, ("extendByDays", "extendReasonCode", "requestIdentifier"))
        if body is None:
            return self.error(400, 4000000, "not a JSON object")
        days, reason, rid = body.get("extendByDays"), body.get("extendReasonCode"), body.get("requestIdentifier")
        if not (type(days) is int and 1 <= days <= 90):
            seen.violations.append(f"extendByDays {days!r}")
            return self.error(400, 4000009, "Invalid extend by days value.")
        if not (type(reason) is int and 0 <= reason <= 3):
            seen.violations.append(f"extendReasonCode {reason!r}")
            return self.error(400, 4000010, "Invalid extend reason code.")
        if not (isinstance(rid, str) and 1 <= len(rid) <= 128):
            seen.violations.append(f"requestIdentifier {rid!r}")
            return self.error(400, 4000011, "Invalid request identifier.")
        purchase = self.purchases.get(otid)
        if purchase is None:
            return self.error(404, 4040005, "Original transaction id not found.")
        if purchase.get("refuse"):
            return self.error(*purchase["refuse"])
        if rid in purchase["extensions"]:
            return 200, json.dumps(purchase["extensions"][rid]).encode()
        purchase["expires"] += days * DAY_MS
        answer = {"originalTransactionId": otid, "webOrderLineItemId": purchase["payload"].get("webOrderLineItemId"),
                  "success": True, "effectiveDate": purchase["expires"]}
        purchase["extensions"][rid] = answer
        if self.after_extend is not None:
            self.after_extend(otid, dict(answer))
        return 200, json.dumps(answer).encode()

    def set_token(self, seen, otid):
        body = self.body(seen, ("appAccountToken",))
        token = (body or {}).get("appAccountToken")
        if not (isinstance(token, str) and re.fullmatch(r"[0-9a-fA-F-]{36}", token)):
            seen.violations.append(f"appAccountToken {token!r} is not a UUID")
            return self.error(400, 4000183, "Invalid request. The app account token field must be a valid UUID.")
        if not UUID_LOWER.match(token):
            seen.violations.append(f"appAccountToken {token!r} is not lower-case (docs: sent lower-case)")
        purchase = self.purchases.get(otid)
        if purchase is None:
            return self.error(404, 4040005, "The transaction identifier wasn't found.")
        purchase["token"] = token
        return 200, b""

    def calls(self, mark, method, path):
        return [s for s in self.since(mark) if s.method == method and s.path == path]


# ----------------------------------------------------------------------------- fixtures and notifications


class Fixtures:
    """`signet fixtures --out FOLDER --now --environment Production` (its test PKI: root.pem and
    pki/leaf.key.pem) and signed notifications crafted in the shape of its own. `signet_run(args)`
    runs signet and returns a harness.Result; `say(text)` reports what could not be made."""

    def __init__(self, folder, signet_run, count=40, say=None):
        say = say or (lambda text: print(text, file=sys.stderr))
        self.folder = folder
        self.made = signet_run(["fixtures", "--out", folder, "--now", "--count", str(count), "--environment",
                                "Production", "--app-apple-id", str(APP_APPLE_ID)])
        names = ("notifications.ndjson", "fixtures.env")
        if self.made.code != 0 or not all(os.path.exists(os.path.join(folder, n)) for n in names):
            raise CannotRun("`signet fixtures` failed:\n" + self.made.said())
        self.env = read_fixtures_env(folder)
        self.bundle_id = self.env.get("SIGNET_BUNDLE_ID", "com.example.signet")
        self.root_pem = self.env.get("SIGNET_ROOT_CERTS") or os.path.join(folder, "root.pem")
        self.notifications = ndjson_lines(os.path.join(folder, "notifications.ndjson"))
        self.signer = Signer(folder, parse_json(self.notifications[0])["signedPayload"])
        self.subscribed, self.rescind = None, None
        for line in self.notifications:
            payload = jws_payload(parse_json(line)["signedPayload"])
            data = payload.get("data") or {}
            if payload.get("notificationType") == "RESCIND_CONSENT" and self.rescind is None:
                self.rescind = payload
            if payload.get("notificationType") == "SUBSCRIBED" and "signedRenewalInfo" in data \
                    and "signedTransactionInfo" in data and self.subscribed is None:
                self.subscribed = {"payload": payload, "transaction": jws_payload(data["signedTransactionInfo"]),
                                   "renewal": jws_payload(data["signedRenewalInfo"])}
        if self.subscribed is None:
            raise CannotRun("the fixtures hold no SUBSCRIBED notification with a transaction and renewal info")
        if self.rescind is None:
            shape_dir = os.path.join(os.path.dirname(folder), "fixtures-rescind")
            made = signet_run(["fixtures", "--out", shape_dir, "--now", "--count", "1", "--type", "RESCIND_CONSENT",
                               "--environment", "Production", "--app-apple-id", str(APP_APPLE_ID)])
            try:
                self.rescind = jws_payload(parse_json(ndjson_lines(os.path.join(shape_dir, "notifications.ndjson"))[0])
                                           ["signedPayload"])
            except (OSError, ValueError, KeyError, IndexError, TypeError):
                say("no RESCIND_CONSENT shape from the fixtures: " + made.said())

    def forged(self):
        """The fixtures' lines that must be rejected (forged.ndjson), as signedPayload strings."""
        try:
            lines = ndjson_lines(os.path.join(self.folder, "forged.ndjson"))
        except OSError:
            return []
        return [(parse_json(line) or {}).get("signedPayload", "") for line in lines]

    def purchase(self, otid, product, token, app_tx, purchased, expires, signed, transaction_id=None, group=None,
                 kind="SUBSCRIBED", subtype="INITIAL_BUY", extra_renewal=None, extra_transaction=None):
        """A notification (JWS) of an auto-renewable subscription, and its transaction's (payload, JWS).
        `extra_renewal` and `extra_transaction` are set last (a billing retry, a refund's revocation)."""
        transaction = dict(self.subscribed["transaction"])
        renewal = dict(self.subscribed["renewal"])
        for name in ("offerType", "offerIdentifier", "offerDiscountType", "offerPeriod", "revocationDate",
                     "revocationReason", "revocationType", "appAccountToken"):
            transaction.pop(name, None)
        for name in ("expirationIntent", "gracePeriodExpiresDate", "offerType", "offerIdentifier", "appAccountToken",
                     "offerDiscountType", "offerPeriod"):
            renewal.pop(name, None)
        transaction.update({"transactionId": transaction_id or otid, "originalTransactionId": otid,
                            "webOrderLineItemId": new_id(), "productId": product, "purchaseDate": purchased,
                            "originalPurchaseDate": purchased if transaction_id is None else purchased - 30 * DAY_MS,
                            "expiresDate": expires, "appTransactionId": app_tx, "signedDate": signed,
                            "transactionReason": "PURCHASE" if transaction_id is None else "RENEWAL",
                            "bundleId": self.bundle_id, "inAppOwnershipType": "PURCHASED", "environment": "Production",
                            "type": "Auto-Renewable Subscription"})
        if group:
            transaction["subscriptionGroupIdentifier"] = group
        if token:
            transaction["appAccountToken"] = token
            renewal["appAccountToken"] = token
        transaction.update(extra_transaction or {})
        renewal.update({"originalTransactionId": otid, "autoRenewProductId": product, "productId": product,
                        "autoRenewStatus": 1, "isInBillingRetryPeriod": False, "signedDate": signed,
                        "recentSubscriptionStartDate": purchased, "renewalDate": expires, "appTransactionId": app_tx,
                        "environment": "Production"})
        renewal.update(extra_renewal or {})
        transaction_jws = self.signer.sign(transaction)
        data = dict(self.subscribed["payload"]["data"])
        data.update({"bundleId": self.bundle_id, "status": 1, "environment": "Production", "appAppleId": APP_APPLE_ID,
                     "signedTransactionInfo": transaction_jws, "signedRenewalInfo": self.signer.sign(renewal)})
        payload = {"notificationType": kind, "notificationUUID": str(uuid.uuid4()), "data": data, "version": "2.0",
                   "signedDate": signed}
        if subtype:
            payload["subtype"] = subtype
        return self.signer.sign(payload), transaction, transaction_jws

    def rescind_consent(self, app_tx, signed):
        shape = json.loads(json.dumps(self.rescind))
        app_transaction = jws_payload(shape["appData"]["signedAppTransactionInfo"])
        app_transaction.update({"appTransactionId": app_tx, "bundleId": self.bundle_id, "signedDate": signed,
                                "receiptCreationDate": signed - 1000})
        shape.update({"notificationUUID": str(uuid.uuid4()), "signedDate": signed})
        shape["appData"]["bundleId"] = self.bundle_id
        shape["appData"]["signedAppTransactionInfo"] = self.signer.sign(app_transaction)
        return self.signer.sign(shape)


# ----------------------------------------------------------------------------- credentials, pipeline, environment


def make_credential(signet_run, name, role):
    """`signet console credential NAME --role ROLE`: (the credentials file's line, the token printed
    on stderr whose SHA-256 the line holds or None, the harness.Result)."""
    import hashlib
    result = signet_run(["console", "credential", name, "--role", role])
    line = next((l.strip() for l in result.out.splitlines() if l.strip() and not l.startswith("#")), "")
    parts = line.split()
    digest = parts[2].split(":", 1)[1].lower() if len(parts) == 3 and parts[2].startswith("sha256:") else None
    candidates = re.findall(r"[A-Za-z0-9_\-~.+/=]{32,}", result.err)
    token = next((c for c in candidates if digest and hashlib.sha256(c.encode()).hexdigest() == digest), None)
    return line, token, result


def write_credentials(path, lines):
    with open(path, "w", encoding="utf-8") as file:
        file.write("# name      role       sha256 of the token\n" + "\n".join(lines) + "\n")


PIPELINE = """\
description: {description}
stores:
  default:
    type: sqlite
    path: {data}/signet.sqlite
    outbox_retention: 90d
source:
  type: http
  address: 127.0.0.1:{webhook}
  path: /notifications
  max_body_bytes: 65536
stages:
  - type: decode
  - type: verify
    roots: {roots}
    environment: {environment}
    bundle_id: {bundle}
    app_apple_id: {app_apple_id}
  - type: dedupe
  - type: transition
    policy:
      billing_retry_entitled: false
      grace_period_entitled: true
      family_shared_entitled: true
      entitle_on_app_transaction: true
  - type: fanout
    default_sinks: [stdout]
sinks:
  stdout:
    type: stdout
dead_letter:
  type: file
  path: {data}/dead-letter.ndjson
  format: json
http:
  address: 127.0.0.1:{admin}
console:
  credentials: {credentials}
{console_extra}settings:
  shutdown_timeout: 10s
"""


def write_pipeline(path, fixtures, data, webhook, admin, credentials, environment="Production", console_extra="",
                   description="Pipelines/webhook.yaml with a console"):
    """A webhook pipeline (Pipelines/webhook.yaml's stages: SQLite in `data`, the webhook on
    127.0.0.1:webhook, the operators' listener on 127.0.0.1:admin) with a `console:` section."""
    with open(path, "w", encoding="utf-8") as file:
        file.write(PIPELINE.format(description=description, data=data, webhook=webhook, admin=admin,
                                   roots=fixtures.root_pem, bundle=fixtures.bundle_id, app_apple_id=APP_APPLE_ID,
                                   credentials=credentials, environment=environment, console_extra=console_extra))
    return path


def console_run_env(fixtures, data_dir, key_id, issuer_id, key_path, api_url, environment="Production"):
    """`signet run`'s variables: the fixtures' roots and app, and the In-App Purchase key (the
    variables of `signet support`) pointing at a fake App Store Server API."""
    return dict(fixtures.env, SIGNET_DATA_DIR=data_dir, SIGNET_APPSTORE_KEY_ID=key_id,
                SIGNET_APPSTORE_ISSUER_ID=issuer_id, SIGNET_APPSTORE_PRIVATE_KEY=key_path,
                SIGNET_BUNDLE_ID=fixtures.bundle_id, SIGNET_ENVIRONMENT=environment,
                SIGNET_APP_APPLE_ID=str(APP_APPLE_ID), SIGNET_ROOT_CERTS=fixtures.root_pem,
                SIGNET_APPSTORE_API_URL=api_url)
