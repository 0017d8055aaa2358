#!/usr/bin/env python3
"""Acceptance tests for issue 53: the purchase path, `signet verify --revocation`, `signet fixtures`.

    python3 Tests/Acceptance/purchase_revocation_fixtures_acceptance.py .build/debug/signet

Written from the documentation only (README.md, docs/purchases.md, docs/verification.md,
docs/operations.md, docs/reason-codes.md, Pipelines/webhook.yaml, `signet <command> --help`),
not from Signet's sources:

1. Purchase path (`POST /v1/purchases` on the webhook listener): another app's transactions
   relayed by the app's backend are each answered 422 `bundle_id_mismatch`, counted in
   `signet_relayed_rejections_total{reason}`, and never make the instance unready (`/readyz`
   stays 200, `signet_misconfigured` stays 0), however many arrive (a relay loop posting the same
   one again and again included). Apple's deliveries on the notifications path still do: 20 of
   another app's notifications in a row make `/readyz` 503 and `signet_misconfigured` 1.
2. A notification's `signedPayload` or a `signedRenewalInfo` posted as `{"signedTransaction": ...}`
   is 422 `malformed_payload` with a detail saying what it probably is; a body that is not a JSON
   object is 400 naming `signedTransaction`; dead letters from this path carry
   `source.stream` naming the purchases path.
3. `signet verify --revocation off|soft|hard [--revocation-deadline N]` against real
   `openssl ocsp` responders serving the fixtures' PKI: revoked -> `certificate_revoked` (both
   modes); nobody answering -> hard `revocation_unavailable`, soft ok with a `revocation` note.
4. `signet fixtures`: the leaf's serial is not 0x300 for every PKI, is stable for one folder's
   keys across calls, `--leaf-crl-url` / `--intermediate-crl-url` exist, and after a second call
   into the same folder with other URLs, DIR/pki/leaf.pem is the leaf of the notifications just
   written.

Everything happens in a fresh temporary directory (SIGNET_DATA_DIR points there; no SIGNET_*
variable of the caller's environment is passed on), on 127.0.0.1 and free ports (`openssl ocsp
-port` has no bind address: it listens on the wildcard address, and is only ever asked on
127.0.0.1). One line per check, `ok - ...` or `FAIL - ...` (with indented `#` lines saying what
was run, expected and seen); exit 1 when any check failed, 2 when the script could not run at all.
Standard library and the `openssl` command only.
"""

import base64
import hashlib
import http.client as httpclient
import json
import os
import re
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from harness import (
    CHILDREN, RESULTS, OutOfTime, arm_time_limit, b64url_decode, check, clip, free_port, jws_payload,
    parse_json, signet_binary, stop, wait_until,
)

TIME_LIMIT = 170  # seconds; the whole script must finish within 3 minutes
OWN_BUNDLE = "com.example.signet"
OTHER_BUNDLE = "com.other.app"
PURCHASES_PATH = "/v1/purchases"
NOTIFICATIONS_PATH = "/notifications"  # Pipelines/webhook.yaml's `path`
REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
WEBHOOK_PIPELINE = os.path.join(REPO, "Pipelines", "webhook.yaml")

SERVERS = []  # every in-process server, shut down at the end
SOCKETS = []  # every listening socket we hold, closed at the end


# ----------------------------------------------------------------------------- reporting


def json_lines(text):
    objects = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            parsed = parse_json(line)
            if isinstance(parsed, dict):
                objects.append(parsed)
    return objects


def jws_x5c(jws):
    """The DER certificates of a JWS header's x5c."""
    header = json.loads(b64url_decode(jws.split(".")[0]))
    return [base64.b64decode(cert) for cert in header.get("x5c", [])]


# ----------------------------------------------------------------------------- processes


class Signet:
    def __init__(self, binary, root):
        self.binary = binary
        self.root = root
        self.data_dir = os.path.join(root, "signet-data")

    def env(self, extra):
        environment = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET_")}
        environment["SIGNET_DATA_DIR"] = self.data_dir
        environment.update(extra)
        return environment

    def describe(self, args, extra, stdin_file=None):
        shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted(extra.items()))
        command = shlex.join([self.binary] + list(args))
        if stdin_file:
            command += " < " + shlex.quote(stdin_file)
        return (shown + " " + command).strip()

    def run(self, args, extra=None, stdin_file=None, timeout=60, retry=True):
        extra = extra or {}
        result = self._run(args, extra, stdin_file, timeout)
        # The binary may be rebuilt under us by others: a command that fails oddly (killed by a
        # signal, or the file briefly missing) is tried once more.
        if retry and (result.code is None or result.code < 0 or result.code == 126 or result.code == 127):
            time.sleep(1)
            result = self._run(args, extra, stdin_file, timeout)
        return result

    def _run(self, args, extra, stdin_file, timeout):
        stdin = open(stdin_file, "rb") if stdin_file else subprocess.DEVNULL
        started_at = time.monotonic()
        try:
            started = subprocess.Popen(
                [self.binary] + list(args), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=self.env(extra), cwd=self.root)
        except OSError as error:
            if stdin_file:
                stdin.close()
            return Result(self.describe(args, extra, stdin_file), 127, "", str(error), 0.0)
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
                      out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), time.monotonic() - started_at)

    def start(self, args, extra):
        try:
            return Child([self.binary] + list(args), self.env(extra), self.root, self.describe(args, extra))
        except OSError:  # the binary being replaced under us: once more
            time.sleep(1)
            return Child([self.binary] + list(args), self.env(extra), self.root, self.describe(args, extra))


class Result:
    def __init__(self, command, code, out, err, seconds):
        self.command, self.code, self.out, self.err, self.seconds = command, code, out, err, seconds

    def lines(self):
        return json_lines(self.out)

    def said(self):
        return (f"ran: {self.command}\nexit {self.code} after {self.seconds:.1f} s\n"
                f"stdout: {clip(self.out)}\nstderr: {clip(self.err)}")


class Child:
    """A long-running `signet run` whose output we collect."""

    def __init__(self, argv, environment, cwd, command):
        self.command = command
        self.process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment, cwd=cwd)
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

    def terminate(self, timeout=30):
        stop(self.process, timeout)
        for reader in self.readers:
            reader.join(timeout=5)
        return self.process.returncode

    def said(self):
        return f"ran: {self.command}\nrunning: {self.running()}\nstderr (tail): {clip(self.stderr()[-1500:])}"


def free_ports(count):
    """`count` distinct free ports on 127.0.0.1."""
    ports = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


