import Dispatch
import SignetOpenSSL
import Synchronization
import Testing

/// `P256KeyTable` must give `ECDSA_do_verify`'s verdict on every input: it only changes how
/// `u2·Q` is computed. Each case is judged by both and by what ECDSA says it must be.
@Suite("P-256 key tables")
struct P256KeyTableTests {
    /// The P-256 group order n (SEC 2 §2.4.2).
    static let order: [UInt8] = hex("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551")

    static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    /// `a − b` for 32-byte big-endian numbers with a ≥ b.
    static func subtract(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] {
        var result = [UInt8](repeating: 0, count: 32)
        var borrow = 0
        for index in (0..<32).reversed() {
            var difference = Int(a[index]) - Int(b[index]) - borrow
            borrow = difference < 0 ? 1 : 0
            if difference < 0 { difference += 256 }
            result[index] = UInt8(difference)
        }
        return result
    }

    static func plain(_ key: ECPublicKey, _ signature: [UInt8], _ digest: [UInt8]) -> Bool {
        signature.withUnsafeBytes { s in digest.withUnsafeBytes { key.verifyRaw(rawSignature: s, digest: $0) } }
    }

    static func tabled(_ table: P256KeyTable, _ signature: [UInt8], _ digest: [UInt8]) -> Bool {
        signature.withUnsafeBytes { s in digest.withUnsafeBytes { table.verify(rawSignature: s, digest: $0) } }
    }

    @Test("a key table gives ECDSA_do_verify's verdict on valid, altered, malleated and out-of-range signatures")
    func agreesWithOpenSSL() throws {
        let n = Self.order
        let one = [UInt8](repeating: 0, count: 31) + [1]
        let stranger = try ECPrivateKey(generating: .p256)
        for _ in 0..<3 {
            let privateKey = try ECPrivateKey(generating: .p256)
            let key = try privateKey.publicKey
            let table = try #require(P256KeyTable(key: key))
            var generator = SystemRandomNumberGenerator()
            var digests: [[UInt8]] = (0..<40).map { _ in (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) } }
            // e = 0, e = n (≡ 0), e > n: the digest is reduced mod n, never refused.
            digests += [[UInt8](repeating: 0, count: 32), n, [UInt8](repeating: 0xFF, count: 32)]
            for digest in digests {
                let signature = try privateKey.signRaw(digest: digest)
                let r = Array(signature[..<32])
                let s = Array(signature[32...])
                var flippedDigest = digest
                flippedDigest[Int.random(in: 0..<32)] ^= 1 << UInt8.random(in: 0..<8)
                var flippedR = signature
                flippedR[Int.random(in: 0..<32)] ^= 1 << UInt8.random(in: 0..<8)
                var flippedS = signature
                flippedS[32 + Int.random(in: 0..<32)] ^= 1 << UInt8.random(in: 0..<8)
                let cases: [(String, [UInt8], [UInt8], Bool)] = [
                    ("valid", signature, digest, true),
                    // (r, n − s) verifies too: ECDSA is malleable and OpenSSL accepts both.
                    ("n − s", r + Self.subtract(n, s), digest, true),
                    ("digest altered", signature, flippedDigest, false),
                    ("r altered", flippedR, digest, false),
                    ("s altered", flippedS, digest, false),
                    ("r and s swapped", s + r, digest, false),
                    ("another key's signature", try stranger.signRaw(digest: digest), digest, false),
                    ("r = 0", [UInt8](repeating: 0, count: 32) + s, digest, false),
                    ("s = 0", r + [UInt8](repeating: 0, count: 32), digest, false),
                    ("r = n", n + s, digest, false),
                    ("s = n", r + n, digest, false),
                    ("r = n + 1", n.dropLast() + [n[31] + 1] + s, digest, false),
                    ("s = n − 1", r + Self.subtract(n, one), digest, false),
                    ("all 0xFF", [UInt8](repeating: 0xFF, count: 64), digest, false),
                    ("63 bytes", Array(signature.prefix(63)), digest, false),
                    ("31-byte digest", signature, Array(digest.prefix(31)), false),
                ]
                for (name, candidate, message, expected) in cases {
                    let byTable = Self.tabled(table, candidate, message)
                    if candidate.count == 64, message.count == 32 {
                        #expect(byTable == Self.plain(key, candidate, message), "\(name)")
                    }
                    #expect(byTable == expected, "\(name)")
                }
            }
        }
    }

    @Test("only trusted uses count: the use that reaches the threshold builds the table, once; 0 never does")
    func threshold() throws {
        let privateKey = try ECPrivateKey(generating: .p256)
        let message = Array("header.payload".utf8)
        let signature = try privateKey.signES256(message)
        let key = try privateKey.publicKey
        for use in 1...2 {
            #expect(!key.noteTrustedUse(threshold: 3))
            #expect(!key.hasTable, "after \(use) trusted uses")
            #expect(key.verifyES256(rawSignature: signature, message: message))
        }
        #expect(key.noteTrustedUse(threshold: 3), "the third use builds it")
        #expect(key.hasTable)
        #expect(!key.noteTrustedUse(threshold: 3), "once")
        #expect(key.verifyES256(rawSignature: signature, message: message))
        #expect(!key.verifyES256(rawSignature: signature, message: message + [0]))
        #expect(!key.verifyES256(rawSignature: try ECPrivateKey(generating: .p256).signES256(message), message: message))

        let never = try privateKey.publicKey
        for _ in 0..<5 { never.noteTrustedUse(threshold: 0) }
        #expect(!never.hasTable)

        let p384 = try ECPrivateKey(generating: .p384).publicKey
        p384.noteTrustedUse(threshold: 1)
        #expect(!p384.hasTable)
        #expect(P256KeyTable(key: p384) == nil)
    }

    @Test("threads verifying while one of them builds the table all get the right verdicts")
    func concurrentBuild() throws {
        let privateKey = try ECPrivateKey(generating: .p256)
        let message = Array("header.payload".utf8)
        let signature = try privateKey.signES256(message)
        let forged = try ECPrivateKey(generating: .p256).signES256(message)
        let key = try privateKey.publicKey
        let verdicts = Verdicts()
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for _ in 0..<20 {
                key.noteTrustedUse(threshold: 10)
                verdicts.record(
                    key.verifyES256(rawSignature: signature, message: message)
                        && !key.verifyES256(rawSignature: forged, message: message))
            }
        }
        #expect(key.hasTable)
        #expect(verdicts.all == 160)
        #expect(verdicts.right == 160)
    }
}

/// Counts verdicts from many threads.
private final class Verdicts: Sendable {
    private let counts = Mutex((all: 0, right: 0))
    func record(_ right: Bool) { counts.withLock { $0.all += 1; if right { $0.right += 1 } } }
    var all: Int { counts.withLock { $0.all } }
    var right: Int { counts.withLock { $0.right } }
}
