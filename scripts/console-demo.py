#!/usr/bin/env python3
"""The support console (docs/console.md) on demo data, in a minute, all on this machine.

    python3 scripts/console-demo.py [SIGNET] [--dir DIR] [--port PORT]

SIGNET is the binary (default .build/debug/signet, else .build/release/signet). In DIR (default
.build/console-demo, made afresh on each run) it makes `signet fixtures` (Production, with their
private test PKI), an operator and a read-only credential (`signet console credential`), an In-App
Purchase key and a webhook pipeline with a `console:` section; starts a fake App Store answering
the console's calls to Apple (Look Up Order ID, Get Transaction Info, Extend a Subscription Renewal
Date, Set App Account Token) with transactions signed by the fixtures' PKI, checking every
request's JWT; starts `signet run` with the In-App Purchase key variables pointing at the fake;
posts the fixtures' notifications and a few customers in telling states (active with an order ID,
two purchases in one order, billing retry, grace period, refunded, consent withdrawn), forged
notifications and one signed in the future (dead letters, one of which replays once its date is
in range); then prints the console's address, the two tokens and what to try, and waits. Ctrl-C
stops everything.

An extension granted by the fake is followed, 10 seconds later, by the RENEWAL_EXTENDED
notification Apple would send, posted to the webhook: the console shows the extension pending
until then. The fake and the set-up are shared with the console's browser tests
(Tests/Acceptance/fake_appstore.py).
"""

import argparse
import datetime
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "Tests", "Acceptance"))

if importlib.util.find_spec("cryptography") is None:  # the fake signs and checks ES256
    print("console-demo: this script needs Python's `cryptography` package (apt install python3-cryptography)",
          file=sys.stderr)
    sys.exit(2)

from harness import CannotRun, OfferKey, Result, free_port, jws_payload, now_ms, parse_json, wait_until  # noqa: E402
from fake_appstore import (  # noqa: E402
    DAY_MS, FakeApple, Fixtures, console_run_env, lettered_uuid, make_credential, new_id, send_notification,
    write_credentials, write_pipeline,
)

MARKER = ".signet-console-demo"
OPERATOR, READER = "alice", "helpdesk"
PRODUCT = "com.example.signet.premium.monthly"
ORDER_ONE, ORDER_TWO = "MK5DEMO7QH", "MK7DEMO2PR"
RENEWAL_EXTENDED_AFTER = 10  # seconds


def fail(message, code=1):
    print(f"console-demo: {message}", file=sys.stderr)
    sys.exit(code)


def find_binary(given):
    candidates = [given, os.path.join(ROOT, given)] if given else [os.path.join(ROOT, ".build", "debug", "signet"),
                                        os.path.join(ROOT, ".build", "release", "signet")]
    for path in candidates:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.abspath(path)
    if given:
        fail(f"not an executable: {given}", 2)
    fail("no signet binary in .build/debug or .build/release: build it first (swift build --product signet), or "
         "name it: python3 scripts/console-demo.py PATH-TO-SIGNET", 2)


def fresh_folder(folder):
    """Empties `folder` when it is an earlier demo's (it holds MARKER) or does not exist; refuses
    any other non-empty folder."""
    if os.path.isdir(folder) and os.listdir(folder):
        if not os.path.exists(os.path.join(folder, MARKER)):
            fail(f"{folder} is not empty and is not an earlier demo's folder: name another with --dir", 2)
        shutil.rmtree(folder)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, MARKER), "w", encoding="utf-8") as file:
        file.write("made by scripts/console-demo.py: emptied on its next run\n")


