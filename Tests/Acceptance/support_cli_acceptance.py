#!/usr/bin/env python3
"""Acceptance tests for `signet support ...`: Apple's customer-support calls from the command line
(Look Up Order ID, Get Refund History, Extend a Subscription Renewal Date, the mass extension and
its status, Set App Account Token, Get App Transaction Info).

    python3 Tests/Acceptance/support_cli_acceptance.py .build/debug/signet

Written from the documentation only: docs/support.md (the spec), docs/appstore-api.md (the JWT,
the variables, retries), README.md (running the default pipeline on NDJSON), Apple's rules as
/work/shared/appstore-api-facts.md and the support facts summarise them, and the binary's own
`--help` (`signet support --help` and each subcommand's, `signet fixtures --help`, `signet help
backfill`, `signet state --help`); not from Signet's sources.

A fake Apple runs in this script: a threaded http.server on 127.0.0.1, one port standing for the
Production host and one for the Sandbox host (SIGNET_APPSTORE_API_URL points each invocation at
the port of its SIGNET_ENVIRONMENT). It is strict, as Apple's pages describe:

- every request needs `Authorization: Bearer <JWT>`: ES256, kid, typ JWT; iss, aud
  `appstoreconnect-v1`, bid, iat not in the future, exp after now and at most 60 minutes after
  iat, the signature verifying with the public half of the generated .p8; else 401, no body;
- the seven endpoints with Apple's paths, bodies and error bodies `{"errorCode", "errorMessage"}`:
  Look Up Order ID (Production host only; an unknown order is 200 `status` 1 with no
  `signedTransactions`), Get Refund History v2 (20 a page, oldest `revocationDate` first, the
  `revision` of the previous page required after the first, 400 4000005 for one it did not give,
  404 4040010), Extend a Subscription Renewal Date (exactly `extendByDays` 1..90,
  `extendReasonCode` 0..3, `requestIdentifier` <= 128 characters: 4000009/4000010/4000011;
  4030004 for a purchase not eligible (expired, refunded, free trial, billing retry, grace period
  past its expiry, not auto-renewable), 4030005 at two extensions within 365 days, 4030007 for a
  family member's copy, 404 4040005; the same requestIdentifier again is the same extension, its
  answer repeated), the mass extension (a UUID, productId, storefrontCountryCodes optional,
  alpha-3, never empty: 4000027/4000028; the same identifier again 200 and nobody extended twice)
  and its status (complete after N polls, then completeDate, succeededCount, failedCount; an
  unknown pair 404 4040009), Set App Account Token (`{"appAccountToken": UUID}`, 200 with no body;
  4000183, 4000187 for an id that is not an originalTransactionId, 4000185 for a family-shared
  purchase, 404 4040005), Get App Transaction Info (`{signedAppTransactionInfo}`; 404 4040019);
- its signed transactions are those `signet fixtures` wrote (its test PKI; SIGNET_ROOT_CERTS
  points at the fixtures' root as fixtures.env does), and extra JWS (refunds, an app transaction,
  transactions of purchases Signet's store does not know, Sandbox ones) signed with the fixtures'
  leaf key; forged answers are signed by a rogue PKI (from the fixtures' forged.ndjson) or by a
  key that is not the certified leaf's;
- every request is recorded with its arrival time; one that breaks a rule the client promises to
  check (an identifier that should have gone lower-case, a body field Apple does not define, a
  value out of Apple's range) is itself a failed check.

A state store is filled first by `signet run` (the embedded default pipeline, Pipelines/stdin.yaml)
on the fixtures' notifications.ndjson, with SIGNET_DATA_DIR in a temporary directory.

What it checks, against the built binary: each subcommand's --help and example; each subcommand's
happy path and the JSON fields docs/support.md lists; `signetState` in `order` for a purchase the
store knows and not otherwise; requests Apple's rules refuse refused with exit 2 and nothing sent
(order in Sandbox, days 0 and 91, unknown reasons, a 129-character request id, non-UUIDs, bad
storefronts, a Sandbox client asking Production, the store's state check); Apple's refusals exit 1
with Apple's errorCode and an explanation; an extension whose answer was lost (Apple held it back,
the operator pressed Ctrl-C), run again with the same request id, reaches Apple again and extends
once; a retryable 5000001 is retried with the same body; identifiers typed UPPER case reach Apple
lower-case; --wait polling, one stderr line per answer, resuming with extend-status --wait, the
mass endpoint's 1 request a second; forged answers (rogue PKI, wrong key, another bundle or app
Apple ID, Sandbox-signed answers to a Production question) refused with nothing printed; the state
store only read by `order` and `extend` (no row written, no store created), and both working while
`signet run` holds the store.

The audit log docs/support.md describes is checked through `signet support audit`: each action
(extend, extend-all, set-token) recorded with its actor (--operator, SIGNET_OPERATOR, the login
name), parameters, status (pending while Apple has not answered, done, refused) and answer; a done
request id answered from the log without asking Apple; a request id reused for another purchase
or action refused; two done extensions within 365 days refused before sending; an action that
cannot be recorded not taken.

Everything happens in a fresh temporary directory (no SIGNET_* variable of the caller's environment
is passed on), on 127.0.0.1; every process started is stopped at the end. One line per check,
`ok - ...` or `FAIL - ...` (with indented `#` lines saying what was run, expected and seen); exit 1
when any check failed, 2 when the script could not run at all. Standard library plus Python's
`cryptography`.
"""

import datetime
import http.server
import json
import os
import re
import shlex
import shutil
import signal
import socketserver
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid

try:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
except ImportError:  # pragma: no cover
    print("this script needs Python's `cryptography` package", file=sys.stderr)
    sys.exit(2)

from harness import (
    CHILDREN, RESULTS, CannotRun, FakeAppleServer, OutOfTime, Result, Signer, arm_time_limit, b64url,
    b64url_decode, check, clip, es256_sign, es256_verify, jws_payload, ndjson_lines, parse_json,
    read_fixtures_env, signet_binary, stop, wait_until,
)

TIME_LIMIT = 150  # seconds
BUNDLE = "com.example.signet"
APP_APPLE_ID = 1234567890
DAY_MS = 86_400_000
UUID_ANY = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
UUID_LOWER = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
UUID_EXACT = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
MASS = "/inApps/v1/subscriptions/extend/mass"
UNKNOWN_NOTE = r"(not|n't) know|unknown|no record|not in (the|its|Signet's) store|not found in"
PRODUCT = "com.example.signet.premium.monthly"
ORDER = "MK5TTTVWJH"
EXPIRED_ORDER = "MK5EXPIRD1"
FORGED_ORDER = "MQ7FORGED1"
OTHER_APP_ORDER = "MQ7OTHER01"
SANDBOX_ORDER = "MQ7SANDBX1"


def note(*lines):
    for text in lines:
        for line in str(text).rstrip().splitlines() or [""]:
            print("# " + line, flush=True)


def lettered_uuid():
    """A random UUID with letters in it, so its UPPER and lower forms differ."""
    while True:
        value = str(uuid.uuid4())
        if sum(c.isalpha() for c in value) >= 6:
            return value


def json_values(text):
    """Every JSON value printed on `text`, in order (pretty-printed or one a line); lines that are
    not JSON are skipped."""
    decoder, values, i = json.JSONDecoder(), [], 0
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        try:
            value, i = decoder.raw_decode(text, i)
            values.append(value)
        except ValueError:
            newline = text.find("\n", i)
            if newline < 0:
                break
            i = newline + 1
    return values


def last_object(text):
    objects = [v for v in json_values(text) if isinstance(v, (dict, list))]
    return objects[-1] if objects else None


def find_values(value, key):
    """Every value of `key` anywhere inside `value`."""
    found = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k == key:
                found.append(v)
            found.extend(find_values(v, key))
    elif isinstance(value, list):
        for item in value:
            found.extend(find_values(item, key))
    return found


def instant_ms(value):
    """A timestamp as printed (UNIX ms, digits, or ISO-8601) in ms; None when unreadable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return int(value)
    if isinstance(value, str):
        if value.isdigit():
            return int(value)
        try:
            parsed = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
            if parsed.tzinfo is None:
                parsed = parsed.replace(tzinfo=datetime.timezone.utc)
            return int(parsed.timestamp() * 1000)
        except ValueError:
            return None
    return None


def same_instant(value, ms, slack=1000):
    got = instant_ms(value)
    return got is not None and abs(got - ms) <= slack


# ----------------------------------------------------------------------------- processes


class Signet:
    def __init__(self, binary, root):
        self.binary, self.root = binary, root

    def env(self, extra):
        environment = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET_")}
        environment.update(extra)
        return environment

    def describe(self, args, extra):
        shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(extra.items())
                         if k not in ("SIGNET_APPSTORE_PRIVATE_KEY", "SIGNET_APPSTORE_ISSUER_ID"))
        return (shown + " " + shlex.join([self.binary] + list(args))).strip()

    def run(self, args, extra, stdin_path=None, timeout=60):
        stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
        try:
            child = subprocess.Popen([self.binary] + list(args), stdin=stdin, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=self.env(extra), cwd=self.root)
        finally:
            if stdin_path:
                stdin.close()
        CHILDREN.append(child)
        try:
            out, err = child.communicate(timeout=timeout)
            code = child.returncode
        except subprocess.TimeoutExpired:
            stop(child)
            out, err = child.communicate()
            err += f"\n(still running after {timeout} s: stopped)".encode()
            code = None
        return Result(self.describe(args, extra), code, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"))

    def start(self, args, extra):
        child = subprocess.Popen([self.binary] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=self.env(extra), cwd=self.root)
        CHILDREN.append(child)
        return child, self.describe(args, extra)


class Lines:
    """Collects a child's stderr line by line while it runs."""

    def __init__(self, pipe):
        self.lines, self.lock = [], threading.Lock()
        self.thread = threading.Thread(target=self._read, args=(pipe,), daemon=True)
        self.thread.start()

    def _read(self, pipe):
        for raw in iter(pipe.readline, b""):
            with self.lock:
                self.lines.append(raw.decode("utf-8", "replace").rstrip("\n"))

    def text(self):
        with self.lock:
            return "\n".join(self.lines)


# ----------------------------------------------------------------------------- the fake Apple


class Purchase:
    def __init__(self, otid, payload, jws, state):
        self.otid, self.payload, self.jws, self.state = otid, payload, jws, state
        self.expires = payload.get("expiresDate") or 0
        self.extensions = {}  # requestIdentifier -> (answer dict, at ms)
        self.history = []  # ms of extensions, for the two-in-365-days rule
        self.token = payload.get("appAccountToken")


