#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Maps raw JSON key bytes to a model's `CodingKeys` case without building a `String`.
///
/// Keys are bucketed by byte length and compared with `memcmp`, so a lookup costs a couple
/// of length checks and one short compare. Built once per model type.
struct JSONKeyTable<Key: RawRepresentable & CaseIterable & Sendable>: Sendable where Key.RawValue == String {
    private let keys: [Key]
    private let bytes: [UInt8]
    /// (offset into `bytes`, index into `keys`) ordered by key length.
    private let entries: [(offset: Int, key: Int)]
    /// `entries[lengthStart[n] ..< lengthStart[n + 1]]` have byte length `n`.
    private let lengthStart: [Int]

    init() {
        let all = Array(Key.allCases)
        // The reader's duplicate check gives each key one bit of a UInt64 (JSONReader.noteKey).
        // This depends only on the model's CodingKeys, never on input: any test catches it.
        precondition(all.count <= UInt64.bitWidth, "\(Key.self) has more than 64 keys")
        let utf8 = all.map { Array($0.rawValue.utf8) }
        let maxLength = utf8.map(\.count).max() ?? 0
        var bytes: [UInt8] = []
        var entries: [(offset: Int, key: Int)] = []
        var lengthStart = [Int](repeating: 0, count: maxLength + 2)
        for length in 0...maxLength {
            lengthStart[length] = entries.count
            for (index, key) in utf8.enumerated() where key.count == length {
                entries.append((bytes.count, index))
                bytes.append(contentsOf: key)
            }
        }
        lengthStart[maxLength + 1] = entries.count
        self.keys = all
        self.bytes = bytes
        self.entries = entries
        self.lengthStart = lengthStart
    }

    /// The key spelled by `key` and its position in `Key.allCases` (the reader's duplicate
    /// bitmask uses it), or nil for a key the model does not know (it is skipped).
    @inline(__always)
    func lookup(_ key: UnsafeBufferPointer<UInt8>) -> (key: Key, index: Int)? {
        let length = key.count
        guard length + 1 < lengthStart.count, let keyBase = key.baseAddress else { return nil }
        let lower = lengthStart[length], upper = lengthStart[length + 1]
        if lower == upper { return nil }
        return bytes.withUnsafeBufferPointer { table -> (key: Key, index: Int)? in
            guard let tableBase = table.baseAddress else { return nil }
            for i in lower..<upper {
                let entry = entries[i]
                if memcmp(tableBase + entry.offset, keyBase, length) == 0 {
                    return (keys[entry.key], entry.key)
                }
            }
            return nil
        }
    }
}
