import Foundation
import HTTPTypes
import Hummingbird
import SignetOpenSSL

/// What every console response carries, and the checks every console request passes: the
/// security headers (a strict Content-Security-Policy: no script, styles and images from the
/// console's own origin, forms posting only to it, never framed), the session cookie, and the
/// CSRF token of every form.
struct ConsoleSecurityMiddleware<Context: RequestContext>: RouterMiddleware {
    static var headers: HTTPFields {
        [
            .contentSecurityPolicy:
                "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
            HTTPField.Name("X-Content-Type-Options")!: "nosniff",
            HTTPField.Name("X-Frame-Options")!: "DENY",
            HTTPField.Name("Referrer-Policy")!: "no-referrer",
            .cacheControl: "no-store",
        ]
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var response = try await next(request, context)
        for field in Self.headers { response.headers[field.name] = field.value }
        return response
    }
}

enum ConsoleForm {
    /// Bodies of console forms read at most (a form is a few fields).
    static let maxBytes = 16 << 10

    /// An `application/x-www-form-urlencoded` body's fields (the last of a repeated name).
    static func fields(_ body: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in body.split(separator: UInt8(ascii: "&")) {
            let parts = pair.split(separator: UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]) else { continue }
            fields[name] = parts.count > 1 ? decode(parts[1]) ?? "" : ""
        }
        return fields
    }

    private static func decode(_ bytes: ArraySlice<UInt8>) -> String? {
        String(decoding: bytes.map { $0 == UInt8(ascii: "+") ? UInt8(ascii: " ") : $0 }, as: UTF8.self).removingPercentEncoding
    }

    /// `text` as one path segment.
    static func pathSegment(_ text: String) -> String {
        var allowed = CharacterSet.urlPathAllowed
        allowed.remove(charactersIn: "/?#%")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// Whether two secrets are equal, in time that does not depend on where they differ.
    static func sameSecret(_ a: String?, _ b: String) -> Bool {
        guard let a else { return false }
        return HMACSHA256.constantTimeEquals(Array(a.utf8), Array(b.utf8))
    }
}