class FakeApple(FakeAppleServer):
    def __init__(self, key_id, issuer_id, public_key):
        super().__init__()
        self.key_id, self.issuer_id, self.public_key = key_id, issuer_id, public_key
        self.purchases = {}  # originalTransactionId -> Purchase
        self.transactions = {}  # any transactionId -> originalTransactionId
        self.orders = {}  # orderId -> [JWS]
        self.refunds = {}  # any transaction id of the customer -> customer key
        self.refund_lists = {}  # customer key -> [JWS], oldest revocationDate first
        self.revisions = {}  # revision token -> (customer key, offset)
        self.app_transactions = {}  # transaction id -> JWS
        self.no_app_transaction = set()
        self.mass = {}  # requestIdentifier -> dict
        self.mass_complete_after = 3
        self.injected = []  # (method, path prefix, status, errorCode): answered once each
        self.delays = {}  # path -> seconds the answer is held back (once), after Apple acted

    def violations(self):
        with self.lock:
            return [s for s in self.log if s.violations]

    @staticmethod
    def error(status, code, message):
        return status, json.dumps({"errorCode": code, "errorMessage": message}).encode()

    def jwt_problem(self, seen):
        auth = seen.headers.get("authorization", "")
        if not auth.startswith("Bearer "):
            return f"no `Authorization: Bearer <JWT>` header (got {auth[:40]!r})"
        parts = auth[len("Bearer "):].strip().split(".")
        if len(parts) != 3:
            return "the bearer token is not a compact JWS"
        try:
            header, claims = json.loads(b64url_decode(parts[0])), json.loads(b64url_decode(parts[1]))
            signature = b64url_decode(parts[2])
        except (ValueError, TypeError):
            return "the JWT's header or payload is not base64url JSON"
        problems = []
        if header.get("alg") != "ES256":
            problems.append(f"alg {header.get('alg')!r}")
        if header.get("kid") != self.key_id:
            problems.append(f"kid {header.get('kid')!r}, the key id is {self.key_id!r}")
        if header.get("typ") != "JWT":
            problems.append(f"typ {header.get('typ')!r}")
        if claims.get("iss") != self.issuer_id:
            problems.append(f"iss {claims.get('iss')!r}")
        if claims.get("aud") != "appstoreconnect-v1":
            problems.append(f"aud {claims.get('aud')!r}")
        if claims.get("bid") != BUNDLE:
            problems.append(f"bid {claims.get('bid')!r}, the bundle id is {BUNDLE!r}")
        now = time.time()
        iat, exp = claims.get("iat"), claims.get("exp")
        if not isinstance(iat, int) or isinstance(iat, bool) or iat > now + 1:
            problems.append(f"iat {iat!r} (now {now:.0f})")
        if not isinstance(exp, int) or isinstance(exp, bool) or exp <= now or \
                (isinstance(iat, int) and exp - iat > 3600):
            problems.append(f"exp {exp!r} (iat {iat!r}, now {now:.0f})")
        if not es256_verify(self.public_key, (parts[0] + "." + parts[1]).encode(), signature):
            problems.append("the ES256 signature does not verify with the .p8's public key")
        return "; ".join(problems) or None

    def handle(self, seen):
        problem = self.jwt_problem(seen)
        if problem:
            seen.violations.append("401: " + problem)
            return 401, b""
        path = seen.path
        with self.lock:
            for index, (method, prefix, status, code) in enumerate(self.injected):
                if method == seen.method and path.startswith(prefix):
                    del self.injected[index]
                    return self.error(status, code, "injected by the test")
            parts = [urllib.parse.unquote(p) for p in path.split("/")]
            # ['', 'inApps', 'v1', ...]
            if seen.method == "GET" and len(parts) == 5 and parts[1:4] == ["inApps", "v1", "lookup"]:
                return self.lookup(seen, parts[4])
            if seen.method == "GET" and len(parts) == 6 and parts[1:5] == ["inApps", "v2", "refund", "lookup"]:
                return self.refund_history(seen, parts[5])
            if path == MASS and seen.method == "POST":
                return self.mass_extend(seen)
            if seen.method == "GET" and len(parts) == 8 and path.startswith(MASS + "/"):
                return self.mass_status(seen, parts[6], parts[7])
            if seen.method == "PUT" and len(parts) == 6 and parts[1:5] == ["inApps", "v1", "subscriptions", "extend"] \
                    and parts[5] != "mass":
                return self.extend(seen, parts[5])
            if seen.method == "PUT" and len(parts) == 6 and parts[1:4] == ["inApps", "v1", "transactions"] \
                    and parts[5] == "appAccountToken":
                return self.set_token(seen, parts[4])
            if seen.method == "GET" and len(parts) == 6 and parts[1:5] == ["inApps", "v1", "transactions",
                                                                            "appTransactions"]:
                return self.app_transaction(seen, parts[5])
        seen.violations.append(f"no such endpoint: {seen.method} {path}")
        return 404, b""

    def json_body(self, seen, fields):
        content_type = seen.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            seen.violations.append(f"Content-Type {seen.headers.get('content-type')!r}, Apple wants application/json")
        body = seen.json()
        if not isinstance(body, dict):
            seen.violations.append("the body is not a JSON object")
            return None
        extra = sorted(set(body) - set(fields))
        if extra:
            seen.violations.append(f"fields Apple does not define here: {extra}")
        return body

    # -- Look Up Order ID
    def lookup(self, seen, order_id):
        if seen.env != "Production":
            seen.violations.append("Look Up Order ID on the Sandbox host: Apple serves it in Production only")
            return 404, b""
        if order_id not in self.orders:
            return 200, json.dumps({"status": 1}).encode()
        return 200, json.dumps({"status": 0, "signedTransactions": self.orders[order_id]}).encode()

    # -- Get Refund History v2
    def refund_history(self, seen, any_id):
        revision = seen.query.get("revision")
        customer = self.refunds.get(any_id)
        if customer is None and any_id not in self.transactions:
            return self.error(404, 4040010, "Transaction id not found.")
        refunds = self.refund_lists.get(customer, [])
        if revision is None:
            offset = 0
        else:
            known = self.revisions.get(revision[0])
            if known is None or known[0] != customer:
                return self.error(400, 4000005, "Invalid request revision.")
            offset = known[1]
        page = refunds[offset:offset + 20]
        token = f"rev{len(self.revisions) + 1}x{uuid.uuid4().hex[:8]}"
        self.revisions[token] = (customer, offset + len(page))
        return 200, json.dumps({"signedTransactions": page, "revision": token,
                                "hasMore": offset + len(page) < len(refunds)}).encode()

    # -- Extend a Subscription Renewal Date
    def extend(self, seen, otid):
        body = self.json_body(seen, ("extendByDays", "extendReasonCode", "requestIdentifier"))
        if body is None:
            return self.error(400, 4000000, "fake: not a JSON object")
        days, reason, rid = body.get("extendByDays"), body.get("extendReasonCode"), body.get("requestIdentifier")
        if not (isinstance(days, int) and not isinstance(days, bool) and 1 <= days <= 90):
            seen.violations.append(f"extendByDays {days!r}: Apple wants an integer 1 to 90")
            return self.error(400, 4000009, "Invalid extend by days value.")
        if not (isinstance(reason, int) and not isinstance(reason, bool) and 0 <= reason <= 3):
            seen.violations.append(f"extendReasonCode {reason!r}: Apple wants an integer 0 to 3")
            return self.error(400, 4000010, "Invalid extend reason code.")
        if not (isinstance(rid, str) and 1 <= len(rid) <= 128):
            seen.violations.append(f"requestIdentifier {clip(str(rid), 60)!r}: Apple wants 1 to 128 characters")
            return self.error(400, 4000011, "Invalid request identifier.")
        purchase = self.purchases.get(otid)
        if purchase is None:
            return self.error(404, 4040005, "Original transaction id not found.")
        if rid in purchase.extensions:  # the same request again: the same extension
            return 200, json.dumps(purchase.extensions[rid][0]).encode()
        if purchase.state == "family":
            return self.error(403, 4030007, "Subscriptions that users obtain through Family Sharing can't get a "
                                            "renewal date extension directly.")
        if purchase.state != "active":
            return self.error(403, 4030004, "Forbidden - subscription state ineligible for extension.")
        now = int(time.time() * 1000)
        if sum(1 for at in purchase.history if at > now - 365 * DAY_MS) >= 2:
            return self.error(403, 4030005, "Forbidden - subscription has reached maximum extension count.")
        purchase.expires += days * DAY_MS
        purchase.history.append(now)
        answer = {"originalTransactionId": otid, "webOrderLineItemId": purchase.payload.get("webOrderLineItemId"),
                  "success": True, "effectiveDate": purchase.expires}
        purchase.extensions[rid] = (answer, now)
        return 200, json.dumps(answer).encode()

    # -- mass extension
    def mass_extend(self, seen):
        body = self.json_body(seen, ("requestIdentifier", "extendByDays", "extendReasonCode", "productId",
                                     "storefrontCountryCodes"))
        if body is None:
            return self.error(400, 4000000, "fake: not a JSON object")
        rid, days, reason = body.get("requestIdentifier"), body.get("extendByDays"), body.get("extendReasonCode")
        product, storefronts = body.get("productId"), body.get("storefrontCountryCodes", None)
        if not (isinstance(rid, str) and UUID_EXACT.match(rid)):
            seen.violations.append(f"requestIdentifier {rid!r} is not a UUID")
            return self.error(400, 4000011, "Invalid request identifier.")
        if not UUID_LOWER.match(rid):
            seen.violations.append(f"requestIdentifier {rid!r} is not lower-case (docs: sent lower-case)")
        if not (isinstance(days, int) and not isinstance(days, bool) and 1 <= days <= 90):
            seen.violations.append(f"extendByDays {days!r}")
            return self.error(400, 4000009, "Invalid extend by days value.")
        if not (isinstance(reason, int) and not isinstance(reason, bool) and 0 <= reason <= 3):
            seen.violations.append(f"extendReasonCode {reason!r}")
            return self.error(400, 4000010, "Invalid extend reason code.")
        if not (isinstance(product, str) and product):
            seen.violations.append(f"productId {product!r}")
            return self.error(400, 4000023, "Invalid product id.")
        if "storefrontCountryCodes" in body:
            if not isinstance(storefronts, list) or not storefronts:
                seen.violations.append(f"storefrontCountryCodes {storefronts!r}: never empty (omit it for all)")
                return self.error(400, 4000027, "Invalid empty storefront country code list.")
            if not all(isinstance(c, str) and re.fullmatch(r"[A-Z]{3}", c) for c in storefronts):
                seen.violations.append(f"storefrontCountryCodes {storefronts!r}: ISO 3166-1 alpha-3")
                return self.error(400, 4000028, "Invalid storefront country code.")
        key = rid.lower()
        if key in self.mass:  # Apple: the same identifier again answers 200
            self.mass[key]["posts"] += 1
            return 200, json.dumps({"requestIdentifier": rid}).encode()
        self.mass[key] = {"productId": product, "days": days, "reason": reason, "storefronts": storefronts,
                          "posts": 1, "polls": 0, "complete_after": self.mass_complete_after, "completeDate": None,
                          "succeeded": 41, "failed": 2, "applied": 1}
        return 200, json.dumps({"requestIdentifier": rid}).encode()

    def mass_status(self, seen, product, rid):
        if not UUID_LOWER.match(rid):
            seen.violations.append(f"requestIdentifier {rid!r} in the path is not a lower-case UUID")
        entry = self.mass.get(rid.lower())
        if entry is None or entry["productId"] != product:
            return self.error(404, 4040009, "The server didn't find a subscription-renewal-date extension request "
                                            "for this requestIdentifier and productId combination.")
        entry["polls"] += 1
        if entry["completeDate"] is None and entry["polls"] >= entry["complete_after"]:
            entry["completeDate"] = int(time.time() * 1000)
        answer = {"requestIdentifier": rid, "complete": entry["completeDate"] is not None}
        if entry["completeDate"] is not None:
            answer.update(completeDate=entry["completeDate"], succeededCount=entry["succeeded"],
                          failedCount=entry["failed"])
        return 200, json.dumps(answer).encode()

    # -- Set App Account Token
    def set_token(self, seen, otid):
        body = self.json_body(seen, ("appAccountToken",))
        token = (body or {}).get("appAccountToken")
        if not (isinstance(token, str) and UUID_EXACT.match(token)):
            seen.violations.append(f"appAccountToken {token!r} is not a UUID (docs: checked before sending)")
            return self.error(400, 4000183, "Invalid request. The app account token field must be a valid UUID.")
        if not UUID_LOWER.match(token):
            seen.violations.append(f"appAccountToken {token!r} is not lower-case (docs: sent lower-case)")
        purchase = self.purchases.get(otid)
        if purchase is None:
            if otid in self.transactions:
                return self.error(400, 4000187, "Invalid request. The transaction id parameter must be an original "
                                                "transaction id.")
            return self.error(404, 4040005, "The transaction identifier wasn't found.")
        if purchase.payload.get("inAppOwnershipType") == "FAMILY_SHARED":
            return self.error(400, 4000185, "Invalid request. Family Sharing transactions aren't supported by this "
                                            "endpoint.")
        purchase.token = token
        return 200, b""

    # -- Get App Transaction Info
    def app_transaction(self, seen, any_id):
        if any_id in self.no_app_transaction:
            return self.error(404, 4040019, "An app transaction doesn't exist for the specified customer.")
        if any_id in self.app_transactions:
            return 200, json.dumps({"signedAppTransactionInfo": self.app_transactions[any_id]}).encode()
        return self.error(404, 4040010, "Transaction id not found.")


