import Foundation
import Synchronization

/// `memcmp` equality: Array's `==` compares element by element, which showed up in
/// profiles for 4 KB header keys.
@inline(__always)
func sameBytes(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
    guard lhs.count == rhs.count else { return false }
    return lhs.withUnsafeBytes { l in
        rhs.withUnsafeBytes { r in
            l.count == 0 || memcmp(l.baseAddress!, r.baseAddress!, l.count) == 0
        }
    }
}

/// A small, bounded, thread-safe map used for the verifier's header and chain caches.
///
/// - Bounded: at `capacity` an arbitrary entry is evicted (the dictionary's first
///   bucket, which is effectively random because keys hash with the per-process seed).
///   An attacker who floods unique inputs can only evict, never grow memory.
/// - Low contention: one `Mutex` around a dictionary whose storage is reserved up
///   front, so no lookup or steady-state insert allocates while holding the lock;
///   keys hash before the lock is taken (see ``PrehashedBytes``), and evicted values
///   are released after it is dropped (freeing OpenSSL objects can be slow).
/// - A capacity of 0 disables caching.
final class BoundedCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Storage: ~Copyable {
        var entries: [Key: Value]
        /// The entry found or inserted last: a steady stream asks for the same one, and
        /// ``recent`` answers without building a key (for a JWS header, a 3 KB copy).
        var recent: (key: Key, value: Value)?
    }

    let capacity: Int
    private let storage: Mutex<Storage>

    init(capacity: Int) {
        self.capacity = max(0, capacity)
        var entries: [Key: Value] = [:]
        entries.reserveCapacity(self.capacity)
        self.storage = Mutex(Storage(entries: entries))
    }

    func value(for key: Key) -> Value? {
        guard capacity > 0 else { return nil }
        return storage.withLock { storage in
            guard let value = storage.entries[key] else { return nil }
            storage.recent = (key, value)
            return value
        }
    }

    /// The entry found or inserted last, to be matched by the caller outside the lock.
    var recent: (key: Key, value: Value)? {
        guard capacity > 0 else { return nil }
        return storage.withLock { $0.recent }
    }

    func insert(_ value: Value, for key: Key) {
        guard capacity > 0 else { return }
        let evicted: Value? = storage.withLock { storage in
            var evicted: Value?
            if storage.entries[key] == nil, storage.entries.count >= capacity {
                evicted = storage.entries.remove(at: storage.entries.startIndex).value
            }
            storage.entries[key] = value
            storage.recent = (key, value)
            return evicted
        }
        _ = evicted  // released here, outside the lock
    }

    var count: Int { storage.withLock { $0.entries.count } }

    func removeAll() {
        let old: [Key: Value] = storage.withLock { storage in
            var fresh: [Key: Value] = [:]
            fresh.reserveCapacity(capacity)
            swap(&fresh, &storage.entries)
            storage.recent = nil
            return fresh
        }
        _ = old
    }
}

/// Bytes with their hash computed once, so a cache lookup hashes kilobytes of
/// certificate material outside the lock and compares by `memcmp` only on a hash match.
struct PrehashedBytes: Hashable, Sendable {
    let bytes: [UInt8]
    private let hash: Int

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        self.hash = Self.sampledHash(bytes)
    }

    /// Hashes the length and 16 evenly spread 32-byte windows rather than all of a 4 KB
    /// header: SipHash over every byte of three headers cost more than the rest of the
    /// lookup. Equality still compares every byte, so a sampled collision only costs a
    /// `memcmp`; the cache is bounded, so crafted collisions cannot grow it.
    static func sampledHash(_ bytes: [UInt8]) -> Int {
        var hasher = Hasher()
        hasher.combine(bytes.count)
        bytes.withUnsafeBytes { raw in
            let window = 32
            guard raw.count > window * 16 else {
                hasher.combine(bytes: raw)
                return
            }
            let stride = (raw.count - window) / 15
            for index in 0..<16 {
                hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw[(index * stride)..<(index * stride + window)]))
            }
        }
        return hasher.finalize()
    }

    init(_ raw: UnsafeRawBufferPointer) {
        self.init([UInt8](raw))
    }

    /// Whether these are exactly `raw`'s bytes.
    func equals(_ raw: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count == raw.count else { return false }
        return bytes.withUnsafeBytes { own in raw.count == 0 || memcmp(own.baseAddress!, raw.baseAddress!, raw.count) == 0 }
    }

    static func == (lhs: PrehashedBytes, rhs: PrehashedBytes) -> Bool {
        lhs.hash == rhs.hash && sameBytes(lhs.bytes, rhs.bytes)
    }

    func hash(into hasher: inout Hasher) { hasher.combine(hash) }
}

/// The chain cache key: the exact DER bytes of `x5c[0]` and `x5c[1]`.
struct CertificatePairKey: Hashable, Sendable {
    let leaf: [UInt8]
    let intermediate: [UInt8]
    private let hash: Int

    init(leaf: [UInt8], intermediate: [UInt8]) {
        self.leaf = leaf
        self.intermediate = intermediate
        var hasher = Hasher()
        // Lengths first so (a‖b, c) and (a, b‖c) cannot collide structurally.
        hasher.combine(leaf.count)
        leaf.withUnsafeBytes { hasher.combine(bytes: $0) }
        intermediate.withUnsafeBytes { hasher.combine(bytes: $0) }
        self.hash = hasher.finalize()
    }

    static func == (lhs: CertificatePairKey, rhs: CertificatePairKey) -> Bool {
        lhs.hash == rhs.hash && sameBytes(lhs.leaf, rhs.leaf) && sameBytes(lhs.intermediate, rhs.intermediate)
    }

    func hash(into hasher: inout Hasher) { hasher.combine(hash) }
}
