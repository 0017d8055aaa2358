#!/usr/bin/env python3
"""Acceptance tests for verify's per-key ES256 table: nothing but speed changes once a leaf key has one.

    python3 Tests/Acceptance/verify_key_table_acceptance.py .build/debug/signet

Written from the documentation only (docs/verification.md "Speed", docs/reason-codes.md,
README.md, docs/pipelines.md, `signet verify|fixtures|run --help`), not from Signet's sources.
The promise under test: after a leaf's chain has verified for 256 signatures in one process,
Signet precomputes a table for that leaf's public key and uses it for every later ES256 check
with that key; a forged, altered or out-of-range signature gets the same `invalid_signature`
and the same detail before the table exists and after, valid data verifies the same, and only
chains that verified count (keys an attacker makes up never get a table).

`signet fixtures --count 1500` makes one trusted test leaf (A) signing ~3,900 JWS. With its
private keys (DIR/pki) the script builds, under A's own x5c header (a chain the verifier trusts):
signatures with a bit flipped in r or s, r and s swapped, r or s = 0, = n, = n - 1, r = p,
r = s = 1, all 0xFF, a signature of another key, one taken from another notification, a DER
signature, 63 and 65 bytes, an empty signature segment, a payload or header altered after
signing, a signature whose verification point is the point at infinity (r = -e/d mod n, which
plain OpenSSL refuses with an error rather than a mismatch), the malleated (r, n - s) of valid
signatures (ECDSA accepts it: it must verify exactly as the original), forged nested
signedTransactionInfo / signedRenewalInfo inside validly signed notifications
(`nested_jws_invalid`), the same in `{"signedTransaction": ...}` and bare-JWS lines, dates
outside the leaf's validity or in the future; two more leaves issued by the fixtures'
intermediate (B: a rotated key, new serial; C: another key with A's very serial, subject and key
identifiers), each signing ~400 JWS so it gets its own table, and lines whose x5c names one of
A, B, C but are signed by another of them; self-made chains (rogue root and intermediate with
Apple's marker OIDs; a self-issued leaf presented with the real intermediate and root; A's own
key in a rogue chain); and the fixtures' own forged.ndjson.

Checks:
1. In a fresh process (`signet verify --jobs 1` on the forged lines alone: no table can exist)
   each forged line gets the reason the docs give it.
2. Each forged line placed at the start of a long stream (before any table), again around the
   256th signature of A, and again after ~1,500 valid notifications and B's and C's ~400 each
   (every table built) gets exactly the same verdict (ok, reason, detail, every field but
   `line`) at all three places and as in the fresh process; every valid line verifies, with the
   verdict it gets among valid lines only (3.); the counts of ok and rejected lines are exact;
   exit status 1. With --jobs 1 and --jobs 2.
3. The valid lines alone (A's, B's, C's), in order and reversed (each line early in one run and
   late in the other), verify with identical verdicts; exit status 0.
4. A stream of 1,200 lines from self-made chains (four keys, 300 lines each, interleaved) never
   verifies: every line `invalid_certificate_chain` with the detail of the fresh process.
   With --jobs 1 and --jobs 2.
5. The same long stream through `signet run` (the embedded default pipeline, 2 verify workers):
   every forged line is dead-lettered at each of its three places with the same reason,
   detail and id, the reason `signet verify` gives; nothing valid is dead-lettered; the
   summary's read / rejected / rejectedByReason counts are exact.

A detail is compared whole, except for the host's clock reading that `signed_date_in_future`
names (it is taken out of both sides): every other byte must match.

Everything happens in a fresh temporary directory (removed at the end; no SIGNET_* variable of
the caller's environment is passed on). One line per check, `ok - ...` or `FAIL - ...` (with
indented `#` lines saying what was run, expected and seen); exit 1 when any check failed, 2
when the script could not run at all. Needs Python's `cryptography` package.
"""

import datetime
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