# ----------------------------------------------------------------------------- the test bed


class Bed:
    def __init__(self, signet, root):
        self.signet, self.root = signet, root
        self.key_id = "SUP" + uuid.uuid4().hex[:7].upper()
        self.issuer_id = str(uuid.uuid4())
        private = ec.generate_private_key(ec.SECP256R1())
        self.key_path = os.path.join(root, f"AuthKey_{self.key_id}.p8")
        with open(self.key_path, "wb") as file:
            file.write(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption()))
        self.fake = FakeApple(self.key_id, self.issuer_id, private.public_key())
        self.store_dir = os.path.join(root, "store")  # filled by `signet run`
        self.empty_dir = os.path.join(root, "empty")  # no store at all
        os.makedirs(self.empty_dir, exist_ok=True)
        self.fixtures = os.path.join(root, "fixtures")
        self.root_pem = None
        self.signer = None
        self.targets = {}

    def env(self, environment="Production", data_dir=None, drop=(), **changes):
        values = {"SIGNET_APPSTORE_KEY_ID": self.key_id, "SIGNET_APPSTORE_ISSUER_ID": self.issuer_id,
                  "SIGNET_APPSTORE_PRIVATE_KEY": self.key_path, "SIGNET_BUNDLE_ID": BUNDLE,
                  "SIGNET_ENVIRONMENT": environment, "SIGNET_APP_APPLE_ID": str(APP_APPLE_ID),
                  "SIGNET_APPSTORE_API_URL": self.fake.url(environment if environment in self.fake.ports else
                                                           "Production"),
                  "SIGNET_ROOT_CERTS": self.root_pem or "", "SIGNET_DATA_DIR": data_dir or self.store_dir}
        for name in drop:
            values.pop(name, None)
        values.update(changes)
        return values

    def cli(self, args, environment="Production", data_dir=None, timeout=60, **changes):
        mark = self.fake.mark()
        result = self.signet.run(["support"] + list(args), self.env(environment, data_dir, **changes), timeout=timeout)
        time.sleep(0.03)
        return result, self.fake.since(mark)


def seen_said(seen):
    if not seen:
        return "requests that reached the fake: none"
    return "requests that reached the fake:\n" + "\n".join(s.line() for s in seen)


def clean(seen):
    return not any(s.violations for s in seen)


def calls(seen, method, path):
    return [s for s in seen if s.method == method and s.path == path]


def refused_locally(bed, name, args, environment="Production", data_dir=None):
    result, seen = bed.cli(args, environment, data_dir)
    return check(f"refused before sending: {name}: exit 2, a message on stderr, nothing reaches Apple",
                 result.code == 2 and not seen and result.err.strip(), result.said(), seen_said(seen))


def apple_refuses(bed, name, args, status, code, explain=None, environment="Production", data_dir=None):
    """Apple answers `status` `code`: exit 1, the errorCode in the message, and (for the codes an
    operator meets) an explanation matching `explain`; nothing on stdout that looks like success."""
    result, seen = bed.cli(args, environment, data_dir)
    both = result.out + "\n" + result.err
    answered = [s for s in seen if s.status == status and str(code).encode() in s.answer]
    ok = result.code == 1 and str(code) in both and answered and clean(seen)
    if explain:
        ok = ok and re.search(explain, both, re.I)
    return check(f"Apple's refusal: {name}: Apple answers {status} {code}, exit 1 naming {code}"
                 + (f" and saying what it means (/{explain}/)" if explain else ""), ok, result.said(), seen_said(seen))


# ----------------------------------------------------------------------------- setup


def setup(bed):
    signet, fake = bed.signet, bed.fake
    made = signet.run(["fixtures", "--out", bed.fixtures, "--now", "--count", "40", "--environment", "Production",
                       "--app-apple-id", str(APP_APPLE_ID)], {}, timeout=60)
    if made.code != 0 or not os.path.exists(os.path.join(bed.fixtures, "notifications.ndjson")):
        raise CannotRun("`signet fixtures` failed:\n" + made.said())
    fixture_env = read_fixtures_env(bed.fixtures)
    bed.root_pem = fixture_env.get("SIGNET_ROOT_CERTS", os.path.join(bed.fixtures, "root.pem"))
    run_env = dict(fixture_env, SIGNET_DATA_DIR=bed.store_dir)
    filled = signet.run(["run"], run_env, stdin_path=os.path.join(bed.fixtures, "notifications.ndjson"), timeout=90)
    if not check("setup: `signet run` (the default stdin pipeline) on the fixtures' notifications fills a state store in "
                 "SIGNET_DATA_DIR", filled.code == 0 and os.path.exists(os.path.join(bed.store_dir, "signet.sqlite")),
                 filled.said()):
        raise CannotRun("the state store could not be filled")

    # Apple's view of every purchase of the fixtures: the latest signed transaction of each.
    now = int(time.time() * 1000)
    latest = {}
    by_kind = {}
    for line in ndjson_lines(os.path.join(bed.fixtures, "notifications.ndjson")):
        notification = jws_payload(json.loads(line)["signedPayload"])
        data = notification.get("data") or {}
        jws = data.get("signedTransactionInfo")
        if not jws:
            continue
        transaction = jws_payload(jws)
        otid = transaction["originalTransactionId"]
        fake.transactions[transaction["transactionId"]] = otid
        fake.transactions[otid] = otid
        kind = (notification.get("notificationType"), notification.get("subtype"))
        by_kind.setdefault(kind, otid)
        if otid not in latest or transaction.get("signedDate", 0) >= latest[otid][0].get("signedDate", 0):
            latest[otid] = (transaction, jws, kind)
    bed.signer = Signer(bed.fixtures, next(iter(latest.values()))[1])
    for otid, (transaction, jws, kind) in latest.items():
        if transaction.get("inAppOwnershipType") == "FAMILY_SHARED":
            state = "family"
        elif transaction.get("type") != "Auto-Renewable Subscription":
            state = "not a subscription"
        elif transaction.get("revocationDate"):
            state = "revoked"
        elif (transaction.get("expiresDate") or 0) <= now:
            state = "expired"
        elif kind[0] == "DID_FAIL_TO_RENEW":
            state = "billing retry"
        elif transaction.get("offerDiscountType") == "FREE_TRIAL" or transaction.get("price") == 0:
            state = "free trial"
        else:
            state = "active"
        fake.purchases[otid] = Purchase(otid, transaction, jws, state)

    def pick(kind, want_state=None):
        otid = by_kind.get(kind)
        if otid is None or (want_state and fake.purchases[otid].state != want_state):
            return None
        return otid

    active = [p.otid for p in fake.purchases.values() if p.state == "active"]
    targets = {
        "active": active,
        "free trial": [p.otid for p in fake.purchases.values() if p.state == "free trial"],
        "expired": pick(("EXPIRED", "VOLUNTARY"), "expired"),
        "refunded": pick(("REFUND", None)),
        "family": pick(("REVOKE", None)),
        "consumable": pick(("ONE_TIME_CHARGE", None), "not a subscription"),
        "billing retry": pick(("DID_FAIL_TO_RENEW", None)),
        "grace": pick(("DID_FAIL_TO_RENEW", "GRACE_PERIOD")),
        "resubscribe": by_kind.get(("SUBSCRIBED", "RESUBSCRIBE")),
    }
    if not targets["free trial"] and len(active) > 10:
        # none this seed: Apple's view of one active purchase is a free trial period (the store cannot tell)
        fake.purchases[active[-1]].state = "free trial"
        targets["free trial"] = [active.pop()]
    missing = [k for k, v in targets.items() if not v]
    if missing or len(active) < 10:
        raise CannotRun(f"the fixtures lack purchases for: {missing} (active: {len(active)})")
    bed.targets = targets
    fake.purchases[targets["grace"]].state = "grace period past its expiry"
    if fake.purchases[targets["family"]].payload.get("inAppOwnershipType") != "FAMILY_SHARED":
        raise CannotRun("the REVOKE fixture is not FAMILY_SHARED")

    # a non-original transaction id of a purchase (for 4000187)
    resub = fake.purchases[targets["resubscribe"]]
    non_original = [t for t, o in fake.transactions.items() if o == resub.otid and t != o]
    if not non_original:
        raise CannotRun("no transaction id that is not an originalTransactionId")
    targets["non-original"] = non_original[0]

    # purchases Apple knows and Signet's store does not
    template = fake.purchases[active[0]].payload
    base = 390000000000000 + int(time.time()) % 1000000 * 100

    def new_purchase(number, **changes):
        otid = str(base + number)
        payload = dict(template, transactionId=otid, originalTransactionId=otid, webOrderLineItemId=str(base + number + 50),
                       purchaseDate=now - 20 * DAY_MS, originalPurchaseDate=now - 20 * DAY_MS,
                       expiresDate=now + 10 * DAY_MS, signedDate=now, price=4990, appTransactionId=str(base + number + 70))
        for key in ("offerType", "offerIdentifier", "offerDiscountType", "offerPeriod"):
            payload.pop(key, None)
        payload.update(changes)
        jws = bed.signer.sign(payload)
        state = "family" if payload.get("inAppOwnershipType") == "FAMILY_SHARED" else "active"
        fake.purchases[otid] = Purchase(otid, payload, jws, state)
        fake.transactions[otid] = otid
        return otid

    targets["unknown"] = [new_purchase(i) for i in range(1, 9)]
    targets["unknown family"] = new_purchase(20, inAppOwnershipType="FAMILY_SHARED")
    targets["coins"] = new_purchase(30, type="Consumable", productId="com.example.signet.coins.100",
                                    expiresDate=None, webOrderLineItemId=None, subscriptionGroupIdentifier=None)
    targets["never"] = str(base + 99)  # nobody knows it

    # Look Up Order ID: a purchase the store knows and one it does not
    known = fake.purchases[active[0]]
    fake.orders[ORDER] = [known.jws, fake.purchases[targets["coins"]].jws]
    targets["order known"] = known.otid
    targets["order unknown"] = targets["coins"]
    fake.orders[EXPIRED_ORDER] = [fake.purchases[targets["expired"]].jws]

    # forged answers: a rogue PKI's transaction (fixtures' forged.ndjson), and the genuine chain
    # with a signature by another key
    genuine_leaf = json.loads(b64url_decode(known.jws.split(".")[0]))["x5c"][0]
    rogue = None
    for line in ndjson_lines(os.path.join(bed.fixtures, "forged.ndjson")):
        try:
            outer = json.loads(line).get("signedPayload", "")
            header = json.loads(b64url_decode(outer.split(".")[0]))
            inner = (jws_payload(outer).get("data") or {}).get("signedTransactionInfo")
            if header.get("alg") == "ES256" and inner and \
                    json.loads(b64url_decode(inner.split(".")[0]))["x5c"][0] != genuine_leaf and \
                    jws_payload(inner).get("bundleId") == BUNDLE:
                rogue = inner
                break
        except (ValueError, TypeError, KeyError, AttributeError, IndexError):
            continue
    other_key = ec.generate_private_key(ec.SECP256R1())

    def wrongly_signed(payload):
        head = known.jws.split(".")[0]
        body = b64url(json.dumps(payload, separators=(",", ":")).encode())
        return head + "." + body + "." + b64url(es256_sign(other_key, (head + "." + body).encode()))

    forged_payload = dict(template, transactionId=str(base + 40), originalTransactionId=str(base + 40), signedDate=now)
    bed.targets["forged tx id"] = str(base + 40)
    fake.orders[FORGED_ORDER] = [known.jws, rogue or wrongly_signed(forged_payload)]
    bed.targets["rogue from fixtures"] = rogue is not None
    if rogue:
        bed.targets["forged tx id"] = jws_payload(rogue)["transactionId"]
    fake.orders[OTHER_APP_ORDER] = [bed.signer.sign(dict(forged_payload, bundleId="com.attacker.app"))]
    fake.orders[SANDBOX_ORDER] = [bed.signer.sign(dict(forged_payload, environment="Sandbox"))]

    # refunds: 45 for the refunded customer (3 pages), oldest first; none for an active one
    refunded = fake.purchases[targets["refunded"]]
    real = refunded.payload
    refunds = []
    for i in range(44):
        tid = str(base + 1000 + i)
        payload = dict(real, transactionId=tid, originalTransactionId=tid, productId="com.example.signet.coins.100",
                       type="Consumable", purchaseDate=now - (90 - i) * DAY_MS, originalPurchaseDate=now - (90 - i) * DAY_MS,
                       revocationDate=now - (60 - i) * DAY_MS, revocationReason=i % 2, signedDate=now, price=990)
        for key in ("expiresDate", "webOrderLineItemId", "subscriptionGroupIdentifier", "offerType", "offerIdentifier",
                    "offerDiscountType", "offerPeriod"):
            payload.pop(key, None)
        refunds.append((payload["revocationDate"], tid, bed.signer.sign(payload)))
    refunds.append((real.get("revocationDate") or now, real["transactionId"], refunded.jws))
    refunds.sort()
    fake.refund_lists["refunded"] = [jws for _, _, jws in refunds]
    targets["refund ids"] = [tid for _, tid, _ in refunds]
    targets["refund dates"] = [at for at, _, _ in refunds]
    for tid, otid in fake.transactions.items():
        if otid == refunded.otid:
            fake.refunds[tid] = "refunded"
    fake.refunds[active[1]] = "none"
    fake.refund_lists["none"] = []
    # a Sandbox customer (TestFlight): Sandbox-signed refunds
    sandbox_id = str(base + 2000)
    sandbox = [bed.signer.sign(dict(real, transactionId=str(base + 2000 + i), originalTransactionId=sandbox_id,
                                    environment="Sandbox", revocationDate=now - (5 - i) * DAY_MS, signedDate=now))
               for i in range(2)]
    fake.refund_lists["sandbox"] = sandbox
    fake.refunds[sandbox_id] = "sandbox"
    fake.transactions[sandbox_id] = sandbox_id
    targets["sandbox customer"] = sandbox_id
    fake.refund_lists["forged"] = [refunds[0][2], wrongly_signed(dict(real, transactionId=str(base + 41),
                                                                       revocationDate=now))]
    fake.refunds[str(base + 41)] = "forged"
    targets["forged refund customer"] = str(base + 41)

    # app transactions
    app_payload = {"receiptType": "Production", "appAppleId": APP_APPLE_ID, "bundleId": BUNDLE,
                   "applicationVersion": "1.8.17", "versionExternalIdentifier": 871234567,
                   "receiptCreationDate": now - 1000, "originalPurchaseDate": now - 400 * DAY_MS,
                   "originalApplicationVersion": "1.0.3", "deviceVerification": b64url(os.urandom(48)),
                   "deviceVerificationNonce": str(uuid.uuid4()), "appTransactionId": known.payload.get(
                       "appTransactionId") or str(base + 3000), "originalPlatform": "iOS", "signedDate": now}
    targets["app payload"] = app_payload
    app_jws = bed.signer.sign(app_payload)
    for tid, otid in fake.transactions.items():
        if otid == known.otid:
            fake.app_transactions[tid] = app_jws
    targets["no app tx"] = active[2]
    fake.no_app_transaction.add(active[2])
    targets["forged app tx"] = str(base + 42)
    fake.app_transactions[str(base + 42)] = wrongly_signed(app_payload)
    targets["other app tx"] = str(base + 43)
    fake.app_transactions[str(base + 43)] = bed.signer.sign(dict(app_payload, appAppleId=987654321))
    targets["sandbox app tx"] = str(base + 44)
    fake.app_transactions[str(base + 44)] = bed.signer.sign(dict(app_payload, receiptType="Sandbox"))

    # a purchase already extended twice this year (4030005)
    maxed = fake.purchases[active[3]]
    maxed.history = [now - 100 * DAY_MS, now - 30 * DAY_MS]
    targets["maxed"] = maxed.otid


