/// An image to upload for retention messages, checked against Apple's rules before sending
/// (Upload Image): a PNG without transparency, 3840 px wide and 160 to 2160 px high
/// (`FULL_SIZE`), or 1024 × 1024 px (`BULLET_POINT`, for bullet points).
public struct RetentionImage: Sendable, Hashable {
    /// Apple's `imageSize`.
    public enum Size: String, Sendable, Hashable, CaseIterable {
        case fullSize = "FULL_SIZE"
        case bulletPoint = "BULLET_POINT"
    }

    /// The PNG file's bytes, sent as they are (`Content-Type: image/png`).
    public var png: [UInt8]
    public var size: Size
    /// Read from the PNG header.
    public let width: Int, height: Int

    /// Throws ``RetentionMessagingError`` (`InvalidImageError`) when `png` is not a PNG Apple takes as `size`.
    public init(png: [UInt8], size: Size = .fullSize) throws(RetentionMessagingError) {
        let header = try Self.header(of: png)
        switch size {
        case .fullSize:
            guard header.width == 3840, (160...2160).contains(header.height) else {
                throw RetentionMessagingError(
                    .invalidImage, field: "image", "is \(header.width) × \(header.height) px; FULL_SIZE is 3840 px wide and 160 to 2160 px high")
            }
        case .bulletPoint:
            guard header.width == 1024, header.height == 1024 else {
                throw RetentionMessagingError(.invalidImage, field: "image", "is \(header.width) × \(header.height) px; BULLET_POINT is 1024 × 1024 px")
            }
        }
        self.png = png
        self.size = size
        width = header.width
        height = header.height
    }

    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    /// Width and height from IHDR; throws for anything but a PNG without transparency (an
    /// alpha channel, colour types 4 and 6, or a `tRNS` chunk before the image data).
    static func header(of bytes: [UInt8]) throws(RetentionMessagingError) -> (width: Int, height: Int) {
        func refuse(_ why: String) -> RetentionMessagingError { RetentionMessagingError(.invalidImage, field: "image", why) }
        func uint32(_ at: Int) -> Int { bytes[at..<at + 4].reduce(0) { $0 << 8 | Int($1) } }
        guard bytes.count >= 33, Array(bytes[0..<8]) == signature, Array(bytes[12..<16]) == Array("IHDR".utf8) else {
            throw refuse("is not a PNG file")
        }
        let width = uint32(16), height = uint32(20), colorType = bytes[25]
        guard colorType != 4, colorType != 6 else { throw refuse("has an alpha channel; Apple takes PNGs without transparency") }
        var offset = 8
        while offset + 8 <= bytes.count {
            let length = uint32(offset), type = String(decoding: bytes[offset + 4..<offset + 8], as: UTF8.self)
            if type == "tRNS" { throw refuse("has transparency (a tRNS chunk); Apple takes PNGs without transparency") }
            if type == "IDAT" || type == "IEND" { break }
            offset += 12 + length
        }
        return (width, height)
    }
}
