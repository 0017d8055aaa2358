"""Forging ES256 JWS with the test PKI of `signet fixtures`: what the verify key-table acceptance
scripts share to build certificates (more leaves under the fixtures' intermediate, self-made
chains nobody configured) and lines (JWS taken apart, re-signed, and signed with a signature
altered: r/s packing, bit flips, malleation, DER, the point-at-infinity signature).

Mechanics only, as in harness.py: which lines a script forges, what it names them and what it
expects of each stay in the script. A script imports what it uses (`from forgery import ...`).
Without Python's `cryptography` package this module still imports: a script asks
`cryptography_missing()` first and exits 2 when it is.
"""

import base64
import hashlib
import json
import os
import secrets
import sys
import uuid

from harness import CannotRun, b64url, b64url_decode, es256_sign, jws_payload, parse_json

try:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
    from cryptography.x509.oid import NameOID
except ImportError:  # pragma: no cover - the scripts say so and exit 2 themselves
    x509 = hashes = serialization = ec = encode_dss_signature = NameOID = None


def cryptography_missing():
    """Whether Python's `cryptography` package is missing (then said on stderr: the script exits 2)."""
    if x509 is None:
        print("Python's cryptography package is needed", file=sys.stderr)
        return True
    return False


# P-256
N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551  # the group order
P = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF  # the field prime


# ----------------------------------------------------------------------------- JWS and notification lines


def split_jws(jws):
    """(header segment, payload segment, raw signature bytes)."""
    header, payload, signature = jws.split(".")
    return header, payload, b64url_decode(signature)


def header_segment(x5c):
    return b64url(json.dumps({"alg": "ES256", "x5c": x5c}, separators=(",", ":")).encode())


def payload_segment(payload):
    return b64url(json.dumps(payload, separators=(",", ":")).encode())


def signed(header, payload_seg, key):
    """A compact JWS of the two segments, ES256-signed by `key` (a fresh k each time)."""
    return header + "." + payload_seg + "." + b64url(es256_sign(key, (header + "." + payload_seg).encode()))


def with_signature(header, payload_seg, signature):
    return header + "." + payload_seg + "." + b64url(signature)


def notification_line(jws):
    return json.dumps({"signedPayload": jws}, separators=(",", ":"))


def outer_jws(line):
    """A notification line's signedPayload; None when the line has none."""
    parsed = parse_json(line)
    jws = parsed.get("signedPayload") if isinstance(parsed, dict) else None
    return jws if isinstance(jws, str) else None


NESTED = (("data", "signedTransactionInfo"), ("data", "signedRenewalInfo"), ("appData", "signedAppTransactionInfo"))


def jws_in(line):
    """Every JWS a notification line carries: its signedPayload and the nested ones (when readable):
    data's signedTransactionInfo and signedRenewalInfo (docs/verification.md), and RESCIND_CONSENT's
    appData.signedAppTransactionInfo ("verified like every nested JWS", docs/state-machine.md)."""
    outer = outer_jws(line)
    if outer is None:
        return []
    found = [outer]
    try:
        payload = jws_payload(outer)
    except (ValueError, IndexError, AttributeError, TypeError):
        return found
    for holder, field in NESTED:
        nested = payload.get(holder) if isinstance(payload, dict) else None
        if isinstance(nested, dict) and isinstance(nested.get(field), str):
            found.append(nested[field])
    return found


def jws_count(line):
    """How many JWS a notification line carries (itself and its nested ones)."""
    return len(jws_in(line))


def with_fresh_id(payload, **fields):
    """A copy of a notification payload with `fields` changed and a new notificationUUID (a new
    notification, not a retry)."""
    return dict(payload, **fields, notificationUUID=str(uuid.uuid4()))


def resign(line, header, key):
    """The notification of `line`, its nested JWS and itself signed again by `key` under `header`,
    with a fresh notificationUUID."""
    payload = jws_payload(outer_jws(line))
    for holder, field in NESTED:
        nested = payload.get(holder) or {}
        if field in nested:
            nested[field] = signed(header, nested[field].split(".")[1], key)
    return notification_line(signed(header, payload_segment(with_fresh_id(payload)), key))


