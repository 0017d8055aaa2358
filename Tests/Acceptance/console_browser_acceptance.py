#!/usr/bin/env python3
"""Browser acceptance tests for the support console (docs/console.md, issue 57): `signet run`
serving server-rendered HTML under /console on the operators' listener, driven by a real headless
Chromium through Selenium, beside raw HTTP requests (http.client) for headers and forged forms.

    python3 Tests/Acceptance/console_browser_acceptance.py [--signet .build/debug/signet] [--screenshots DIR]

The fake App Store, `Fixtures` (crafting signed notifications), the credentials and the pipeline
are in fake_appstore.py beside this script, shared with scripts/console-demo.py.

Written from the documentation only (docs/console.md, docs/support.md, docs/state-machine.md on
consent, Apple's rules in /work/shared/appstore-api-facts.md) and the binary's own help; not from
Signet's sources.

Set-up: `signet fixtures --out DIR --now --environment Production` (the test PKI), two credentials
made by `signet console credential NAME --role operator|read_only`, a pipeline file based on
Pipelines/webhook.yaml (the http webhook on a free port, SQLite in a temporary directory, an
`http:` listener on another free port, `console: credentials: FILE`), `signet run --pipeline FILE`
with the fixtures' roots and the In-App Purchase key variables pointing at a fake App Store Server
API run by this script (Production: Look Up Order ID is served there only). The fake checks every
request's JWT (ES256, kid, iss, aud, bid, iat/exp, the .p8's signature) and answers Look Up Order
ID, Get Transaction Info, Extend a Subscription Renewal Date and Set App Account Token, signing its
transactions with the fixtures' leaf. Customers are made by POSTing signed notifications to the
webhook as Apple does: a renewed subscription (an order id and a renewal transaction id point at
it), one with an appAccountToken, one searched by appTransactionId, one whose app transaction got a
RESCIND_CONSENT, one whose product id and group carry `<script>` and `"><img onerror>` payloads, and
one extended with the keyboard only.

Checks: sign-in (cookie attributes, the sign-in form's own CSRF token, refusals and 429s counted
on /metrics, Retry-After doubling, a success clearing the count, failures logged), security headers
(the documented CSP, X-Frame-Options, nosniff, no-referrer, no-store) on every kind of console
response and no <script>, inline handler or foreign URL on every page, search by every identifier
(originalTransactionId, appAccountToken typed UPPER case, appTransactionId, an order ID through Look
Up Order ID, a renewal's transaction id through Get Transaction Info, an order of two purchases, an
order whose purchase the store lacks, unknown ids; a Sandbox console refusing order ids), the
customer page (purchases, access, expiry, the why sentence, the timeline newest first dated by
signedDate, operator actions, escaping of `<script>` and `"><img onerror>` payloads), extension
through a confirmation page (one PUT with a valid JWT and Apple's body, done/pending until
RENEWAL_EXTENDED, audit log, recent actions, resubmission not sent again, Apple's refusal shown, a
third extension within 365 days and days out of 1..90 refused before sending), set token (sent
lower case, once), record consent (the RESCIND_CONSENT restriction lifted, timeline), forged
forms (no or wrong CSRF token, forged sign-out), read-only refusals (no forms, 403 on posts, Apple
not called), sign-out, idle timeout, the operations page, keyboard-only navigation of the main flow, and the dead
letters page: the newest 200 entries of the dead-letter file newest first with reason, stage, detail
and id, an operator's replay through a confirmation page (a forged notification refused again with
its reason; a genuine one first refused as signed_date_in_future, processed once its date is in
range, then processed before and dropped as a duplicate), the page saying what the webhook answered,
each replay in the audit log (replay_dead_letter) once however often its confirmation is resubmitted,
a read-only credential offered no Replay button and refused (403) with its own CSRF token, a post
without the CSRF token refused.
One line per check (`ok - ` or `FAIL - ` with `#` details); exit 0 when all passed, 1 when any
failed, 2 when it could not run. `--screenshots DIR` saves console-sign-in.png, console-search.png,
console-customer.png (the whole page), console-confirm.png, console-audit.png,
console-read-only.png and console-operations.png there.

Not searched: an unknown all-digit id. Get Transaction Info then asks Apple's real Sandbox host
(SIGNET_APPSTORE_API_URL replaces the configured environment's host only, docs/appstore-api.md),
which an offline test cannot stand in for.
"""

import argparse
import datetime
import html
import html.parser
import http.client
import json
import os
import re
import secrets
import shutil
import signal
import sys
import tempfile
import time
import traceback
import urllib.parse
import uuid

try:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
except ImportError:  # pragma: no cover
    print("this script needs Python's `cryptography` package", file=sys.stderr)
    sys.exit(2)

from harness import (
    CHILDREN, RESULTS, CannotRun, OutOfTime, Result, RunningChild, arm_time_limit, check, clip, free_port,
    metric_value, ndjson_lines, parse_json, parse_metrics, signet_binary, stop, wait_until,
)
from fake_appstore import (  # the fake App Store and the set-up scripts/console-demo.py shares
    DAY_MS, FakeApple, Fixtures, Reply, console_run_env, lettered_uuid, new_id,
    send_notification, write_credentials, write_pipeline,
)
from fake_appstore import make_credential as make_credential_line

TIME_LIMIT = 480  # seconds
DEFAULT_SIGNET = "/work/main/.build/debug/signet"
OPERATOR, READER = "alice", "helpdesk"
SCRIPT_PAYLOAD = "<script>alert(1)</script>"
IMG_PAYLOAD = '"><img src=x onerror=alert(2)>'
ORDER_A, ORDER_BC, ORDER_U, ORDER_NONE = "MK5TTTVWJH", "MK7TWOPURCH", "MK9NOTSTORE", "MQ0UNKNOWN1"
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
LONG_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
               "November", "December"]
NOT_FOUND = r"not found|no (purchase|customer|match|result)s?|nothing (was )?found|found nothing|unknown|does not know"


def note(*lines):
    for text in lines:
        for line in str(text).rstrip().splitlines() or [""]:
            print("# " + line, flush=True)


def now_ms():
    return int(time.time() * 1000)


def day_forms(ms):
    """The ways a page may write the UTC day of `ms`."""
    d = datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc)
    m, mm = MONTHS[d.month - 1], LONG_MONTHS[d.month - 1]
    return [d.strftime("%Y-%m-%d"), f"{d.day} {m} {d.year}", f"{d.day:02d} {m} {d.year}", f"{m} {d.day}, {d.year}",
            f"{d.day} {mm} {d.year}", f"{mm} {d.day}, {d.year}", f"{d.day} {m}", f"{m} {d.day}"]


def shows_day(text, ms):
    return any(form in text for form in day_forms(ms)[:6])


DATE_PATTERNS = [
    (re.compile(r"(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2}))?)?"), "iso"),
    (re.compile(r"(\d{1,2}) (" + "|".join(MONTHS) + r")[a-z]* (\d{4})(?:,? (\d{2}):(\d{2})(?::(\d{2}))?)?"), "dmy"),
    (re.compile(r"(" + "|".join(MONTHS) + r")[a-z]* (\d{1,2}),? (\d{4})(?:,? (\d{2}):(\d{2})(?::(\d{2}))?)?"), "mdy"),
]


def first_instant(text):
    """The first date (and time when written) in `text`, as a datetime; None when none."""
    best = None
    for pattern, kind in DATE_PATTERNS:
        match = pattern.search(text)
        if not match or (best and best[0] <= match.start()):
            continue
        g = match.groups()
        try:
            if kind == "iso":
                y, mo, d, h, mi, s = int(g[0]), int(g[1]), int(g[2]), g[3], g[4], g[5]
            elif kind == "dmy":
                y, mo, d, h, mi, s = int(g[2]), MONTHS.index(g[1][:3]) + 1, int(g[0]), g[3], g[4], g[5]
            else:
                y, mo, d, h, mi, s = int(g[2]), MONTHS.index(g[0][:3]) + 1, int(g[1]), g[3], g[4], g[5]
            value = datetime.datetime(y, mo, d, int(h or 0), int(mi or 0), int(s or 0))
        except ValueError:
            continue
        best = (match.start(), value)
    return best[1] if best else None


# ----------------------------------------------------------------------------- raw HTTP


class FormParser(html.parser.HTMLParser):
    """Every <form> of a page: action, method, enctype and its fields (name, type, value)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.forms, self.current, self.select, self.scripts = [], None, None, 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag == "form":
            self.current = {"action": a.get("action") or "", "method": (a.get("method") or "get").lower(),
                            "enctype": a.get("enctype") or "", "fields": []}
            self.forms.append(self.current)
        elif self.current is not None and tag in ("input", "button") and a.get("name"):
            self.current["fields"].append({"name": a["name"], "type": (a.get("type") or ("submit" if tag == "button"
                                                                                           else "text")).lower(),
                                           "value": a.get("value") or "", "tag": tag})
        elif self.current is not None and tag == "select" and a.get("name"):
            self.select = {"name": a["name"], "type": "select", "value": None, "tag": "select"}
            self.current["fields"].append(self.select)
        elif self.select is not None and tag == "option":
            if self.select["value"] is None or "selected" in a:
                self.select["value"] = a.get("value", "")

    def handle_endtag(self, tag):
        if tag == "form":
            self.current = None
        elif tag == "select":
            self.select = None


def parse_forms(body):
    parser = FormParser()
    parser.feed(body.decode("utf-8", "replace") if isinstance(body, bytes) else body)
    return parser.forms


class Client:
    """A raw HTTP client with a cookie jar of its own (name -> value), no redirects followed; POSTs
    carry the Origin a browser on the same page would send."""

    def __init__(self, port):
        self.port, self.cookies = port, {}

    def origin(self):
        return f"http://127.0.0.1:{self.port}"

    def request(self, method, path, fields=None, headers=None, cookies=None, raw_body=None, timeout=20):
        body = b""
        all_headers = {"User-Agent": "console-acceptance", "Accept": "text/html"}
        if fields is not None:
            body = urllib.parse.urlencode(fields).encode()
            all_headers["Content-Type"] = "application/x-www-form-urlencoded"
        if raw_body is not None:
            body = raw_body
        if method == "POST":
            all_headers["Origin"] = self.origin()
        jar = self.cookies if cookies is None else cookies
        if jar:
            all_headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in jar.items())
        all_headers.update(headers or {})
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body if (body or method == "POST") else None, headers=all_headers)
            response = conn.getresponse()
            data = response.read()
            reply = Reply(method, path, response.status, response.getheaders(), data, sent=body)
        except (OSError, http.client.HTTPException) as error:
            return Reply(method, path, None, [], b"", repr(error), sent=body)
        finally:
            conn.close()
        if cookies is None:
            for line in reply.all("Set-Cookie"):
                name, _, rest = line.partition("=")
                value = rest.split(";", 1)[0]
                if re.search(r";\s*(max-age=0|expires=thu, 01 jan 1970)", line, re.I) or value == "":
                    self.cookies.pop(name.strip(), None)
                else:
                    self.cookies[name.strip()] = value
        return reply


def cookie_attributes(line):
    parts = [p.strip() for p in line.split(";")]
    name, _, value = parts[0].partition("=")
    attributes = {}
    for part in parts[1:]:
        key, _, val = part.partition("=")
        attributes[key.strip().lower()] = val.strip()
    return name.strip(), value, attributes


def seen_said(seen):
    if not seen:
        return "requests that reached the fake Apple: none"
    return "requests that reached the fake Apple:\n" + "\n".join(s.line() for s in seen)


# ----------------------------------------------------------------------------- the browser


class Browser:
    def __init__(self, base, screenshots):
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
        options = webdriver.ChromeOptions()
        for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900",
                         "--disable-gpu", "--no-first-run", "--disable-extensions"):
            options.add_argument(argument)
        options.binary_location = "/usr/bin/chromium"
        self.driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        self.driver.set_window_size(1280, 900)
        self.driver.set_page_load_timeout(30)
        self.base, self.screenshots = base, screenshots
        self.pages = []  # (label, url, script elements, external references, onerror elements)

    def quit(self):
        try:
            self.driver.quit()
        except Exception:  # noqa: BLE001
            pass

    def by(self):
        from selenium.webdriver.common.by import By
        return By

    def get(self, path, label):
        self.driver.get(self.base + path)
        self.record(label)

    def text(self):
        return self.driver.find_element(self.by().TAG_NAME, "body").text

    def path(self):
        return urllib.parse.urlsplit(self.driver.current_url).path

    def record(self, label):
        """Remembers what the page holds that the security checks judge."""
        By = self.by()
        scripts = len(self.driver.find_elements(By.TAG_NAME, "script"))
        onerror = len(self.driver.find_elements(By.CSS_SELECTOR, "[onerror], [onload], [onclick]"))
        external = []
        for tag, attribute in (("a", "href"), ("link", "href"), ("img", "src"), ("form", "action"), ("iframe", "src"),
                               ("object", "data"), ("embed", "src"), ("source", "src")):
            for element in self.driver.find_elements(By.TAG_NAME, tag):
                raw = element.get_attribute(attribute) or ""
                split = urllib.parse.urlsplit(raw)
                if split.scheme in ("http", "https") and split.netloc and split.netloc != urllib.parse.urlsplit(
                        self.base).netloc:
                    external.append(f"<{tag} {attribute}={raw}>")
        self.pages.append((label, self.driver.current_url, scripts, external, onerror))

    def shot(self, name, full=False):
        if not self.screenshots:
            return
        try:
            if full:  # the whole page: a taller viewport (a window is clamped to the headless screen)
                height = self.driver.execute_script("return Math.max(document.body.scrollHeight, "
                                                    "document.documentElement.scrollHeight)")
                self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                    "width": 1280, "height": max(900, min(int(height or 900) + 16, 6000)), "deviceScaleFactor": 1,
                    "mobile": False})
                time.sleep(0.3)
            self.driver.save_screenshot(os.path.join(self.screenshots, name))
        finally:
            if full:
                self.driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    def forms(self):
        return self.driver.find_elements(self.by().TAG_NAME, "form")

    def fields(self, form):
        """A form's submitted fields as a browser would send them (name -> value), hidden ones included."""
        By = self.by()
        out = []
        for element in form.find_elements(By.CSS_SELECTOR, "input, select, textarea"):
            name = element.get_attribute("name")
            if not name:
                continue
            kind = (element.get_attribute("type") or "").lower()
            if kind in ("submit", "button", "image", "reset"):
                continue
            if kind in ("checkbox", "radio") and not element.is_selected():
                continue
            out.append((name, element.get_attribute("value") or ""))
        return out

    def submit(self, form, button=None):
        """Clicks the form's (or the given) submit button and waits for the next page."""
        from selenium.webdriver.support.ui import WebDriverWait
        By = self.by()
        old = self.driver.find_element(By.TAG_NAME, "html")
        if button is None:
            buttons = form.find_elements(By.CSS_SELECTOR, "button, input[type=submit]")
            button = buttons[-1] if buttons else None
        if button is not None:
            button.click()
        else:
            form.submit()
        WebDriverWait(self.driver, 20).until(lambda driver: self.gone(old))
        self.wait_loaded()

    @staticmethod
    def gone(element):
        """Whether the old page's element left the document. Chromium sometimes says so with a
        generic "does not belong to the document" error instead of a stale element reference."""
        from selenium.common.exceptions import StaleElementReferenceException, WebDriverException
        try:
            element.is_enabled()
            return False
        except StaleElementReferenceException:
            return True
        except WebDriverException as error:
            if "does not belong to the document" in str(error) or "No node with given id" in str(error):
                return True
            raise

    def wait_loaded(self):
        wait_until(lambda: self.driver.execute_script("return document.readyState") == "complete", 20, 0.05)

    def cookie(self, name="signet_console"):
        for c in self.driver.get_cookies():
            if c.get("name") == name:
                return c
        return None

    def no_alert(self):
        from selenium.common.exceptions import NoAlertPresentException
        try:
            alert = self.driver.switch_to.alert
            text = alert.text
            alert.dismiss()
            return False, f"an alert fired: {text!r}"
        except NoAlertPresentException:
            return True, ""