def fresh_dir(bed):
    return tempfile.mkdtemp(prefix="no-store-", dir=bed.root)


def store_dump(path):
    """Every row of the SQLite store, read-only (None when there is no file)."""
    if not os.path.exists(path):
        return None
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return list(connection.iterdump())
    finally:
        connection.close()


def as_json(value):
    """A field the audit log may print as JSON text or as JSON."""
    if isinstance(value, str):
        parsed = parse_json(value)
        return parsed if parsed is not None else value
    return value


def audit(bed, *args, data_dir=None):
    """`signet support audit ARGS`: (rows, Result); rows None when a line is not a JSON object."""
    mark = bed.fake.mark()
    result = bed.signet.run(["support", "audit"] + list(args), bed.env(data_dir=data_dir))
    rows = []
    for line in result.out.splitlines():
        if line.strip():
            value = parse_json(line)
            if not isinstance(value, dict):
                return None, result
            rows.append(value)
    if result.code != 0 or bed.fake.since(mark):
        return None, result
    return rows, result


def login_names():
    names = {os.environ.get("USER"), os.environ.get("LOGNAME")}
    try:
        import pwd
        names.add(pwd.getpwuid(os.getuid()).pw_name)
    except (ImportError, KeyError):
        pass
    return {n for n in names if n}


def state_show(bed, otid):
    result = bed.signet.run(["state", "show", "--original-transaction-id", otid], {"SIGNET_DATA_DIR": bed.store_dir})
    value = parse_json(result.out) if result.code == 0 else None
    return value if isinstance(value, dict) else None


# ----------------------------------------------------------------------------- cases


SUBCOMMANDS = ("order", "refunds", "extend", "extend-all", "extend-status", "set-token", "app-transaction", "audit")


def case_help(bed):
    top = bed.signet.run(["support", "--help"], {})
    check("help: `signet support --help` exits 0 and lists every subcommand",
          top.code == 0 and all(re.search(rf"^\s+{s}\s", top.out, re.M) for s in SUBCOMMANDS), top.said())
    for sub in SUBCOMMANDS:
        result = bed.signet.run(["support", sub, "--help"], {})
        examples = result.out.split("Examples:", 1)[1] if "Examples:" in result.out else ""
        check(f"help: `signet support {sub} --help` exits 0 and shows an example (`signet support {sub} ...` under "
              "Examples:)", result.code == 0 and f"signet support {sub}" in examples, result.said())


def case_configuration(bed):
    mark = bed.fake.mark()
    result = bed.signet.run(["support", "app-transaction", bed.targets["order known"]],
                            bed.env(drop=("SIGNET_APPSTORE_KEY_ID",)))
    seen = bed.fake.since(mark)
    check("configuration: without SIGNET_APPSTORE_KEY_ID, `support app-transaction` exits 2 naming the variable, "
          "nothing sent", result.code == 2 and "SIGNET_APPSTORE_KEY_ID" in result.err and not seen,
          result.said(), seen_said(seen))


def transactions_of(printed):
    if isinstance(printed, dict) and isinstance(printed.get("transactions"), list):
        return printed["transactions"]
    return []


def has_id(item, tid):
    return tid in [str(v) for v in find_values(item, "transactionId")]


def state_agrees(sstate, stored, otid):
    if isinstance(sstate, str):
        return bool(sstate.strip())
    if not isinstance(sstate, dict) or not sstate or not isinstance(stored, dict):
        return False
    return all(str(v) == otid for v in find_values(sstate, "originalTransactionId")) and \
        sstate.get("entitled", stored.get("entitled")) == stored.get("entitled") and \
        sstate.get("expiresDate", stored.get("expiresDate")) == stored.get("expiresDate")


def case_order(bed):
    t = bed.targets
    known_id, unknown_id = t["order known"], t["order unknown"]
    known_tid = bed.fake.purchases[known_id].payload["transactionId"]
    unknown_tid = bed.fake.purchases[unknown_id].payload["transactionId"]
    stored = state_show(bed, known_id)
    database = os.path.join(bed.store_dir, "signet.sqlite")
    before = store_dump(database)
    result, seen = bed.cli(["order", ORDER])
    after = store_dump(database)
    printed = last_object(result.out)
    items = transactions_of(printed)
    known_item = next((i for i in items if has_id(i, known_tid)), None)
    unknown_item = next((i for i in items if has_id(i, unknown_tid)), None)
    check(f"order {ORDER} (Production): GET /inApps/v1/lookup/{ORDER}, exit 0, prints {{orderId, valid: true, "
          "transactions}} with both verified transactions (their transactionId, productId)",
          result.code == 0 and len(calls(seen, "GET", f"/inApps/v1/lookup/{ORDER}")) == 1 and isinstance(printed, dict)
          and printed.get("orderId") == ORDER and printed.get("valid") is True and len(items) == 2
          and known_item is not None and unknown_item is not None
          and PRODUCT in json.dumps(known_item) and "com.example.signet.coins.100" in json.dumps(unknown_item)
          and clean(seen), result.said(), seen_said(seen))
    sstate = known_item.get("signetState") if isinstance(known_item, dict) else None
    check("order: the transaction of a purchase the state store knows carries `signetState` (the docs give no shape: a "
          "non-empty value; when an object, agreeing with `signet state show` on entitled and expiresDate)",
          state_agrees(sstate, stored, known_id),
          f"signetState: {clip(json.dumps(sstate), 600)}", f"state show: {clip(json.dumps(stored), 600)}", result.said())
    active_state = sstate
    check("order leaves the state store as it was (docs: it is only read)", before is not None and before == after,
          "rows added or changed:\n" + "\n".join(clip(l, 400) for l in (after or []) if l not in set(before or []))[:2000])
    check("order: the transaction of a purchase the store does not know has no `signetState` (left out)",
          isinstance(unknown_item, dict) and "signetState" not in unknown_item, result.said())

    other_db = os.path.join(bed.store_dir, "signet.sqlite")
    result, seen = bed.cli(["order", ORDER, "--database", other_db], data_dir=bed.empty_dir)
    items = transactions_of(last_object(result.out))
    known_item = next((i for i in items if has_id(i, known_tid)), None)
    check("order --database FILE (SIGNET_DATA_DIR elsewhere, empty): the store named by --database is read: "
          "`signetState` for the known purchase", result.code == 0 and isinstance(known_item, dict)
          and state_agrees(known_item.get("signetState"), stored, known_id), result.said())

    expired_id = t["expired"]
    expired_tid = bed.fake.purchases[expired_id].payload["transactionId"]
    result, seen = bed.cli(["order", EXPIRED_ORDER])
    items = transactions_of(last_object(result.out))
    item = next((i for i in items if has_id(i, expired_tid)), None)
    exp_state = item.get("signetState") if isinstance(item, dict) else None
    check("order of a purchase the store knows as expired: exit 0, its `signetState` is there and differs from the "
          "active purchase's (it says what Signet knows)", result.code == 0 and exp_state not in (None, "", {})
          and exp_state != active_state and state_agrees(exp_state, state_show(bed, expired_id), expired_id),
          f"active purchase's signetState: {json.dumps(active_state)}", result.said())

    no_store = fresh_dir(bed)
    result, seen = bed.cli(["order", ORDER], data_dir=no_store)
    printed = last_object(result.out)
    check("order with no state store at all (an empty SIGNET_DATA_DIR): exit 0, both transactions, no `signetState`, "
          "and no store created", result.code == 0 and len(transactions_of(printed)) == 2
          and "signetState" not in json.dumps(printed) and not os.path.exists(os.path.join(no_store, "signet.sqlite"))
          and clean(seen), result.said(), seen_said(seen), f"files left: {sorted(os.listdir(no_store))}")

    refused_locally(bed, "order in Sandbox (SIGNET_ENVIRONMENT=Sandbox; Apple serves Look Up Order ID in Production "
                    "only)", ["order", ORDER], environment="Sandbox")

    result, seen = bed.cli(["order", "MX0NOTKNOWN"])
    printed = last_object(result.out)
    check("order of an id Apple does not know as this app's (200, status 1, no signedTransactions): exit 1, prints "
          "valid: false and no transaction",
          result.code == 1 and len(calls(seen, "GET", "/inApps/v1/lookup/MX0NOTKNOWN")) == 1
          and isinstance(printed, dict) and printed.get("valid") is False and not transactions_of(printed)
          and clean(seen), result.said(), seen_said(seen))

    what = "a transaction signed by a rogue PKI (fixtures' forged.ndjson)" if t["rogue from fixtures"] else \
        "a transaction signed by a key that is not the certified leaf's"
    result, seen = bed.cli(["order", FORGED_ORDER])
    printed = last_object(result.out)
    check(f"order whose answer holds {what} beside a genuine one: exit 1, nothing printed as if valid (no "
          "`valid: true`, neither transaction on stdout)",
          result.code == 1 and len(seen) >= 1 and not (isinstance(printed, dict) and printed.get("valid") is True)
          and known_tid not in result.out and t["forged tx id"] not in result.out, result.said(), seen_said(seen))
    result, seen = bed.cli(["order", OTHER_APP_ORDER])
    printed = last_object(result.out)
    check("order whose answer holds a transaction of another bundle id (com.attacker.app), genuinely signed: exit 1, "
          "nothing printed as valid", result.code == 1 and len(seen) >= 1 and "com.attacker.app" not in result.out
          and not (isinstance(printed, dict) and printed.get("valid") is True), result.said(), seen_said(seen))
    result, seen = bed.cli(["order", SANDBOX_ORDER])
    printed = last_object(result.out)
    check("order (Production) whose answer holds a genuinely signed transaction with environment Sandbox: it does not "
          "verify for Production (README: verification checks environment / bundle id / app id): exit 1, nothing "
          "printed as valid", result.code == 1 and len(seen) >= 1 and t["forged tx id"] not in result.out
          and not (isinstance(printed, dict) and printed.get("valid") is True), result.said(), seen_said(seen))