def reforged(line, forge):
    """The notification line with its signedPayload's signature replaced by forge(signature)."""
    header, payload_seg, signature = split_jws(outer_jws(line))
    return notification_line(with_signature(header, payload_seg, forge(signature)))


# ----------------------------------------------------------------------------- ES256 signatures (raw r || s)


def rs(signature):
    return int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")


def raw(r, s):
    """r || s, 32 bytes each; a value outside 0..2^256 - 1 wraps."""
    return (r % (1 << 256)).to_bytes(32, "big") + (s % (1 << 256)).to_bytes(32, "big")


def flipped(signature, index, mask):
    """The signature with byte `index` XORed with `mask` (0..31: r, 32..63: s)."""
    altered = bytearray(signature)
    altered[index] ^= mask
    return bytes(altered)


def xor_rs(signature, r_bits=0, s_bits=0):
    """raw(r ^ r_bits, s ^ s_bits)."""
    r, s = rs(signature)
    return raw(r ^ r_bits, s ^ s_bits)


def malleated(signature):
    """The valid signature's other form (r, n - s): ECDSA accepts it."""
    r, s = rs(signature)
    return raw(r, N - s)


def der(signature):
    r, s = rs(signature)
    return encode_dss_signature(r, s)


def digest_int(header, payload_seg):
    return int.from_bytes(hashlib.sha256((header + "." + payload_seg).encode()).digest(), "big") % N


def at_infinity(header, payload_seg, key):
    """A signature whose verification point u1*G + u2*Q is the point at infinity: with d the key's
    private value, r = -e/d mod n makes e + r*d = 0, whatever s is."""
    d = key.private_numbers().private_value
    r = (-digest_int(header, payload_seg) * pow(d, -1, N)) % N
    return raw(r, secrets.randbelow(N - 2) + 1)


def by_another_key(header, payload_seg):
    """A valid ES256 signature of the two segments by a P-256 key made just now (nobody's)."""
    return es256_sign(ec.generate_private_key(ec.SECP256R1()), (header + "." + payload_seg).encode())


# ----------------------------------------------------------------------------- certificates


def cert_b64(cert):
    """A certificate as an x5c entry: standard base64 of its DER."""
    return base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()


def load_pem_cert(path):
    with open(path, "rb") as file:
        return x509.load_pem_x509_certificate(file.read())


def load_pem_key(path):
    with open(path, "rb") as file:
        return serialization.load_pem_private_key(file.read(), password=None)


def issue(subject, issuer, public_key, signing_key, serial, not_before, not_after, extensions):
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(public_key)
               .serial_number(serial).not_valid_before(not_before).not_valid_after(not_after))
    for value, critical in extensions:
        builder = builder.add_extension(value, critical)
    return builder.sign(signing_key, hashes.SHA384())


def copied_extensions(cert, ski=None, aki=None):
    """cert's extensions, in order, with the subject / authority key identifiers replaced when given."""
    found = []
    for extension in cert.extensions:
        value = extension.value
        if isinstance(value, x509.SubjectKeyIdentifier) and ski is not None:
            value = ski
        elif isinstance(value, x509.AuthorityKeyIdentifier) and aki is not None:
            value = aki
        found.append((value, extension.critical))
    return found


def validity(cert):
    """(notBefore, notAfter) as aware datetimes where this cryptography has them."""
    before = getattr(cert, "not_valid_before_utc", None) or cert.not_valid_before
    after = getattr(cert, "not_valid_after_utc", None) or cert.not_valid_after
    return before, after


ROGUE_NAMES = ("rogue key 1 under a rogue root and intermediate", "rogue key 2 under a rogue root and intermediate",
               "a self-issued leaf presented with the real intermediate and root", "A's own key under the rogue root")