def describe_form(browser, form):
    try:
        return (f"<form action={form.get_attribute('action')} method={form.get_attribute('method')}> fields "
                f"{browser.fields(form)} buttons {[b.text for b in form.find_elements(browser.by().TAG_NAME, 'button')]}")
    except Exception as error:  # noqa: BLE001
        return repr(error)


def form_kind(browser, form):
    """search, sign-out, sign-in, extend, token, consent or other: from the action, fields and buttons."""
    By = browser.by()
    action = (form.get_attribute("action") or "").lower()
    names = [n.lower() for n, _ in browser.fields(form)]
    buttons = " ".join((b.text or b.get_attribute("value") or "") for b in
                       form.find_elements(By.CSS_SELECTOR, "button, input[type=submit]")).lower()
    method = (form.get_attribute("method") or "get").lower()
    if "q" in names and method == "get":
        return "search"
    if re.search(r"sign.?out|log.?out", action + " " + buttons):
        return "sign-out"
    if re.search(r"sign.?in", action):
        return "sign-in"
    if re.search(r"extend", action) or any(re.search(r"day", n) for n in names) or re.search(r"extend", buttons):
        return "extend"
    if re.search(r"consent", action + " " + buttons):
        return "consent"
    if re.search(r"token", action) or re.search(r"token", buttons) or \
            any(re.search(r"account.?token|uuid", n) for n in names):
        return "token"
    return "other"


def csrf_name(fields):
    for name, _ in fields:
        if re.search(r"csrf|xsrf|authenticity|_token$", name, re.I):
            return name
    return None


def action_forms(browser):
    return [f for f in browser.forms() if form_kind(browser, f) in ("extend", "token", "consent")]


def find_form(browser, kind):
    for form in browser.forms():
        if form_kind(browser, form) == kind:
            return form
    return None


def form_target(browser, form):
    """The path a form posts to (its resolved action), for raw requests."""
    action = form.get_attribute("action") or browser.driver.current_url
    split = urllib.parse.urlsplit(urllib.parse.urljoin(browser.driver.current_url, action))
    return split.path + ("?" + split.query if split.query else "")


def confirm_form(browser):
    """The confirmation page's acting form: a POST form that is no sign-out or search."""
    for form in browser.forms():
        if (form.get_attribute("method") or "get").lower() == "post" and form_kind(browser, form) not in (
                "sign-out", "search", "sign-in"):
            return form
    return None


def section_text(browser, heading_pattern):
    """The text of the part of the page under the heading matching `heading_pattern` (up to the next
    heading of the same or a higher level), and the rows (li or tr) in it."""
    By = browser.by()
    for level in ("h1", "h2", "h3", "h4"):
        for heading in browser.driver.find_elements(By.TAG_NAME, level):
            if not re.search(heading_pattern, heading.text or "", re.I):
                continue
            rank = int(level[1])
            stop_at = "|".join(f"self::h{i}" for i in range(1, rank + 1))
            siblings = heading.find_elements(By.XPATH, f"following-sibling::*")
            texts, rows = [], []
            for sibling in siblings:
                if sibling.tag_name in [f"h{i}" for i in range(1, rank + 1)]:
                    break
                texts.append(sibling.text)
                rows.extend(r for r in sibling.find_elements(By.CSS_SELECTOR, "li, tr") if r.text.strip()
                            and not r.find_elements(By.TAG_NAME, "th"))
            if not siblings or not texts:
                parent = heading.find_element(By.XPATH, "..")
                texts = [parent.text]
                rows = [r for r in parent.find_elements(By.CSS_SELECTOR, "li, tr") if r.text.strip()
                        and not r.find_elements(By.TAG_NAME, "th")]
            del stop_at
            return "\n".join(texts), [r.text for r in rows]
    return None, []


# ----------------------------------------------------------------------------- the test bed


class Bed:
    def __init__(self, binary, root, screenshots):
        self.binary, self.root, self.screenshots = binary, root, screenshots
        self.key_id = "CON" + uuid.uuid4().hex[:7].upper()
        self.issuer_id = str(uuid.uuid4())
        private = ec.generate_private_key(ec.SECP256R1())
        self.key_path = os.path.join(root, f"AuthKey_{self.key_id}.p8")
        with open(self.key_path, "wb") as file:
            file.write(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption()))
        self.public_key = private.public_key()
        self.fake = None
        self.data_dir = os.path.join(root, "data")
        os.makedirs(self.data_dir)
        self.webhook, self.admin = free_port(), free_port()
        self.tokens = {}
        self.customers = {}
        self.child = None
        self.browser = None
        self.replies = []  # (label, Reply): every console response whose headers are judged
        self.raw = None  # the operator's raw Client (signed in with urllib-level requests)
        self.last_failure = 0.0
        self.sandbox = None
        self.forged_reply = None
        self.late = None  # a notification dead-lettered as signed in the future (case_dead_letters)

    def env(self, extra=None):
        environment = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET_")}
        environment.update(extra or {})
        return environment

    def run(self, args, extra=None, timeout=60):
        import subprocess
        child = subprocess.Popen([self.binary] + list(args), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=self.env(extra), cwd=self.root)
        CHILDREN.append(child)
        try:
            out, err = child.communicate(timeout=timeout)
            code = child.returncode
        except subprocess.TimeoutExpired:
            stop(child)
            out, err = child.communicate()
            code = None
        return Result(" ".join([self.binary] + list(args)), code, out.decode("utf-8", "replace"),
                      err.decode("utf-8", "replace"))

    def run_env(self):
        return console_run_env(self.fixtures, self.data_dir, self.key_id, self.issuer_id, self.key_path,
                               self.fake.url("Production"))

    def client(self):
        return Client(self.admin)

    def metrics(self):
        reply = self.client().request("GET", "/metrics", headers={"Accept": "text/plain"})
        return parse_metrics(reply.text()) if reply.status == 200 else {}, reply

    def sign_ins(self, result):
        series, _ = self.metrics()
        return metric_value(series, "signet_console_sign_ins_total", result=result)

    def wait_for_throttle(self):
        """Failed sign-ins from 127.0.0.1 slow every later one: wait past the last failure's delay."""
        if self.last_failure:
            left = self.last_failure + 4.3 - time.monotonic()
            if left > 0:
                time.sleep(left)


def make_credential(bed, name, role):
    line, token, result = make_credential_line(bed.run, name, role)
    parts = line.split()
    check(f"`signet console credential {name} --role {role}`: exit 0, the file's line `{name} {role} sha256:HEX` on "
          "stdout and a token on stderr whose SHA-256 is that HEX (the file keeps only the hash)",
          result.code == 0 and len(parts) == 3 and parts[0] == name and parts[1] == role and token is not None
          and token not in result.out, result.said())
    if token is None:
        raise CannotRun(f"no usable {role} credential")
    return line, token


def setup(bed):
    bed.fixtures = Fixtures(os.path.join(bed.root, "fixtures"), lambda args: bed.run(args), say=note)
    fx = bed.fixtures
    bed.fake = FakeApple(bed.key_id, bed.issuer_id, bed.public_key, fx.bundle_id)
    bed.fake.start()
    help_reply = bed.run(["console", "--help"])
    check("`signet console --help` exits 0 and names the credential subcommand",
          help_reply.code == 0 and "credential" in help_reply.out, help_reply.said())
    lines = []
    for name, role in ((OPERATOR, "operator"), (READER, "read_only")):
        line, token = make_credential(bed, name, role)
        lines.append(line)
        bed.tokens[name] = token
    credentials = os.path.join(bed.root, "console-credentials")
    write_credentials(credentials, lines)
    pipeline = write_pipeline(os.path.join(bed.root, "console.yaml"), fx, bed.data_dir, bed.webhook, bed.admin,
                              credentials, description="console browser acceptance (Pipelines/webhook.yaml with a "
                                                        "console)")
    bed.pipeline, bed.credentials = pipeline, credentials
    lint = bed.run(["lint", pipeline], bed.run_env())
    note(f"`signet lint {pipeline}`: exit {lint.code}" + ("" if lint.code == 0 else "\n" + lint.said()))
    bed.child = RunningChild([bed.binary, "run", "--pipeline", pipeline], bed.env(bed.run_env()), bed.root,
                             f"signet run --pipeline {pipeline}")
    ready = wait_until(lambda: not bed.child.running() or bed.client().request("GET", "/readyz").status == 200, 40, 0.2)
    if not check("setup: `signet run --pipeline FILE` (webhook, SQLite, http: listener, console: credentials) becomes "
                 "ready on /readyz", ready and bed.child.running(), bed.child.said()):
        raise CannotRun("signet run did not start")

    # ---- customers, as Apple's notifications
    now = now_ms()
    c = bed.customers
    product = "com.example.signet.premium.monthly"
    group = str(fx.subscribed["transaction"].get("subscriptionGroupIdentifier") or "21000001")

    def customer(name, **values):
        c[name] = dict(values, otid=new_id(), app_tx=new_id(), token=lettered_uuid())
        return c[name]

    posted = []

    def post(label, jws):
        reply = send_notification(bed.webhook, jws)
        posted.append((label, reply))
        return reply

    a = customer("A", product=product)
    jws, _, _ = fx.purchase(a["otid"], product, a["token"], a["app_tx"], now - 35 * DAY_MS, now - 5 * DAY_MS,
                            now - 35 * DAY_MS, group=group)
    post("A SUBSCRIBED (35 days ago)", jws)
    a["renewal_id"] = new_id()
    a["expires"] = now + 25 * DAY_MS
    a["subscribed_at"], a["renewed_at"] = now - 35 * DAY_MS, now - 5 * DAY_MS
    jws, a["transaction"], a["jws"] = fx.purchase(a["otid"], product, a["token"], a["app_tx"], now - 5 * DAY_MS,
                                                  a["expires"], now - 5 * DAY_MS, transaction_id=a["renewal_id"],
                                                  group=group, kind="DID_RENEW", subtype=None)
    post("A DID_RENEW (5 days ago)", jws)
    for name in ("B", "C", "D", "F"):
        p = customer(name, product=product)
        p["expires"] = now + 20 * DAY_MS
        jws, p["transaction"], p["jws"] = fx.purchase(p["otid"], product, p["token"], p["app_tx"], now - 10 * DAY_MS,
                                                      p["expires"], now - 10 * DAY_MS + 1000, group=group)
        post(f"{name} SUBSCRIBED", jws)
    x = customer("E", product="com.example." + SCRIPT_PAYLOAD + IMG_PAYLOAD)
    x["expires"] = now + 20 * DAY_MS
    jws, x["transaction"], x["jws"] = fx.purchase(x["otid"], x["product"], x["token"], x["app_tx"], now - 3 * DAY_MS,
                                                  x["expires"], now - 3 * DAY_MS, group=IMG_PAYLOAD + SCRIPT_PAYLOAD)
    post("E SUBSCRIBED with <script> in its product id", jws)
    if fx.rescind is not None:
        post("RESCIND_CONSENT of D's app transaction", fx.rescind_consent(c["D"]["app_tx"], now - 1000))
    forged = ndjson_lines(os.path.join(fx.folder, "forged.ndjson"))
    if forged:  # one rejected notification: a dead letter for the operations page
        bed.forged_reply = send_notification(bed.webhook, parse_json(forged[0]).get("signedPayload", ""))
    # A genuine notification signed "in the future" (beyond verify's max_future_skew, 5 minutes by
    # default): dead-lettered as signed_date_in_future now, verifiable a few seconds later, when
    # case_dead_letters replays it (a dead letter whose reason went away).
    late = {"otid": new_id(), "app_tx": new_id(), "token": lettered_uuid(), "product": product,
            "signed": now_ms() + 5 * 60_000 + 8_000}
    jws, late["transaction"], late["jws"] = fx.purchase(late["otid"], product, late["token"], late["app_tx"],
                                                        now - 2 * DAY_MS, now + 28 * DAY_MS, late["signed"],
                                                        group=group)
    late["reply"] = send_notification(bed.webhook, jws)
    bed.late = late
    bad = [f"{label}:\n{reply.said()}" for label, reply in posted
           if reply.status != 200 or (reply.json() or {}).get("status") not in (None, "committed")]
    check("setup: every crafted notification POSTed to the webhook as Apple does ({\"signedPayload\"}) is answered 200 "
          "(committed)", not bad, *bad[:4])
    snapshots = {}
    for name, p in c.items():
        reply = bed.client().request("GET", f"/v1/subscriptions/{p['otid']}", headers={"Accept": "application/json"})
        snapshots[name] = reply.json() if reply.status == 200 else reply.said()
    missing = [n for n, s in snapshots.items() if not isinstance(s, dict) or s.get("state") != "active"]
    if not check("setup: the customers are in the store, active (/v1/subscriptions/{id})", not missing,
                 *[f"{n}: {clip(json.dumps(snapshots[n]) if isinstance(snapshots[n], dict) else snapshots[n], 600)}"
                   for n in missing]):
        if any(not isinstance(snapshots[n], dict) for n in missing):
            raise CannotRun("the crafted customers did not reach the store")
    c["D"]["restricted"] = False
    if fx.rescind is not None:
        reply = bed.client().request("GET", f"/v1/consent/{c['D']['app_tx']}", headers={"Accept": "application/json"})
        body = reply.json() if reply.status == 200 else None
        c["D"]["restricted"] = isinstance(body, dict) and body.get("restricted") is True
        check("setup: D's app transaction is restricted (RESCIND_CONSENT in force: GET /v1/consent/{appTransactionId} "
              "says restricted: true)", c["D"]["restricted"], reply.said())

    # ---- what the fake Apple knows
    fake = bed.fake
    for name, p in c.items():
        fake.purchases[p["otid"]] = {"payload": p["transaction"], "jws": p["jws"], "expires": p["expires"],
                                     "extensions": {}, "token": p["token"]}
        fake.transactions[p["transaction"]["transactionId"]] = p["jws"]
    unknown = new_id()
    template = dict(c["B"]["transaction"], transactionId=unknown, originalTransactionId=unknown,
                    webOrderLineItemId=new_id(), signedDate=now)
    c["U"] = {"otid": unknown}
    fake.orders[ORDER_A] = [a["jws"]]
    fake.orders[ORDER_BC] = [c["B"]["jws"], c["C"]["jws"]]
    fake.orders[ORDER_U] = [fx.signer.sign(template)]