from forgery import (
    PKI, N, P, Forged, Forger, at_infinity, by_another_key, cryptography_missing, der, flipped, jws_count, malleated,
    notification_line, raw, reforged, resign, rs, signed, split_jws, with_signature, xor_rs,
)
from harness import (
    CHILDREN, CannotRun, OutOfTime, arm_time_limit, b64url, check, clean_up, clip, guarded, jws_payload,
    ndjson_lines, now_ms, parse_json, read_fixtures_env, signet_binary, summarize,
)

TIME_LIMIT = 170  # seconds: a stop, not a target (the script takes well under a minute)
COUNT = 1500  # notifications of leaf A: ~3,900 JWS, far beyond the 256 that build a table
ROTATED = 150  # notifications re-signed by each of leaves B and C: ~400 JWS each
ROGUE_LINES = 300  # lines per self-made key in check 4
BUNDLE = "com.example.signet"
ROGUE_NAMES = ("rogue key 1 (rogue root and intermediate)", "rogue key 2 (rogue root and intermediate)",
               "self-issued leaf with the real intermediate and root", "A's own key under the rogue root")

APPLE_LEAF_OID = "1.2.840.113635.100.6.11.1"
APPLE_INTERMEDIATE_OID = "1.2.840.113635.100.6.2.1"


# ----------------------------------------------------------------------------- running signet


class Result:
    def __init__(self, command, code, out, err, seconds):
        self.command, self.code, self.out, self.err, self.seconds = command, code, out, err, seconds

    def verdicts(self):
        found = []
        for line in self.out.splitlines():
            parsed = parse_json(line) if line.startswith("{") else None
            if isinstance(parsed, dict):
                found.append(parsed)
        return found

    def said(self):
        return (f"ran: {self.command}\nexit {self.code} after {self.seconds:.1f} s\n"
                f"stdout: {clip(self.out, 800)}\nstderr: {clip(self.err, 800)}")


class Signet:
    def __init__(self, binary, root):
        self.binary, self.root = binary, root

    def env(self, extra):
        environment = {k: v for k, v in os.environ.items() if not k.startswith("SIGNET_")}
        environment["SIGNET_DATA_DIR"] = os.path.join(self.root, "signet-data")
        environment.update(extra or {})
        return environment

    def run(self, args, extra=None, stdin_file=None, timeout=120):
        shown = " ".join(f"{k}={shlex.quote(v)}" for k, v in sorted((extra or {}).items()))
        command = (shown + " " + shlex.join([self.binary] + list(args))).strip()
        if stdin_file:
            command += " < " + shlex.quote(stdin_file)
        result = self._run(args, extra, stdin_file, timeout, command)
        # The binary may be rebuilt under us by others: a command that fails oddly (killed by a
        # signal, or the file briefly missing) is tried once more.
        if result.code is None or result.code < 0 or result.code in (126, 127):
            time.sleep(1)
            result = self._run(args, extra, stdin_file, timeout, command)
        return result

    def _run(self, args, extra, stdin_file, timeout, command):
        stdin = open(stdin_file, "rb") if stdin_file else subprocess.DEVNULL
        started_at = time.monotonic()
        try:
            process = subprocess.Popen([self.binary] + list(args), stdin=stdin, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, env=self.env(extra), cwd=self.root)
        except OSError as error:
            if stdin_file:
                stdin.close()
            return Result(command, 127, "", str(error), 0.0)
        CHILDREN.append(process)
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            err += f"\n(timed out after {timeout} s)".encode()
        finally:
            if stdin_file:
                stdin.close()
        return Result(command, process.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                      time.monotonic() - started_at)


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8") as file:
        for line in lines:
            file.write(line + "\n")
    return path


def steady(detail):
    """A detail with the host's clock reading (signed_date_in_future names it) taken out: the only
    part of a verdict that may differ between two places of one line."""
    if not isinstance(detail, str):
        return detail
    return re.sub(r"this host's clock \([^)]*\)", "this host's clock (...)", detail)


def without_line(verdict):
    return {k: (steady(v) if k == "detail" else v) for k, v in verdict.items() if k not in ("line", "file")}


def show(verdict):
    return json.dumps(verdict, sort_keys=True) if verdict is not None else "(no verdict)"


# ----------------------------------------------------------------------------- the forged lines