def listening(port):
    """Whether something listens on this TCP port (any address), read from /proc/net: without
    connecting, since `openssl ocsp` spins on a connection closed before it sent a request."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as file:
                next(file, None)
                for line in file:
                    fields = line.split()
                    if len(fields) > 3 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                        return True
        except OSError:
            continue
    return False


def openssl(args, stdin=None, timeout=30):
    return subprocess.run(["openssl"] + list(args), input=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=timeout)


# ----------------------------------------------------------------------------- HTTP client

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class Answer:
    def __init__(self, method, url, status, body, headers, sent=b""):
        self.method, self.url, self.status, self.body, self.headers, self.sent = method, url, status, body, headers, sent

    def text(self):
        return self.body.decode("utf-8", "replace")

    def json(self):
        return parse_json(self.text())

    def said(self):
        sent = clip(self.sent.decode("utf-8", "replace"), 160) if self.sent else ""
        return (f"sent: {self.method} {self.url}" + (f" body {sent}" if sent else "") +
                f"\nstatus {self.status}\nbody: {clip(self.text())}")


def http(method, url, body=None, token=None, content_type="application/json", timeout=30):
    data = body if isinstance(body, (bytes, type(None))) else body.encode()
    request = urllib.request.Request(url, method=method, data=data)
    if data is not None and content_type:
        request.add_header("Content-Type", content_type)
    if token:
        request.add_header("Authorization", "Bearer " + token)
    try:
        with OPENER.open(request, timeout=timeout) as response:
            return Answer(method, url, response.status, response.read(), response.headers, data or b"")
    except urllib.error.HTTPError as error:
        return Answer(method, url, error.code, error.read(), error.headers, data or b"")
    except (urllib.error.URLError, OSError) as error:
        return Answer(method, url, None, str(error).encode(), None, data or b"")


class KeepAliveClient:
    """One persistent HTTP/1.1 connection, as a backend's HTTP client pool keeps it; reconnects
    (and resends once) when the server closed it between requests."""

    def __init__(self, port):
        self.port = port
        self.connection = None

    def post(self, path, body, token):
        data = body.encode() if isinstance(body, str) else body
        headers = {"Content-Type": "application/json; charset=utf-8", "Authorization": "Bearer " + token,
                   "User-Agent": "acme-backend/1.0"}
        url = f"http://127.0.0.1:{self.port}{path}"
        for attempt in range(2):
            try:
                if self.connection is None:
                    self.connection = httpclient.HTTPConnection("127.0.0.1", self.port, timeout=30)
                self.connection.request("POST", path, body=data, headers=headers)
                response = self.connection.getresponse()
                payload = response.read()
                if response.getheader("Connection", "").lower() == "close":
                    self.close()
                return Answer("POST", url, response.status, payload, response.headers, data)
            except (httpclient.HTTPException, OSError) as error:
                self.close()
                if attempt == 1:
                    return Answer("POST", url, None, str(error).encode(), None, data)
        return None

    def close(self):
        if self.connection is not None:
            try:
                self.connection.close()
            except OSError:
                pass
            self.connection = None


# ----------------------------------------------------------------------------- small servers


class FileServer:
    """Serves fixed bodies by path on 127.0.0.1 (the CRL distribution points)."""

    def __init__(self, port):
        self.files = {}
        self.requests = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                server.requests.append(self.path)
                body = server.files.get(self.path)
                if body is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/pkix-crl")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        SERVERS.append(self.server)

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        if self.server in SERVERS:
            SERVERS.remove(self.server)


class SilentListener:
    """A listener on 127.0.0.1 that takes connections and never answers: a responder that hangs."""

    def __init__(self, port):
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind(("127.0.0.1", port))
        self.socket.listen(64)
        SOCKETS.append(self.socket)

    def close(self):
        try:
            self.socket.close()
        except OSError:
            pass
        if self.socket in SOCKETS:
            SOCKETS.remove(self.socket)


# ----------------------------------------------------------------------------- the PKI, as the fixtures write it


def cert_field(pem_file, option):
    done = openssl(["x509", "-in", pem_file, "-noout", option, "-nameopt", "compat"])
    return done.stdout.decode().strip().split("=", 1)[1] if done.returncode == 0 and b"=" in done.stdout else None


def cert_serial(pem_file):
    serial = cert_field(pem_file, "-serial")
    return serial.upper() if serial else None


def cert_der(pem_file):
    done = openssl(["x509", "-in", pem_file, "-outform", "DER"])
    return done.stdout if done.returncode == 0 else None


def cert_text(pem_file):
    done = openssl(["x509", "-in", pem_file, "-noout", "-text"])
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else ""


def cert_common_name(pem_file):
    subject = cert_field(pem_file, "-subject") or ""
    match = re.search(r"CN=([^/,]+)", subject)
    return match.group(1).strip() if match else None


def index_line(pem_file, revoked_reason=None):
    """A line of an `openssl ca` / `openssl ocsp` index.txt for this certificate."""
    serial = cert_serial(pem_file)
    subject = cert_field(pem_file, "-subject") or "/CN=unknown"
    expiry = "441231000000Z"
    if revoked_reason:
        return f"R\t{expiry}\t251201000000Z,{revoked_reason}\t{serial}\tunknown\t{subject}\n"
    return f"V\t{expiry}\t\t{serial}\tunknown\t{subject}\n"


class OCSPResponder:
    """`openssl ocsp -port` answering for the certificates CA issued, from an index.txt."""

    def __init__(self, folder, name, port, ca_cert, ca_key, entries):
        self.port = port
        self.index = os.path.join(folder, f"{name}-index.txt")
        with open(self.index, "w", encoding="utf-8") as file:
            file.write("".join(entries))
        self.log_path = os.path.join(folder, f"{name}-{port}.log")
        self.log = open(self.log_path, "wb")
        self.command = ["openssl", "ocsp", "-index", self.index, "-port", str(port), "-rsigner", ca_cert,
                        "-rkey", ca_key, "-CA", ca_cert, "-nmin", "30", "-ignore_err"]
        self.process = subprocess.Popen(self.command, stdout=self.log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, cwd=folder)
        CHILDREN.append(self.process)
        self.ready = wait_until(lambda: listening(port) or self.process.poll() is not None, 10, 0.05) \
            and self.process.poll() is None

    def requests(self):
        try:
            with open(self.log_path, "rb") as file:
                return file.read().count(b"Received request")
        except OSError:
            return 0

    def describe(self):
        return shlex.join(self.command)

    def close(self):
        stop(self.process, 5)
        self.log.close()


def make_crl(folder, name, ca_cert, ca_key, revoked_pems):
    """A DER CRL signed by CA listing `revoked_pems` (keyCompromise), made with `openssl ca -gencrl`."""
    work = os.path.join(folder, f"crl-{name}")
    os.makedirs(work, exist_ok=True)
    index = os.path.join(work, "index.txt")
    with open(index, "w", encoding="utf-8") as file:
        file.write("".join(index_line(pem, "keyCompromise") for pem in revoked_pems))
    with open(os.path.join(work, "index.txt.attr"), "w", encoding="utf-8") as file:
        file.write("unique_subject = no\n")
    with open(os.path.join(work, "crlnumber"), "w", encoding="utf-8") as file:
        file.write("01\n")
    config = os.path.join(work, "ca.cnf")
    with open(config, "w", encoding="utf-8") as file:
        file.write(f"[ca]\ndefault_ca = d\n[d]\ndatabase = {index}\ncrlnumber = {work}/crlnumber\n"
                   f"default_md = sha256\ndefault_crl_days = 1\n")
    pem = os.path.join(work, "crl.pem")
    done = openssl(["ca", "-gencrl", "-batch", "-config", config, "-keyfile", ca_key, "-cert", ca_cert, "-out", pem])
    if done.returncode != 0:
        raise RuntimeError("openssl ca -gencrl failed: " + done.stderr.decode("utf-8", "replace"))
    der = openssl(["crl", "-in", pem, "-outform", "DER"])
    if der.returncode != 0:
        raise RuntimeError("openssl crl failed: " + der.stderr.decode("utf-8", "replace"))
    return der.stdout


# ----------------------------------------------------------------------------- fixtures


def make_fixtures(signet, folder, extra_args, count=5):
    made = signet.run(["fixtures", "--out", folder, "--now", "--count", str(count)] + extra_args, timeout=120)
    ok = made.code == 0 and os.path.exists(os.path.join(folder, "notifications.ndjson")) \
        and os.path.exists(os.path.join(folder, "pki", "leaf.pem"))
    return made, ok


def read_lines(path):
    with open(path, encoding="utf-8") as file:
        return [line.strip() for line in file if line.strip()]


def notifications_of(folder):
    return [json.loads(line)["signedPayload"] for line in read_lines(os.path.join(folder, "notifications.ndjson"))]


def transactions_of(folder):
    return [json.loads(line)["signedTransaction"] for line in read_lines(os.path.join(folder, "transactions.ndjson"))]


def every_jws(folder):
    """Every JWS the folder's notifications and transactions carry, nested ones included."""
    found = []
    for signed in notifications_of(folder):
        found.append(signed)
        data = jws_payload(signed).get("data") or {}
        for key in ("signedTransactionInfo", "signedRenewalInfo"):
            if isinstance(data.get(key), str):
                found.append(data[key])
    found.extend(transactions_of(folder))
    return found