def port_free(port):
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as a server binds it
        try:
            probe.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def shown(path):
    """A path as printed: relative to the current folder when under it, else absolute."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def day(ms):
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


class TalkingFakeApple(FakeApple):
    """The fake App Store, saying on stdout what the console asked of it (and any rule broken)."""

    def handle(self, seen):
        status, body = super().handle(seen)
        line = f"[fake App Store] {seen.method} {seen.path} -> {status}"
        for violation in seen.violations:
            line += f"\n[fake App Store]   BROKE A RULE: {violation}"
        print(line, flush=True)
        return status, body


class Demo:
    def __init__(self, binary, folder, port):
        self.binary, self.folder = binary, folder
        self.data = os.path.join(folder, "data")
        os.makedirs(self.data)
        self.webhook = free_port()
        self.admin = port if port else (9464 if port_free(9464) else free_port())
        self.fake, self.child, self.log = None, None, None
        self.customers = {}  # label -> {"otid", "token", "app_tx", ...}
        self.tally = {}  # webhook answer ("committed", "dead_lettered: reason", ...) -> count
        self.late_after = None
        self.stopping = threading.Event()

    # ---- commands and HTTP

    def env(self, extra=None):
        environment = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET_")}
        environment.update(extra or {})
        return environment

    def run(self, args):
        done = subprocess.run([self.binary] + list(args), stdin=subprocess.DEVNULL, capture_output=True,
                              env=self.env(), cwd=self.folder, timeout=120)
        return Result(" ".join(["signet"] + list(args)), done.returncode, done.stdout.decode("utf-8", "replace"),
                      done.stderr.decode("utf-8", "replace"))

    def get_json(self, path):
        """GET on the operators' listener: (status, the body as JSON or None); (None, None) unanswered."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.admin}{path}", timeout=10) as answer:
                return answer.status, parse_json(answer.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as error:
            return error.code, parse_json(error.read().decode("utf-8", "replace"))
        except OSError:
            return None, None

    def post(self, jws):
        """POSTs a notification as Apple does; the fake learns its transaction; tallies the answer."""
        reply = send_notification(self.webhook, jws)
        body = reply.json() or {}
        key = body.get("status") or f"HTTP {reply.status}"
        if body.get("reason"):
            key += f" ({body['reason']})"
        self.tally[key] = self.tally.get(key, 0) + 1
        try:
            data = jws_payload(jws).get("data") or {}
        except (ValueError, IndexError, AttributeError):
            data = {}
        if isinstance(data, dict) and isinstance(data.get("signedTransactionInfo"), str) \
                and body.get("status") in ("committed", "dropped"):
            self.fake.learn(data["signedTransactionInfo"])
        return reply

    # ---- set-up

    def start(self):
        say = lambda text: print(f"  {text}", flush=True)  # noqa: E731
        say("signet fixtures (Production, a private test PKI) ...")
        self.fx = Fixtures(os.path.join(self.folder, "fixtures"), self.run, count=40, say=say)
        lines, self.tokens = [], {}
        for name, role in ((OPERATOR, "operator"), (READER, "read_only")):
            line, token, result = make_credential(self.run, name, role)
            if token is None:
                raise CannotRun(f"`signet console credential {name} --role {role}` gave no token:\n{result.said()}")
            lines.append(line)
            self.tokens[name] = token
        credentials = os.path.join(self.folder, "console-credentials")
        write_credentials(credentials, lines)
        key = OfferKey(self.folder, "DEMO" + uuid.uuid4().hex[:6].upper())
        self.fake = TalkingFakeApple(key.key_id, key.issuer_id, key.public, self.fx.bundle_id)
        self.fake.after_extend = self.renewal_extended_later
        self.fake.start(("Production",))
        pipeline = write_pipeline(os.path.join(self.folder, "console.yaml"), self.fx, self.data, self.webhook,
                                  self.admin, credentials, description="the console demo (scripts/console-demo.py), "
                                  "Pipelines/webhook.yaml with a console")
        say(f"signet run --pipeline {shown(pipeline)} (webhook 127.0.0.1:{self.webhook}, console "
            f"127.0.0.1:{self.admin}) ...")
        environment = console_run_env(self.fx, self.data, key.key_id, key.issuer_id, key.path,
                                      self.fake.url("Production"))
        environment.pop("SIGNET_ROOT_CERTS", None)  # the pipeline names the fixtures' root itself
        self.log = open(os.path.join(self.folder, "signet.log"), "wb")
        events = open(os.path.join(self.folder, "events.ndjson"), "wb")
        # its own session: the terminal's Ctrl-C reaches this script, which stops signet in order
        self.child = subprocess.Popen([self.binary, "run", "--pipeline", pipeline], stdin=subprocess.DEVNULL,
                                      stdout=events, stderr=self.log, env=self.env(environment), cwd=self.folder,
                                      start_new_session=True)
        events.close()
        ready = wait_until(lambda: self.child.poll() is not None or self.get_json("/readyz")[0] == 200, 60, 0.2)
        if not ready or self.child.poll() is not None:
            raise CannotRun(f"`signet run` did not become ready (exit {self.child.poll()}):\n" + self.log_tail())
        say("posting notifications to the webhook as Apple does ...")
        for line in self.fx.notifications:
            self.post((parse_json(line) or {}).get("signedPayload", ""))
        self.customers_in_states()
        for forged in self.fx.forged():
            self.post(forged)

    def customers_in_states(self):
        fx, fake, now = self.fx, self.fake, now_ms()
        group = str(fx.subscribed["transaction"].get("subscriptionGroupIdentifier") or "21000001")

        def customer(label):
            self.customers[label] = {"otid": new_id(), "app_tx": new_id(), "token": lettered_uuid()}
            return self.customers[label]

        def notify(c, purchased, expires, signed, **more):
            jws, transaction, transaction_jws = fx.purchase(c["otid"], PRODUCT, c["token"], c["app_tx"], purchased,
                                                            expires, signed, group=group, **more)
            self.post(jws)
            return transaction, transaction_jws

        # active, renewed 5 days ago; the order ID on the receipt of its renewal
        a = customer("active")
        notify(a, now - 35 * DAY_MS, now - 5 * DAY_MS, now - 35 * DAY_MS)
        a["renewal_id"] = new_id()
        _, a["jws"] = notify(a, now - 5 * DAY_MS, now + 25 * DAY_MS, now - 5 * DAY_MS, transaction_id=a["renewal_id"],
                             kind="DID_RENEW", subtype=None)
        fake.orders[ORDER_ONE] = [a["jws"]]
        # two subscriptions bought in one order
        pair = []
        for label in ("order, first", "order, second"):
            c = customer(label)
            _, c["jws"] = notify(c, now - 10 * DAY_MS, now + 20 * DAY_MS, now - 10 * DAY_MS)
            pair.append(c["jws"])
        fake.orders[ORDER_TWO] = pair
        # billing retry: the renewal failed 3 days ago, Apple is still trying
        r = customer("billing retry")
        notify(r, now - 33 * DAY_MS, now - 3 * DAY_MS, now - 33 * DAY_MS)
        notify(r, now - 33 * DAY_MS, now - 3 * DAY_MS, now - 3 * DAY_MS, kind="DID_FAIL_TO_RENEW", subtype=None,
               extra_renewal={"isInBillingRetryPeriod": True, "expirationIntent": 2})
        # grace period: the renewal failed yesterday, access kept for 5 more days
        g = customer("grace period")
        notify(g, now - 31 * DAY_MS, now - 1 * DAY_MS, now - 31 * DAY_MS)
        notify(g, now - 31 * DAY_MS, now - 1 * DAY_MS, now - 1 * DAY_MS, kind="DID_FAIL_TO_RENEW",
               subtype="GRACE_PERIOD", extra_renewal={"isInBillingRetryPeriod": True, "expirationIntent": 2,
                                                      "gracePeriodExpiresDate": now + 5 * DAY_MS})
        # refunded 2 days ago
        x = customer("refunded")
        notify(x, now - 12 * DAY_MS, now + 18 * DAY_MS, now - 12 * DAY_MS)
        notify(x, now - 12 * DAY_MS, now + 18 * DAY_MS, now - 2 * DAY_MS, kind="REFUND", subtype=None,
               extra_transaction={"revocationDate": now - 2 * DAY_MS, "revocationReason": 0,
                                  "revocationType": "REFUND_FULL"})
        # consent withdrawn (RESCIND_CONSENT of its app transaction): the console records it again
        d = customer("consent withdrawn")
        notify(d, now - 8 * DAY_MS, now + 22 * DAY_MS, now - 8 * DAY_MS)
        if fx.rescind is not None:
            self.post(fx.rescind_consent(d["app_tx"], now - 60_000))
        # signed 6 minutes ahead of this clock: dead-lettered now (signed_date_in_future), it
        # verifies a minute later: replaying it from the Dead letters page then processes it
        late = customer("late")
        signed = now + 6 * 60_000
        notify(late, now - DAY_MS, now + 29 * DAY_MS, signed)
        self.late_after = signed - 5 * 60_000 + 2000

    def renewal_extended_later(self, otid, answer):
        """The fake granted an extension: Apple's RENEWAL_EXTENDED follows, through the webhook."""
        purchase = self.fake.purchases.get(otid)
        if purchase is None:
            return
        payload = dict(purchase["payload"])

        def send():
            if self.stopping.is_set():
                return
            tid = str(payload.get("transactionId"))
            jws, _, _ = self.fx.purchase(otid, payload.get("productId") or PRODUCT, payload.get("appAccountToken"),
                                         payload.get("appTransactionId") or new_id(),
                                         payload.get("purchaseDate") or now_ms(), answer["effectiveDate"], now_ms(),
                                         transaction_id=None if tid == otid else tid,
                                         group=payload.get("subscriptionGroupIdentifier"), kind="RENEWAL_EXTENDED",
                                         subtype=None)
            reply = self.post(jws)
            print(f"[fake App Store] RENEWAL_EXTENDED for {otid} (new expiry {day(answer['effectiveDate'])}) posted to "
                  f"the webhook: {reply.status} {reply.text().strip()}", flush=True)

        print(f"[fake App Store] extended {otid} to {day(answer['effectiveDate'])}; RENEWAL_EXTENDED follows in "
              f"{RENEWAL_EXTENDED_AFTER} s", flush=True)
        timer = threading.Timer(RENEWAL_EXTENDED_AFTER, send)
        timer.daemon = True
        timer.start()

    # ---- what to print

    def why(self, otid):
        status, body = self.get_json(f"/v1/customers/{otid}")
        purchases = (body or {}).get("purchases") if status == 200 and isinstance(body, dict) else None
        if not purchases:
            return "(not in the store)"
        return purchases[0].get("why") or purchases[0].get("state") or "?"

    def banner(self):
        c = self.customers
        url = f"http://127.0.0.1:{self.admin}/console"
        tally = ", ".join(f"{n} {k}" for k, n in sorted(self.tally.items(), key=lambda kv: -kv[1]))
        width = max(len(label) for label in c)
        states = "\n".join(f"    {label:<{width}}  {c[label]['otid']}  {self.why(c[label]['otid'])}"
                           for label in c if label != "late")
        late = datetime.datetime.fromtimestamp(self.late_after / 1000, datetime.timezone.utc).strftime("%H:%M:%S")
        print(f"""
========================================================================================
 Signet's support console, on demo data (all local: a fake App Store answers Apple's calls)

   Console     {url}
   Sign in as  {OPERATOR + " (operator)":<22}{self.tokens[OPERATOR]}
               {READER + " (read-only)":<22}{self.tokens[READER]}

 Three things to try (type them into the search box):
   1. {c['active']['otid']}
        an originalTransactionId: an active subscriber. Extend the renewal date (Extend, then
        Confirm): pending until the fake App Store's RENEWAL_EXTENDED arrives {RENEWAL_EXTENDED_AFTER} s later.
   2. {c['grace period']['token']}
        an appAccountToken: a customer in the billing grace period (read the "why").
   3. {ORDER_ONE}
        an order ID from Apple's email receipt: found through Look Up Order ID ({ORDER_TWO}: an order of
        two purchases).
 Also: the Dead letters page (forged notifications; the one refused as signed_date_in_future
 replays as processed after {late} UTC), Operations, the Audit log, and signing in as
 {READER} (no actions).

 Notifications posted: {tally}. Customers in telling states:
{states}

 Files: {shown(self.folder)} (console.yaml, console-credentials, signet.log, events.ndjson)

 Ctrl-C to stop.
========================================================================================
""", flush=True)

    def log_tail(self, limit=3000):
        try:
            with open(os.path.join(self.folder, "signet.log"), "rb") as file:
                return file.read()[-limit:].decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self):
        self.stopping.set()
        if self.child is not None and self.child.poll() is None:
            self.child.send_signal(signal.SIGTERM)
            try:
                self.child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.child.kill()
                self.child.wait(timeout=10)
        if self.fake is not None:
            self.fake.stop()
        if self.log is not None:
            self.log.close()