# ----------------------------------------------------------------------------- the cases


def raw_sign_in(bed, client, token, label):
    """GET the sign-in page, POST its form with `token`: (GET reply, POST reply)."""
    page = client.request("GET", "/console/sign-in")
    bed.replies.append((f"GET /console/sign-in ({label})", page))
    forms = [f for f in parse_forms(page.body) if f["method"] == "post"]
    if not forms:
        return page, None
    form = forms[0]
    fields = []
    for field in form["fields"]:
        if field["type"] in ("submit", "button"):
            continue
        if field["type"] in ("password", "text") or re.search(r"token", field["name"], re.I) and field["type"] != "hidden":
            fields.append((field["name"], token))
        else:
            fields.append((field["name"], field["value"]))
    target = urllib.parse.urljoin("/console/sign-in", form["action"] or "/console/sign-in")
    return page, client.request("POST", target, fields=fields)


def browser_sign_in(bed, token):
    browser = bed.browser
    bed.wait_for_throttle()
    browser.get("/console/sign-in", "sign-in")
    By = browser.by()
    form = next((f for f in browser.forms() if f.find_elements(By.CSS_SELECTOR,
                                                               "input[type=password], input[type=text]")), None)
    if form is None:
        return False, "no sign-in form with a token field:\n" + clip(browser.driver.page_source, 1500)
    field = form.find_elements(By.CSS_SELECTOR, "input[type=password], input[type=text]")[0]
    field.clear()
    field.send_keys(token)
    browser.submit(form)
    browser.record("after sign-in")
    return browser.path().rstrip("/") == "/console" or bool(find_form(browser, "search")), \
        f"now at {browser.driver.current_url}:\n{clip(browser.text(), 800)}"


def sign_out(bed):
    browser = bed.browser
    form = find_form(browser, "sign-out")
    if form is None:
        browser.get("/console", "search (for sign-out)")
        form = find_form(browser, "sign-out")
    if form is None:
        return False
    browser.submit(form)
    return True


def case_sign_in(bed):
    browser = bed.browser
    client = bed.client()
    first = client.request("GET", "/console")
    bed.replies.append(("GET /console without a session", first))
    check("GET /console without a session does not show the console: a redirect to /console/sign-in, or 401/403",
          (first.status in (302, 303, 307) and "/console/sign-in" in (first.header("Location") or ""))
          or first.status in (401, 403), first.said())
    browser.get("/console", "sign-in (redirected)")
    By = browser.by()
    check("the browser opening /console without a session lands on the sign-in page with one token field",
          len(browser.driver.find_elements(By.CSS_SELECTOR, "form input[type=password], form input[type=text]")) == 1,
          browser.driver.current_url, clip(browser.driver.page_source, 1200))
    browser.get("/console/sign-in", "sign-in")
    browser.shot("console-sign-in.png")

    # a wrong token, through the form
    refused_before, _ = bed.metrics()
    form = next((f for f in browser.forms() if f.find_elements(By.CSS_SELECTOR,
                                                               "input[type=password], input[type=text]")), None)
    if form is not None:
        field = form.find_elements(By.CSS_SELECTOR, "input[type=password], input[type=text]")[0]
        field.send_keys("not-" + secrets.token_urlsafe(32))
        browser.submit(form)
        bed.last_failure = time.monotonic()
        browser.record("sign-in refused")
    refused_after, scrape = bed.metrics()
    before = metric_value(refused_before, "signet_console_sign_ins_total", result="refused")
    after = metric_value(refused_after, "signet_console_sign_ins_total", result="refused")
    check("a wrong token typed into the sign-in form is refused: still the sign-in form, no signet_console cookie",
          form is not None and browser.cookie() is None and len(browser.driver.find_elements(
              By.CSS_SELECTOR, "form input[type=password], form input[type=text]")) == 1,
          browser.driver.current_url, clip(browser.text(), 600), f"cookies: {browser.driver.get_cookies()}")
    check("the refused sign-in is counted: signet_console_sign_ins_total{result=\"refused\"} on /metrics grew by 1 "
          f"(before {before}, after {after})", after == before + 1,
          "\n".join(l for l in scrape.text().splitlines() if "console" in l) or clip(scrape.text(), 600))

    # at once again (raw): throttled
    throttled_before = bed.sign_ins("throttled")
    page, again = raw_sign_in(bed, client, "still-" + secrets.token_urlsafe(32), "throttled")
    if again is not None:
        bed.replies.append(("POST sign-in answered 429", again))
    retry_after = again.header("Retry-After") if again is not None else None
    check("a second wrong sign-in right after the first (within 2^(1-1) = 1 s) is answered 429 with Retry-After "
          "(whole seconds)", again is not None and again.status == 429 and retry_after is not None
          and retry_after.strip().isdigit() and int(retry_after) >= 1, page.said() if again is None else again.said())
    throttled_after = bed.sign_ins("throttled")
    check(f"the 429 is counted: signet_console_sign_ins_total{{result=\"throttled\"}} grew by 1 ({throttled_before} -> "
          f"{throttled_after})", throttled_after == throttled_before + 1)
    bed.last_failure = time.monotonic()
    wait = int(retry_after) if retry_after and retry_after.strip().isdigit() else 2
    time.sleep(min(wait, 30) + 0.3)

    # the second failure doubles the wait: 2^(2-1) = 2 s
    _, second = raw_sign_in(bed, client, "again-" + secrets.token_urlsafe(32), "second failure")
    _, third = raw_sign_in(bed, client, "more-" + secrets.token_urlsafe(32), "right after the second failure")
    bed.last_failure = time.monotonic()
    after_second = third.header("Retry-After") if third is not None else None
    check("once the wait is over a wrong token is considered again (refused, not 429); the attempt right after that "
          "second failure is 429 with Retry-After 2 (2^(n-1) seconds after the nth failure)",
          second is not None and second.status not in (429, None) and third is not None and third.status == 429
          and after_second is not None and after_second.strip() == "2",
          second.said() if second else "", third.said() if third else "")
    time.sleep((int(after_second) if after_second and after_second.strip().isdigit() else 2) + 0.3)

    # the operator's token, raw: the cookie's attributes
    ok_before = bed.sign_ins("ok")
    raw = bed.client()
    for attempt in range(4):
        page, signed = raw_sign_in(bed, raw, bed.tokens[OPERATOR], "operator, raw")
        if signed is None or signed.status != 429:
            break
        time.sleep(int(signed.header("Retry-After") or "2") + 0.3)
    bed.raw = raw
    cookie_lines = [l for l in (signed.all("Set-Cookie") if signed else []) if l.strip().startswith("signet_console=")]
    name, value, attributes = cookie_attributes(cookie_lines[0]) if cookie_lines else (None, "", {})
    check("sign-in with the operator's token (raw POST of the form with its CSRF token and cookie): a 2xx/3xx answer "
          "setting the cookie signet_console", signed is not None and signed.status in (200, 302, 303)
          and bool(value) and "signet_console" in raw.cookies, page.said(), signed.said() if signed else "")
    check("the session cookie is HttpOnly, SameSite=Strict, Path=/console, not Secure on plain HTTP "
          "(secure_cookie: auto, no X-Forwarded-Proto)", "httponly" in attributes
          and attributes.get("samesite", "").lower() == "strict" and attributes.get("path") == "/console"
          and "secure" not in attributes, f"Set-Cookie: {cookie_lines}")
    check("the session id is random and long (256 bits: at least 43 characters)", len(value) >= 43, f"value {value!r}")
    ok_after = bed.sign_ins("ok")
    check(f"the good sign-in is counted: signet_console_sign_ins_total{{result=\"ok\"}} grew by 1 ({ok_before} -> "
          f"{ok_after})", ok_after == ok_before + 1)
    behind_tls = bed.client()
    page = behind_tls.request("GET", "/console/sign-in", headers={"X-Forwarded-Proto": "https"})
    forms = [f for f in parse_forms(page.body) if f["method"] == "post"]
    secure = None
    if forms:
        fields = [(f["name"], bed.tokens[OPERATOR] if f["type"] in ("password", "text") else f["value"])
                  for f in forms[0]["fields"] if f["type"] not in ("submit", "button")]
        reply = behind_tls.request("POST", urllib.parse.urljoin("/console/sign-in", forms[0]["action"] or ""),
                                   fields=fields, headers={"X-Forwarded-Proto": "https"})
        lines = [l for l in reply.all("Set-Cookie") if l.strip().startswith("signet_console=")]
        secure = bool(lines) and "secure" in cookie_attributes(lines[0])[2]
        check("behind a TLS proxy (X-Forwarded-Proto: https, secure_cookie: auto) the session cookie is Secure",
              secure, reply.said())

    # a success clears the count: a wrong token now is refused, not throttled
    _, wrong = raw_sign_in(bed, bed.client(), "wrong-" + secrets.token_urlsafe(32), "after a success")
    bed.last_failure = time.monotonic()
    check("after a successful sign-in the failure count is cleared: the next wrong token is refused (not 429)",
          wrong is not None and wrong.status != 429 and not any(
              l.startswith("signet_console=") and cookie_attributes(l)[1] for l in wrong.all("Set-Cookie")),
          wrong.said() if wrong else "")

    # the sign-in form's own CSRF token, matched with a cookie
    for label, drop_field, drop_cookie in (("without its CSRF field", True, False),
                                           ("without the cookie its CSRF token is matched with", False, True)):
        fresh = bed.client()
        page = fresh.request("GET", "/console/sign-in")
        forms = [f for f in parse_forms(page.body) if f["method"] == "post"]
        if not forms:
            check(f"sign-in {label}: the form could be read", False, page.said())
            continue
        form = forms[0]
        token_field = csrf_name([(f["name"], f["value"]) for f in form["fields"]])
        fields = [(f["name"], bed.tokens[OPERATOR] if f["type"] in ("password", "text") else f["value"])
                  for f in form["fields"] if f["type"] not in ("submit", "button")
                  and not (drop_field and f["name"] == token_field)]
        jar = {} if drop_cookie else None
        reply = fresh.request("POST", urllib.parse.urljoin("/console/sign-in", form["action"] or ""), fields=fields,
                              cookies=jar)
        bed.last_failure = time.monotonic()
        check(f"sign-in with the right operator token but {label} (the sign-in form's own CSRF defence): refused, no "
              "session cookie", token_field is not None and reply.status is not None and reply.status >= 400
              and not any(l.startswith("signet_console=") and cookie_attributes(l)[1] for l in reply.all("Set-Cookie")),
              f"csrf field: {token_field}", reply.said())
    bed.wait_for_throttle()

    # the browser signs in as the operator
    ok, said = browser_sign_in(bed, bed.tokens[OPERATOR])
    check("the operator signs in through the form in the browser and reaches the search page (/console)", ok, said)
    cookie = browser.cookie()
    check("driver.get_cookies(): signet_console is httpOnly and sameSite Strict",
          cookie is not None and cookie.get("httpOnly") is True and cookie.get("sameSite") == "Strict",
          f"cookies: {browser.driver.get_cookies()}")
    browser.get("/console", "search")
    check("the search page has the search box (input name=q in a GET form)", find_form(browser, "search") is not None,
          clip(browser.driver.page_source, 1200))
    browser.shot("console-search.png")


def search(bed, query, label):
    browser = bed.browser
    By = browser.by()
    browser.get("/console", "search")
    box = browser.driver.find_element(By.NAME, "q")
    box.clear()
    box.send_keys(query)
    form = find_form(browser, "search")
    browser.submit(form)
    browser.record(label)
    return browser.text()


def on_customer_page(bed, otid):
    text = bed.browser.text()
    return otid in text and re.search(r"timeline", text, re.I) is not None