def fresh_file(folder, name, lines):
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as file:
        for line in lines:
            file.write(line + "\n")
    return path


# ----------------------------------------------------------------------------- item 4: signet fixtures


def case_fixtures(signet, root):
    helped = signet.run(["fixtures", "--help"])
    check("fixtures: `signet fixtures --help` lists --leaf-crl-url and --intermediate-crl-url",
          helped.code == 0 and "--leaf-crl-url" in helped.out and "--intermediate-crl-url" in helped.out, helped.said())

    first, second = os.path.join(root, "fixtures-a"), os.path.join(root, "fixtures-b")
    made_a, ok_a = make_fixtures(signet, first, [])
    made_b, ok_b = make_fixtures(signet, second, [])
    if not check("fixtures: two calls into two fresh folders succeed", ok_a and ok_b, made_a.said(), made_b.said()):
        return
    serial_a = cert_serial(os.path.join(first, "pki", "leaf.pem"))
    serial_b = cert_serial(os.path.join(second, "pki", "leaf.pem"))
    check("fixtures: the leaf's serial number is not 0x300",
          serial_a is not None and int(serial_a, 16) != 0x300 and serial_b is not None and int(serial_b, 16) != 0x300,
          f"expected a serial other than 0300; saw {serial_a} in {first}/pki/leaf.pem and {serial_b} in {second}/pki/leaf.pem")
    check("fixtures: two PKIs (two fresh folders) have leaves with different serial numbers",
          serial_a is not None and serial_a != serial_b,
          f"expected different serials; both leaves: {serial_a} / {serial_b}", made_a.said(), made_b.said())

    # The serial comes from the key: the same keys (DIR/pki copied into a new folder) give the same serial.
    copied = os.path.join(root, "fixtures-b-copy")
    os.makedirs(copied, exist_ok=True)
    shutil.copytree(os.path.join(second, "pki"), os.path.join(copied, "pki"))
    made_c, ok_c = make_fixtures(signet, copied, ["--bundle-id", OTHER_BUNDLE])
    serial_c = cert_serial(os.path.join(copied, "pki", "leaf.pem")) if ok_c else None
    check("fixtures: another folder holding the same keys (DIR/pki copied) gets the same leaf serial",
          ok_c and serial_c == serial_b, f"expected {serial_b}, saw {serial_c}", made_c.said())

    # Call again into folder A, now with URLs (as scripts/bench.py does), then once more with other ones.
    key_before = open(os.path.join(first, "pki", "leaf.key.pem"), "rb").read()
    ocsp_ports = free_ports(2)
    urls_1 = [f"http://127.0.0.1:{ocsp_ports[0]}/first-leaf", f"http://127.0.0.1:{ocsp_ports[1]}/first-intermediate",
              f"http://127.0.0.1:{ocsp_ports[0]}/first-leaf.crl", f"http://127.0.0.1:{ocsp_ports[1]}/first-intermediate.crl"]
    args_1 = ["--leaf-ocsp-url", urls_1[0], "--intermediate-ocsp-url", urls_1[1],
              "--leaf-crl-url", urls_1[2], "--intermediate-crl-url", urls_1[3]]
    again_1, ok_1 = make_fixtures(signet, first, args_1)
    check("fixtures: --leaf-ocsp-url/--intermediate-ocsp-url/--leaf-crl-url/--intermediate-crl-url are taken (exit 0)",
          ok_1, again_1.said())
    leaf_pem = os.path.join(first, "pki", "leaf.pem")
    intermediate_pem = os.path.join(first, "pki", "intermediate.pem")
    leaf_text, intermediate_text = cert_text(leaf_pem), cert_text(intermediate_pem)
    check("fixtures: --leaf-crl-url is the leaf's CRL distribution point, --intermediate-crl-url the intermediate's",
          urls_1[2] in leaf_text and urls_1[3] in intermediate_text and urls_1[3] not in leaf_text,
          f"expected {urls_1[2]} in {leaf_pem} and {urls_1[3]} in {intermediate_pem}",
          "leaf: " + clip(leaf_text, 2500), "intermediate: " + clip(intermediate_text, 2500), again_1.said())

    urls_2 = [f"http://127.0.0.1:{ocsp_ports[0]}/", f"http://127.0.0.1:{ocsp_ports[1]}/",
              f"http://127.0.0.1:{ocsp_ports[0]}/second-leaf.crl", f"http://127.0.0.1:{ocsp_ports[1]}/second-intermediate.crl"]
    args_2 = ["--leaf-ocsp-url", urls_2[0], "--intermediate-ocsp-url", urls_2[1],
              "--leaf-crl-url", urls_2[2], "--intermediate-crl-url", urls_2[3]]
    again_2, ok_2 = make_fixtures(signet, first, args_2)
    if not check("fixtures: a second call into the same folder with other URLs succeeds", ok_2, again_2.said()):
        return
    serial_again = cert_serial(leaf_pem)
    key_after = open(os.path.join(first, "pki", "leaf.key.pem"), "rb").read()
    check("fixtures: the folder's keys are kept across calls (DIR/pki/leaf.key.pem unchanged)", key_before == key_after,
          f"{first}/pki/leaf.key.pem changed between calls", again_1.said(), again_2.said())
    check("fixtures: the leaf's serial number is stable for one folder's keys across calls (first call without URLs, "
          "then two with different URLs)",
          serial_a is not None and serial_again == serial_a,
          f"first call {serial_a}, after the calls with URLs {serial_again}")
    leaf_text, intermediate_text = cert_text(leaf_pem), cert_text(intermediate_pem)
    check("fixtures: after the second call DIR/pki/leaf.pem names the second call's URLs (OCSP and CRL), not the first's",
          urls_2[0] in leaf_text and urls_2[2] in leaf_text and urls_1[0] not in leaf_text and urls_1[2] not in leaf_text,
          f"expected {urls_2[0]} and {urls_2[2]} and neither {urls_1[0]} nor {urls_1[2]}", clip(leaf_text, 2500))
    check("fixtures: after the second call DIR/pki/intermediate.pem names the second call's URLs",
          urls_2[1] in intermediate_text and urls_2[3] in intermediate_text and urls_1[1] not in intermediate_text,
          f"expected {urls_2[1]} and {urls_2[3]}, not {urls_1[1]}", clip(intermediate_text, 2500))

    leaf_der, intermediate_der = cert_der(leaf_pem), cert_der(intermediate_pem)
    signed = every_jws(first)
    leaves = {jws_x5c(jws)[0] for jws in signed if jws_x5c(jws)}
    intermediates = {jws_x5c(jws)[1] for jws in signed if len(jws_x5c(jws)) > 1}
    check("fixtures: DIR/pki/leaf.pem is the leaf (x5c[0]) of every notification, nested JWS and transaction just written",
          leaf_der is not None and len(signed) > 0 and leaves == {leaf_der},
          f"{len(signed)} JWS read; {len(leaves)} distinct x5c[0]; pki/leaf.pem among them: {leaf_der in leaves}; "
          f"serials in x5c[0]: {sorted(hashlib.sha256(d).hexdigest()[:12] for d in leaves)} vs pki "
          f"{hashlib.sha256(leaf_der or b'').hexdigest()[:12]}")
    check("fixtures: DIR/pki/intermediate.pem is the x5c[1] of everything just written",
          intermediate_der is not None and intermediates == {intermediate_der},
          f"{len(intermediates)} distinct x5c[1]; pki/intermediate.pem among them: {intermediate_der in intermediates}")

    # End to end: an OCSP responder serving DIR/pki with that leaf revoked revokes the notifications
    # just written (what `scripts/bench.py`-like users do after a second call).
    folder = os.path.join(root, "fixtures-a-ocsp")
    os.makedirs(folder, exist_ok=True)
    pki = os.path.join(first, "pki")
    leaf_responder = OCSPResponder(folder, "leaf", ocsp_ports[0], os.path.join(pki, "intermediate.pem"),
                                   os.path.join(pki, "intermediate.key.pem"), [index_line(leaf_pem, "keyCompromise")])
    intermediate_responder = OCSPResponder(folder, "intermediate", ocsp_ports[1], os.path.join(pki, "root.pem"),
                                           os.path.join(pki, "root.key.pem"), [index_line(intermediate_pem)])
    try:
        if not check("fixtures: openssl ocsp responders serving DIR/pki start",
                     leaf_responder.ready and intermediate_responder.ready,
                     leaf_responder.describe(), intermediate_responder.describe()):
            return
        verified = signet.run(["verify", "--root", os.path.join(first, "root.pem"), "--revocation", "hard",
                               "--revocation-deadline", "5", os.path.join(first, "notifications.ndjson")], timeout=60)
        verdicts = verified.lines()
        check("fixtures: with DIR/pki/leaf.pem revoked at the responder, every notification just written is "
              "certificate_revoked (the serial the responder knows is the notifications' leaf's)",
              verified.code == 1 and len(verdicts) == 5 and all(v.get("reason") == "certificate_revoked" for v in verdicts),
              "expected exit 1 and 5 lines with reason certificate_revoked", verified.said())
    finally:
        leaf_responder.close()
        intermediate_responder.close()