def case_refunds(bed):
    t = bed.targets
    customer = t["refunded"]
    # ask with a transaction id of the customer that is not the original one when there is one
    ids = [tid for tid, otid in bed.fake.transactions.items() if otid == customer]
    asked = ids[-1]
    result, seen = bed.cli(["refunds", asked])
    printed = last_object(result.out)
    pages = [s for s in seen if s.method == "GET" and s.path == f"/inApps/v2/refund/lookup/{asked}"]
    order = [next((str(v) for v in find_values(item, "transactionId")), None) for item in printed] \
        if isinstance(printed, list) else []
    revisions_ok = len(pages) == 3 and "revision" not in pages[0].query and all(
        p.query.get("revision") == [json.loads(prev.answer)["revision"]] for prev, p in zip(pages, pages[1:]))
    check("refunds ID (45 refunds at Apple): GET /inApps/v2/refund/lookup/{id} 3 times, the first without `revision`, "
          "each later one with the previous page's `revision`; exit 0",
          result.code == 0 and revisions_ok and clean(seen), result.said(), seen_said(seen))
    dates = [instant_ms(next(iter(find_values(item, "revocationDate")), None)) for item in printed] \
        if isinstance(printed, list) else []
    check("refunds: prints a JSON array of all 45 refunded transactions, oldest refund first, each with revocationDate "
          "and revocationReason", isinstance(printed, list) and order == t["refund ids"]
          and all(isinstance(i, dict) and find_values(i, "revocationReason") for i in printed)
          and dates == sorted(dates) and all(d is not None for d in dates),
          f"printed ids: {order[:5]}... ({len(order)})", f"expected: {t['refund ids'][:5]}... ({len(t['refund ids'])})",
          clip(result.out, 800))

    result, seen = bed.cli(["refunds", t["active"][1]])
    printed = last_object(result.out)
    check("refunds of a customer with none (Apple: an empty signedTransactions, hasMore false): exit 0, prints []",
          result.code == 0 and printed == [] and len(seen) == 1 and clean(seen), result.said(), seen_said(seen))

    apple_refuses(bed, "refunds of an id Apple does not know (TransactionIdNotFoundError)", ["refunds", t["never"]],
                  404, 4040010)

    result, seen = bed.cli(["refunds", t["forged refund customer"]])
    check("refunds whose answer holds a refund signed by a key that is not the certified leaf's beside a genuine one: "
          "exit 1, no refund printed", result.code == 1 and len(seen) >= 1 and t["refund ids"][0] not in result.out
          and not isinstance(last_object(result.out), list), result.said(), seen_said(seen))

    note("NOTE (not tested): `refunds --environment Sandbox` from a Production client goes to the Sandbox host; the "
         "docs name one base-URL override (SIGNET_APPSTORE_API_URL) and no Sandbox one, so it cannot be pointed at a "
         "fake without leaving 127.0.0.1 (the binary asks api.storekit-sandbox.apple.com then).")
    result, seen = bed.cli(["refunds", t["sandbox customer"]])
    check("refunds without --environment (Production) answered with Sandbox-signed transactions: they do not verify "
          "for Production (environment checked like notifications): exit 1, nothing printed as valid",
          result.code == 1 and str(t["sandbox customer"]) not in result.out, result.said(), seen_said(seen))

    result, seen = bed.cli(["refunds", t["sandbox customer"]], environment="Sandbox")
    printed = last_object(result.out)
    check("refunds with SIGNET_ENVIRONMENT=Sandbox: the Sandbox host, exit 0, 2 refunds",
          result.code == 0 and isinstance(printed, list) and len(printed) == 2
          and all(s.env == "Sandbox" for s in seen) and clean(seen), result.said(), seen_said(seen))
    refused_locally(bed, "refunds --environment Production from a Sandbox client (docs: a Production client may ask "
                    "Sandbox, never the reverse)", ["refunds", t["sandbox customer"], "--environment", "Production"],
                    environment="Sandbox")


def extend_body_ok(seen_one, days, reason, rid=None):
    body = seen_one.json() if seen_one else None
    if not isinstance(body, dict) or sorted(body) != ["extendByDays", "extendReasonCode", "requestIdentifier"]:
        return False
    if body["extendByDays"] != days or isinstance(body["extendByDays"], bool):
        return False
    if body["extendReasonCode"] != reason or not isinstance(body["extendReasonCode"], int) \
            or isinstance(body["extendReasonCode"], bool):
        return False
    if rid is not None and body["requestIdentifier"] != rid:
        return False
    return isinstance(body["requestIdentifier"], str) and 1 <= len(body["requestIdentifier"]) <= 128