def forged_lines(pki, notifications, transactions, fixtures_forged):
    """Every forged (or deliberately valid) variant: Forged(name, line, expected reason or "ok"),
    `expect` a reason code, "ok", or "not ok" (any reason)."""
    found = []

    def add(name, line, expect, detail_has=None, same_as=None):
        found.append(Forged(name, line, expect, detail_has, same_as))

    # The base: a notification with a nested transaction and renewal info.
    base_line = next(line for line in notifications
                     if "signedRenewalInfo" in jws_payload(json.loads(line)["signedPayload"]).get("data", {}))
    other_line = next(line for line in notifications if line != base_line)
    base = Forger(pki, base_line)
    header, payload_seg, signature, r, s = base.header, base.payload_seg, base.signature, base.r, base.s
    if header != pki.header_a:
        raise CannotRun("the fixtures' notifications do not all share one x5c header")
    _, _, other_signature = split_jws(json.loads(other_line)["signedPayload"])

    def outer(name, sig, expect="invalid_signature", same_as=None):
        add(name, base.outer(sig), expect, same_as=same_as)

    outer("signedPayload: lowest bit of r flipped", flipped(signature, 31, 0x01))
    outer("signedPayload: highest bit of r flipped", flipped(signature, 0, 0x80))
    outer("signedPayload: lowest bit of s flipped", flipped(signature, 63, 0x01))
    outer("signedPayload: a middle bit of s flipped", flipped(signature, 40, 0x10))
    outer("signedPayload: r and s swapped", raw(s, r))
    outer("signedPayload: r = 0", raw(0, s))
    outer("signedPayload: s = 0", raw(r, 0))
    outer("signedPayload: r = s = 0", raw(0, 0))
    outer("signedPayload: r = n", raw(N, s))
    outer("signedPayload: s = n", raw(r, N))
    outer("signedPayload: r = s = n", raw(N, N))
    outer("signedPayload: r = n - 1", raw(N - 1, s))
    outer("signedPayload: s = n - 1", raw(r, N - 1))
    outer("signedPayload: r = p (the field prime)", raw(P, s))
    outer("signedPayload: r = s = 1", raw(1, 1))
    outer("signedPayload: r, s all 0xFF", b"\xff" * 64)
    outer("signedPayload: r + n wrapped, s + n wrapped", raw(r + N, s + N))
    outer("signedPayload: verification point at infinity (r = -e/d)", at_infinity(header, payload_seg, pki.key_a))
    outer("signedPayload: signed by another P-256 key, A's x5c", by_another_key(header, payload_seg))
    outer("signedPayload: the signature of another notification", other_signature)
    outer("signedPayload: DER-encoded signature", der(signature))
    outer("signedPayload: 63-byte signature", signature[:63])
    outer("signedPayload: 65-byte signature", signature + b"\x00")
    add("signedPayload: empty signature segment", notification_line(header + "." + payload_seg + "."),
        "not ok")
    outer("signedPayload: the valid original", signature, "ok")
    outer("signedPayload: malleated valid signature (r, n - s)", malleated(signature), "ok",
          same_as="signedPayload: the valid original")

    add("signedPayload: payload altered after signing (notificationType)", base.altered(notificationType="REFUND"),
        "invalid_signature")
    add("signedPayload: payload altered after signing (one byte)", base.one_byte_altered(), "invalid_signature")
    header_kid = b64url(json.dumps({"alg": "ES256", "x5c": pki.x5c_a, "kid": "attacker"},
                                   separators=(",", ":")).encode())
    add("signedPayload: header altered after signing (kid added)",
        notification_line(with_signature(header_kid, payload_seg, signature)), "invalid_signature")

    # Nested JWS forged inside a notification validly signed by A.
    nested_variants = [  # (label, forge(inner header, inner payload, inner signature), expect)
        ("a bit of s flipped", lambda h, p, sig: xor_rs(sig, s_bits=1), "nested_jws_invalid"),
        ("r = n", lambda h, p, sig: raw(N, rs(sig)[1]), "nested_jws_invalid"),
        ("s = 0", lambda h, p, sig: raw(rs(sig)[0], 0), "nested_jws_invalid"),
        ("verification point at infinity", lambda h, p, sig: at_infinity(h, p, pki.key_a), "nested_jws_invalid"),
        ("signed by another P-256 key", lambda h, p, sig: by_another_key(h, p), "nested_jws_invalid"),
        ("malleated valid signature (r, n - s)", lambda h, p, sig: malleated(sig), "ok"),
    ]
    for field in ("signedTransactionInfo", "signedRenewalInfo"):
        variants = nested_variants
        if field == "signedRenewalInfo":
            variants = [v for v in variants if v[0] in ("a bit of s flipped", "verification point at infinity",
                                                        "malleated valid signature (r, n - s)")]
        for label, forge, expect in variants:
            add(f"nested {field}: {label}", base.nested(field, forge), expect,
                "invalid_signature" if expect == "nested_jws_invalid" else None)

    # Transactions as apps send them, and a bare JWS line.
    t_header, t_payload, t_signature = split_jws(json.loads(transactions[0])["signedTransaction"])

    def transaction(sig):
        return json.dumps({"signedTransaction": with_signature(t_header, t_payload, sig)})

    add("signedTransaction: a bit of r flipped", transaction(xor_rs(t_signature, r_bits=1)), "invalid_signature")
    add("signedTransaction: s = n", transaction(raw(rs(t_signature)[0], N)), "invalid_signature")
    add("signedTransaction: the valid original", transaction(t_signature), "ok")
    add("signedTransaction: malleated valid signature", transaction(malleated(t_signature)), "ok",
        same_as="signedTransaction: the valid original")
    add("bare JWS: malleated valid signature", with_signature(header, payload_seg, malleated(signature)), "ok",
        same_as="signedPayload: the valid original")
    add("bare JWS: a bit of s flipped", with_signature(header, payload_seg, xor_rs(signature, s_bits=2)),
        "invalid_signature")
    add("bare JWS: verification point at infinity", with_signature(header, payload_seg,
                                                                   at_infinity(header, payload_seg, pki.key_a)),
        "invalid_signature")

    # Dates: a valid signature by A, the chain judged at the payload's signedDate.
    before_leaf = int((pki.leaf_not_before - datetime.timedelta(days=30)).timestamp() * 1000)
    add("signed by A, signedDate before the leaf's notBefore", base.fresh(signedDate=before_leaf),
        "certificate_not_valid_at_signed_date")
    add("signed by A, signedDate a day in the future", base.fresh(signedDate=now_ms() + 86_400_000),
        "signed_date_in_future")

    # Other trusted leaves, and x5c naming one leaf with a signature by another.
    leaves = {"A": (pki.header_a, pki.key_a), "B": (pki.header_b, pki.key_b), "C": (pki.header_c, pki.key_c)}
    for named, signer in (("B", "A"), ("A", "B"), ("C", "A"), ("A", "C"), ("B", "C")):
        add(f"x5c of leaf {named}, signed by leaf {signer}'s key", base.fresh(leaves[named][0], leaves[signer][1]),
            "invalid_signature")
    for name in ("B", "C"):
        add(f"leaf {name}: a valid notification", resign(base_line, *leaves[name]), "ok")
        add(f"leaf {name}: a bit of s flipped",
            reforged(resign(base_line, *leaves[name]), lambda sig: xor_rs(sig, s_bits=1)), "invalid_signature")

    # Self-made chains.
    for name, line in pki.rogue_lines(payload_seg):
        add(f"{name}: valid signature", line, "invalid_certificate_chain")
    rogue_header, rogue_key = pki.rogue["A's own key under the rogue root"]
    add("A's own key under the rogue root: a bit of r flipped",
        reforged(notification_line(signed(rogue_header, payload_seg, rogue_key)), lambda sig: xor_rs(sig, r_bits=1)),
        "invalid_signature")

    # The fixtures' own forged lines (their reasons: whatever a fresh process says; line 1 is a
    # tampered signature).
    for index, line in enumerate(fixtures_forged, 1):
        add(f"fixtures' forged.ndjson line {index}", line, "invalid_signature" if index == 1 else "not ok")
    return found