# ----------------------------------------------------------------------------- item 3: signet verify --revocation


def case_revocation(signet, root):
    folder = os.path.join(root, "revocation")
    leaf_port, intermediate_port, crl_port = free_ports(3)
    args = ["--leaf-ocsp-url", f"http://127.0.0.1:{leaf_port}/", "--intermediate-ocsp-url", f"http://127.0.0.1:{intermediate_port}/",
            "--leaf-crl-url", f"http://127.0.0.1:{crl_port}/leaf.crl",
            "--intermediate-crl-url", f"http://127.0.0.1:{crl_port}/intermediate.crl"]
    made, ok = make_fixtures(signet, folder, args, count=3)
    if not check("revocation: `signet fixtures` with OCSP and CRL URLs makes the PKI to check", ok, made.said()):
        return
    pki = os.path.join(folder, "pki")
    root_pem, leaf_pem, intermediate_pem = os.path.join(folder, "root.pem"), os.path.join(pki, "leaf.pem"), os.path.join(pki, "intermediate.pem")
    intermediate_key, root_key = os.path.join(pki, "intermediate.key.pem"), os.path.join(pki, "root.key.pem")
    notifications = os.path.join(folder, "notifications.ndjson")
    one_line = fresh_file(folder, "one.ndjson", read_lines(notifications)[:1])
    count = len(read_lines(notifications))
    responders_folder = os.path.join(folder, "responders")
    os.makedirs(responders_folder, exist_ok=True)

    def verify(mode, path=notifications, deadline=None, timeout=90):
        command = ["verify", "--root", root_pem, "--environment", "Sandbox", "--bundle-id", OWN_BUNDLE]
        if mode is not None:
            command += ["--revocation", mode]
        if deadline is not None:
            command += ["--revocation-deadline", str(deadline)]
        return signet.run(command + [path], timeout=timeout)

    def responders(leaf_revoked=False, intermediate_revoked=False):
        leaf = OCSPResponder(responders_folder, "leaf", leaf_port, intermediate_pem, intermediate_key,
                             [index_line(leaf_pem, "keyCompromise" if leaf_revoked else None)])
        intermediate = OCSPResponder(responders_folder, "intermediate", intermediate_port, os.path.join(pki, "root.pem"), root_key, [index_line(intermediate_pem, "cACompromise" if intermediate_revoked else None)])
        return leaf, intermediate

    def all_ok(result):
        lines = result.lines()
        return len(lines) == count and all(v.get("ok") is True for v in lines)

    def all_reason(result, reason):
        lines = result.lines()
        return len(lines) == count and all(v.get("ok") is False and v.get("reason") == reason for v in lines)

    # Usage: the deadline is bounded (1 to 60 seconds), and the modes are exactly off, soft, hard.
    for bad in (["--revocation", "hard", "--revocation-deadline", "0"], ["--revocation", "hard", "--revocation-deadline", "61"],
                ["--revocation", "strict"]):
        refused = signet.run(["verify", "--root", root_pem] + bad + [notifications])
        check(f"revocation: `signet verify {' '.join(bad)}` is a usage error (exit 2)", refused.code == 2, refused.said())

    # Good answers: both modes pass every line.
    leaf, intermediate = responders()
    try:
        if not check("revocation: openssl ocsp responders for the leaf (by the intermediate) and the intermediate (by the root) start",
                     leaf.ready and intermediate.ready, leaf.describe(), intermediate.describe()):
            return
        for mode in ("hard", "soft"):
            result = verify(mode)
            check(f"revocation: --revocation {mode} with both certificates good at the responders: every line ok, exit 0",
                  result.code == 0 and all_ok(result), result.said())
        asked = leaf.requests()
        check("revocation: the hard/soft runs asked the leaf's OCSP responder", asked >= 1,
              f"`Received request` lines in the responder's log: {asked}")
    finally:
        leaf.close()
        intermediate.close()

    # The leaf revoked: certificate_revoked in both modes; off does not go online.
    leaf, intermediate = responders(leaf_revoked=True)
    try:
        if not check("revocation: responders with the leaf revoked start", leaf.ready and intermediate.ready):
            return
        leaf_name = cert_common_name(leaf_pem) or "?"
        leaf_serial = (cert_serial(leaf_pem) or "?").lower().lstrip("0")
        for mode in ("hard", "soft"):
            result = verify(mode)
            check(f"revocation: --revocation {mode} with the leaf revoked at its OCSP responder: every line "
                  f"certificate_revoked, exit 1", result.code == 1 and all_reason(result, "certificate_revoked"), result.said())
            details = [v.get("detail") or "" for v in result.lines()]
            check(f"revocation: --revocation {mode}: the certificate_revoked detail names the revoked certificate",
                  details and all(leaf_name in d or leaf_serial in d.lower() for d in details),
                  f"expected {leaf_name!r} or serial {leaf_serial} in every detail", result.said())
        transactions = verify("hard", os.path.join(folder, "transactions.ndjson"))
        check("revocation: --revocation hard: a forwarded signedTransaction line signed by the revoked leaf is certificate_revoked",
              transactions.code == 1 and transactions.lines() and all(v.get("reason") == "certificate_revoked" for v in transactions.lines()),
              transactions.said())
        before = leaf.requests() + intermediate.requests()
        off = verify("off")
        after = leaf.requests() + intermediate.requests()
        check("revocation: --revocation off with the leaf revoked: every line ok, exit 0 (nothing goes online)",
              off.code == 0 and all_ok(off), off.said())
        check("revocation: --revocation off asked no OCSP responder", after == before,
              f"responders' requests before {before}, after {after}")
        default = verify(None)
        check("revocation: without --revocation (default off) the revoked leaf's lines are ok, exit 0",
              default.code == 0 and all_ok(default), default.said())
    finally:
        leaf.close()
        intermediate.close()

    # The intermediate revoked by the root: certificate_revoked too.
    leaf, intermediate = responders(intermediate_revoked=True)
    try:
        if check("revocation: responders with the intermediate revoked start", leaf.ready and intermediate.ready):
            result = verify("hard")
            name = cert_common_name(intermediate_pem) or "?"
            check("revocation: --revocation hard with the intermediate revoked by the root's responder: every line "
                  "certificate_revoked naming the intermediate",
                  result.code == 1 and all_reason(result, "certificate_revoked")
                  and all(name in (v.get("detail") or "") or "x5c[1]" in (v.get("detail") or "") for v in result.lines()),
                  f"expected {name!r} (or x5c[1]) in each detail", result.said())
    finally:
        leaf.close()
        intermediate.close()

    # Nobody answers (no responder, no CRL server): hard fails, soft keeps the lines ok with a note.
    for port in (leaf_port, intermediate_port, crl_port):
        wait_until(lambda: not listening(port), 5, 0.1)
    hard = verify("hard", timeout=90)
    check("revocation: --revocation hard with no responder answering: every line revocation_unavailable, exit 1",
          hard.code == 1 and all_reason(hard, "revocation_unavailable"), hard.said())
    soft = verify("soft", timeout=90)
    soft_lines = soft.lines()
    check("revocation: --revocation soft with no responder answering: every line ok, exit 0",
          soft.code == 0 and all_ok(soft), soft.said())
    check("revocation: --revocation soft with no responder answering: each line carries a `revocation` note saying unavailable",
          soft_lines and all(isinstance(v.get("revocation"), str) and "unavailable" in v["revocation"] for v in soft_lines),
          soft.said())

    # OCSP down, the CRLs served: the leaf's CRL (signed by the intermediate) lists it.
    crls = FileServer(crl_port)
    try:
        crls.files["/leaf.crl"] = make_crl(responders_folder, "leaf", intermediate_pem, intermediate_key, [leaf_pem])
        crls.files["/intermediate.crl"] = make_crl(responders_folder, "intermediate", os.path.join(pki, "root.pem"), root_key, [])
        for mode in ("hard", "soft"):
            result = verify(mode)
            check(f"revocation: --revocation {mode}, OCSP down and the leaf listed on the CRL at --leaf-crl-url: "
                  f"every line certificate_revoked, exit 1",
                  result.code == 1 and all_reason(result, "certificate_revoked"), result.said(),
                  f"CRL requests served: {crls.requests}")
        crls.files["/leaf.crl"] = make_crl(responders_folder, "leaf-empty", intermediate_pem, intermediate_key, [])
        result = verify("hard")
        check("revocation: --revocation hard, OCSP down and both CRLs listing nothing: every line ok, exit 0",
              result.code == 0 and all_ok(result), result.said(), f"CRL requests served: {crls.requests}")
    finally:
        crls.close()

    # A responder that takes the connection and never answers: --revocation-deadline bounds the wait.
    silent = [SilentListener(leaf_port), SilentListener(crl_port)]
    try:
        started = time.monotonic()
        result = verify("hard", one_line, deadline=1, timeout=60)
        elapsed = time.monotonic() - started
        lines = result.lines()
        check("revocation: --revocation hard --revocation-deadline 1 against a responder and a CRL server that never answer: "
              "revocation_unavailable, exit 1",
              result.code == 1 and len(lines) == 1 and lines[0].get("reason") == "revocation_unavailable", result.said())
        check("revocation: --revocation-deadline 1 bounds that wait (answer within 4.8 s, OCSP then CRL at 1 s each; "
              "the default 5 s deadline could not)", elapsed < 4.8, f"took {elapsed:.1f} s", result.said())
        result = verify("soft", one_line, deadline=1, timeout=60)
        lines = result.lines()
        check("revocation: --revocation soft --revocation-deadline 1 against a silent responder: ok with a `revocation` note, exit 0",
              result.code == 0 and len(lines) == 1 and lines[0].get("ok") is True and isinstance(lines[0].get("revocation"), str),
              result.said())
    finally:
        for listener in silent:
            listener.close()