def case_extend(bed):
    t, fake = bed.targets, bed.fake
    a = t["active"]
    path = lambda otid: f"/inApps/v1/subscriptions/extend/{otid}"  # noqa: E731

    # happy path, reason by name, default request id
    target = a[4]
    before = fake.purchases[target].expires
    result, seen = bed.cli(["extend", target, "--days", "7", "--reason", "service-issue"])
    puts = calls(seen, "PUT", path(target))
    printed = last_object(result.out)
    sent = puts[0].json() if puts else {}
    answer = json.loads(puts[0].answer) if puts and puts[0].status == 200 else {}
    fields = ("originalTransactionId", "requestIdentifier", "success", "effectiveDate", "webOrderLineItemId", "note")
    check("extend ID --days 7 --reason service-issue: one PUT /inApps/v1/subscriptions/extend/{id} whose body is "
          "exactly {extendByDays: 7, extendReasonCode: 3, requestIdentifier} (integers; a new UUID), "
          "Content-Type application/json; exit 0",
          result.code == 0 and len(puts) == 1 and extend_body_ok(puts[0], 7, 3)
          and UUID_ANY.fullmatch(str(sent.get("requestIdentifier"))) and clean(seen), result.said(), seen_said(seen))
    check("extend: prints {originalTransactionId, requestIdentifier, success, effectiveDate, webOrderLineItemId, note} "
          "with Apple's values and the request identifier it sent",
          isinstance(printed, dict) and all(f in printed for f in fields)
          and str(printed.get("originalTransactionId")) == target
          and printed.get("requestIdentifier") == sent.get("requestIdentifier") and printed.get("success") is True
          and same_instant(printed.get("effectiveDate"), before + 7 * DAY_MS)
          and str(printed.get("webOrderLineItemId")) == str(answer.get("webOrderLineItemId")),
          result.said(), f"Apple answered: {answer}")

    # reason by number, a custom request id; Apple's answer lost (the operator's Ctrl-C after a hang), the same
    # command again with the same --request-id: extended once
    target = a[5]
    rid = "ticket-4711/timeout retry"
    before = fake.purchases[target].expires
    command = ["support", "extend", target, "--days", "5", "--reason", "1", "--request-id", rid, "--operator", "alice"]
    mark = fake.mark()
    fake.delays[path(target)] = 30.0
    child, described = bed.signet.start(command, bed.env())
    sent = wait_until(lambda: any(s.path == path(target) and s.status for s in fake.since(mark)), 15, 0.05)
    time.sleep(0.3)
    child.send_signal(signal.SIGINT)
    try:
        code = child.wait(timeout=5)
    except subprocess.TimeoutExpired:
        child.kill()
        code = child.wait(timeout=5)
    out1, err1 = child.stdout.read().decode("utf-8", "replace"), child.stderr.read().decode("utf-8", "replace")
    seen1 = fake.since(mark)
    puts1 = calls(seen1, "PUT", path(target))
    check("extend --reason 1 (by number) --request-id 'ticket-4711/timeout retry': extendReasonCode 1 and that "
          "requestIdentifier sent unchanged", sent and len(puts1) == 1 and extend_body_ok(puts1[0], 5, 1, rid)
          and clean(seen1), f"ran: {described}", f"exit {code}", f"stdout: {clip(out1)}", f"stderr: {clip(err1)}",
          seen_said(seen1))
    rows, _ = audit(bed, "--purchase", target)
    check("the audit log holds the interrupted extension as `pending` (Apple not answered: the command stopped "
          "mid-call), recorded before Apple was asked", rows is not None and any(
              r.get("requestIdentifier") == rid and r.get("status") == "pending" for r in rows),
          f"audit rows: {clip(json.dumps(rows), 800)}")
    again, seen2 = bed.cli(["extend", target, "--days", "5", "--reason", "1", "--request-id", rid, "--operator", "alice"])
    p2 = last_object(again.out)
    puts2 = calls(seen2, "PUT", path(target))
    check("extend whose answer never came back (Apple extended; the operator pressed Ctrl-C), run again with the same "
          "--request-id (docs: 'runs the command again with the printed --request-id'): the same request reaches Apple "
          "again (same body), exit 0, Apple extended once (5 days, not 10), that effectiveDate printed",
          again.code == 0 and len(puts2) == 1 and puts1 and puts2[0].body == puts1[0].body
          and fake.purchases[target].expires == before + 5 * DAY_MS and isinstance(p2, dict)
          and same_instant(p2.get("effectiveDate"), before + 5 * DAY_MS), f"first run: exit {code}, stderr "
          f"{clip(err1, 400)}", again.said(), seen_said(seen2))
    third, seen3 = bed.cli(["extend", target, "--days", "5", "--reason", "1", "--request-id", rid, "--operator", "bob"])
    p3 = last_object(third.out)
    check("extend run once more with the same --request-id once it is done (by bob): exit 0, Apple not asked again, "
          "the recorded answer printed (the same effectiveDate) with who did it (alice)",
          third.code == 0 and not seen3 and fake.purchases[target].expires == before + 5 * DAY_MS
          and isinstance(p3, dict) and same_instant(p3.get("effectiveDate"), before + 5 * DAY_MS)
          and "alice" in third.out + third.err, third.said(), seen_said(seen3))
    refused_locally(bed, "extend of another purchase under a --request-id already recorded for this one (docs: "
                    "refused, exit 2)", ["extend", a[9], "--days", "5", "--reason",
                                         "1", "--request-id", rid])
    refused_locally(bed, "set-token under a --request-id already recorded for an extension (another action)",
                    ["set-token", target, lettered_uuid(), "--request-id", rid])

    # every reason name, boundary values
    for number, name in enumerate(("undeclared", "customer-satisfaction", "other", "service-issue")):
        target = t["unknown"][number]
        result, seen = bed.cli(["extend", target, "--days", "1" if number % 2 else "90", "--reason", name])
        puts = calls(seen, "PUT", path(target))
        check(f"extend --reason {name} --days {'1' if number % 2 else '90'} (a boundary): extendReasonCode {number} "
              "sent, exit 0", result.code == 0 and len(puts) == 1
              and extend_body_ok(puts[0], 1 if number % 2 else 90, number) and clean(seen), result.said(),
              seen_said(seen))
    rid128 = "r" * 120 + "-1234567"
    target = t["unknown"][4]
    result, seen = bed.cli(["extend", target, "--days", "3", "--reason", "other", "--request-id", rid128])
    puts = calls(seen, "PUT", path(target))
    check("extend --request-id of 128 characters (Apple's maximum): sent unchanged, exit 0",
          result.code == 0 and len(puts) == 1 and extend_body_ok(puts[0], 3, 2, rid128), result.said(), seen_said(seen))

    # the note for a purchase the store does not know
    target = t["unknown"][5]
    result, seen = bed.cli(["extend", target, "--days", "3", "--reason", "service-issue"])
    check("extend of a purchase the state store does not know: sent, exit 0, with a note (in `note` or on stderr) "
          "saying the store does not know it", result.code == 0 and len(calls(seen, "PUT", path(target))) == 1
          and re.search(UNKNOWN_NOTE, result.out + result.err, re.I), result.said(), seen_said(seen))
    target = a[6]
    no_store = fresh_dir(bed)
    result, seen = bed.cli(["extend", target, "--days", "3", "--reason", "service-issue"], data_dir=no_store)
    check("extend with no state store at all (an empty SIGNET_DATA_DIR): sent, exit 0, with the note",
          result.code == 0 and len(calls(seen, "PUT", path(target))) == 1
          and re.search(UNKNOWN_NOTE, result.out + result.err, re.I), result.said(), seen_said(seen))
    rows, listed = audit(bed, data_dir=no_store)
    sent_rid = (last_object(result.out) or {}).get("requestIdentifier") if isinstance(last_object(result.out), dict) \
        else None
    check("extend with no state store: one is created holding the audit log (docs: 'created when there is none'): "
          "`support audit` lists the action done", os.path.exists(os.path.join(no_store, "signet.sqlite"))
          and rows is not None and any(r.get("requestIdentifier") == sent_rid and r.get("status") == "done"
                                       and r.get("action") == "extend" for r in rows),
          f"files in {no_store}: {sorted(os.listdir(no_store))}", listed.said())

    target = a[7]
    state_before = state_show(bed, target)
    result, seen = bed.cli(["extend", target, "--days", "3", "--reason", "service-issue", "--operator", "dana"])
    printed = last_object(result.out)
    puts = calls(seen, "PUT", path(target))
    check("extend of an active purchase the store knows: exit 0, and no note claiming the store does not know it",
          result.code == 0 and not re.search(UNKNOWN_NOTE, result.out + result.err, re.I), result.said())
    state_after = state_show(bed, target)
    check("extend does not touch the purchase's state (docs: Signet's state changes when RENEWAL_EXTENDED arrives; "
          "until then the old expiry): `signet state show` is the same before and after",
          state_before is not None and state_before == state_after,
          f"before: {clip(json.dumps(state_before), 500)}", f"after: {clip(json.dumps(state_after), 500)}")
    rows, listed = audit(bed, "--purchase", target)
    rid = printed.get("requestIdentifier") if isinstance(printed, dict) else None
    row = next((r for r in rows or [] if r.get("requestIdentifier") == rid), None)
    params = as_json(row.get("parameters")) if row else None
    answer = as_json(row.get("answer")) if row else None
    check("the audit log records the extension: `support audit --purchase ID` prints one JSON object a line with "
          "requestIdentifier, actor (--operator dana), action extend, originalTransactionId, parameters (the body sent), "
          "at, status done, answer (Apple's) and answeredAt",
          row is not None and row.get("actor") == "dana" and row.get("action") == "extend"
          and str(row.get("originalTransactionId")) == target and puts and params == puts[0].json()
          and isinstance(answer, dict) and answer.get("effectiveDate") == json.loads(puts[0].answer)["effectiveDate"]
          and row.get("status") == "done" and instant_ms(row.get("at")) is not None
          and instant_ms(row.get("answeredAt")) is not None and instant_ms(row["at"]) <= instant_ms(row["answeredAt"]),
          listed.said(), seen_said(seen))

    # limits refused before sending
    target = a[0]
    refused_locally(bed, "extend --days 0", ["extend", target, "--days", "0", "--reason", "service-issue"])
    refused_locally(bed, "extend --days 91", ["extend", target, "--days", "91", "--reason", "service-issue"])
    refused_locally(bed, "extend --reason goodwill (not one of Apple's reasons)",
                    ["extend", target, "--days", "7", "--reason", "goodwill"])
    refused_locally(bed, "extend --reason 4 (Apple's codes are 0 to 3)", ["extend", target, "--days", "7", "--reason", "4"])
    refused_locally(bed, "extend --request-id of 129 characters",
                    ["extend", target, "--days", "7", "--reason", "other", "--request-id", "r" * 129])
    refused_locally(bed, "extend --request-id '' (0 characters)",
                    ["extend", target, "--days", "7", "--reason", "other", "--request-id", ""])
    refused_locally(bed, "extend without --reason", ["extend", target, "--days", "7"])

    # the store's state check
    for label, key, words in (("expired", "expired", r"expir"), ("refunded", "refunded", r"refund|revok"),
                              ("a family member's copy (FAMILY_SHARED, revoked)", "family", r"family|FAMILY_SHARED|revok"),
                              ("not an auto-renewable subscription (a consumable)", "consumable",
                               r"auto-renew|subscription|consumable"),
                              ("in billing retry", "billing retry", r"billing|retry")):
        result, seen = bed.cli(["extend", t[key], "--days", "7", "--reason", "service-issue"])
        check(f"the store's state check: extend of a purchase the store knows as {label}: exit 2 saying why "
              f"(/{words}/), nothing sent", result.code == 2 and not seen and re.search(words, result.err, re.I),
              result.said(), seen_said(seen))
    result, seen = bed.cli(["extend", t["grace"], "--days", "7", "--reason", "service-issue"])
    check("the store's state check: extend of a purchase in a billing grace period whose expiresDate has passed "
          "(docs: 'in a grace period past its expiry'; Apple: grace period with an expiration date in the past): exit "
          "2, nothing sent", result.code == 2 and not seen, result.said(), seen_said(seen))

    result, seen = bed.cli(["extend", t["expired"], "--days", "7", "--reason", "service-issue", "--skip-state-check"])
    both = result.out + result.err
    check("extend --skip-state-check of the expired purchase: sent anyway; Apple's 403 4030004 exits 1 naming 4030004 "
          "and explaining (not active / expired / billing retry / grace / 365 days)",
          len(calls(seen, "PUT", path(t["expired"]))) == 1 and result.code == 1 and "4030004" in both
          and re.search(r"eligib|active|expired|billing|grace|365|free", both, re.I), result.said(), seen_said(seen))
    result, seen = bed.cli(["extend", t["family"], "--days", "7", "--reason", "service-issue", "--skip-state-check"])
    both = result.out + result.err
    check("extend --skip-state-check of the family member's copy: sent; Apple's 403 4030007 exits 1 naming 4030007 and "
          "saying to extend the purchaser's",
          len(calls(seen, "PUT", path(t["family"]))) == 1 and result.code == 1 and "4030007" in both
          and re.search(r"purchaser|family", both, re.I), result.said(), seen_said(seen))

    rid = "refused-then-again-" + uuid.uuid4().hex[:6]
    first, seen1 = bed.cli(["extend", t["expired"], "--days", "7", "--reason", "other", "--skip-state-check",
                            "--request-id", rid])
    again, seen2 = bed.cli(["extend", t["expired"], "--days", "7", "--reason", "other", "--skip-state-check",
                            "--request-id", rid])
    puts1, puts2 = calls(seen1, "PUT", path(t["expired"])), calls(seen2, "PUT", path(t["expired"]))
    rows, _ = audit(bed, "--purchase", t["expired"])
    check("an extension Apple refused (4030004), run again with the same --request-id: recorded `refused`, and Apple is "
          "asked again with the same body (docs: while pending, refused or failed, Apple is asked again)",
          first.code == 1 and again.code == 1 and len(puts1) == 1 and len(puts2) == 1 and puts1[0].body == puts2[0].body
          and rows is not None and any(r.get("requestIdentifier") == rid and r.get("status") == "refused" for r in rows),
          first.said(), again.said(), f"audit rows: {clip(json.dumps(rows), 600)}")

    # two done extensions within 365 days, counted from the log
    target = a[4]  # extended once above
    result, seen = bed.cli(["extend", target, "--days", "2", "--reason", "other"])
    check("a second extension of the same purchase: sent, exit 0", result.code == 0
          and len(calls(seen, "PUT", path(target))) == 1, result.said(), seen_said(seen))
    result, seen = bed.cli(["extend", target, "--days", "2", "--reason", "other"])
    check("a third extension within 365 days (two `done` in the audit log): refused before sending, exit 2 saying why "
          "(twice / 365 days), nothing sent", result.code == 2 and not seen
          and re.search(r"twice|two|365|2 ", result.err, re.I), result.said(), seen_said(seen))
    result, seen = bed.cli(["extend", target, "--days", "2", "--reason", "other", "--skip-state-check"])
    check("the third with --skip-state-check: sent anyway (Apple has the last word); Apple's 4030005 exits 1",
          len(calls(seen, "PUT", path(target))) == 1 and result.code == 1 and "4030005" in result.out + result.err,
          result.said(), seen_said(seen))

    blocker = os.path.join(bed.root, "a-file")
    with open(blocker, "w") as file:
        file.write("not a directory\n")
    unrecordable = os.path.join(blocker, "signet.sqlite")
    refused_locally(bed, "extend when the action cannot be recorded (--database under a regular file; docs: an "
                    "action nobody can account for is not taken)",
                    ["extend", t["unknown"][7], "--days", "2", "--reason", "other", "--database", unrecordable])
    refused_locally(bed, "set-token when the action cannot be recorded",
                    ["set-token", t["unknown"][7], lettered_uuid(), "--database", unrecordable])
    refused_locally(bed, "extend-all when the action cannot be recorded",
                    ["extend-all", "--product", PRODUCT, "--days", "2", "--reason", "other", "--database", unrecordable])

    # Apple's refusals
    apple_refuses(bed, "extend of a purchase in a free trial (the store knows it active; Apple: ineligible)",
                  ["extend", t["free trial"][0], "--days", "7", "--reason", "service-issue"], 403, 4030004,
                  r"eligib|free|active|paid|365")
    apple_refuses(bed, "extend of a family member's copy the store does not know (FamilySharedSubscriptionExtension"
                  "IneligibleError)", ["extend", t["unknown family"], "--days", "7", "--reason", "service-issue"],
                  403, 4030007, r"purchaser|family")
    apple_refuses(bed, "extend of a purchase extended twice within 365 days (SubscriptionMaxExtensionError)",
                  ["extend", t["maxed"], "--days", "7", "--reason", "service-issue"], 403, 4030005,
                  r"max|twice|two|365")
    apple_refuses(bed, "extend of an id Apple does not know (OriginalTransactionIdNotFoundError)",
                  ["extend", t["never"], "--days", "7", "--reason", "service-issue"], 404, 4040005,
                  r"not found|environment|sandbox|production")

    # a retryable error: retried with the same body, extended once
    target = t["unknown"][6]
    before = fake.purchases[target].expires
    fake.injected.append(("PUT", path(target), 500, 5000001))
    result, seen = bed.cli(["extend", target, "--days", "4", "--reason", "other"])
    puts = calls(seen, "PUT", path(target))
    check("extend answered 500 5000001 (retryable) first: retried with the same body (same requestIdentifier), exit 0, "
          "extended once", result.code == 0 and len(puts) == 2 and puts[0].body == puts[1].body
          and puts[1].status == 200 and fake.purchases[target].expires == before + 4 * DAY_MS, result.said(),
          seen_said(seen))