# ----------------------------------------------------------------------------- the checks


def reason_ok(verdict, expect):
    if verdict is None:
        return False
    if expect == "ok":
        return verdict.get("ok") is True
    if expect == "not ok":
        return verdict.get("ok") is False and bool(verdict.get("reason"))
    return verdict.get("ok") is False and verdict.get("reason") == expect


def check_reference(signet, root, forged, verify_args):
    """Check 1: the forged lines alone in a fresh process. Returns each line's verdict."""
    path = write_lines(os.path.join(root, "forged-alone.ndjson"), [f.line for f in forged])
    result = signet.run(verify_args + ["--jobs", "1", path])
    verdicts = result.verdicts()
    if not check("a fresh process gives one verdict per forged line, lines 1..N in order",
                 [v.get("line") for v in verdicts] == list(range(1, len(forged) + 1)), result.said()):
        return None
    expected_failures = sum(1 for f in forged if f.expect != "ok")
    check("`signet verify` of the forged lines exits 1 (some line rejected)",
          result.code == 1 and expected_failures > 0, result.said())
    by_name = {item.name: without_line(verdict) for item, verdict in zip(forged, verdicts)}
    for item, verdict in zip(forged, verdicts):
        good = reason_ok(verdict, item.expect)
        if good and item.detail_has:
            good = item.detail_has in (verdict.get("detail") or "")
        want = item.expect + (f" (detail naming {item.detail_has})" if item.detail_has else "")
        also = []
        if item.same_as:
            good = good and without_line(verdict) == by_name.get(item.same_as)
            want += f", exactly as {item.same_as!r}"
            also = [f"{item.same_as}: {show(by_name.get(item.same_as))}"]
        check(f"fresh process: {item.name} -> {want}", good, f"got: {show(verdict)}", *also,
              f"line: {clip(item.line, 300)}")
    return [without_line(v) for v in verdicts]