class PKI:
    """The fixtures' chain (DIR/pki) with leaf A, the leaves a script asks for besides, and
    self-made chains nobody configured.

    `header_a` is the header segment of the fixtures' JWS (x5c: A, intermediate, root); CannotRun
    when DIR/pki/leaf.pem is not its x5c[0]. `leaves` names the extra leaves, each issued by the
    fixtures' intermediate for A's validity, with a key of its own and A's x5c tail:
    "B", Apple's next leaf (a rotated key): same subject, a new serial and key identifier;
    "C", another key in a certificate that copies A's serial, subject and key identifiers.
    Leaf X gives key_x, leaf_x (its x5c[0]) and header_x; an extra leaf not asked for is None.
    `rogue` maps the four `rogue_names`, in this order, to (header segment, signing key): two
    keys under a rogue root and intermediate (Apple's marker OIDs included, the intermediate's
    extensions copied from the real one); a leaf naming the real intermediate as its issuer,
    signed by itself, presented with the real intermediate and root; A's own key (an attacker
    holds it) under the rogue root."""

    def __init__(self, fixtures, header_a, leaves=("B",), rogue_names=ROGUE_NAMES):
        pki = os.path.join(fixtures, "pki")
        self.leaf_cert = load_pem_cert(os.path.join(pki, "leaf.pem"))
        self.intermediate_cert = load_pem_cert(os.path.join(pki, "intermediate.pem"))
        self.intermediate_key = load_pem_key(os.path.join(pki, "intermediate.key.pem"))
        self.key_a = load_pem_key(os.path.join(pki, "leaf.key.pem"))
        self.header_a = header_a
        self.x5c_a = json.loads(b64url_decode(header_a))["x5c"]
        if base64.b64decode(self.x5c_a[0]) != self.leaf_cert.public_bytes(serialization.Encoding.DER):
            raise CannotRun("DIR/pki/leaf.pem is not x5c[0] of the notifications just written")
        self.leaf_a = self.x5c_a[0]
        self.leaf_not_before, self.leaf_not_after = validity(self.leaf_cert)
        self.key_b = self.leaf_b = self.header_b = None
        self.key_c = self.leaf_c = self.header_c = None
        if "B" in leaves:
            self.key_b, self.leaf_b, self.header_b = self._leaf(x509.random_serial_number(), new_key_id=True)
        if "C" in leaves:
            self.key_c, self.leaf_c, self.header_c = self._leaf(self.leaf_cert.serial_number, new_key_id=False)
        self.rogue = self._rogue(rogue_names)

    def _leaf(self, serial, new_key_id):
        key = ec.generate_private_key(ec.SECP256R1())
        ski = x509.SubjectKeyIdentifier.from_public_key(key.public_key()) if new_key_id else None
        cert = issue(self.leaf_cert.subject, self.leaf_cert.issuer, key.public_key(), self.intermediate_key, serial,
                     self.leaf_not_before, self.leaf_not_after, copied_extensions(self.leaf_cert, ski=ski))
        leaf = cert_b64(cert)
        return key, leaf, header_segment([leaf] + self.x5c_a[1:])

    def _rogue(self, names):
        leaf, intermediate = self.leaf_cert, self.intermediate_cert
        before, after = self.leaf_not_before, self.leaf_not_after
        root_key = ec.generate_private_key(ec.SECP384R1())
        root_name = x509.Name([x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
                               x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Signet Fixtures"),
                               x509.NameAttribute(NameOID.COMMON_NAME, "Signet Fixtures Test Root CA - G3")])
        rogue_root = issue(root_name, root_name, root_key.public_key(), root_key, x509.random_serial_number(),
                           before, after,
                           [(x509.BasicConstraints(ca=True, path_length=None), True),
                            (x509.KeyUsage(False, False, False, False, False, True, True, False, False), True),
                            (x509.SubjectKeyIdentifier.from_public_key(root_key.public_key()), False)])
        intermediate_key = ec.generate_private_key(ec.SECP384R1())
        rogue_intermediate = issue(
            intermediate.subject, root_name, intermediate_key.public_key(), root_key,
            x509.random_serial_number(), before, after,
            copied_extensions(intermediate,
                              ski=x509.SubjectKeyIdentifier.from_public_key(intermediate_key.public_key()),
                              aki=x509.AuthorityKeyIdentifier.from_issuer_public_key(root_key.public_key())))

        def rogue_leaf(key):
            return issue(leaf.subject, intermediate.subject, key.public_key(), intermediate_key,
                         x509.random_serial_number(), before, after,
                         copied_extensions(leaf, ski=x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                                           aki=x509.AuthorityKeyIdentifier.from_issuer_public_key(
                                               intermediate_key.public_key())))

        rogue_chain = [cert_b64(rogue_intermediate), cert_b64(rogue_root)]
        rogue_1, rogue_2, self_issued_name, own_key_name = names
        rogue = {}  # name -> (header, signing key)
        for name in (rogue_1, rogue_2):
            key = ec.generate_private_key(ec.SECP256R1())
            rogue[name] = (header_segment([cert_b64(rogue_leaf(key))] + rogue_chain), key)
        key = ec.generate_private_key(ec.SECP256R1())
        self_issued = issue(leaf.subject, intermediate.subject, key.public_key(), key, x509.random_serial_number(),
                            before, after, copied_extensions(leaf))
        rogue[self_issued_name] = (header_segment([cert_b64(self_issued)] + self.x5c_a[1:]), key)
        rogue[own_key_name] = (header_segment([cert_b64(rogue_leaf(self.key_a))] + rogue_chain), self.key_a)
        return rogue

    def rogue_lines(self, payload_seg, rounds=1):
        """`rounds` notification lines per self-made chain, interleaved (one of each, then again),
        each a fresh signature of `payload_seg`: [(name, line)]."""
        return [(name, notification_line(signed(header, payload_seg, key)))
                for _ in range(rounds) for name, (header, key) in self.rogue.items()]