def mass_calls(seen):
    return [s for s in seen if s.path.startswith(MASS)]


def case_mass(bed):
    fake = bed.fake
    # without --wait: UPPER-case UUID, storefronts
    rid = lettered_uuid()
    fake.mass_complete_after = 99
    result, seen = bed.cli(["extend-all", "--product", PRODUCT, "--days", "3", "--reason", "service-issue",
                            "--storefronts", "USA,FRA", "--request-id", rid.upper()])
    posts = calls(seen, "POST", MASS)
    body = posts[0].json() if posts else None
    check("extend-all --product P --days 3 --reason service-issue --storefronts USA,FRA --request-id UPPER-CASE UUID: "
          "one POST /inApps/v1/subscriptions/extend/mass with exactly {requestIdentifier (lower-case), extendByDays 3, "
          "extendReasonCode 3, productId, storefrontCountryCodes [USA, FRA]}; exit 0",
          result.code == 0 and len(posts) == 1 and body == {"requestIdentifier": rid, "extendByDays": 3,
                                                            "extendReasonCode": 3, "productId": PRODUCT,
                                                            "storefrontCountryCodes": ["USA", "FRA"]}
          and clean(seen), result.said(), seen_said(seen))
    status = last_object(result.out)
    check("extend-all: the request identifier on stderr, the status on stdout ({requestIdentifier, complete: false})",
          rid in result.err.lower() and isinstance(status, dict) and str(status.get("requestIdentifier")).lower() == rid
          and status.get("complete") is False, result.said(), seen_said(seen))

    result, seen = bed.cli(["extend-all", "--product", PRODUCT, "--days", "3", "--reason", "service-issue",
                            "--storefronts", "USA,FRA", "--request-id", rid], USER="erin", LOGNAME="erin")
    posts = calls(seen, "POST", MASS)
    rows, listed = audit(bed)
    row = [r for r in rows or [] if str(r.get("requestIdentifier")).lower() == rid]
    check("the audit log records extend-all: action extend_all, productId, actor the login name (no --operator, no "
          "SIGNET_OPERATOR; USER=LOGNAME=erin, or the account's name), parameters = the body sent, status done",
          len(row) == 1 and row[0].get("action") == "extend_all" and row[0].get("productId") == PRODUCT
          and row[0].get("actor") in login_names() | {"erin"} and as_json(row[0].get("parameters")) == (posts[0].json() if posts
                                                                                           else None)
          and row[0].get("status") == "done", f"login names: {sorted(login_names() | {'erin'})}",
          f"the row: {json.dumps(row)}", listed.said())
    check("extend-all again with the same --request-id: Apple answers 200, exit 0, one extension at Apple (nobody "
          "extended twice)", result.code == 0 and len(posts) == 1 and posts[0].status == 200
          and fake.mass[rid]["posts"] == 2 and len([k for k in fake.mass if k == rid]) == 1, result.said(),
          seen_said(seen))

    result, seen = bed.cli(["extend-status", "--product", PRODUCT, "--request-id", rid.upper()])
    gets = calls(seen, "GET", f"{MASS}/{PRODUCT}/{rid}")
    status = last_object(result.out)
    check("extend-status --product P --request-id UPPER-CASE (in progress): GET .../extend/mass/{product}/{lower-case "
          "id}, exit 0, prints {requestIdentifier, complete: false}",
          result.code == 0 and len(gets) == 1 and isinstance(status, dict) and status.get("complete") is False
          and str(status.get("requestIdentifier")).lower() == rid and clean(seen), result.said(), seen_said(seen))

    # no storefronts: the field is left out (all storefronts)
    rid2 = lettered_uuid()
    result, seen = bed.cli(["extend-all", "--product", PRODUCT, "--days", "1", "--reason", "0", "--request-id", rid2])
    posts = calls(seen, "POST", MASS)
    body = posts[0].json() if posts else {}
    check("extend-all without --storefronts, --reason 0: storefrontCountryCodes left out (all storefronts), "
          "extendReasonCode 0; exit 0", result.code == 0 and len(posts) == 1 and isinstance(body, dict)
          and "storefrontCountryCodes" not in body and body.get("extendReasonCode") == 0, result.said(), seen_said(seen))
    result, seen = bed.cli(["extend-all", "--product", PRODUCT, "--days", "2", "--reason", "other"])
    posts = calls(seen, "POST", MASS)
    sent_rid = (posts[0].json() or {}).get("requestIdentifier") if posts else None
    check("extend-all without --request-id: a new lower-case UUID sent and printed on stderr",
          result.code == 0 and sent_rid and UUID_LOWER.match(sent_rid) and sent_rid in result.err.lower(),
          result.said(), seen_said(seen))

    base = ["extend-all", "--product", PRODUCT, "--days", "3", "--reason", "service-issue"]
    refused_locally(bed, "extend-all --request-id batch-2026-12 (not a UUID)", base + ["--request-id", "batch-2026-12"])
    refused_locally(bed, "extend-all --storefronts US (alpha-2, not ISO 3166-1 alpha-3)", base + ["--storefronts", "US"])
    refused_locally(bed, "extend-all --storefronts '' (an empty list; Apple's 4000027)", base + ["--storefronts", ""])
    refused_locally(bed, "extend-all --storefronts USA,U5A (a code that is not three letters)",
                    base + ["--storefronts", "USA,U5A"])
    refused_locally(bed, "extend-all --days 91", ["extend-all", "--product", PRODUCT, "--days", "91", "--reason", "other"])
    refused_locally(bed, "extend-all --days 0", ["extend-all", "--product", PRODUCT, "--days", "0", "--reason", "other"])
    refused_locally(bed, "extend-all --reason refund", ["extend-all", "--product", PRODUCT, "--days", "3", "--reason",
                                                        "refund"])
    refused_locally(bed, "extend-all --product '' (Apple: productId required)",
                    ["extend-all", "--product", "", "--days", "3", "--reason", "other"])
    refused_locally(bed, "extend-status --request-id not-a-uuid",
                    ["extend-status", "--product", PRODUCT, "--request-id", "not-a-uuid"])
    apple_refuses(bed, "extend-status of a pair Apple does not know (StatusRequestNotFoundError)",
                  ["extend-status", "--product", PRODUCT, "--request-id", lettered_uuid()], 404, 4040009)
    apple_refuses(bed, "extend-status with the right id and another product (StatusRequestNotFoundError)",
                  ["extend-status", "--product", "com.example.signet.premium.yearly", "--request-id", rid], 404, 4040009)


def gaps(seen):
    return [b.at - a.at for a, b in zip(seen, seen[1:])]


def case_mass_wait(bed):
    fake = bed.fake
    fake.mass_complete_after = 3
    rid = lettered_uuid()
    result, seen = bed.cli(["extend-all", "--product", PRODUCT, "--days", "3", "--reason", "customer-satisfaction",
                            "--request-id", rid, "--wait", "--poll-interval", "1s"], timeout=40)
    mass = mass_calls(seen)
    gets = [s for s in mass if s.method == "GET"]
    status = last_object(result.out)
    entry = fake.mass.get(rid, {})
    check("extend-all --wait --poll-interval 1s (Apple completes at the 3rd status answer): polls GET "
          ".../extend/mass/{product}/{id} until complete, exit 0, prints {requestIdentifier, complete: true, "
          "completeDate, succeededCount 41, failedCount 2}",
          result.code == 0 and len(gets) == 3 and isinstance(status, dict) and status.get("complete") is True
          and same_instant(status.get("completeDate"), entry.get("completeDate") or 0)
          and status.get("succeededCount") == 41 and status.get("failedCount") == 2 and clean(seen),
          result.said(), seen_said(seen))
    err_lines = [l for l in result.err.splitlines() if l.strip()]
    check("extend-all --wait: the request identifier first on stderr, then one line per status answer (>= 3 lines)",
          err_lines and rid in err_lines[0].lower() and len(err_lines) >= 1 + len(gets), result.said())
    spacing = gaps(mass)
    check("rate (Production): the mass-extension endpoint and its status share 1 request a second: the POST and the "
          "polls of one --wait run arrive at least 0.5 s apart (the client spaces them 1 s; arrival jitters on a loaded machine)",
          len(mass) >= 2 and all(g >= 0.5 for g in spacing),
          "gaps (s): " + ", ".join(f"{g:.3f}" for g in spacing), seen_said(seen))

    # a poll interval below Apple's rate: refused, or held to one a second by the budget
    fake.mass[rid]["polls"] = 0
    fake.mass[rid]["completeDate"] = None
    fake.mass[rid]["complete_after"] = 4
    result, seen = bed.cli(["extend-status", "--product", PRODUCT, "--request-id", rid, "--wait",
                            "--poll-interval", "200ms"], timeout=40)
    spacing = gaps(mass_calls(seen))
    note(f"extend-status --wait --poll-interval 200ms: exit {result.code}, {len(seen)} requests, gaps "
         + ", ".join(f"{g:.3f}" for g in spacing))
    check("rate: extend-status --wait --poll-interval 200ms (faster than Apple's 1/s): either refused before sending "
          "(exit 2) or its polls still arrive at least 0.5 s apart, ending complete (exit 0)",
          (result.code == 2 and not seen) or (result.code == 0 and len(seen) >= 2 and all(g >= 0.5 for g in spacing)),
          result.said(), "gaps (s): " + ", ".join(f"{g:.3f}" for g in spacing))

    # interrupted --wait, resumed with extend-status --wait
    fake.mass_complete_after = 10_000
    rid = lettered_uuid()
    child, command = bed.signet.start(["support", "extend-all", "--product", PRODUCT, "--days", "2", "--reason",
                                       "service-issue", "--request-id", rid.upper(), "--wait", "--poll-interval", "1s"],
                                      bed.env())
    lines = Lines(child.stderr)
    polled = wait_until(lambda: fake.mass.get(rid, {}).get("polls", 0) >= 1, 15, 0.05)
    printed_first = rid in lines.text().lower()
    child.send_signal(signal.SIGINT)
    try:
        code = child.wait(timeout=15)
    except subprocess.TimeoutExpired:
        stop(child)
        code = None
    child.stdout.read()
    lines.thread.join(timeout=5)
    check("extend-all --wait interrupted (SIGINT) while Apple works: the request identifier was on stderr before the "
          "first status answer came back, and the process ends",
          polled and printed_first and code is not None, f"ran: {command}", f"exit {code}",
          f"stderr: {clip(lines.text())}")
    if rid in fake.mass:
        fake.mass[rid]["complete_after"] = fake.mass[rid]["polls"] + 2
    result, seen = bed.cli(["extend-status", "--product", PRODUCT, "--request-id", rid, "--wait", "--poll-interval",
                            "1s"], timeout=40)
    status = last_object(result.out)
    check("resumed: extend-status --product P --request-id ID --wait: polls until complete, exit 0, prints complete: "
          "true with the counts; no new mass extension sent",
          result.code == 0 and isinstance(status, dict) and status.get("complete") is True
          and status.get("succeededCount") == 41 and status.get("failedCount") == 2
          and not calls(seen, "POST", MASS) and fake.mass.get(rid, {}).get("posts") == 1 and clean(seen),
          result.said(), seen_said(seen))