def long_stream(notifications, rotated_b, rotated_c, forged):
    """The forged lines at the start, one after every second valid line from the 60th (A's 256th
    signature falls there), and at the end after every valid line. Returns (lines, roles) with
    roles[i] = ("valid", index into the valid list) or ("forged", index into forged, place)."""
    lines, roles = [], []
    valid = []  # every valid line in its order in the stream

    def add_valid(line):
        roles.append(("valid", len(valid)))
        valid.append(line)
        lines.append(line)

    def add_forged(index, place):
        roles.append(("forged", index, place))
        lines.append(forged[index].line)

    for index in range(len(forged)):
        add_forged(index, "start")
    zone = list(range(len(forged)))
    for position, line in enumerate(notifications):
        add_valid(line)
        if position >= 60 and position % 2 == 0 and zone:
            add_forged(zone.pop(0), "near the 256th signature")
        if 400 <= position < 400 + len(rotated_b):
            add_valid(rotated_b[position - 400])
            add_valid(rotated_c[position - 400])
    for index in range(len(forged)):
        add_forged(index, "end")
    return lines, roles, valid


def layout_note(lines, roles, forged, header_a):
    """Where leaf A's 256th signature falls in the long stream (counting A's valid lines only, so at
    the latest: forged lines whose outer JWS is A's and valid count too), and where the forged
    lines near it are."""
    seen, at = 0, None
    for number, (line, role) in enumerate(zip(lines, roles), 1):
        if role[0] == "valid" and json.loads(line)["signedPayload"].startswith(header_a + "."):
            seen += jws_count(line)
            if seen >= 256 and at is None:
                at = number
    zone = [number for number, role in enumerate(roles, 1) if role[0] == "forged" and role[2] not in ("start", "end")]
    return (f"# stream of {len(lines)} lines: {len(forged)} forged lines at 1..{len(forged)}, again one by one on "
            f"lines {zone[0]}..{zone[-1]} (leaf A's 256th valid signature is on line {at} at the latest), "
            f"and at the end")


