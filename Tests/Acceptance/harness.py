"""What the acceptance scripts beside this file share: reporting (`check`), cases that must not hide
each other (`guarded`) and the end of a run (`clean_up`, `summarize`), processes started and stopped,
free ports, JWS and ES256 helpers, the fixtures' test signer, Prometheus scrapes.

Every script keeps its own expectations; only mechanics live here. A script imports what it uses
(`from harness import ...`: Python puts the script's folder first on sys.path). RESULTS and
CHILDREN are shared lists: a script appends to them and never rebinds them.
"""

import base64
import http.server
import json
import os
import re
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import threading
import time
import traceback
import urllib.parse
import uuid

try:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
except ImportError:  # pragma: no cover - the scripts that sign say so and exit 2 themselves
    InvalidSignature = hashes = serialization = ec = decode_dss_signature = encode_dss_signature = None

RESULTS = []  # (name, ok)
CHILDREN = []  # every process started, stopped at the end


class OutOfTime(Exception):
    pass


class CannotRun(Exception):
    pass


# ----------------------------------------------------------------------------- reporting


def check(name, ok, *details):
    RESULTS.append((name, bool(ok)))
    print(("ok - " if ok else "FAIL - ") + name, flush=True)
    if not ok:
        for detail in details:
            for line in str(detail).rstrip().splitlines() or [""]:
                print("    # " + line, flush=True)
    return bool(ok)


def clip(text, limit=1500):
    text = text if isinstance(text, str) else text.decode("utf-8", "replace")
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} chars)"


def parse_json(text):
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return None


def signet_binary(argv):
    """The signet binary the command line names, absolute; None (usage printed: exit 2) when it
    names none, or not an executable."""
    if len(argv) != 2:
        print(f"usage: {argv[0]} PATH-TO-SIGNET", file=sys.stderr)
        return None
    binary = os.path.abspath(argv[1])
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        print(f"not an executable: {binary}", file=sys.stderr)
        return None
    return binary


def arm_time_limit(seconds):
    """`OutOfTime` is raised in the main thread once `seconds` have passed (signal.alarm(0) disarms it)."""

    def out_of_time(signum, frame):
        raise OutOfTime()

    signal.signal(signal.SIGALRM, out_of_time)
    signal.alarm(seconds)


def now_ms():
    return int(time.time() * 1000)


def guarded(step, failure):
    """Runs step(): OutOfTime goes on up; any other exception is the failed check `failure` (with its
    traceback), so that a broken case does not hide the others."""
    try:
        step()
    except OutOfTime:
        raise
    except Exception:  # noqa: BLE001 - reported as a failed check
        check(failure, False, traceback.format_exc())


def clean_up(root):
    """The end of a run, for a `finally`: the time limit disarmed, every process in CHILDREN stopped,
    the temporary folder `root` removed."""
    signal.alarm(0)
    for process in CHILDREN:
        stop(process)
    shutil.rmtree(root, ignore_errors=True)


def summarize(started, notes=()):
    """Prints the `notes` and the closing line (checks, failures, seconds since `started`, a
    time.monotonic() reading); returns the exit status: 1 when a check failed or none ran, else 0."""
    failed = [name for name, ok in RESULTS if not ok]
    for text in notes:
        print("# note: " + text, flush=True)
    print(f"# {len(RESULTS)} checks, {len(failed)} failed, {time.monotonic() - started:.1f} s", flush=True)
    return 1 if failed or not RESULTS else 0


# ----------------------------------------------------------------------------- JWS and ES256


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def jws_payload(jws):
    return json.loads(b64url_decode(jws.split(".")[1]))


def es256_sign(key, signing_input):
    r, s = decode_dss_signature(key.sign(signing_input, ec.ECDSA(hashes.SHA256())))
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def es256_verify(public_key, signing_input, raw):
    if len(raw) != 64:
        return False
    try:
        public_key.verify(encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")),
                          signing_input, ec.ECDSA(hashes.SHA256()))
        return True
    except InvalidSignature:
        return False