def case_search(bed):
    c, fake = bed.customers, bed.fake
    browser = bed.browser
    a, b = c["A"], c["B"]

    mark = fake.mark()
    search(bed, a["otid"], "search: originalTransactionId")
    check("search by originalTransactionId opens the customer's page (its id and the timeline shown), Apple not asked",
          on_customer_page(bed, a["otid"]) and not fake.since(mark), browser.driver.current_url,
          clip(browser.text(), 800), seen_said(fake.since(mark)))

    search(bed, b["token"].upper(), "search: appAccountToken UPPER")
    check("search by appAccountToken typed UPPER case finds the purchase whose token is stored lower case",
          on_customer_page(bed, b["otid"]), browser.driver.current_url, clip(browser.text(), 800))

    search(bed, c["C"]["app_tx"], "search: appTransactionId")
    check("search by appTransactionId opens that customer's page", on_customer_page(bed, c["C"]["otid"]),
          browser.driver.current_url, clip(browser.text(), 800))

    mark = fake.mark()
    search(bed, ORDER_A, "search: order id")
    lookups = fake.calls(mark, "GET", f"/inApps/v1/lookup/{ORDER_A}")
    check("search by an order ID (letters and digits): Look Up Order ID asked once on the Production host, the "
          "purchase it names opened from Signet's store", on_customer_page(bed, a["otid"]) and len(lookups) == 1
          and all(s.env == "Production" for s in lookups), browser.driver.current_url, clip(browser.text(), 800),
          seen_said(fake.since(mark)))

    mark = fake.mark()
    search(bed, a["renewal_id"], "search: renewal transaction id")
    infos = fake.calls(mark, "GET", f"/inApps/v1/transactions/{a['renewal_id']}")
    check("search by a renewal's transaction id (all digits, not an originalTransactionId): Get Transaction Info asked, "
          "the purchase opened", on_customer_page(bed, a["otid"]) and len(infos) >= 1, browser.driver.current_url,
          clip(browser.text(), 800), seen_said(fake.since(mark)))

    mark = fake.mark()
    text = search(bed, ORDER_BC, "search: order with two purchases")
    links = [e.get_attribute("href") for e in browser.driver.find_elements(browser.by().TAG_NAME, "a")]
    check("search by an order ID naming two purchases lists both (links to each customer page)",
          b["otid"] in text and c["C"]["otid"] in text
          and any(b["otid"] in (h or "") for h in links) and any(c["C"]["otid"] in (h or "") for h in links),
          clip(text, 800), seen_said(fake.since(mark)))

    text = search(bed, ORDER_U, "search: order of a purchase the store lacks")
    check("search by an order ID whose purchase Signet's store lacks says so (its notifications have not arrived; a "
          "backfill or reconcile fetches them)", c["U"]["otid"] in text and re.search(
              r"not (yet )?arrived|n't arrived|backfill|reconcile|not in (Signet's|the) store|does not know|"
              r"doesn't know|not known", text, re.I), clip(text, 800))

    # An unknown all-digit id is asked of Production and then of Apple's Sandbox host itself
    # (docs/appstore-api.md: lookUpTransaction; SIGNET_APPSTORE_API_URL replaces the configured
    # environment's host only), which this offline test cannot stand in for: not searched here.
    mark = fake.mark()
    unknown = "no-such-customer-" + secrets.token_hex(4)
    text = search(bed, unknown, "search: unknown id")
    check("search by an unknown id (neither digits nor an order ID): the page says not found",
          re.search(NOT_FOUND, text, re.I) and not re.search(r"timeline", text, re.I), clip(text, 800))
    check("search by an id with dashes (not 'letters and digits', so no order ID) is not sent to Look Up Order ID",
          not fake.since(mark), seen_said(fake.since(mark)))
    mark = fake.mark()
    text = search(bed, ORDER_NONE, "search: unknown order id")
    check("search by an order ID Apple does not know (200, status 1): Look Up Order ID asked, the page says not found",
          re.search(NOT_FOUND, text, re.I) and not re.search(r"timeline", text, re.I)
          and len(fake.calls(mark, "GET", f"/inApps/v1/lookup/{ORDER_NONE}")) == 1, clip(text, 800),
          seen_said(fake.since(mark)))
    results = bed.raw.request("GET", "/console/search?" + urllib.parse.urlencode({"q": unknown}))
    bed.replies.append(("GET /console/search (not found)", results))


def case_customer(bed):
    c = bed.customers
    a = c["A"]
    browser = bed.browser
    browser.get(f"/console/customers/{a['otid']}", "customer")
    text = browser.text()
    api = bed.client().request("GET", f"/v1/customers/{a['otid']}", headers={"Accept": "application/json"})
    profile = api.json() if api.status == 200 else None
    purchase = next((p for p in (profile or {}).get("purchases", []) if str(p.get("originalTransactionId")) ==
                     a["otid"]), None) if isinstance(profile, dict) else None
    why = purchase.get("why") if isinstance(purchase, dict) else None
    check("customer page: the purchase's product, originalTransactionId, environment, appAccountToken and "
          "appTransactionId are shown", all(v in text for v in (a["product"], a["otid"], "Production", a["token"],
                                                                    a["app_tx"])), clip(text, 1500))
    check("customer page: access (yes) and the expiry date of the current period",
          re.search(r"access", text, re.I) and re.search(r"\byes\b", text, re.I) and shows_day(text, a["expires"]),
          f"expiry {day_forms(a['expires'])[:3]}", clip(text, 1500))
    check("customer page: the \"why\" sentence the state machine gives (GET /v1/customers/{id}'s `why`) is shown",
          isinstance(why, str) and why.strip() and why.strip() in text,
          f"why from the API: {why!r}", api.said() if profile is None else "", clip(text, 1500))
    section, rows = section_text(browser, r"timeline")
    dates = [first_instant(r) for r in rows]
    ordered = all(d is not None for d in dates) and all(x >= y for x, y in zip(dates, dates[1:]))
    check("customer page: a Timeline section with at least two entries, each with a date, newest first",
          section is not None and len(rows) >= 2 and ordered, f"rows: {rows[:12]}", f"dates: {dates[:12]}")
    renewed = next((i for i, r in enumerate(rows) if shows_day(r, a["renewed_at"])), None)
    subscribed = next((i for i, r in enumerate(rows) if shows_day(r, a["subscribed_at"])), None)
    check("customer page: the timeline dates its entries by Apple's signedDate (the renewal 5 days ago before the "
          "first purchase 35 days ago)", renewed is not None and subscribed is not None and renewed < subscribed,
          f"renewal day {day_forms(a['renewed_at'])[:2]}, purchase day {day_forms(a['subscribed_at'])[:2]}",
          f"rows: {rows[:12]}")
    browser.shot("console-customer.png", full=True)
    reply = bed.raw.request("GET", f"/console/customers/{a['otid']}")
    bed.replies.append(("GET /console/customers/{id}", reply))
    check("customer page over raw HTTP: 200 text/html, the same purchase", reply.status == 200
          and (reply.header("Content-Type") or "").startswith("text/html") and a["otid"] in reply.text(), reply.said())

    # escaping
    x = c["E"]
    browser.get(f"/console/customers/{x['otid']}", "customer with <script> in its product id")
    ok, said = browser.no_alert()
    text = browser.text()
    source = browser.driver.page_source
    check("a product id carrying <script>alert(1)</script> is shown as text: the literal text on the page, "
          "&lt;script&gt; in the source, no alert (NoAlertPresentException)",
          ok and SCRIPT_PAYLOAD in text and "&lt;script&gt;" in source, said, clip(text, 1200))
    By = browser.by()
    check("the `\"><img src=x onerror=alert(2)>` payload is text too: no <img> with onerror, no <script> element",
          not browser.driver.find_elements(By.CSS_SELECTOR, "img[onerror], [onerror]")
          and not browser.driver.find_elements(By.TAG_NAME, "script") and 'onerror=alert(2)>' in text,
          clip(source, 2000))


def pick_reason(browser, form, pattern):
    """Selects the reason option matching `pattern` in the form's select; returns its (value, text)."""
    from selenium.webdriver.support.ui import Select
    By = browser.by()
    selects = form.find_elements(By.TAG_NAME, "select")
    if selects:
        select = Select(selects[0])
        for option in select.options:
            if re.search(pattern, (option.text or "") + " " + (option.get_attribute("value") or ""), re.I):
                select.select_by_value(option.get_attribute("value"))
                return option.get_attribute("value"), option.text
        return None, None
    radios = form.find_elements(By.CSS_SELECTOR, "input[type=radio]")
    for radio in radios:
        label = radio.get_attribute("value") or ""
        if re.search(pattern, label, re.I):
            radio.click()
            return label, label
    return None, None


def fill_extend(browser, days, reason_pattern):
    By = browser.by()
    form = find_form(browser, "extend")
    if form is None:
        return None, None
    day_inputs = [i for i in form.find_elements(By.CSS_SELECTOR, "input") if re.search(r"day", i.get_attribute("name")
                                                                                        or "", re.I)]
    if day_inputs:
        day_inputs[0].clear()
        day_inputs[0].send_keys(str(days))
    reason = pick_reason(browser, form, reason_pattern)
    return form, reason