def check_long_stream(signet, root, verify_args, jobs, lines, roles, valid, forged, reference, valid_reference):
    path = write_lines(os.path.join(root, f"long-stream-jobs{jobs}.ndjson"), lines)
    result = signet.run(verify_args + ["--jobs", str(jobs), path])
    verdicts = result.verdicts()
    tag = f"--jobs {jobs}"
    if not check(f"{tag}: one verdict per line of the {len(lines)}-line stream, in order",
                 [v.get("line") for v in verdicts] == list(range(1, len(lines) + 1)), result.said()):
        return None
    check(f"{tag}: exit status 1 (forged lines were rejected)", result.code == 1, result.said())

    bad_valid = [(i + 1, v, (valid_reference or {}).get(role[1])) for i, (role, v) in enumerate(zip(roles, verdicts))
                 if role[0] == "valid" and (v.get("ok") is not True or
                                            (valid_reference and without_line(v) != valid_reference[role[1]]))]
    check(f"{tag}: all {len(valid)} valid lines (A: {len(valid) - 2 * ROTATED}, B: {ROTATED}, C: {ROTATED}) verify, "
          f"each with the verdict it gets among valid lines only",
          not bad_valid, *[f"line {n}: {show(v)}\n  among valid lines only: {show(w)}" for n, v, w in bad_valid[:10]])

    by_forged = {}
    for role, verdict in zip(roles, verdicts):
        if role[0] == "forged":
            by_forged.setdefault(role[1], []).append((role[2], verdict))
    for index, item in enumerate(forged):
        places = by_forged.get(index, [])
        seen = {place: without_line(v) for place, v in places}
        want = reference[index] if reference else None
        same = len(places) == 3 and all(v == want for v in seen.values())
        said = "?" if not want else (want.get("reason") or "ok")
        check(f"{tag}: {item.name}: same verdict at the start, near the 256th signature and at the end ({said})",
              same, f"fresh process: {show(want)}", *[f"{place}: {show(v)}" for place, v in places])

    expected_ok = len(valid) + 3 * sum(1 for item in forged if item.expect == "ok")
    got_ok = sum(1 for v in verdicts if v.get("ok") is True)
    got_failed = sum(1 for v in verdicts if v.get("ok") is False)
    check(f"{tag}: exactly {expected_ok} lines ok and {len(lines) - expected_ok} rejected",
          got_ok == expected_ok and got_failed == len(lines) - expected_ok,
          f"got {got_ok} ok, {got_failed} rejected, {len(verdicts) - got_ok - got_failed} neither")
    return result


def check_valid_both_ways(signet, root, verify_args, valid):
    """Check 3: each valid line early in one run and late in the other."""
    forward = signet.run(verify_args + ["--jobs", "2",
                                        write_lines(os.path.join(root, "valid-forward.ndjson"), valid)])
    backward = signet.run(verify_args + ["--jobs", "1",
                                         write_lines(os.path.join(root, "valid-reversed.ndjson"), valid[::-1])])
    f, b = forward.verdicts(), backward.verdicts()
    check("the valid lines alone, in order (--jobs 2) and reversed (--jobs 1): exit 0 both",
          forward.code == 0 and backward.code == 0, forward.said(), backward.said())
    if not check("one verdict per valid line in both runs", len(f) == len(valid) == len(b),
                 f"{len(valid)} lines, {len(f)} and {len(b)} verdicts"):
        return None
    b = b[::-1]
    differ = [(i + 1, x, y) for i, (x, y) in enumerate(zip(f, b)) if without_line(x) != without_line(y)]
    check(f"each of the {len(valid)} valid lines gets the same verdict early and late (in order vs reversed)",
          not differ and all(v.get("ok") is True for v in f),
          *[f"line {n}: in order {show(x)}\n  reversed {show(y)}" for n, x, y in differ[:5]])
    return {i: without_line(v) for i, v in enumerate(f)}