class Signer:
    """Signs payloads as `signet fixtures`' test leaf (DIR/pki/leaf.key.pem), under a header (alg,
    x5c) taken from one of the fixture's own JWS."""

    def __init__(self, fixtures, header_jws):
        with open(os.path.join(fixtures, "pki", "leaf.key.pem"), "rb") as file:
            self.key = serialization.load_pem_private_key(file.read(), password=None)
        self.header = header_jws.split(".")[0]

    def sign(self, payload):
        body = b64url(json.dumps(payload, separators=(",", ":")).encode())
        signing_input = (self.header + "." + body).encode()
        return self.header + "." + body + "." + b64url(es256_sign(self.key, signing_input))


class OfferKey:
    """The In-App Purchase key promotional offers are signed with (P-256, PKCS#8 .p8)."""

    def __init__(self, folder, key_id, file_prefix="AuthKey"):
        self.key_id = key_id
        self.issuer_id = str(uuid.uuid4())
        self.private = ec.generate_private_key(ec.SECP256R1())
        self.public = self.private.public_key()
        self.path = os.path.join(folder, f"{file_prefix}_{key_id}.p8")
        with open(self.path, "wb") as file:
            file.write(self.private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()))


# ----------------------------------------------------------------------------- processes


class Result:
    def __init__(self, command, code, out, err):
        self.command, self.code, self.out, self.err = command, code, out, err

    def said(self):
        return f"ran: {self.command}\nexit {self.code}\nstdout: {clip(self.out)}\nstderr: {clip(self.err)}"