# ----------------------------------------------------------------------------- forged lines


class Forged:
    """A line a script places or posts at several points, and what the script expects of it:
    `expect` in the script's own terms; `detail_has` a text the detail must contain; `same_as` the
    name of another line whose verdict it must equal (a malleated signature verifies exactly as
    the original)."""

    def __init__(self, name, line, expect, detail_has=None, same_as=None):
        self.name, self.line, self.expect, self.detail_has, self.same_as = name, line, expect, detail_has, same_as


class Forger:
    """Lines made from one notification that leaf A validly signed (`base_line`): its
    signedPayload taken apart (header, payload_seg, signature, r, s, payload) and put together
    again, altered. Every method returns a notification line."""

    def __init__(self, pki, base_line):
        self.pki = pki
        self.header, self.payload_seg, self.signature = split_jws(outer_jws(base_line))
        self.r, self.s = rs(self.signature)
        self.payload = jws_payload(outer_jws(base_line))

    def outer(self, signature):
        """The base notification under another signature."""
        return notification_line(with_signature(self.header, self.payload_seg, signature))

    def altered(self, **fields):
        """The payload with `fields` changed after signing, A's signature kept."""
        return notification_line(with_signature(self.header, payload_segment(dict(self.payload, **fields)),
                                                self.signature))

    def one_byte_altered(self):
        """One byte of the signed payload text changed (a digit of the notificationUUID), the signature kept."""
        text = b64url_decode(self.payload_seg)
        at = text.index(self.payload["notificationUUID"].encode())
        altered = text[:at] + (b"1" if text[at:at + 1] != b"1" else b"2") + text[at + 1:]
        return notification_line(with_signature(self.header, b64url(altered), self.signature))

    def fresh(self, header=None, key=None, **fields):
        """A new notification (a fresh id, `fields` changed) validly signed by `key` (A's) under
        `header` (A's): with another leaf's header, an x5c that does not match its signer."""
        header = self.header if header is None else header
        key = self.pki.key_a if key is None else key
        return notification_line(signed(header, payload_segment(with_fresh_id(self.payload, **fields)), key))

    def nested(self, field, forge):
        """A new notification (a fresh id) validly signed by A whose data[field] carries the
        signature forge(inner header, inner payload, inner signature)."""
        inner_header, inner_payload, inner_signature = split_jws(self.payload["data"][field])
        payload = with_fresh_id(self.payload, data=dict(self.payload["data"]))
        payload["data"][field] = with_signature(inner_header, inner_payload,
                                                forge(inner_header, inner_payload, inner_signature))
        return notification_line(signed(self.header, payload_segment(payload), self.pki.key_a))