def check_self_made(signet, root, verify_args, pki, base_payload_seg):
    """Check 4: a stream of self-made chains never verifies, the same reason at every position."""
    names = list(pki.rogue)
    made = pki.rogue_lines(base_payload_seg, ROGUE_LINES)  # a fresh k every line
    owners, lines = [name for name, _ in made], [line for _, line in made]
    reference = {}
    first = write_lines(os.path.join(root, "self-made-first.ndjson"), lines[:len(names)])
    alone = signet.run(verify_args + ["--jobs", "1", first])
    for name, verdict in zip(names, alone.verdicts()):
        reference[name] = without_line(verdict)
    if not check("fresh process: each self-made chain -> invalid_certificate_chain",
                 len(reference) == len(names) and all(v.get("reason") == "invalid_certificate_chain"
                                                      for v in reference.values()),
                 alone.said()):
        return
    path = write_lines(os.path.join(root, "self-made.ndjson"), lines)
    for jobs in (1, 2):
        result = signet.run(verify_args + ["--jobs", str(jobs), path])
        verdicts = result.verdicts()
        wrong = [(i + 1, owners[i], v) for i, v in enumerate(verdicts) if without_line(v) != reference[owners[i]]]
        check(f"--jobs {jobs}: {len(lines)} lines of {len(names)} self-made keys ({ROGUE_LINES} each, interleaved): "
              f"none verifies, every one invalid_certificate_chain with its key's detail at every position, exit 1",
              len(verdicts) == len(lines) and not wrong and result.code == 1,
              f"{len(verdicts)} verdicts for {len(lines)} lines, exit {result.code}",
              *[f"line {n} ({owner}): {show(v)}\n  fresh process: {show(reference[owner])}"
                for n, owner, v in wrong[:5]],
              result.said() if len(verdicts) != len(lines) else "")


def check_pipeline(signet, root, fixtures_env, lines, roles, forged, reference):
    """Check 5: the long stream through `signet run` (the embedded default pipeline)."""
    data_dir = os.path.join(root, "run-data")
    os.makedirs(data_dir)
    path = write_lines(os.path.join(root, "long-stream-run.ndjson"), lines)
    summary_path = os.path.join(root, "summary.json")
    environment = dict(fixtures_env, SIGNET_DATA_DIR=data_dir, SIGNET_VERIFY_WORKERS="2")
    result = signet.run(["run", "--summary-json", summary_path], environment, stdin_file=path, timeout=150)
    check("`signet run` (default pipeline, 2 verify workers) reads the long stream to its end, exit 0",
          result.code == 0, result.said())
    dead_path = os.path.join(data_dir, "dead-letter.ndjson")
    dead = [parse_json(line) for line in ndjson_lines(dead_path)] if os.path.exists(dead_path) else []
    by_line = {}
    for record in dead:
        if isinstance(record, dict) and isinstance(record.get("source"), dict):
            by_line[record["source"].get("line")] = record
    rejected_roles = [(n + 1, role) for n, role in enumerate(roles)
                      if role[0] == "forged" and reference[role[1]].get("ok") is False]
    unexpected = [r for r in dead if not isinstance(r, dict) or
                  (r.get("source") or {}).get("line") not in {n for n, _ in rejected_roles}]
    check(f"the dead-letter file holds exactly the {len(rejected_roles)} forged lines' rejects, one each",
          len(dead) == len(rejected_roles) and not unexpected,
          f"{len(dead)} dead letters", *[f"unexpected: {clip(json.dumps(r), 400)}" for r in unexpected[:5]])

    per_forged = {}
    for number, role in rejected_roles:
        per_forged.setdefault(role[1], []).append((role[2], number, by_line.get(number)))
    wrong = []
    for index, places in sorted(per_forged.items()):
        records = [record for _, _, record in places]
        want = reference[index]["reason"]
        good = (len(records) == 3 and all(isinstance(r, dict) for r in records) and
                all(r.get("reason") == want and r.get("stage") in ("decode", "verify") and
                    r.get("input") == forged[index].line for r in records) and
                len({steady(r.get("detail")) for r in records}) == 1 and len({r.get("id") for r in records}) == 1)
        if not good:
            wrong.append((forged[index].name, want, places))
    check(f"each of the {len(per_forged)} rejected forged lines is dead-lettered at the start, near the 256th "
          f"signature and at the end with `signet verify`'s reason, one detail and one id",
          not wrong, *[f"{name} (verify: {want}):\n" + "\n".join(
              f"  {place} (line {number}): {clip(json.dumps({k: (r or {}).get(k) for k in ('reason', 'detail', 'stage', 'id')}), 500)}"
              for place, number, r in places) for name, want, places in wrong[:5]])
    summary = None
    try:
        with open(summary_path, encoding="utf-8") as file:
            summary = json.load(file)
    except (OSError, ValueError):
        pass
    expected_counts = {}
    for index in per_forged:
        reason = reference[index]["reason"]
        expected_counts[reason] = expected_counts.get(reason, 0) + 3
    got = summary if isinstance(summary, dict) else {}
    check(f"--summary-json: {len(lines)} read, {len(rejected_roles)} rejected, per reason {expected_counts}",
          got.get("read") == len(lines) and got.get("rejected") == len(rejected_roles)
          and got.get("rejectedByReason") == expected_counts,
          f"summary: {clip(json.dumps(summary), 1500)}", result.said())