def stop(process, timeout=10):
    if process.poll() is not None:
        return
    try:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)
    except OSError:
        pass


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until(condition, timeout, step=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(step)
    return bool(condition())


# ----------------------------------------------------------------------------- fixtures and metrics


def read_fixtures_env(folder):
    environment = {}
    with open(os.path.join(folder, "fixtures.env"), encoding="utf-8") as file:
        for line in file:
            line = line.strip()
            if not line.startswith("export ") or "=" not in line:
                continue
            name, value = line[len("export "):].split("=", 1)
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            environment[name.strip()] = value
    return environment


def ndjson_lines(path):
    with open(path, encoding="utf-8") as file:
        return [line.rstrip("\n") for line in file if line.strip()]


def parse_metrics(text):
    """Every series of a Prometheus exposition as {(name, frozenset(labels)): value}."""
    series = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = re.match(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)", line)
        if not match:
            continue
        labels = frozenset((k, v.replace('\\"', '"').replace("\\\\", "\\"))
                           for k, v in re.findall(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"', match.group(2) or ""))
        try:
            series[(match.group(1), labels)] = float(match.group(3))
        except ValueError:
            pass
    return series


# ----------------------------------------------------------------------------- a fake Apple's HTTP side


class Seen:
    """One request that reached a fake."""

    def __init__(self, env, method, target, headers, body):
        self.env, self.method, self.target, self.headers, self.body = env, method, target, headers, body
        split = urllib.parse.urlsplit(target)
        self.path, self.query = split.path, urllib.parse.parse_qs(split.query, keep_blank_values=True)
        self.at = time.monotonic()
        self.status, self.answer, self.violations = None, b"", []
        self.retry_after = None  # a 429's Retry-After (UNIX ms)

    def json(self):
        return parse_json(self.body.decode("utf-8", "replace")) if self.body else None

    def line(self):
        body = self.body if len(self.body) <= 300 else self.body[:300] + f"... ({len(self.body)} bytes)".encode()
        if self.headers.get("content-type", "").startswith("image/"):
            body = f"<{len(self.body)} bytes of {self.headers.get('content-type')}>".encode()
        text = f"{self.env} {self.method} {self.target} -> {self.status} {clip(self.answer, 300)}"
        if body:
            text += f"\n    body: {body.decode('utf-8', 'replace')}"
        for violation in self.violations:
            text += f"\n    BROKE A RULE: {violation}"
        return text


class FakeAppleServer:
    """The HTTP side of a fake App Store Server API: one threaded server per environment on
    127.0.0.1, every request recorded as a `Seen` in `log` and answered by the subclass's
    `handle(seen) -> (status, body bytes)`; a 429 carries `seen.retry_after`; `delays[path]`
    holds the next answer to that path back (once), after the fake acted on it."""

    def __init__(self):
        self.lock = threading.RLock()
        self.log = []
        self.servers, self.ports = [], {}
        self.delays = {}

    def handle(self, seen):
        raise NotImplementedError

    def start(self, environments=("Production", "Sandbox")):
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _handle(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                seen = Seen(self.server.env_name, self.command, self.path, headers, body)
                with fake.lock:
                    fake.log.append(seen)
                try:
                    status, answer = fake.handle(seen)
                except Exception as error:  # noqa: BLE001 - a bug in the fake must show, not hang the client
                    status, answer = 500, json.dumps({"errorCode": 5000000, "errorMessage": f"fake: {error!r}"}).encode()
                    seen.violations.append(f"the fake failed on it: {error!r}")
                seen.status, seen.answer = status, answer
                with fake.lock:
                    delay = fake.delays.pop(seen.path, None)
                if delay:
                    time.sleep(delay)
                try:
                    self.send_response(status)
                    if status == 429 and seen.retry_after is not None:
                        self.send_header("Retry-After", str(seen.retry_after))
                    if answer:
                        self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(answer)))
                    self.end_headers()
                    if answer:
                        self.wfile.write(answer)
                except OSError:
                    pass  # the client went away

            do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = _handle

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        for env in environments:
            server = Server(("127.0.0.1", 0), Handler)
            server.env_name = env
            self.ports[env] = server.server_address[1]
            threading.Thread(target=server.serve_forever, daemon=True).start()
            self.servers.append(server)

    def stop(self):
        for server in self.servers:
            server.shutdown()
            server.server_close()

    def url(self, env):
        return f"http://127.0.0.1:{self.ports[env]}"

    def mark(self):
        with self.lock:
            return len(self.log)

    def since(self, mark):
        with self.lock:
            return list(self.log[mark:])


# ----------------------------------------------------------------------------- more shared mechanics


def metric_value(series, name, **labels):
    """The value Prometheus would read for `name` with these labels (every other label summed over),
    from `parse_metrics`' result; 0.0 when no such series exists yet (a counter not yet born)."""
    want = set(labels.items())
    return sum(value for (metric, have), value in series.items() if metric == name and want <= set(have))


def apple_jwt_problem(authorization, key_id, issuer_id, bundle_id, public_key):
    """What is wrong (None: nothing) with the `Authorization` header of a request to the App Store
    Server API, as Apple's "Generating JSON Web Tokens for API requests" says: `Bearer` + a compact
    ES256 JWS, header alg ES256 / kid / typ JWT; claims iss, aud appstoreconnect-v1, bid, iat not in
    the future, exp after now and at most 60 minutes after iat; the signature verifies with the
    public half of the In-App Purchase key."""
    auth = authorization or ""
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
    if header.get("kid") != key_id:
        problems.append(f"kid {header.get('kid')!r}, the key id is {key_id!r}")
    if header.get("typ") != "JWT":
        problems.append(f"typ {header.get('typ')!r}")
    if claims.get("iss") != issuer_id:
        problems.append(f"iss {claims.get('iss')!r}")
    if claims.get("aud") != "appstoreconnect-v1":
        problems.append(f"aud {claims.get('aud')!r}")
    if claims.get("bid") != bundle_id:
        problems.append(f"bid {claims.get('bid')!r}, the bundle id is {bundle_id!r}")
    now = time.time()
    iat, exp = claims.get("iat"), claims.get("exp")
    if not isinstance(iat, int) or isinstance(iat, bool) or iat > now + 1:
        problems.append(f"iat {iat!r} (now {now:.0f})")
    if not isinstance(exp, int) or isinstance(exp, bool) or exp <= now or \
            (isinstance(iat, int) and exp - iat > 3600):
        problems.append(f"exp {exp!r} (iat {iat!r}, now {now:.0f})")
    if not es256_verify(public_key, (parts[0] + "." + parts[1]).encode(), signature):
        problems.append("the ES256 signature does not verify with the .p8's public key")
    return "; ".join(problems) or None


class RunningChild:
    """A long-running child (`signet run`) whose stdout and stderr are drained into memory as it
    writes them (so a full pipe never stalls it); it is in CHILDREN, stopped at the end."""

    def __init__(self, argv, environment, cwd, command=None):
        self.command = command or " ".join(argv)
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

    def said(self, tail=2000):
        return f"ran: {self.command}\nexit: {self.process.poll()}\nstderr (tail): {clip(self.stderr()[-tail:], tail)}"