# ----------------------------------------------------------------------------- items 1 and 2: the purchase path


def metric(text, name, labels=None):
    """The value of one Prometheus sample (`name{labels} value`), or None when absent."""
    labels = labels or {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})?\s+(\S+)", line)
        if not match or match.group(1) != name:
            continue
        found = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', match.group(3) or ""))
        if all(found.get(k) == v for k, v in labels.items()):
            try:
                return float(match.group(4))
            except ValueError:
                return None
    return None


def dead_letters(data_dir):
    path = os.path.join(data_dir, "dead-letter.ndjson")
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8", errors="replace") as file:
        return json_lines(file.read())


def letters_for(letters, body):
    """The dead letters whose kept input is this body (or its start, when the input was cut)."""
    text = body if isinstance(body, str) else body.decode()
    found = []
    for letter in letters:
        kept = letter.get("input")
        if isinstance(kept, str) and kept and (kept == text or (letter.get("truncated") and text.startswith(kept))):
            found.append(letter)
    return found


def stream_of(letter):
    source = letter.get("source")
    return source.get("stream") if isinstance(source, dict) else None


def case_purchases(signet, root):
    if not check("purchases: the shipped Pipelines/webhook.yaml is there", os.path.exists(WEBHOOK_PIPELINE), WEBHOOK_PIPELINE):
        return
    own, other = os.path.join(root, "own-app"), os.path.join(root, "other-app")
    made, ok = make_fixtures(signet, own, [], count=6)
    if not check("purchases: fixtures for this app", ok, made.said()):
        return
    # Another app's payloads under the same (trusted) PKI: Apple signs every app's with the same chain.
    os.makedirs(other, exist_ok=True)
    shutil.copytree(os.path.join(own, "pki"), os.path.join(other, "pki"))
    made, ok = make_fixtures(signet, other, ["--bundle-id", OTHER_BUNDLE], count=40)
    if not check("purchases: fixtures for another app (same PKI, --bundle-id com.other.app)", ok, made.said()):
        return

    own_notifications = notifications_of(own)
    own_transactions = transactions_of(own)
    other_notifications = notifications_of(other)
    other_transactions = transactions_of(other) + [jws_payload(n)["data"]["signedTransactionInfo"] for n in other_notifications
                                                    if isinstance((jws_payload(n).get("data") or {}).get("signedTransactionInfo"), str)]
    other_transactions = list(dict.fromkeys(other_transactions))
    if not check("purchases: enough of the other app's notifications (24) and transactions (12)",
                 len(other_notifications) >= 24 and len(other_transactions) >= 12 and own_transactions,
                 f"{len(other_notifications)} notifications, {len(other_transactions)} transactions, own {len(own_transactions)}"):
        return

    data_dir = os.path.join(root, "purchases-data")
    token = secrets.token_hex(16)
    for attempt in range(2):  # once more if the process died at start (the binary rebuilt under us)
        port, admin_port = free_ports(2)
        extra = {
            "SIGNET_DATA_DIR": data_dir, "SIGNET_ROOT_CERTS": os.path.join(own, "root.pem"), "SIGNET_ENVIRONMENT": "Sandbox",
            "SIGNET_BUNDLE_ID": OWN_BUNDLE, "SIGNET_HTTP_ADDRESS": f"127.0.0.1:{port}",
            "SIGNET_ADMIN_ADDRESS": f"127.0.0.1:{admin_port}", "SIGNET_PURCHASES_PATH": PURCHASES_PATH, "SIGNET_API_TOKEN": token,
        }
        child = signet.start(["run", "--pipeline", WEBHOOK_PIPELINE], extra)
        base, admin = f"http://127.0.0.1:{port}", f"http://127.0.0.1:{admin_port}"
        wait_until(lambda: not child.running() or http("GET", admin + "/readyz", timeout=5).status == 200, 60, 0.25)
        if child.running() or attempt == 1:
            break
        time.sleep(1)

    def readyz():
        return http("GET", admin + "/readyz", timeout=5)

    def metrics():
        answer = http("GET", admin + "/metrics", timeout=5)
        return answer.text() if answer.status == 200 else ""

    def purchase(body, content_type="application/json"):
        return http("POST", base + PURCHASES_PATH, body, token=token, content_type=content_type)

    def notify(signed):
        return http("POST", base + NOTIFICATIONS_PATH, json.dumps({"signedPayload": signed}))

    try:
        if not check("purchases: `signet run --pipeline Pipelines/webhook.yaml` with SIGNET_PURCHASES_PATH=/v1/purchases is ready",
                     child.running() and readyz().status == 200, child.said()):
            return

        # This app's purchase, as the backend relays it: 200, and a retry is `dropped`.
        own_body = json.dumps({"signedTransaction": own_transactions[0]})
        first, retry = purchase(own_body), purchase(own_body)
        check("purchases: this app's transaction is answered 200 committed, its retry 200 dropped (control)",
              first.status == 200 and (first.json() or {}).get("status") == "committed"
              and retry.status == 200 and (retry.json() or {}).get("status") == "dropped", first.said(), retry.said())

        # Apple's path first sees 4 of another app's notifications: below the 5 that make a misconfiguration.
        early = [notify(n) for n in other_notifications[:4]]
        check("purchases: 4 of another app's notifications on Apple's path are answered 200 dead_lettered bundle_id_mismatch",
              all(a.status == 200 and (a.json() or {}).get("reason") == "bundle_id_mismatch" for a in early),
              *[a.said() for a in early if a.status != 200 or (a.json() or {}).get("reason") != "bundle_id_mismatch"][:2])
        ready = readyz()
        check("purchases: 4 such notifications (fewer than 5) leave /readyz 200 (control)", ready.status == 200, ready.said())

        # The backend relays another app's transactions: distinct ones, then a relay loop posting the same
        # one again and again over one keep-alive connection, with retries of each.
        relayed, answers, readiness = 0, [], []
        for signed in other_transactions[:12]:
            body = json.dumps({"signedTransaction": signed})
            answers.append(purchase(body, content_type="application/json; charset=utf-8"))
            relayed += 1
        readiness.append(readyz())
        client = KeepAliveClient(port)
        loop_body = json.dumps({"signedTransaction": other_transactions[0]})
        try:
            for round_number in range(15):
                answers.append(client.post(PURCHASES_PATH, loop_body, token))
                relayed += 1
                if round_number % 5 == 4:
                    readiness.append(readyz())
        finally:
            client.close()
        # A retry of a different one with the key Apple's notifications use (`signedTransactionInfo`, taken too).
        for _ in range(2):
            answers.append(purchase(json.dumps({"signedTransactionInfo": other_transactions[1]})))
            relayed += 1
        bad = [a for a in answers if not (a is not None and a.status == 422 and (a.json() or {}).get("reason") == "bundle_id_mismatch"
                                          and (a.json() or {}).get("status") == "rejected")]
        check(f"purchases: each of {relayed} relayed transactions of another app (12 distinct, a relay loop of 15 copies, "
              f"2 retries) is answered 422 {{status: rejected, reason: bundle_id_mismatch}}",
              not bad, f"{len(bad)} other answers; first: " + (bad[0].said() if bad and bad[0] is not None else "no answer"))
        details = [(a.json() or {}).get("detail") for a in answers if a is not None and a.status == 422]
        check("purchases: the 422's detail says which bundle id it carried",
              details and all(isinstance(d, str) and OTHER_BUNDLE in d for d in details), f"details: {details[:2]}")
        check("purchases: /readyz stayed 200 throughout the relay loop",
              all(r.status == 200 for r in readiness), *[r.said() for r in readiness if r.status != 200][:1])
        # Whatever turns readiness may lag a request; give it a moment.
        time.sleep(1.5)
        ready, text = readyz(), metrics()
        check(f"purchases: after {relayed} relayed rejections (on top of 4 misconfigured notifications) /readyz is 200",
              ready.status == 200, ready.said())
        check("purchases: ... and signet_misconfigured is 0",
              metric(text, "signet_misconfigured") == 0, f"signet_misconfigured = {metric(text, 'signet_misconfigured')}",
              "\n".join(l for l in text.splitlines() if "misconfigured" in l or "relayed" in l or "configuration_rejections" in l))
        counted = metric(text, "signet_relayed_rejections_total", {"reason": "bundle_id_mismatch"})
        check(f"purchases: signet_relayed_rejections_total{{reason=\"bundle_id_mismatch\"}} counts them all ({relayed})",
              counted == relayed, f"expected {relayed}, saw {counted}",
              "\n".join(l for l in text.splitlines() if "relayed" in l))

        letters = dead_letters(data_dir)
        relayed_letters = [l for l in letters if l.get("reason") == "bundle_id_mismatch" and l.get("stage") == "verify"
                           and any(t in (l.get("input") or "") for t in other_transactions[:12])]
        streams = {stream_of(l) for l in relayed_letters}
        check("purchases: the relayed transactions are dead-lettered with source.stream naming the purchases path",
              relayed_letters and all(PURCHASES_PATH in (s or "") for s in streams),
              f"{len(relayed_letters)} such dead letters, streams {streams}", f"{len(letters)} dead letters in all")
        apple_letters = letters_for(letters, json.dumps({"signedPayload": other_notifications[0]}))
        check("purchases: the other app's notifications from Apple's path are dead-lettered with a stream that is not the purchases path",
              apple_letters and all(PURCHASES_PATH not in (stream_of(l) or "") for l in apple_letters),
              f"streams: {[stream_of(l) for l in apple_letters]}")

        # The relayed foreign purchase granted nothing: the backend asks with the UPPER-case token Swift writes.
        foreign = jws_payload(other_transactions[0])
        foreign_token = foreign.get("appAccountToken")
        if isinstance(foreign_token, str):
            asked = http("GET", admin + "/v1/entitlements?appAccountToken=" + foreign_token.upper(), token=token)
            check("purchases: the relayed foreign purchase grants nothing (GET /v1/entitlements?appAccountToken=UPPER is [])",
                  asked.status == 200 and asked.json() == [], asked.said())
        asked = http("GET", admin + "/v1/entitlements?originalTransactionId=" + str(foreign.get("originalTransactionId")), token=token)
        check("purchases: ... nor by its originalTransactionId ([])", asked.status == 200 and asked.json() == [], asked.said())

        # Still serving this app's purchases.
        own_nested = [jws_payload(n)["data"]["signedTransactionInfo"] for n in own_notifications[1:]]
        later = purchase(json.dumps({"signedTransaction": own_nested[-1]}))
        check("purchases: after the relay loop this app's next purchase is answered 200 with its entitlements",
              later.status == 200 and (later.json() or {}).get("status") in ("committed", "dropped")
              and isinstance((later.json() or {}).get("entitlements"), list), later.said())

        # Item 2: JWS that verify but are no transaction, and bodies that are no JSON object.
        own_payload = jws_payload(own_notifications[0])
        renewal = (own_payload.get("data") or {}).get("signedRenewalInfo")
        before_letters = len(dead_letters(data_dir))
        before_malformed = metric(metrics(), "signet_relayed_rejections_total", {"reason": "malformed_payload"}) or 0
        notification_body = json.dumps({"signedTransaction": own_notifications[0]})
        as_notification = [purchase(notification_body), purchase(notification_body)]  # the backend retries
        check("purchases: a notification's signedPayload posted as signedTransaction is 422 malformed_payload (and again on a retry)",
              all(a.status == 422 and (a.json() or {}).get("reason") == "malformed_payload"
                  and (a.json() or {}).get("status") == "rejected" for a in as_notification), *[a.said() for a in as_notification])
        detail = (as_notification[0].json() or {}).get("detail") or ""
        check("purchases: ... its detail says it is probably a notification's signedPayload",
              "notification" in detail.lower() or "signedpayload" in detail.lower(), as_notification[0].said())
        if isinstance(renewal, str):
            renewal_body = json.dumps({"signedTransaction": renewal})
            as_renewal = purchase(renewal_body)
            check("purchases: a signedRenewalInfo posted as signedTransaction is 422 malformed_payload",
                  as_renewal.status == 422 and (as_renewal.json() or {}).get("reason") == "malformed_payload", as_renewal.said())
            detail = (as_renewal.json() or {}).get("detail") or ""
            check("purchases: ... its detail says it is probably a signedRenewalInfo",
                  "renewal" in detail.lower(), as_renewal.said())
        else:
            check("purchases: the own app's first notification carries a signedRenewalInfo", False, json.dumps(own_payload)[:500])
            renewal_body = None
        text = metrics()
        now_malformed = metric(text, "signet_relayed_rejections_total", {"reason": "malformed_payload"}) or 0
        check("purchases: those 422s are counted in signet_relayed_rejections_total{reason=\"malformed_payload\"}",
              now_malformed - before_malformed == (3 if renewal_body else 2),
              f"before {before_malformed}, after {now_malformed}")
        letters = dead_letters(data_dir)
        kept = letters_for(letters, notification_body) + (letters_for(letters, renewal_body) if renewal_body else [])
        check("purchases: they are dead-lettered (malformed_payload) with source.stream naming the purchases path",
              len(kept) >= (3 if renewal_body else 2) and all(l.get("reason") == "malformed_payload" for l in kept)
              and all(PURCHASES_PATH in (stream_of(l) or "") for l in kept),
              f"{len(kept)} matching dead letters: {[(l.get('reason'), stream_of(l)) for l in kept]}")

        # A notification body ({"signedPayload": ...}) on the purchase path: 400, dead-lettered from this path.
        wrong_key = json.dumps({"signedPayload": own_notifications[1]})
        answered = purchase(wrong_key)
        check("purchases: a notification body ({\"signedPayload\": ...}) on the purchase path is 400 (control)",
              answered.status == 400, answered.said())
        kept = letters_for(dead_letters(data_dir), wrong_key)
        check("purchases: ... and its dead letter's source.stream names the purchases path",
              kept and all(PURCHASES_PATH in (stream_of(l) or "") for l in kept),
              f"streams {[stream_of(l) for l in kept]} of {len(kept)} matching dead letters")

        # Bodies that are not a JSON object: what a confused backend sends.
        count_before = len(dead_letters(data_dir))
        not_objects = [
            ("the bare JWS", own_transactions[0]),
            ("a JSON string holding the JWS", json.dumps(own_transactions[0])),
            ("a JSON array of the object", json.dumps([{"signedTransaction": own_transactions[0]}])),
            ("an empty body", ""),
        ]
        for label, body in not_objects:
            answered = purchase(body)
            check(f"purchases: {label} as the body is 400 naming `signedTransaction`",
                  answered.status == 400 and "signedTransaction" in answered.text() and isinstance(answered.json(), dict),
                  answered.said())
        count_after = len(dead_letters(data_dir))
        check("purchases: bodies that are not a JSON object are refused before the pipeline (no dead letter)",
              count_after == count_before, f"dead letters before {count_before}, after {count_after}")

        # The contrast: Apple's deliveries of another app, 20 in a row, do make the instance unready.
        text = metrics()
        relayed_before = metric(text, "signet_relayed_rejections_total", {"reason": "bundle_id_mismatch"})
        contrast = [notify(n) for n in other_notifications[4:24]]
        check("purchases: 20 of another app's notifications in a row on Apple's path are each answered 200 dead_lettered bundle_id_mismatch",
              all(a.status == 200 and (a.json() or {}).get("reason") == "bundle_id_mismatch" for a in contrast),
              *[a.said() for a in contrast if a.status != 200][:2])
        wait_until(lambda: readyz().status == 503, 10, 0.25)
        ready = readyz()
        check("purchases: ... then /readyz is 503 (unready: misconfigured)", ready.status == 503, ready.said())
        check("purchases: ... /readyz's body names the verify stage", "verify" in ready.text(), ready.said())
        text = metrics()
        check("purchases: ... and signet_misconfigured is 1", metric(text, "signet_misconfigured") == 1,
              f"signet_misconfigured = {metric(text, 'signet_misconfigured')}")
        check("purchases: ... Apple's deliveries are not counted as relayed rejections",
              metric(text, "signet_relayed_rejections_total", {"reason": "bundle_id_mismatch"}) == relayed_before,
              f"before {relayed_before}, after {metric(text, 'signet_relayed_rejections_total', {'reason': 'bundle_id_mismatch'})}")
    finally:
        code = child.terminate(timeout=30)
    check("purchases: the webhook stops cleanly on SIGTERM (exit 0)", code == 0, f"exit {code}", child.said())