# ----------------------------------------------------------------------------- main


def main():
    binary = signet_binary(sys.argv)
    if binary is None or cryptography_missing():
        return 2
    root = tempfile.mkdtemp(prefix="signet-key-table-")
    signet = Signet(binary, root)
    arm_time_limit(TIME_LIMIT)
    started = time.monotonic()
    try:
        fixtures = os.path.join(root, "fixtures")
        made = signet.run(["fixtures", "--out", fixtures, "--count", str(COUNT)])
        if made.code != 0:
            print(made.said(), file=sys.stderr)
            return 2
        fixtures_env = read_fixtures_env(fixtures)
        verify_args = ["verify", "--root", os.path.join(fixtures, "root.pem"), "--environment",
                       fixtures_env.get("SIGNET_ENVIRONMENT", "Sandbox"), "--bundle-id",
                       fixtures_env.get("SIGNET_BUNDLE_ID", BUNDLE)]
        notifications = ndjson_lines(os.path.join(fixtures, "notifications.ndjson"))
        transactions = ndjson_lines(os.path.join(fixtures, "transactions.ndjson"))
        fixtures_forged = ndjson_lines(os.path.join(fixtures, "forged.ndjson"))
        try:
            pki = PKI(fixtures, json.loads(notifications[0])["signedPayload"].split(".")[0], leaves=("B", "C"),
                      rogue_names=ROGUE_NAMES)
            forged = forged_lines(pki, notifications, transactions, fixtures_forged)
        except CannotRun as error:
            print(f"cannot run: {error}", file=sys.stderr)
            return 2
        with_nested = [line for line in notifications
                       if "signedTransactionInfo" in jws_payload(json.loads(line)["signedPayload"]).get("data", {})]
        rotated_b = [resign(line, pki.header_b, pki.key_b) for line in with_nested[:ROTATED]]
        rotated_c = [resign(line, pki.header_c, pki.key_c) for line in with_nested[ROTATED:2 * ROTATED]]
        print(f"# {len(notifications)} notifications of leaf A, {len(forged)} forged lines, "
              f"{ROTATED} lines each of leaves B and C", flush=True)

        lines, roles, valid = long_stream(notifications, rotated_b, rotated_c, forged)
        print(layout_note(lines, roles, forged, pki.header_a), flush=True)
        reference = check_reference(signet, root, forged, verify_args)
        valid_reference = check_valid_both_ways(signet, root, verify_args, valid)
        cases = []
        if reference is not None:
            for jobs in (1, 2):
                cases.append(lambda jobs=jobs: check_long_stream(signet, root, verify_args, jobs, lines, roles,
                                                                 valid, forged, reference, valid_reference))
        base_payload_seg = json.loads(notifications[0])["signedPayload"].split(".")[1]
        cases.append(lambda: check_self_made(signet, root, verify_args, pki, base_payload_seg))
        if reference is not None:
            cases.append(lambda: check_pipeline(signet, root, fixtures_env, lines, roles, forged, reference))
        for case in cases:
            guarded(case, "a case ran to its end")
    except OutOfTime:
        check(f"the checks finished within {TIME_LIMIT} s", False, "stopped: out of time")
    finally:
        clean_up(root)
    return summarize(started)


if __name__ == "__main__":
    sys.exit(main())