class Stop(Exception):
    pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("signet", nargs="?", help="the signet binary (default: .build/debug/signet, else "
                                                  ".build/release/signet)")
    parser.add_argument("--dir", default=os.path.join(ROOT, ".build", "console-demo"),
                        help="the demo's folder, made afresh (default: %(default)s)")
    parser.add_argument("--port", type=int, help="the console's port on 127.0.0.1 (default: 9464 when free)")
    args = parser.parse_args()
    binary = find_binary(args.signet)
    folder = os.path.abspath(args.dir)
    fresh_folder(folder)

    def interrupted(signum, frame):
        raise Stop()

    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    print(f"console-demo: {binary}, in {folder}", flush=True)
    demo = Demo(binary, folder, args.port)
    code = 0
    try:
        demo.start()
        demo.banner()
        while demo.child.poll() is None:
            time.sleep(0.5)
        print(f"console-demo: `signet run` stopped by itself (exit {demo.child.returncode}):\n{demo.log_tail()}",
              file=sys.stderr, flush=True)
        code = 1
    except Stop:
        print("\nconsole-demo: stopping ...", flush=True)
    except CannotRun as error:
        print(f"console-demo: {error}", file=sys.stderr, flush=True)
        code = 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        demo.stop()
    if code == 0:
        print(f"console-demo: stopped (signet run exit {demo.child.returncode if demo.child else '-'}); the data stays "
              f"in {shown(folder)}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