def request_identifier(browser, form):
    for name, value in browser.fields(form):
        if re.search(r"request", name, re.I):
            return value
    match = re.search(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", browser.text())
    return match.group(0) if match else None


def case_extend(bed):
    c, fake = bed.customers, bed.fake
    browser = bed.browser
    a = c["A"]
    path = f"/inApps/v1/subscriptions/extend/{a['otid']}"
    browser.get(f"/console/customers/{a['otid']}", "customer (operator)")
    forms = {form_kind(browser, f) for f in browser.forms()}
    check("the operator's customer page has the action forms: extend the renewal date and set the app account token",
          {"extend", "token"} <= forms, f"forms: {[describe_form(browser, f) for f in browser.forms()]}")
    mark = fake.mark()
    form, (reason_value, reason_text) = fill_extend(browser, 7, r"service")
    if form is None:
        check("extend: the form leads to a confirmation page", False, "no extend form")
        return
    browser.submit(form)
    browser.record("confirm extend")
    text = browser.text()
    confirm = confirm_form(browser)
    rid = request_identifier(browser, confirm) if confirm is not None else None
    check("extend (7 days, service issue): the form leads to a confirmation page saying what will happen (7 days, the "
          "purchase) with a request identifier and a button; Apple not asked yet",
          confirm is not None and rid and rid in text and re.search(r"\b7\b", text) and a["otid"] in text
          and not fake.calls(mark, "PUT", path), f"reason picked: {reason_value!r} {reason_text!r}", clip(text, 1200),
          seen_said(fake.since(mark)))
    browser.shot("console-confirm.png")
    if confirm is None:
        return
    fields = browser.fields(confirm)
    target = form_target(browser, confirm)
    browser.submit(confirm)
    browser.record("after extend")
    puts = fake.calls(mark, "PUT", path)
    body = puts[0].json() if puts else None
    check("confirming: the fake Apple receives exactly one PUT /inApps/v1/subscriptions/extend/{id} with a valid JWT",
          len(puts) == 1 and not puts[0].violations and puts[0].status == 200, seen_said(fake.since(mark)))
    check("the PUT's body is exactly {extendByDays: 7, extendReasonCode: 3 (service issue), requestIdentifier: the "
          "confirmation's}", isinstance(body, dict) and sorted(body) == ["extendByDays", "extendReasonCode",
                                                                         "requestIdentifier"]
          and body.get("extendByDays") == 7 and body.get("extendReasonCode") == 3 and body.get("requestIdentifier") == rid,
          f"confirmation's request identifier {rid!r}", seen_said(puts))
    new_expiry = a["expires"] + 7 * DAY_MS
    browser.get(f"/console/customers/{a['otid']}", "customer after extend")
    text = browser.text()
    check("the customer page then shows the action done, the new renewal date, pending until RENEWAL_EXTENDED",
          re.search(r"\bdone\b", text, re.I) and re.search(r"pending", text, re.I) and shows_day(text, new_expiry)
          and OPERATOR in text, f"new renewal day {day_forms(new_expiry)[:3]}", clip(text, 2000))
    a["extension_rid"], a["new_expiry"] = rid, new_expiry

    # the same confirmation again: never sent to Apple twice
    mark = fake.mark()
    again = bed.client().request("POST", target, fields=fields,
                                 cookies={"signet_console": browser.cookie()["value"]})
    bed.replies.append(("POST the same confirmation again", again))
    time.sleep(0.5)
    check("re-posting the same confirmation (the browser's back and resubmit: the same fields, the same session) does "
          "not call Apple a second time, and is no server error", not fake.calls(mark, "PUT", path)
          and again.status is not None and again.status < 500, again.said(), seen_said(fake.since(mark)))
    browser.driver.back()
    browser.wait_loaded()
    mark = fake.mark()
    confirm = confirm_form(browser)
    if confirm is not None and rid in browser.text():
        browser.submit(confirm)
        check("the browser's back to the confirmation page and submitting it again does not call Apple again",
              not fake.calls(mark, "PUT", path), seen_said(fake.since(mark)))
    else:
        note("browser back did not show the confirmation page again (no-store): " + browser.driver.current_url)

    # the audit log and the search page's recent actions
    browser.get("/console/audit", "audit")
    text = browser.text()
    rows = [r for r in text.splitlines() if a["otid"] in r]
    check("the audit log page lists the extension with the operator's name, the purchase, the action and done",
          OPERATOR in text and a["otid"] in text and re.search(r"extend", text, re.I) and re.search(r"done", text, re.I),
          clip(text, 1500))
    browser.shot("console-audit.png")
    reply = bed.raw.request("GET", "/console/audit")
    bed.replies.append(("GET /console/audit", reply))
    browser.get("/console", "search with recent actions")
    check("the search page lists the last 7 days' operator actions: the extension is there",
          a["otid"] in browser.text() and OPERATOR in browser.text(), clip(browser.text(), 1000))
    reply = bed.raw.request("GET", "/console")
    bed.replies.append(("GET /console", reply))


def case_renewal_extended(bed):
    c = bed.customers
    a = c["A"]
    if not a.get("new_expiry"):
        return
    now = now_ms()
    jws, transaction, tjws = bed.fixtures.purchase(a["otid"], a["product"], a["token"], a["app_tx"], a["renewed_at"],
                                                   a["new_expiry"], now, transaction_id=a["renewal_id"],
                                                   kind="RENEWAL_EXTENDED", subtype=None)
    reply = send_notification(bed.webhook, jws)
    browser = bed.browser
    browser.get(f"/console/customers/{a['otid']}", "customer after RENEWAL_EXTENDED")
    text = browser.text()
    check("after Apple's RENEWAL_EXTENDED arrives through the webhook the extension is no longer shown pending and the "
          "new expiry is the purchase's", reply.status == 200 and not re.search(r"\bpending\b", text, re.I)
          and shows_day(text, a["new_expiry"]), reply.said(), clip(text, 2000))


def case_apple_refuses(bed):
    """Apple refuses an extension (403 4030004): the customer page says refused, with Apple's code."""
    c, fake = bed.customers, bed.fake
    browser = bed.browser
    x = c["E"]
    path = f"/inApps/v1/subscriptions/extend/{x['otid']}"
    fake.purchases[x["otid"]]["refuse"] = (403, 4030004, "Forbidden - subscription state ineligible for extension.")
    browser.get(f"/console/customers/{x['otid']}", "customer E (Apple refuses)")
    form, _ = fill_extend(browser, 5, r"customer|satisf")
    if form is None:
        check("Apple's refusal: the extend form", False)
        return
    browser.submit(form)
    confirm = confirm_form(browser)
    mark = fake.mark()
    if confirm is not None:
        browser.submit(confirm)
    browser.get(f"/console/customers/{x['otid']}", "customer E after Apple refused")
    text = browser.text()
    puts = fake.calls(mark, "PUT", path)
    check("an extension Apple refuses (403, errorCode 4030004): asked once, the customer page then says refused with "
          "Apple's status and error code", len(puts) == 1 and re.search(r"refused", text, re.I) and "4030004" in text
          and re.search(r"\b403\b", text), seen_said(puts), clip(text, 2000))


def case_set_token(bed):
    c, fake = bed.customers, bed.fake
    b = c["B"]
    browser = bed.browser
    By = browser.by()
    path = f"/inApps/v1/transactions/{b['otid']}/appAccountToken"
    browser.get(f"/console/customers/{b['otid']}", "customer B")
    form = find_form(browser, "token")
    if form is None:
        check("set the app account token: a form on the operator's page", False,
              [describe_form(browser, f) for f in browser.forms()])
        return
    new = lettered_uuid()
    inputs = [i for i in form.find_elements(By.CSS_SELECTOR, "input") if (i.get_attribute("type") or "text").lower()
              in ("text", "search", "") and not re.search(r"csrf", i.get_attribute("name") or "", re.I)]
    mark = fake.mark()
    inputs[0].clear()
    inputs[0].send_keys(new.upper())
    browser.submit(form)
    browser.record("confirm set token")
    confirm = confirm_form(browser)
    text = browser.text()
    check("set token (typed UPPER case): a confirmation page naming the token, Apple not asked yet",
          confirm is not None and new.lower() in text.lower() and not fake.calls(mark, "PUT", path), clip(text, 1000))
    if confirm is None:
        return
    fields, target = browser.fields(confirm), form_target(browser, confirm)
    browser.submit(confirm)
    browser.record("after set token")
    puts = fake.calls(mark, "PUT", path)
    body = puts[0].json() if puts else None
    check("confirming: Apple receives one PUT .../appAccountToken with {\"appAccountToken\": the UUID in lower case} "
          "and a valid JWT", len(puts) == 1 and body == {"appAccountToken": new.lower()} and not puts[0].violations,
          seen_said(fake.since(mark)))
    mark = fake.mark()
    again = bed.client().request("POST", target, fields=fields, cookies={"signet_console": browser.cookie()["value"]})
    time.sleep(0.3)
    check("re-posting the same set-token confirmation does not call Apple again", not fake.calls(mark, "PUT", path)
          and again.status is not None and again.status < 500, again.said(), seen_said(fake.since(mark)))
    browser.get(f"/console/customers/{b['otid']}", "customer B after set token")
    check("the customer page shows the set-token action done by the operator",
          re.search(r"done", browser.text(), re.I) and OPERATOR in browser.text(), clip(browser.text(), 1500))


def case_consent(bed):
    c, fake = bed.customers, bed.fake
    d = c["D"]
    if not d.get("restricted"):
        note("no customer with a RESCIND_CONSENT in force: record consent not tested")
        return
    browser = bed.browser
    browser.get(f"/console/customers/{d['otid']}", "customer D (consent withdrawn)")
    text = browser.text()
    form = find_form(browser, "consent")
    check("a customer whose consent was withdrawn (RESCIND_CONSENT): the page says so and offers to record consent "
          "again", form is not None and re.search(r"consent", text, re.I),
          [describe_form(browser, f) for f in browser.forms()], clip(text, 1500))
    other = c["C"]
    browser.get(f"/console/customers/{other['otid']}", "customer C")
    check("a customer who did not withdraw consent is offered no record-consent form",
          find_form(browser, "consent") is None, [describe_form(browser, f) for f in browser.forms()])
    if form is None:
        return
    browser.get(f"/console/customers/{d['otid']}", "customer D (consent withdrawn)")
    mark = fake.mark()
    browser.submit(find_form(browser, "consent"))
    browser.record("confirm consent")
    confirm = confirm_form(browser)
    check("record consent: a confirmation page first", confirm is not None and re.search(r"consent", browser.text(), re.I),
          clip(browser.text(), 800))
    if confirm is None:
        return
    browser.submit(confirm)
    reply = bed.client().request("GET", f"/v1/consent/{d['app_tx']}", headers={"Accept": "application/json"})
    body = reply.json() if reply.status == 200 else None
    check("confirmed: the restriction is lifted in Signet's store (GET /v1/consent/{appTransactionId}: restricted "
          "false, cleared by the operator), Apple not called", isinstance(body, dict) and body.get("restricted") is False
          and OPERATOR in json.dumps(body) and not fake.since(mark), reply.said(), seen_said(fake.since(mark)))
    browser.get(f"/console/customers/{d['otid']}", "customer D after consent")
    check("the customer's page then offers no record-consent form and shows the action",
          find_form(browser, "consent") is None and OPERATOR in browser.text(), clip(browser.text(), 1500))
    _, rows = section_text(browser, r"timeline")
    consent_rows = [r for r in rows if re.search(r"consent|rescind", r, re.I)]
    check("the timeline shows the consent withdrawn (RESCIND_CONSENT) and recorded again by the operator, newest first",
          len(consent_rows) >= 2 and any(OPERATOR in r for r in consent_rows)
          and rows.index(next(r for r in consent_rows if OPERATOR in r)) <
          rows.index(next((r for r in consent_rows if OPERATOR not in r), consent_rows[-1])),
          f"timeline rows: {rows}")


def unconfirmed_extension(bed, otid, days):
    """The operator fills the extend form of `otid` and stops at the confirmation page: (the extend
    form's fields and target, the confirmation's fields and target)."""
    browser = bed.browser
    browser.get(f"/console/customers/{otid}", "customer (for a forged form)")
    form, _ = fill_extend(browser, days, r"customer|satisf")
    if form is None:
        return None
    first = (browser.fields(form), form_target(browser, form))
    page = bed.client().request("POST", first[1], fields=first[0], cookies={"signet_console": browser.cookie()["value"]})
    bed.replies.append(("POST the extend form (the confirmation page)", page))
    browser.submit(form)
    confirm = confirm_form(browser)
    if confirm is None:
        return None
    return first, (browser.fields(confirm), form_target(browser, confirm))


def case_forged(bed):
    c, fake = bed.customers, bed.fake
    cc = c["C"]
    path = f"/inApps/v1/subscriptions/extend/{cc['otid']}"
    made = unconfirmed_extension(bed, cc["otid"], 3)
    if made is None:
        check("forged forms: the operator's extend form and confirmation for C could be read", False)
        return
    (form_fields, form_target_path), (fields, target) = made
    session = {"signet_console": bed.browser.cookie()["value"]}
    token_name = csrf_name(fields)
    check("every action form carries a CSRF token (a hidden field named like csrf)", token_name is not None
          and csrf_name(form_fields) is not None, f"form fields {form_fields}", f"confirmation fields {fields}")
    if token_name is None:
        return
    cases = [("without the CSRF token", [(k, v) for k, v in fields if k != token_name]),
             ("with a wrong CSRF token (one character changed)",
              [(k, (("A" if v[:1] != "A" else "B") + v[1:]) if k == token_name else v) for k, v in fields]),
             ("with another random CSRF token", [(k, secrets.token_urlsafe(32) if k == token_name else v)
                                                 for k, v in fields])]
    for label, forged in cases:
        mark = fake.mark()
        reply = bed.client().request("POST", target, fields=forged, cookies=session)
        bed.replies.append((f"POST a forged confirmation ({label})", reply))
        time.sleep(0.3)
        check(f"a forged confirmation POST with the operator's session cookie {label}: refused 403, Apple not called",
              reply.status == 403 and not fake.calls(mark, "PUT", path), reply.said(), seen_said(fake.since(mark)))
    before = bed.raw.request("GET", "/console")
    refused = bed.raw.request("POST", "/console/sign-out", fields=[])
    bed.replies.append(("POST /console/sign-out without the CSRF token", refused))
    after = bed.raw.request("GET", "/console")
    check("a forged sign-out (POST /console/sign-out with the session cookie, no CSRF token): refused 403, the session "
          "still works", before.status == 200 and refused.status == 403 and after.status == 200, refused.said(),
          after.said())
    mark = fake.mark()
    forged = [(k, v) for k, v in form_fields if k != csrf_name(form_fields)]
    reply = bed.client().request("POST", form_target_path, fields=forged, cookies=session)
    check("the extend form itself posted without its CSRF token: refused 403, Apple not called",
          reply.status == 403 and not fake.since(mark), reply.said())
    mark = fake.mark()
    reply = bed.client().request("POST", target, fields=fields, cookies=session)
    time.sleep(0.3)
    check("control: the same confirmation with its CSRF token acts (Apple called once): the refusals above were the "
          "missing token's", len(fake.calls(mark, "PUT", path)) == 1 and reply.status is not None and reply.status < 400,
          reply.said(), seen_said(fake.since(mark)))


def case_read_only(bed):
    c, fake = bed.customers, bed.fake
    browser = bed.browser
    cc = c["C"]
    path = f"/inApps/v1/subscriptions/extend/{cc['otid']}"
    made = unconfirmed_extension(bed, cc["otid"], 2)
    old_cookie = browser.cookie()
    signed_out = sign_out(bed)
    browser.record("after sign-out")
    reply = bed.client().request("GET", "/console", cookies={"signet_console": old_cookie["value"]})
    bed.replies.append(("GET /console with a signed-out session", reply))
    check("signing out ends the session: the old cookie no longer reaches the console (redirect to sign-in or 401/403)",
          signed_out and (reply.status in (401, 403) or (reply.status in (302, 303, 307)
                                                         and "sign-in" in (reply.header("Location") or ""))),
          reply.said())
    reply = bed.client().request("GET", f"/console/customers/{cc['otid']}",
                                 cookies={"signet_console": old_cookie["value"]})
    check("the signed-out cookie does not reach a customer page either", reply.status != 200
          or cc["otid"] not in reply.text(), reply.said())

    ok, said = browser_sign_in(bed, bed.tokens[READER])
    check("the read-only credential signs in", ok, said)
    browser.get(f"/console/customers/{cc['otid']}", "customer (read-only)")
    forms = [describe_form(browser, f) for f in browser.forms()]
    check("a read-only credential sees the customer page with no action forms",
          cc["otid"] in browser.text() and not action_forms(browser)
          and not [f for f in browser.forms() if (f.get_attribute("method") or "").lower() == "post"
                   and form_kind(browser, f) not in ("sign-out",)], forms)
    browser.shot("console-read-only.png")
    browser.get("/console/audit", "audit (read-only)")
    check("the read-only credential reads the audit log", re.search(r"audit", browser.text(), re.I)
          and OPERATOR in browser.text(), clip(browser.text(), 600))
    rows = [r.text for r in browser.driver.find_elements(browser.by().CSS_SELECTOR, "main tr")
            if r.text.strip() and not r.find_elements(browser.by().TAG_NAME, "th")]
    dates = [first_instant(r) for r in rows]
    at = {name: next((i for i, r in enumerate(rows) if c[name]["otid"] in r.replace("\n", "")), None)
          for name in ("A", "B", "D")}
    check("the audit log lists every action of the operator, newest first: the extension of A, the token set on B "
          "after it, the consent recorded for D after that (each with the operator's name)",
          all(d is not None for d in dates) and all(x >= y for x, y in zip(dates, dates[1:]))
          and None not in (at["A"], at["B"]) and at["B"] < at["A"]
          and (not c["D"].get("restricted") or (at["D"] is not None and at["D"] < at["B"]))
          and all(OPERATOR in rows[i] for i in at.values() if i is not None),
          f"positions {at}", f"rows: {rows[:10]}")
    if made is None:
        check("read-only POSTs: the operator's forms could be read first", False)
        return
    (form_fields, form_path), (fields, target) = made
    ro_session = {"signet_console": browser.cookie()["value"]}
    ro_token = None
    for form in browser.forms():
        name = csrf_name(browser.fields(form))
        if name:
            ro_token = dict(browser.fields(form))[name]
    if ro_token is None:
        browser.get("/console", "search (read-only)")
        for form in browser.forms():
            name = csrf_name(browser.fields(form))
            if name:
                ro_token = dict(browser.fields(form))[name]
    token_name = csrf_name(fields)
    check("the read-only session has a CSRF token of its own (on its sign-out form)", ro_token is not None
          and token_name is not None)
    if ro_token is None or token_name is None:
        return
    for label, (base, where) in (("the extend form", (form_fields, form_path)), ("the confirmation", (fields, target))):
        name = csrf_name(base)
        posted = [(k, ro_token if k == name else v) for k, v in base]
        mark = fake.mark()
        reply = bed.client().request("POST", where, fields=posted, cookies=ro_session)
        bed.replies.append((f"POST {label} as read-only", reply))
        time.sleep(0.3)
        check(f"{label} POSTed by the read-only credential with its own valid session and CSRF token: refused 403, "
              "Apple not called", reply.status == 403 and not fake.calls(mark, "PUT", path), reply.said(),
              seen_said(fake.since(mark)))
    sign_out(bed)


def case_limits(bed):
    """What is checked before anything is sent, and hostile input in the search box."""
    c, fake = bed.customers, bed.fake
    browser = bed.browser
    By = browser.by()
    a = c["A"]
    path = f"/inApps/v1/subscriptions/extend/{a['otid']}"

    # a second extension of A goes to Apple; a third within 365 days is refused from the audit log
    for attempt, expect in ((2, 1), (3, 0)):
        mark = fake.mark()
        browser.get(f"/console/customers/{a['otid']}", f"customer A (extension {attempt})")
        form, _ = fill_extend(browser, 1, r"customer|satisf")
        if form is None:
            check(f"extension {attempt} of A: the extend form", False,
                  [describe_form(browser, f) for f in browser.forms()])
            return
        browser.submit(form)
        confirm = confirm_form(browser)
        if confirm is not None:
            browser.submit(confirm)
        text = browser.text()
        puts = fake.calls(mark, "PUT", path)
        if expect:
            check("a second extension of A within 365 days is sent (Apple allows two)", len(puts) == 1,
                  clip(text, 800), seen_said(fake.since(mark)))
        else:
            browser.get(f"/console/customers/{a['otid']}", "customer A (after a third extension)")
            said = re.search(r"[^.\n]*(365|twice|two extensions)[^.\n]*", text, re.I)
            check("a third extension of A within 365 days is refused before anything is sent (two done in the audit "
                  "log), saying why", not puts and said, clip(text, 1000), seen_said(fake.since(mark)))
            if said:
                note("the console said: " + said.group(0).strip())

    # days out of Apple's range, posted as a client that ignores the form's min/max
    browser.get(f"/console/customers/{c['C']['otid']}", "customer C (limits)")
    form = find_form(browser, "extend")
    if form is not None:
        base = browser.fields(form)
        target = form_target(browser, form)
        session = {"signet_console": browser.cookie()["value"]}
        for days in ("0", "91", "7.5", "-3"):
            fields = [(k, days if re.search(r"day", k, re.I) else v) for k, v in base]
            mark = fake.mark()
            reply = bed.client().request("POST", target, fields=fields, cookies=session)
            confirmations = [f for f in parse_forms(reply.body) if f["method"] == "post"
                             and not re.search(r"sign-out", f["action"])]
            acted = None
            if confirmations:  # a confirmation was offered anyway: confirming it must not reach Apple
                posted = [(f["name"], f["value"]) for f in confirmations[0]["fields"]
                          if f["type"] not in ("submit", "button") or f["name"]]
                acted = bed.client().request("POST", urllib.parse.urljoin(target, confirmations[0]["action"] or target),
                                             fields=posted, cookies=session)
            time.sleep(0.2)
            check(f"extendByDays {days} (Apple takes 1 to 90) posted to the extend form: refused before anything is sent "
                  "(no confirmation, or one that sends nothing)", not fake.since(mark) and not confirmations
                  and reply.status is not None and reply.status < 500, reply.said(),
                  acted.said() if acted else "", seen_said(fake.since(mark)))

    # a token that is not a UUID
    browser.get(f"/console/customers/{c['C']['otid']}", "customer C (token)")
    form = find_form(browser, "token")
    if form is not None:
        field = [i for i in form.find_elements(By.CSS_SELECTOR, "input") if (i.get_attribute("type") or "text")
                 .lower() in ("text", "")][0]
        base = browser.fields(form)
        name = field.get_attribute("name")
        mark = fake.mark()
        reply = bed.client().request("POST", form_target(browser, form),
                                     fields=[(k, "not-a-uuid" if k == name else v) for k, v in base],
                                     cookies={"signet_console": browser.cookie()["value"]})
        confirmations = [f for f in parse_forms(reply.body) if f["method"] == "post"
                         and not re.search(r"sign-out", f["action"])]
        check("set token with `not-a-uuid`: refused before anything is sent (no confirmation, Apple not called)",
              not confirmations and not fake.since(mark) and reply.status is not None and reply.status < 500,
              reply.said())

    # hostile search input
    mark = fake.mark()
    text = search(bed, "<script>alert(3)</script>", "search: <script> typed")
    ok, said = browser.no_alert()
    check("a search for `<script>alert(3)</script>` shows the query as text: no alert, no <script> element",
          ok and not browser.driver.find_elements(By.TAG_NAME, "script")
          and "&lt;script&gt;" in browser.driver.page_source, said, clip(browser.driver.page_source, 1500))
    mark = fake.mark()
    search(bed, "MK5TTT/../../transactions/" + a["renewal_id"], "search: a path in the query")
    wrong = [s for s in fake.since(mark) if not re.fullmatch(r"/inApps/v1/lookup/[^/]+", s.path)]
    check("a search for `MK5TTT/../../transactions/ID` cannot reach another Apple endpoint (the id is one path "
          "segment, escaped, or not sent)", not wrong, seen_said(fake.since(mark)))
    reply = bed.raw.request("GET", "/console/customers/%3Cscript%3Ealert(4)%3C%2Fscript%3E")
    bed.replies.append(("GET /console/customers/<script>", reply))
    check("GET /console/customers/<script>alert(4)</script>: answered without the markup unescaped",
          reply.status is not None and "<script>alert(4)" not in reply.text(), reply.said())


def start_sandbox(bed):
    """A second `signet run` configured for Sandbox, its console with `idle_timeout: 1m`: a session
    signed in now and left alone is judged at the end (case_idle)."""
    data = os.path.join(bed.root, "data-sandbox")
    os.makedirs(data)
    webhook, admin = free_port(), free_port()
    pipeline = os.path.join(bed.root, "console-sandbox.yaml")
    write_pipeline(pipeline, bed.fixtures, data, webhook, admin, bed.credentials, environment="Sandbox",
                   console_extra="  idle_timeout: 1m\n",
                   description="console browser acceptance (Pipelines/webhook.yaml with a console)")
    environment = dict(bed.run_env(), SIGNET_DATA_DIR=data, SIGNET_ENVIRONMENT="Sandbox",
                       SIGNET_APPSTORE_API_URL=bed.fake.url("Sandbox"))
    child = RunningChild([bed.binary, "run", "--pipeline", pipeline], bed.env(environment), bed.root,
                         f"SIGNET_ENVIRONMENT=Sandbox signet run --pipeline {pipeline} (console idle_timeout: 1m)")
    probe = Client(admin)
    ready = wait_until(lambda: not child.running() or probe.request("GET", "/readyz").status == 200, 40, 0.2)
    if not check("a second `signet run` configured for Sandbox (SIGNET_ENVIRONMENT=Sandbox; console idle_timeout: 1m) "
                 "starts", ready and child.running(), child.said()):
        return
    idle = Client(admin)
    _, signed = raw_sign_in(bed, idle, bed.tokens[READER], "Sandbox console, idle session")
    first = idle.request("GET", "/console")
    check("Sandbox console: a read-only session signed in works at once (200)", signed is not None
          and first.status == 200, first.said())
    bed.sandbox = {"child": child, "admin": admin, "idle": idle, "since": time.monotonic()}


def case_sandbox_order(bed):
    """A console configured for Sandbox does not ask Look Up Order ID (Apple serves it in Production only)."""
    fake = bed.fake
    if not getattr(bed, "sandbox", None):
        return
    client = Client(bed.sandbox["admin"])
    _, signed = raw_sign_in(bed, client, bed.tokens[OPERATOR], "Sandbox console")
    mark = fake.mark()
    reply = client.request("GET", "/console/search?" + urllib.parse.urlencode({"q": ORDER_A}))
    text = html.unescape(re.sub(r"<[^>]+>", " ", reply.text()))
    check("Sandbox console: searching an order ID is refused, saying Look Up Order ID is Production only, and "
          "nothing reaches Apple", signed is not None and reply.status is not None and reply.status < 500
          and re.search(r"Production", text) and not fake.since(mark), reply.said(), seen_said(fake.since(mark)))
    bed.sandbox["fresh"] = client


def case_idle(bed):
    sandbox = getattr(bed, "sandbox", None)
    if not sandbox:
        return
    fresh = sandbox.get("fresh")
    left = sandbox["since"] + 64 - time.monotonic()
    if left > 0:
        note(f"waiting {left:.0f} s for the idle session to pass idle_timeout (1m)")
    while time.monotonic() < sandbox["since"] + 64:
        if fresh is not None:
            fresh.request("GET", "/console")  # the control session stays in use
        time.sleep(min(15, max(0.0, sandbox["since"] + 64 - time.monotonic())))
    reply = sandbox["idle"].request("GET", "/console")
    check("a session unused for longer than idle_timeout (1m) has ended: its cookie no longer reaches /console",
          reply.status in (401, 403) or (reply.status in (302, 303, 307) and "sign-in" in (reply.header("Location")
                                                                                         or "")), reply.said())
    if fresh is not None:
        reply = fresh.request("GET", "/console")
        check("control: a session of the same console used within the last minute still works (200)",
              reply.status == 200, reply.said())
    stop(sandbox["child"].process)


def case_keyboard(bed):
    from selenium.webdriver.common.keys import Keys
    c, fake = bed.customers, bed.fake
    browser = bed.browser
    driver = browser.driver
    f = c["F"]
    path = f"/inApps/v1/subscriptions/extend/{f['otid']}"
    bed.wait_for_throttle()
    browser.get("/console/sign-in", "sign-in (keyboard)")

    def active():
        return driver.switch_to.active_element

    def tab_to(predicate, limit=60):
        for _ in range(limit):
            element = active()
            try:
                if predicate(element):
                    return element
            except Exception:  # noqa: BLE001 - a stale element: keep going
                pass
            element.send_keys(Keys.TAB)
        return None

    def is_field(element):
        return element.tag_name == "input" and (element.get_attribute("type") or "text").lower() in ("password", "text")

    field = tab_to(is_field)
    check("keyboard: TAB from the sign-in page reaches the token field", field is not None)
    if field is None:
        return
    old = driver.find_element(browser.by().TAG_NAME, "html")
    field.send_keys(bed.tokens[OPERATOR])
    field.send_keys(Keys.ENTER)
    wait_until(lambda: not _alive(old), 15, 0.05)
    browser.wait_loaded()
    check("keyboard: typing the token and ENTER signs in (the search page)", browser.path().rstrip("/") == "/console"
          and browser.cookie() is not None, driver.current_url, clip(browser.text(), 500))
    box = tab_to(lambda e: e.get_attribute("name") == "q")
    check("keyboard: TAB reaches the search box", box is not None)
    if box is None:
        return
    old = driver.find_element(browser.by().TAG_NAME, "html")
    box.send_keys(f["otid"])
    box.send_keys(Keys.ENTER)
    wait_until(lambda: not _alive(old), 15, 0.05)
    browser.wait_loaded()
    check("keyboard: typing an id and ENTER opens the customer's page", on_customer_page(bed, f["otid"]),
          driver.current_url, clip(browser.text(), 500))
    form = find_form(browser, "extend")
    if form is None:
        check("keyboard: the extend form is on the page", False)
        return
    members = form.find_elements(browser.by().CSS_SELECTOR, "input, select, textarea, button")
    filled = set()

    def reach_button(element):
        if element not in members:
            return False
        kind = (element.get_attribute("type") or "").lower()
        name = (element.get_attribute("name") or "").lower()
        if element.tag_name == "input" and re.search(r"day", name) and "days" not in filled:
            element.send_keys(Keys.CONTROL, "a")
            element.send_keys("2")
            filled.add("days")
        elif element.tag_name == "select" and "reason" not in filled:
            element.send_keys(Keys.ARROW_DOWN)
            filled.add("reason")
        return element.tag_name == "button" or kind == "submit"

    mark = fake.mark()
    button = tab_to(reach_button, 120)
    check("keyboard: TAB reaches the extend form's button (filling its days on the way)", button is not None,
          f"filled: {filled}")
    if button is None:
        return
    old = driver.find_element(browser.by().TAG_NAME, "html")
    button.send_keys(Keys.ENTER)
    wait_until(lambda: not _alive(old), 15, 0.05)
    browser.wait_loaded()
    confirm = confirm_form(browser)
    check("keyboard: ENTER on it opens the confirmation page", confirm is not None and not fake.calls(mark, "PUT", path),
          clip(browser.text(), 600))
    if confirm is None:
        return
    members = confirm.find_elements(browser.by().CSS_SELECTOR, "button, input[type=submit]")
    button = tab_to(lambda e: e in members)
    check("keyboard: TAB reaches the confirmation's button", button is not None)
    if button is None:
        return
    button.send_keys(Keys.ENTER)
    wait_until(lambda: fake.calls(mark, "PUT", path), 15, 0.05)
    time.sleep(0.5)
    puts = fake.calls(mark, "PUT", path)
    check("keyboard: ENTER on the confirmation's button extends once (one PUT to Apple, 2 days)",
          len(puts) == 1 and (puts[0].json() or {}).get("extendByDays") == 2, seen_said(fake.since(mark)))


def _alive(element):
    try:
        element.tag_name
        return True
    except Exception:  # noqa: BLE001
        return False


# ----------------------------------------------------------------------------- the page-wide checks


def csp_problems(value):
    if not value:
        return ["no Content-Security-Policy header"]
    directives = {}
    for part in value.split(";"):
        words = part.split()
        if words:
            directives[words[0].lower()] = [w for w in words[1:]]
    problems = []
    if "'unsafe-inline'" in value or "'unsafe-eval'" in value or "unsafe-hashes" in value:
        problems.append("allows unsafe-inline/unsafe-eval")
    script = directives.get("script-src", directives.get("default-src"))
    if script != ["'none'"]:
        problems.append(f"scripts allowed: script-src/default-src is {script!r}, not 'none'")
    for name in ("script-src-elem", "script-src-attr"):
        if name in directives and directives[name] != ["'none'"]:
            problems.append(f"{name} {directives[name]!r}")
    want = {"default-src": ["'none'"], "style-src": ["'self'"], "img-src": ["'self'"], "form-action": ["'self'"],
            "frame-ancestors": ["'none'"], "base-uri": ["'none'"]}
    for name, values in want.items():
        if directives.get(name) != values:
            problems.append(f"{name} is {directives.get(name)!r}, docs/console.md says {values!r}")
    return problems


def case_headers(bed):
    browser = bed.browser
    # the stylesheet: from Signet itself
    browser.get("/console/sign-in", "sign-in (stylesheet)")
    sheets = [e.get_attribute("href") for e in browser.driver.find_elements(browser.by().CSS_SELECTOR,
                                                                            "link[rel~=stylesheet]")]
    for href in sheets[:2]:
        split = urllib.parse.urlsplit(href)
        reply = bed.client().request("GET", split.path + ("?" + split.query if split.query else ""))
        bed.replies.append((f"GET {split.path} (stylesheet)", reply))
        check(f"the stylesheet {split.path} is served by Signet (200 text/css)", reply.status == 200
              and (reply.header("Content-Type") or "").startswith("text/css"), reply.said())
    reply = bed.raw.request("GET", "/console/customers/" + new_id())
    bed.replies.append(("GET /console/customers/{unknown}", reply))
    for label, reply in bed.replies:
        if reply.status is None:
            check(f"headers of {label}: an answer", False, reply.said())
            continue
        problems = csp_problems(reply.header("Content-Security-Policy"))
        frame = (reply.header("X-Frame-Options") or "").upper() == "DENY"
        if (reply.header("X-Content-Type-Options") or "").lower() != "nosniff":
            problems.append(f"X-Content-Type-Options {reply.header('X-Content-Type-Options')!r}")
        if (reply.header("Referrer-Policy") or "").lower() != "no-referrer":
            problems.append(f"Referrer-Policy {reply.header('Referrer-Policy')!r}")
        if "no-store" not in (reply.header("Cache-Control") or "").lower():
            problems.append(f"Cache-Control {reply.header('Cache-Control')!r}")
        if not frame:
            problems.append(f"X-Frame-Options {reply.header('X-Frame-Options')!r}")
        check(f"headers of {label} ({reply.status}): a Content-Security-Policy allowing no script (docs' policy), "
              "X-Frame-Options DENY, nosniff, no-referrer, no-store", not problems, "\n".join(problems),
              "headers: " + "; ".join(f"{k}: {v}" for k, v in reply.headers))
        if (reply.header("Content-Type") or "").startswith("text/html") and reply.body:
            parser = FormParser()
            parser.feed(reply.text())
            check(f"{label}: the HTML holds no <script> element", parser.scripts == 0, clip(reply.text(), 600))
    seen = {}
    for label, url, scripts, external, onerror in browser.pages:
        key = label
        entry = seen.setdefault(key, [0, [], 0, url])
        entry[0] = max(entry[0], scripts)
        entry[1].extend(external)
        entry[2] = max(entry[2], onerror)
    for label, (scripts, external, onerror, url) in seen.items():
        check(f"page '{label}': no <script> element in the DOM, no inline event handler, nothing from another host",
              scripts == 0 and not external and onerror == 0, url, f"scripts {scripts}, handlers {onerror}",
              f"external: {external[:5]}")


# ----------------------------------------------------------------------------- dead letters


class TableParser(html.parser.HTMLParser):
    """The first <table> of a page: its header cells and its rows' cell texts (whitespace folded),
    with the `id` hidden field of a form in the row, when there is one."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.headers, self.rows = [], []
        self.tables, self.cell, self.row, self.in_table = 0, None, None, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables += 1
            self.in_table = self.tables == 1
        if not self.in_table:
            return
        if tag == "tr":
            self.row = {"cells": [], "form_id": None, "forms": 0}
        elif tag in ("td", "th"):
            self.cell = []
        elif tag == "form" and self.row is not None:
            self.row["forms"] += 1
        elif tag == "input" and self.row is not None and a.get("name") == "id":
            self.row["form_id"] = a.get("value")

    def handle_data(self, data):
        if self.cell is not None:
            self.cell.append(data)

    def handle_endtag(self, tag):
        if not self.in_table:
            return
        if tag in ("td", "th") and self.cell is not None and self.row is not None:
            self.row["cells"].append((tag, " ".join("".join(self.cell).split())))
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if self.row["cells"] and all(kind == "th" for kind, _ in self.row["cells"]):
                self.headers = [text.lower() for _, text in self.row["cells"]]
            elif self.row["cells"]:
                self.rows.append(self.row)
            self.row = None
        elif tag == "table":
            self.in_table = False


def dead_letter_table(body):
    """The dead-letters page's rows as {column header: text} (plus `_form_id` and `_forms`)."""
    parser = TableParser()
    parser.feed(body.decode("utf-8", "replace") if isinstance(body, bytes) else body)
    rows = []
    for row in parser.rows:
        cells = [text for _, text in row["cells"]]
        entry = {parser.headers[i] if i < len(parser.headers) else f"#{i}": text for i, text in enumerate(cells)}
        entry["_form_id"], entry["_forms"] = row["form_id"], row["forms"]
        rows.append(entry)
    return rows


def dead_letter_file(bed):
    """The pipeline's dead-letter file (json format), oldest first."""
    try:
        lines = ndjson_lines(os.path.join(bed.data_dir, "dead-letter.ndjson"))
    except OSError:
        return []
    return [v for v in (parse_json(line) for line in lines) if isinstance(v, dict)]


def folded(text):
    return " ".join(str(text or "").split())


def records_read(bed):
    series, _ = bed.metrics()
    return metric_value(series, "signet_records_read_total")


def replay_answer(browser):
    """The part of the page that says what became of a replay: the status/alert banner, else the
    page's text before its table."""
    By = browser.by()
    parts = [e.text for e in browser.driver.find_elements(By.CSS_SELECTOR, "main [role=status], main [role=alert]")
             if e.text.strip()]
    if parts:
        return folded(" ".join(parts))
    text = browser.text()
    tables = browser.driver.find_elements(By.TAG_NAME, "table")
    if tables and tables[0].text and tables[0].text in text:
        text = text[:text.index(tables[0].text)]
    return folded(text)


def replay_outcomes(text):
    """What a replay's answer says became of the input, as a set of 'processed', 'duplicate' and
    'refused': from counts when the answer gives them ("1 processed, 0 processed before, 0 refused
    again"), else from the words."""
    text = folded(text)
    counts = {"processed": re.search(r"(\d+) processed(?! before)", text),
              "duplicate": re.search(r"(\d+) (?:processed before|dropped as duplicates?|duplicates?)", text),
              "refused": re.search(r"(\d+) refused again", text)}
    if any(counts.values()):
        return {name for name, match in counts.items() if match and int(match.group(1)) > 0}
    found = set()
    if re.search(r"refused again|dead.lettered again", text, re.I):
        found.add("refused")
    if re.search(r"processed before|duplicate", text, re.I):
        found.add("duplicate")
    if re.search(r"\bprocessed\b(?! before)", text, re.I):
        found.add("processed")
    return found


def support_audit(bed):
    """`signet support audit --database STORE`: the audit log's entries (docs/support.md)."""
    result = bed.run(["support", "audit", "--since", "30d", "--database", os.path.join(bed.data_dir, "signet.sqlite")])
    entries = [v for v in (parse_json(l) for l in result.out.splitlines() if l.strip()) if isinstance(v, dict)]
    return entries, result


def replay_form_in_browser(browser, dl_id):
    """The dead-letters page's replay form of the newest row of this dead letter (None: no form)."""
    By = browser.by()
    forms = browser.driver.find_elements(By.XPATH, f"//main//form[.//input[@name='id' and @value='{dl_id}']]")
    return forms[0] if forms else None


def replay_through_browser(bed, dl_id, label):
    """Dead letters page -> the row's Replay button -> the confirmation page -> its button: returns
    (what the confirmation page said, its fields, its target, the page after, checks' details)."""
    browser = bed.browser
    browser.get("/console/dead-letters", f"dead letters ({label})")
    form = replay_form_in_browser(browser, dl_id)
    if form is None:
        return None, None, None, None, clip(browser.driver.page_source, 1500)
    browser.submit(form)
    browser.record(f"confirm replay ({label})")
    confirmation = browser.text()
    confirm = confirm_form(browser)
    if confirm is None:
        return confirmation, None, None, None, "no confirmation form:\n" + clip(browser.driver.page_source, 1500)
    fields, target = browser.fields(confirm), form_target(browser, confirm)
    return confirmation, fields, target, confirm, ""


def case_dead_letters(bed):
    """docs/console.md "Dead letters": the newest dead letters, newest first, with reason, stage,
    detail and id; an operator's confirmed replay through the pipeline's webhook, the page saying
    what it answered (refused again with its reason, processed, processed before and dropped as a
    duplicate), recorded in the audit log as replay_dead_letter; a resubmitted confirmation not
    replayed again; a read-only credential and a post without the CSRF token refused."""
    browser = bed.browser
    By = browser.by()
    late = bed.late
    sign_out(bed)
    ok, said = browser_sign_in(bed, bed.tokens[OPERATOR])
    if not check("dead letters: the operator signs in", ok, said):
        return
    session = {"signet_console": browser.cookie()["value"]}

    # ---- the listing
    entries = dead_letter_file(bed)
    forged_reason = (bed.forged_reply.json() or {}).get("reason") if bed.forged_reply is not None else None
    check("set-up: the forged notification POSTed to the webhook is answered 200 {\"status\": \"dead_lettered\", "
          "\"reason\": ...} (docs/webhook.md)", bed.forged_reply is not None and bed.forged_reply.status == 200
          and (bed.forged_reply.json() or {}).get("status") == "dead_lettered" and forged_reason,
          bed.forged_reply.said() if bed.forged_reply else "not posted")
    late_answer = late["reply"].json() or {}
    check("set-up: a genuine notification signed 5 min 8 s in the future (beyond verify's max_future_skew, 5m) is "
          "answered 200 dead_lettered, reason signed_date_in_future (docs/reason-codes.md)",
          late["reply"].status == 200 and late_answer.get("status") == "dead_lettered"
          and late_answer.get("reason") == "signed_date_in_future", late["reply"].said())
    page = bed.client().request("GET", "/console/dead-letters", cookies=session)
    bed.replies.append(("GET /console/dead-letters", page))
    rows = dead_letter_table(page.body)
    newest = list(reversed(entries))[:200]
    page_ids = [r.get("id") for r in rows]
    check(f"the Dead letters page (/console/dead-letters) lists the dead-letter file's {len(newest)} entries newest "
          "first (its id column, in order, is the file's ids from the last line up)",
          page.status == 200 and entries and page_ids == [e.get("id") for e in newest],
          f"page ids: {page_ids[:12]}", f"file ids, newest first: {[e.get('id') for e in newest][:12]}",
          page.said() if page.status != 200 else "")
    wrong = []
    for row, entry in zip(rows, newest):
        for column in ("reason", "stage", "detail"):
            if folded(row.get(column)) != folded(entry.get(column)):
                wrong.append(f"{entry.get('id')}: {column} {row.get(column)!r}, the file says {entry.get(column)!r}")
    check("each row shows the dead letter's reason, stage and detail as the file has them", rows and not wrong,
          *wrong[:6])
    forged_payload = (bed.fixtures.forged() or [""])[0]
    forged_entry = next((e for e in entries if forged_payload and forged_payload[:200] in str(e.get("input"))), None)
    forged_row = next((r for r in rows if forged_entry and r.get("id") == forged_entry.get("id")), None)
    check(f"the forged notification is on the page with its reason code ({forged_reason}), stage verify and its id",
          forged_entry is not None and forged_row is not None and forged_row.get("reason") == forged_reason
          and forged_row.get("stage") == "verify", f"file entry: {clip(json.dumps(forged_entry or {}), 400)}",
          f"rows: {rows[:4]}")
    late_entry = next((e for e in reversed(entries) if e.get("reason") == "signed_date_in_future"), None)
    check("the notification signed in the future is the newest row (newest first), reason signed_date_in_future",
          late_entry is not None and rows and rows[0].get("id") == late_entry.get("id")
          and rows[0].get("reason") == "signed_date_in_future", f"rows: {rows[:3]}")
    browser.get("/console/dead-letters", "dead letters")
    check("the operator's Dead letters page offers a Replay button on each dead letter whose input was kept",
          forged_entry is not None and replay_form_in_browser(browser, forged_entry.get("id")) is not None
          and late_entry is not None and replay_form_in_browser(browser, late_entry.get("id")) is not None,
          clip(browser.text(), 1200))
    if forged_entry is None or late_entry is None:
        return
    forged_id, late_id = forged_entry["id"], late_entry["id"]

    # ---- replaying the forged one: refused again, with its reason
    before_lines, before_read = len(dead_letter_file(bed)), records_read(bed)
    confirmation, fields, target, confirm, details = replay_through_browser(bed, forged_id, "forged")
    rid = request_identifier(browser, confirm) if confirm is not None else None
    check("Replay leads to a confirmation page naming the dead letter (its id) with a request identifier and a "
          "button, and nothing is replayed yet (the dead-letter file and signet_records_read_total unchanged)",
          confirm is not None and forged_id in (confirmation or "") and rid and rid in confirmation
          and len(dead_letter_file(bed)) == before_lines and records_read(bed) == before_read,
          details, clip(confirmation or "", 1000))
    if confirm is None:
        return
    browser.submit(confirm)
    browser.record("after replay (forged)")
    answer = replay_answer(browser)
    after = dead_letter_file(bed)
    check(f"confirming replays it: the page then says the webhook refused it again with its reason ({forged_reason})",
          replay_outcomes(answer) == {"refused"} and forged_reason in answer, f"answer: {answer}",
          clip(browser.text(), 1000))
    check("... and it really went through the webhook: one more record read, the dead-letter file has one more line, "
          "the same input dead-lettered again with the same id and reason",
          len(after) == before_lines + 1 and after[-1].get("id") == forged_id
          and after[-1].get("reason") == forged_reason and records_read(bed) == before_read + 1,
          f"lines {before_lines} -> {len(after)}", f"last: {clip(json.dumps(after[-1]) if after else '', 300)}")
    page = bed.client().request("GET", "/console/dead-letters", cookies=session)
    rows = dead_letter_table(page.body)
    check("the dead letter written by the replay is now the newest row", rows and rows[0].get("id") == forged_id
          and rows[0].get("reason") == forged_reason, f"rows: {rows[:3]}")
    lines, read = len(after), records_read(bed)
    again = bed.client().request("POST", target, fields=fields, cookies=session)
    bed.replies.append(("POST the same replay confirmation again", again))
    shown = again
    if again.status in (301, 302, 303, 307) and again.header("Location"):
        shown = bed.client().request("GET", again.header("Location"), cookies=session)
    time.sleep(0.3)
    check("submitting the same confirmation again (the same request identifier) does not replay it twice: no server "
          "error, no record read, no new dead letter",
          again.status is not None and again.status < 500 and records_read(bed) == read
          and len(dead_letter_file(bed)) == lines, again.said(), clip(shown.text(), 800))

    # ---- replaying the one signed in the future, now that its date is in range: processed
    wait = late["signed"] - 5 * 60_000 + 1500 - now_ms()
    if wait > 0:
        note(f"waiting {wait / 1000:.1f} s until the late notification's signedDate is within max_future_skew")
        time.sleep(wait / 1000)
    before_lines, before_read = len(dead_letter_file(bed)), records_read(bed)
    confirmation, fields, target, confirm, details = replay_through_browser(bed, late_id, "late")
    late_rid = request_identifier(browser, confirm) if confirm is not None else None
    check("the late notification's Replay leads to its confirmation page (its id, a request identifier)",
          confirm is not None and late_id in (confirmation or "") and late_rid, details, clip(confirmation or "", 800))
    if confirm is None:
        return
    browser.submit(confirm)
    browser.record("after replay (late)")
    answer = replay_answer(browser)
    snapshot = bed.client().request("GET", f"/v1/subscriptions/{late['otid']}", headers={"Accept": "application/json"})
    state = (snapshot.json() or {}).get("state") if snapshot.status == 200 else None
    check("a dead letter whose reason went away (signed_date_in_future, now within 5 min) replayed: the page says the "
          "webhook processed it", replay_outcomes(answer) == {"processed"}, f"answer: {answer}",
          clip(browser.text(), 800))
    check("... and it is processed: the purchase is now in the store, active (/v1/subscriptions/{id}); one record "
          "read; no new dead letter", state == "active" and records_read(bed) == before_read + 1
          and len(dead_letter_file(bed)) == before_lines, snapshot.said(),
          f"records read {before_read} -> {records_read(bed)}")
    lines, read = len(dead_letter_file(bed)), records_read(bed)
    again = bed.client().request("POST", target, fields=fields, cookies=session)
    shown = again
    if again.status in (301, 302, 303, 307) and again.header("Location"):
        shown = bed.client().request("GET", again.header("Location"), cookies=session)
    shown_text = html.unescape(re.sub(r"<[^>]+>", " ", shown.text()))
    time.sleep(0.3)
    check("submitting the processed replay's confirmation again does not replay it (no record read) and shows the "
          "first answer (processed), not a duplicate",
          again.status is not None and again.status < 500 and records_read(bed) == read
          and len(dead_letter_file(bed)) == lines and "processed" in replay_outcomes(shown_text)
          and "duplicate" not in replay_outcomes(shown_text), again.said(), clip(folded(shown_text), 800))

    # ---- the same dead letter replayed once more (a new confirmation): processed before, dropped
    series, _ = bed.metrics()
    dropped = metric_value(series, "signet_records_dropped_total", reason="duplicate")
    before_lines, before_read = len(dead_letter_file(bed)), records_read(bed)
    confirmation, fields2, target2, confirm, details = replay_through_browser(bed, late_id, "late, again")
    if confirm is None:
        check("replaying the late notification a second time: its confirmation page", False, details)
        return
    check("a second Replay of the same dead letter is a new confirmation (a new request identifier)",
          request_identifier(browser, confirm) not in (None, late_rid), clip(confirmation, 600))
    browser.submit(confirm)
    answer = replay_answer(browser)
    series, _ = bed.metrics()
    check("replaying a dead letter already processed: the page says it was processed before and dropped as a "
          "duplicate; the pipeline dropped one duplicate (signet_records_dropped_total{reason=\"duplicate\"} +1), no "
          "new dead letter (replaying twice changes nothing)",
          replay_outcomes(answer) == {"duplicate"}
          and metric_value(series, "signet_records_dropped_total", reason="duplicate") == dropped + 1
          and len(dead_letter_file(bed)) == before_lines and records_read(bed) == before_read + 1,
          f"answer: {answer}", f"dropped duplicates {dropped} -> "
          f"{metric_value(series, 'signet_records_dropped_total', reason='duplicate')}")

    # ---- the audit log
    browser.get("/console/audit", "audit (replays)")
    audit_rows = [r.text for r in browser.driver.find_elements(By.CSS_SELECTOR, "main tr")
                  if r.text.strip() and not r.find_elements(By.TAG_NAME, "th")]
    replays = [r for r in audit_rows if "replay_dead_letter" in r]
    check("the audit log page shows the three replays as replay_dead_letter by the operator, newest first (the "
          "duplicate, the processed one, the refused one), each with the webhook's answer",
          len(replays) == 3 and audit_rows[:3] == replays and all(OPERATOR in r for r in replays)
          and replay_outcomes(replays[0]) == {"duplicate"} and replay_outcomes(replays[1]) == {"processed"}
          and replay_outcomes(replays[2]) == {"refused"}, *[f"row: {r}" for r in audit_rows[:6]])
    browser.get("/console", "search (recent actions with replays)")
    recent = [r.text for r in browser.driver.find_elements(By.CSS_SELECTOR, "main tr") if "replay_dead_letter" in r.text]
    check("the search page's last 7 days of operator actions list the replays too (replay_dead_letter by the operator)",
          len(recent) >= 3 and all(OPERATOR in r for r in recent[:3]), clip(browser.text(), 1200))
    exported, result = support_audit(bed)
    replayed = [e for e in exported if e.get("action") == "replay_dead_letter"]
    # A replay refused again is recorded refused (the webhook dead-lettered it again), the others done.
    check("`signet support audit` exports exactly three replay_dead_letter actions by the operator, one per "
          "confirmation (the one refused again recorded refused, the others done): the resubmitted confirmations "
          "added none (their request identifiers kept)",
          result.code == 0 and len(replayed) == 3 and all(e.get("actor") == OPERATOR for e in replayed)
          and sorted(e.get("status") for e in replayed) == ["done", "done", "refused"]
          and {e.get("requestIdentifier") for e in replayed} >= {rid, late_rid},
          result.said() if result.code else "", *[clip(json.dumps(e), 400) for e in replayed])

    # ---- a post without the CSRF token (the operator's own session)
    name = csrf_name(fields)
    probes = [("the confirmation without its CSRF token", [(k, v) for k, v in fields if k != name]),
              ("the confirmation with another CSRF token", [(k, secrets.token_urlsafe(32) if k == name else v)
                                                            for k, v in fields]),
              ("the Replay button's form without its CSRF token", [("id", forged_id)])]
    for label, posted in probes:
        posted = [(k, str(uuid.uuid4()) if re.search(r"request", k, re.I) else v) for k, v in posted]
        lines, read = len(dead_letter_file(bed)), records_read(bed)
        reply = bed.client().request("POST", target, fields=posted, cookies=session)
        bed.replies.append((f"POST a replay ({label})", reply))
        time.sleep(0.3)
        check(f"{label}, with the operator's session: refused 403, nothing replayed", name is not None
              and reply.status == 403 and records_read(bed) == read and len(dead_letter_file(bed)) == lines,
              reply.said())
    token = dict(fields).get(name)
    bogus = [(k, ("0" * 32) if k == "id" else (str(uuid.uuid4()) if re.search(r"request", k, re.I) else v))
             for k, v in fields]
    read = records_read(bed)
    reply = bed.client().request("POST", target, fields=bogus, cookies=session)
    check("a confirmed replay of a dead letter the file does not hold: answered without a server error, nothing "
          "posted to the webhook", token and reply.status is not None and reply.status < 500
          and records_read(bed) == read, reply.said())

    # ---- a read-only credential
    sign_out(bed)
    ok, said = browser_sign_in(bed, bed.tokens[READER])
    browser.get("/console/dead-letters", "dead letters (read-only)")
    posts = [describe_form(browser, f) for f in browser.forms() if (f.get_attribute("method") or "").lower() == "post"
             and form_kind(browser, f) != "sign-out"]
    check("a read-only credential sees the dead letters but no Replay button (no form but sign-out)",
          ok and forged_id in browser.text() and not posts, said, f"forms: {posts}", clip(browser.text(), 600))
    ro_session = {"signet_console": browser.cookie()["value"]} if browser.cookie() else {}
    ro_token = None
    for form in browser.forms():
        found = csrf_name(browser.fields(form))
        if found:
            ro_token = dict(browser.fields(form))[found]
    check("the read-only session has a CSRF token of its own (on its sign-out form)", ro_token is not None)
    for label, base in (("the Replay button's form", [(name, ""), ("id", forged_id)]), ("the confirmation", fields)):
        posted = [(k, ro_token if k == name else (str(uuid.uuid4()) if re.search(r"request", k, re.I) else v))
                  for k, v in base]
        lines, read = len(dead_letter_file(bed)), records_read(bed)
        reply = bed.client().request("POST", target, fields=posted, cookies=ro_session)
        bed.replies.append((f"POST {label} of a replay as read-only", reply))
        time.sleep(0.3)
        check(f"{label} of a replay POSTed by the read-only credential with its own valid session and CSRF token: "
              "refused 403, nothing replayed", ro_token is not None and reply.status == 403
              and records_read(bed) == read and len(dead_letter_file(bed)) == lines, reply.said())
    exported, _ = support_audit(bed)
    check("the audit log holds no replay by the read-only credential",
          not [e for e in exported if e.get("actor") == READER and e.get("action") == "replay_dead_letter"],
          *[clip(json.dumps(e), 300) for e in exported if e.get("actor") == READER])
    sign_out(bed)
    ok, said = browser_sign_in(bed, bed.tokens[OPERATOR])
    session = {"signet_console": browser.cookie()["value"]} if ok and browser.cookie() else session

    # ---- the newest 200
    import concurrent.futures

    def post_bad(i):
        conn = http.client.HTTPConnection("127.0.0.1", bed.webhook, timeout=30)
        try:
            conn.request("POST", "/notifications", body=json.dumps({"signedPayload": f"not-a-jws-{i}.x.y"}).encode(),
                         headers={"Content-Type": "application/json"})
            return conn.getresponse().status
        except (OSError, http.client.HTTPException) as error:
            return repr(error)
        finally:
            conn.close()

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        statuses = list(pool.map(post_bad, range(205)))
    entries = dead_letter_file(bed)
    page = bed.client().request("GET", "/console/dead-letters", cookies=session)
    rows = dead_letter_table(page.body)
    check("with more than 200 dead letters (205 malformed ones posted) the page lists the newest 200, newest first",
          all(s == 200 for s in statuses) and len(rows) == 200
          and [r.get("id") for r in rows] == [e.get("id") for e in reversed(entries)][:200],
          f"statuses: {sorted(set(map(str, statuses)))}", f"{len(rows)} rows, {len(entries)} dead letters")


def case_operations(bed):
    """The operations page: SVG charts, dead letters by reason (the forged notification posted at
    set-up), no script; read-only sees it too (it is no action)."""
    browser = bed.browser
    reasons = []
    try:
        for line in ndjson_lines(os.path.join(bed.data_dir, "dead-letter.ndjson")):
            value = parse_json(line)
            if isinstance(value, dict) and value.get("reason"):
                reasons.append(value["reason"])
    except OSError:
        pass
    bed.wait_for_throttle()
    ok, said = browser_sign_in(bed, bed.tokens[READER])
    browser.get("/console/operations", "operations")
    text = browser.text()
    By = browser.by()
    check("the operations page (read-only credential): 200 with SVG charts and the notifications' dead letters by "
          "reason over 24 hours (the forged one posted at set-up: " + ", ".join(sorted(set(reasons))) + ")",
          ok and browser.driver.find_elements(By.TAG_NAME, "svg") and reasons and reasons[0] in text
          and re.search(r"dead", text, re.I), said, clip(text, 1500))
    browser.shot("console-operations.png", full=True)
    reply = bed.raw.request("GET", "/console/operations")
    problems = csp_problems(reply.header("Content-Security-Policy"))
    check("headers of GET /console/operations: the docs' Content-Security-Policy, no <script> in the HTML",
          reply.status == 200 and not problems and "<script" not in reply.text().lower(), "\n".join(problems),
          reply.said())
    sign_out(bed)


def case_logs(bed):
    """docs/console.md: each failed sign-in is logged with the address; a read-only credential's
    posted action is refused and logged."""
    lines = bed.child.stderr().splitlines()
    failures = [l for l in lines if re.search(r"sign.?in", l, re.I) and re.search(r"refus|fail|wrong|invalid|unknown",
                                                                                     l, re.I)]
    check("`signet run` logs each failed sign-in with the client's address (127.0.0.1)",
          failures and all("127.0.0.1" in l for l in failures[:1]), "\n".join(failures[:5])
          or clip("\n".join(l for l in lines if "console" in l.lower()), 1500))
    refused = [l for l in lines if READER in l and re.search(r"refus|forbid|403|denied|not allowed|read.?only", l, re.I)]
    check(f"`signet run` logs the read-only credential's refused action (naming {READER})", refused,
          clip("\n".join(l for l in lines if "console" in l.lower()), 2000))


def case_violations(bed):
    broke = [s for s in bed.fake.log if s.violations]
    check("the fake Apple saw no request breaking Apple's rules (JWT, bodies, lower-case token, Production-only lookup)",
          not broke, "\n".join(s.line() for s in broke[:10]))
    note(f"the fake Apple answered {bed.fake.mark()} requests")
    check("`signet run` is still running at the end", bed.child.running(), bed.child.said())


# ----------------------------------------------------------------------------- main


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--signet", default=DEFAULT_SIGNET, help="the signet binary (default: %(default)s)")
    parser.add_argument("--screenshots", help="save one PNG per console page into this folder")
    parser.add_argument("binary", nargs="?", help="the signet binary (as the other scripts take it)")
    args = parser.parse_args()
    binary = signet_binary([sys.argv[0], args.binary or args.signet])
    if binary is None:
        return 2
    try:
        import selenium  # noqa: F401
    except ImportError:
        print("this script needs Selenium (python3 -m pip install selenium)", file=sys.stderr)
        return 2
    for needed in ("/usr/bin/chromium", "/usr/bin/chromedriver"):
        if not os.access(needed, os.X_OK):
            print(f"this script needs {needed} (Debian's chromium and chromium-driver)", file=sys.stderr)
            return 2
    screenshots = os.path.abspath(args.screenshots) if args.screenshots else None
    if screenshots:
        os.makedirs(screenshots, exist_ok=True)
    root = tempfile.mkdtemp(prefix="signet-console-browser-")
    arm_time_limit(TIME_LIMIT)
    started = time.monotonic()
    could_not_run = []
    bed = Bed(binary, root, screenshots)
    try:
        try:
            setup(bed)
        except CannotRun as error:
            could_not_run.append("setup: fixtures, credentials, `signet run` and the customers")
            check(could_not_run[-1], False, str(error))
            raise
        try:
            bed.browser = Browser(f"http://127.0.0.1:{bed.admin}", screenshots)
        except Exception as error:  # noqa: BLE001
            could_not_run.append("headless Chromium starts")
            check(could_not_run[-1], False, repr(error))
            raise CannotRun("no browser")
        try:
            start_sandbox(bed)
        except Exception:  # noqa: BLE001
            check("the Sandbox console could be started", False, traceback.format_exc())
        cases = [("sign-in", case_sign_in), ("search", case_search), ("customer", case_customer),
                 ("extend", case_extend), ("RENEWAL_EXTENDED", case_renewal_extended), ("Apple refuses", case_apple_refuses),
                 ("set token", case_set_token),
                 ("consent", case_consent), ("forged forms", case_forged), ("sign-out and read-only", case_read_only),
                 ("keyboard", case_keyboard), ("limits", case_limits), ("order ids in Sandbox", case_sandbox_order),
                 ("dead letters", case_dead_letters), ("headers and pages", case_headers), ("idle sessions", case_idle), ("operations", case_operations), ("logs", case_logs), ("violations", case_violations)]
        for label, case in cases:
            try:
                case(bed)
            except OutOfTime:
                raise
            except Exception:  # a broken case must not hide the others
                check(f"case {label} ran to its end", False, traceback.format_exc())
    except OutOfTime:
        check(f"the checks finished within {TIME_LIMIT} s", False, "stopped: out of time")
    except CannotRun:
        pass
    finally:
        signal.alarm(0)
        if bed.browser is not None:
            bed.browser.quit()
        for process in CHILDREN:
            stop(process)
        if bed.fake is not None:
            bed.fake.stop()
        if os.environ.get("KEEP_TMP"):
            note(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    failed = [name for name, ok in RESULTS if not ok]
    print(f"# {len(RESULTS)} checks, {len(failed)} failed, {time.monotonic() - started:.1f} s", flush=True)
    if not RESULTS or (failed and set(failed) <= set(could_not_run)):
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