# ----------------------------------------------------------------------------- main


def main():
    binary = signet_binary(sys.argv)
    if binary is None:
        return 2
    if shutil.which("openssl") is None:
        print("the openssl command is needed", file=sys.stderr)
        return 2
    root = tempfile.mkdtemp(prefix="signet-purchase-revocation-")
    signet = Signet(binary, root)

    arm_time_limit(TIME_LIMIT)
    started = time.monotonic()
    try:
        for case in (case_purchases, case_revocation, case_fixtures):
            try:
                case(signet, root)
            except OutOfTime:
                raise
            except Exception:  # a broken case must not hide the others
                import traceback
                check(f"{case.__name__} ran to its end", False, traceback.format_exc())
    except OutOfTime:
        check(f"the checks finished within {TIME_LIMIT} s", False, "stopped: out of time")
    finally:
        signal.alarm(0)
        for process in CHILDREN:
            stop(process)
        for server in list(SERVERS):
            server.shutdown()
            server.server_close()
        for listener in list(SOCKETS):
            try:
                listener.close()
            except OSError:
                pass
        shutil.rmtree(root, ignore_errors=True)
    failed = [name for name, ok in RESULTS if not ok]
    print(f"# {len(RESULTS)} checks, {len(failed)} failed, {time.monotonic() - started:.1f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