def case_set_token(bed):
    t, fake = bed.targets, bed.fake
    target = t["active"][0]
    token = lettered_uuid()
    result, seen = bed.cli(["set-token", target, token.upper()], SIGNET_OPERATOR="carol")
    puts = calls(seen, "PUT", f"/inApps/v1/transactions/{target}/appAccountToken")
    check("set-token ORIGINAL_ID UPPER-CASE-UUID: one PUT /inApps/v1/transactions/{id}/appAccountToken with exactly "
          "{\"appAccountToken\": lower-case}, Apple's 200 with no body, exit 0, a line saying what was set",
          result.code == 0 and len(puts) == 1 and puts[0].json() == {"appAccountToken": token}
          and fake.purchases[target].token == token and result.out.strip() and
          (token in result.out.lower() or target in result.out) and clean(seen), result.said(), seen_said(seen))
    rows, listed = audit(bed, "--purchase", target)
    row = next((r for r in rows or [] if r.get("action") == "set_token"), None)
    check("the audit log records set-token: action set_token, actor carol (SIGNET_OPERATOR), parameters "
          "{appAccountToken: lower-case}, status done", row is not None and row.get("actor") == "carol"
          and as_json(row.get("parameters")) == {"appAccountToken": token} and row.get("status") == "done"
          and str(row.get("originalTransactionId")) == target, listed.said())
    refused_locally(bed, "set-token with a token that is not a UUID", ["set-token", target, "customer-42"])
    refused_locally(bed, "set-token with a 35-character almost-UUID",
                    ["set-token", target, "5E1F7C2A-0D3B-4C8E-9A61-7F2B3C4D5E6"])
    apple_refuses(bed, "set-token on a transaction id that is not the originalTransactionId "
                  "(TransactionIdIsNotOriginalTransactionIdError)", ["set-token", t["non-original"], lettered_uuid()],
                  400, 4000187, r"original")
    apple_refuses(bed, "set-token on a family member's copy (FamilyTransactionNotSupportedError)",
                  ["set-token", t["family"], lettered_uuid()], 400, 4000185, r"family")
    apple_refuses(bed, "set-token on an id Apple does not know (OriginalTransactionIdNotFoundError)",
                  ["set-token", t["never"], lettered_uuid()], 404, 4040005)


def case_app_transaction(bed):
    t = bed.targets
    known = t["order known"]
    tid = [x for x, o in bed.fake.transactions.items() if o == known][-1]
    result, seen = bed.cli(["app-transaction", tid])
    printed = last_object(result.out)
    want = t["app payload"]
    check("app-transaction ID: GET /inApps/v1/transactions/appTransactions/{id}, exit 0, prints the verified payload "
          "(appTransactionId, originalPurchaseDate, originalApplicationVersion, bundleId as signed)",
          result.code == 0 and len(calls(seen, "GET", f"/inApps/v1/transactions/appTransactions/{tid}")) == 1
          and isinstance(printed, dict) and str(printed.get("appTransactionId")) == str(want["appTransactionId"])
          and same_instant(printed.get("originalPurchaseDate"), want["originalPurchaseDate"])
          and printed.get("originalApplicationVersion") == want["originalApplicationVersion"]
          and printed.get("bundleId") == BUNDLE and clean(seen), result.said(), seen_said(seen))
    apple_refuses(bed, "app-transaction for a customer with no app transaction (AppTransactionDoesNotExistError)",
                  ["app-transaction", t["no app tx"]], 404, 4040019)
    result, seen = bed.cli(["app-transaction", t["forged app tx"]])
    check("app-transaction whose answer is signed by a key that is not the certified leaf's: exit 1, nothing printed "
          "as if valid", result.code == 1 and len(seen) == 1 and str(want["appTransactionId"]) not in result.out
          and last_object(result.out) is None, result.said(), seen_said(seen))
    result, seen = bed.cli(["app-transaction", t["other app tx"]])
    check("app-transaction signed genuinely but for another app Apple ID (SIGNET_APP_APPLE_ID is set): exit 1, nothing "
          "printed as if valid", result.code == 1 and last_object(result.out) is None, result.said(), seen_said(seen))
    result, seen = bed.cli(["app-transaction", t["sandbox app tx"]])
    check("app-transaction (Production) answered with a genuinely signed app transaction whose receiptType is Sandbox: "
          "it does not verify for Production: exit 1, nothing printed as if valid",
          result.code == 1 and last_object(result.out) is None, result.said(), seen_said(seen))


def case_beside_run(bed):
    """The service keeps running while support answers a customer: `signet run` holds the SQLite store (one writer);
    `order` and `extend` only read it (docs/support.md), as `signet state` and `signet entitlements` may."""
    fixture_env = dict(read_fixtures_env(bed.fixtures), SIGNET_DATA_DIR=bed.store_dir)
    service = subprocess.Popen([bed.signet.binary, "run"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, env=bed.signet.env(fixture_env), cwd=bed.root)
    CHILDREN.append(service)
    try:
        time.sleep(1.5)  # let it open (and lock) the store
        running = service.poll() is None
        t = bed.targets
        result, seen = bed.cli(["order", ORDER])
        items = transactions_of(last_object(result.out))
        known_tid = bed.fake.purchases[t["order known"]].payload["transactionId"]
        item = next((i for i in items if has_id(i, known_tid)), None)
        check("while `signet run` holds the store: `support order` exits 0 with `signetState` for the known purchase",
              running and result.code == 0 and isinstance(item, dict) and item.get("signetState") not in (None, ""),
              f"signet run still running: {service.poll() is None}", result.said(), seen_said(seen))
        target = t["active"][8]
        result, seen = bed.cli(["extend", target, "--days", "2", "--reason", "service-issue"])
        check("while `signet run` holds the store: `support extend` of an active purchase the store knows exits 0 and is "
              "sent", running and result.code == 0
              and len(calls(seen, "PUT", f"/inApps/v1/subscriptions/extend/{target}")) == 1, result.said(),
              seen_said(seen))
    finally:
        try:
            service.stdin.close()
        except OSError:
            pass
        try:
            service.wait(timeout=20)
        except subprocess.TimeoutExpired:
            stop(service)


def case_audit_export(bed):
    rows, listed = audit(bed, "--since", "1h")
    ats = [instant_ms(r.get("at")) for r in rows or []]
    check("support audit --since 1h: exit 0, one JSON object a line, every action of this run (extend, extend_all, "
          "set_token), oldest first, each with requestIdentifier, actor, action, parameters, at, status",
          rows is not None and {"extend", "extend_all", "set_token"} <= {r.get("action") for r in rows}
          and all(a is not None for a in ats) and ats == sorted(ats)
          and all(all(k in r for k in ("requestIdentifier", "actor", "action", "parameters", "at", "status"))
                  for r in rows), clip(listed.said(), 3000))
    purchase = bed.targets["active"][7]
    rows, listed = audit(bed, "--purchase", purchase)
    check("support audit --purchase ID: only that purchase's actions", rows is not None and rows and all(
        str(r.get("originalTransactionId")) == purchase for r in rows), listed.said())
    empty = fresh_dir(bed)
    rows, listed = audit(bed, data_dir=empty)
    check("support audit with no state store (it is no action): nothing printed, exit 0, or exit 2 saying there is no "
          "store (as `signet state` does); no store created",
          ((rows == [] and not listed.out.strip()) or (listed.code == 2 and not listed.out.strip()
                                                         and re.search(r"database|store|sqlite", listed.err, re.I)))
          and not os.path.exists(os.path.join(empty, "signet.sqlite")), listed.said())
    unset = bed.signet.run(["support", "extend", bed.targets["unknown"][7], "--days", "1", "--reason", "other"],
                           bed.env(), timeout=60)
    rows, listed = audit(bed, "--purchase", bed.targets["unknown"][7])
    actors = sorted({str(r.get("actor")) for r in rows or []})
    note(f"actor recorded with no --operator, no SIGNET_OPERATOR and USER/LOGNAME as this script's environment has "
         f"them (USER={os.environ.get('USER')!r}, LOGNAME={os.environ.get('LOGNAME')!r}, account "
         f"{sorted(login_names())}): {actors} (extend exit {unset.code})")


def case_no_violations(bed):
    broke = bed.fake.violations()
    check("the fake Apple saw no request breaking a rule the client promises to check (JWT, bodies, ranges, lower-case "
          "identifiers, Production-only endpoint)", not broke, "\n".join(s.line() for s in broke[:20]))
    note(f"the fake Apple answered {bed.fake.mark()} requests")


# ----------------------------------------------------------------------------- main


def main():
    binary = signet_binary(sys.argv)
    if binary is None:
        return 2
    root = tempfile.mkdtemp(prefix="signet-support-cli-")
    signet = Signet(binary, root)

    arm_time_limit(TIME_LIMIT)
    started = time.monotonic()
    could_not_run = []
    bed = None
    try:
        bed = Bed(signet, root)
        bed.fake.start()
        try:
            setup(bed)
        except CannotRun as error:
            could_not_run.append("setup: fixtures, the state store and the fake's purchases")
            check(could_not_run[-1], False, str(error))
            raise
        cases = [("help", case_help), ("configuration", case_configuration), ("order", case_order),
                 ("refunds", case_refunds), ("extend", case_extend), ("extend-all", case_mass),
                 ("extend-all --wait", case_mass_wait), ("set-token", case_set_token),
                 ("app-transaction", case_app_transaction), ("beside signet run", case_beside_run),
                 ("audit export", case_audit_export),
                 ("violations", case_no_violations)]
        for label, case in cases:
            try:
                case(bed)
            except OutOfTime:
                raise
            except Exception:  # a broken case must not hide the others
                import traceback
                check(f"case {label} ran to its end", False, traceback.format_exc())
    except OutOfTime:
        check(f"the checks finished within {TIME_LIMIT} s", False, "stopped: out of time")
    except CannotRun:
        pass
    finally:
        signal.alarm(0)
        for process in CHILDREN:
            stop(process)
        if bed is not None:
            bed.fake.stop()
        shutil.rmtree(root, ignore_errors=True)
    failed = [name for name, ok in RESULTS if not ok]
    print(f"# {len(RESULTS)} checks, {len(failed)} failed, {time.monotonic() - started:.1f} s", flush=True)
    if not RESULTS or (failed and set(failed) <= set(could_not_run)):
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
