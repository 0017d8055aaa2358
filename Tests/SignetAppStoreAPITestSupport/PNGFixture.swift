import Foundation

/// PNG files made in memory: what `RetentionImage` reads (the signature, IHDR, chunks before the
/// image data) with an empty image data chunk. Apple would want real pixels; the client's checks
/// and the fake's need only the header.
public enum PNGFixture {
    /// A PNG of `width` × `height`, colour type `colorType` (2: RGB; 6: RGBA), with a `tRNS`
    /// chunk when `transparentColor`.
    public static func make(width: Int, height: Int, colorType: UInt8 = 2, transparentColor: Bool = false) -> [UInt8] {
        func be32(_ value: Int) -> [UInt8] { [24, 16, 8, 0].map { UInt8((value >> $0) & 0xFF) } }
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] { be32(data.count) + Array(type.utf8) + data + [0, 0, 0, 0] }
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        png += chunk("IHDR", be32(width) + be32(height) + [8, colorType, 0, 0, 0])
        png += chunk("sRGB", [0])
        if transparentColor { png += chunk("tRNS", [0, 0, 0, 0, 0, 0]) }
        png += chunk("IDAT", [])
        png += chunk("IEND", [])
        return png
    }
}
