import Foundation
import Synchronization
import MetricsTestKit
@testable import SignetConsole
import SignetCore
import SignetHTTP
import SignetTestSupport
import Testing

@Suite("Support console: credentials, sessions, throttling, escaping, and the pages over HTTP")
struct ConsoleTests {
    static let operatorToken = "sgc_operator-token-for-tests-0123456789abcdef"
    static let readerToken = "sgc_reader-token-for-tests-0123456789abcdef"

    static var credentialsText: String {
        """
        # the console's test credentials
        alice \(ConsoleRole.operator.rawValue) \(ConsoleCredential(name: "alice", role: .operator, token: operatorToken).line.split(separator: " ")[2])
        helpdesk read_only \(ConsoleCredential(name: "helpdesk", role: .readOnly, token: readerToken).line.split(separator: " ")[2])   # reads only

        """
    }

    @Test("a credentials file names each credential; a bad line is refused with its number")
    func credentialsFile() throws {
        let credentials = try ConsoleCredentials(text: Self.credentialsText)
        #expect(credentials.credential(for: Self.operatorToken).map { [$0.name, $0.role.rawValue] } == ["alice", "operator"])
        #expect(credentials.credential(for: Self.readerToken).map { [$0.name, $0.role.rawValue] } == ["helpdesk", "read_only"])
        #expect(credentials.credential(for: Self.operatorToken + "x") == nil)
        #expect(credentials.credential(for: "") == nil)
        let hash = String(repeating: "ab", count: 32)
        let refusals: [(String, String)] = [
            ("\n\nbob operator", "line 3: expected `name role sha256:HEX`"),
            ("bob admin sha256:\(hash)", "line 1: role 'admin'"),
            ("bob operator sha256:\(hash.dropLast())", "line 1: the token's hash"),
            ("bob operator md5:\(hash)", "line 1: the token's hash"),
            ("b<b operator sha256:\(hash)", "line 1: name 'b<b'"),
            ("bob operator sha256:\(hash)\nbob read_only sha256:\(hash)", "line 2: name 'bob' appears twice"),
            ("# nobody\n", "no credential"),
        ]
        for (text, expected) in refusals {
            #expect(throws: ConsoleCredentials.Invalid.self) { try ConsoleCredentials(text: text) }
            do {
                _ = try ConsoleCredentials(text: text)
            } catch {
                #expect(error.description.hasPrefix(expected), "\(error)")
            }
        }
        // A made credential's line reads back as the same credential.
        let token = ConsoleCredentials.newToken()
        #expect(token.hasPrefix("sgc_") && token.count == 47)
        let made = ConsoleCredential(name: "carol@example.com", role: .operator, token: token)
        #expect(try ConsoleCredentials(text: made.line).credential(for: token) == made)
    }

    @Test("failed sign-ins from an address double its wait; a success clears it; another address is not slowed")
    func throttle() {
        let throttle = SignInThrottle(factory: TestMetrics())
        let start = ContinuousClock.now
        #expect(throttle.wait("10.0.0.1", now: start) == nil)
        #expect(throttle.failed("10.0.0.1", now: start) == .seconds(1))
        #expect(throttle.wait("10.0.0.1", now: start + .milliseconds(500)) != nil)
        #expect(throttle.wait("10.0.0.2", now: start + .milliseconds(500)) == nil)
        #expect(throttle.wait("10.0.0.1", now: start + .seconds(1)) == nil)
        #expect(throttle.failed("10.0.0.1", now: start + .seconds(1)) == .seconds(2))
        #expect(throttle.failed("10.0.0.1", now: start + .seconds(3)) == .seconds(4))
        for _ in 0..<20 { throttle.failed("10.0.0.1", now: start) }
        #expect(throttle.failed("10.0.0.1", now: start) == SignInThrottle.longestWait)
        throttle.succeeded("10.0.0.1")
        #expect(throttle.wait("10.0.0.1", now: start) == nil)
    }

    @Test("a session ends when idle too long or past its lifetime; an unknown id is no session")
    func sessions() {
        let sessions = ConsoleSessions(lifetime: .seconds(3600), idleTimeout: .seconds(600))
        let start = ContinuousClock.now
        let credential = ConsoleCredential(name: "alice", role: .operator, token: "t")
        let session = sessions.start(credential, now: start)
        #expect(session.id != session.csrf && session.id.count == 43)
        #expect(sessions.session(session.id, now: start + .seconds(500))?.name == "alice")
        #expect(sessions.session(session.id, now: start + .seconds(1000))?.name == "alice", "used at 500 s: idle 500 s")
        #expect(sessions.session(session.id, now: start + .seconds(1700)) == nil, "idle 700 s")
        let second = sessions.start(credential, now: start)
        for minute in 1...59 { #expect(sessions.session(second.id, now: start + .seconds(minute * 60)) != nil) }
        #expect(sessions.session(second.id, now: start + .seconds(3600)) == nil, "past its lifetime, however active")
        #expect(sessions.session("no-such-session") == nil)
        let third = sessions.start(credential)
        sessions.end(third.id)
        #expect(sessions.session(third.id) == nil)
    }

    @Test("every value a page shows is HTML-escaped, stored notifications' fields included")
    func escaping() {
        let hostile = #"<script>alert(1)</script>"><img src=x onerror=alert(2)>'"#
        let values = Console.CustomerValues(
            query: hostile, matchedBy: "originalTransactionId", banner: .init(text: hostile, tone: "done"),
            purchases: [.init(
                originalTransactionId: "1000", productId: hostile, state: "active", entitled: true, entitlements: [hostile], why: hostile,
                expires: "—", environment: hostile, appAccountToken: "—", appTransactionId: hostile, consentRestricted: true, canAct: true,
                csrf: "token", query: hostile, reasons: Console.reasons)],
            timeline: [.init(when: "now", kind: hostile, originalTransactionId: hostile, summary: hostile)], actions: [])
        let page = ConsolePages().render(
            "customer", title: hostile, user: .init(name: hostile, role: "operator", csrf: "t", isOperator: true), values)
        #expect(!page.contains("<script"), "\(page)")
        #expect(!page.contains("<img"))
        #expect(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=alert(2)&gt;&#39;"))
        #expect(page.contains(#"<form method="post" action="/console/customers/1000/extend">"#))
    }

    @Test("the operations history puts each sample's new counts in its 10-minute bucket, 24 hours of them")
    func operationsHistory() {
        let counts = Mutex(RunSummary())
        let start: Int64 = 1_800_000_000_000 - 1_800_000_000_000 % OperationsHistory.bucketMilliseconds
        let history = OperationsHistory(summary: { counts.withLock { $0 } }, now: start)
        history.sample(now: start)
        counts.withLock {
            $0.read = 10
            $0.passed = 8
            $0.rejected = 2
            $0.rejectedByReason = ["signature_invalid": 2]
        }
        history.sample(now: start + 60_000)
        counts.withLock {
            $0.read = 15
            $0.rejected = 3
            $0.rejectedByReason = ["signature_invalid": 2, "malformed_json": 1]
        }
        history.sample(now: start + OperationsHistory.bucketMilliseconds + 1)
        let buckets = history.last24Hours(now: start + OperationsHistory.bucketMilliseconds + 1)
        #expect(buckets.count == 144)
        #expect(buckets.last?.start == start + OperationsHistory.bucketMilliseconds)
        #expect(buckets.suffix(2).map(\.read) == [10, 5])
        #expect(buckets.suffix(2).map(\.rejected) == [2, 1])
        #expect(buckets.suffix(2).map(\.rejectedByReason) == [["signature_invalid": 2], ["malformed_json": 1]])
        #expect(buckets.dropLast(2).allSatisfy { $0.read == 0 })
        // A day later the old buckets are gone.
        let later = history.last24Hours(now: start + 86_400_000 + OperationsHistory.bucketMilliseconds * 2)
        #expect(later.allSatisfy { $0.read == 0 })
    }

    @Test("charts scale to the largest value and escape nothing themselves: labels go through the template")
    func charts() {
        let chart = SVGChart.columns(title: "t", values: [(0, 0, "a"), (10, 2, "b"), (5, 0, "<c>")], marks: [(1, "04:00")], width: 300, height: 100)
        #expect(chart.bars.count == 3)
        #expect(chart.bars.map(\.height) == [60, 12, 30])
        let page = ConsolePages().render("chart", title: "x", user: nil, chart)
        #expect(page.contains("&lt;c&gt;") && !page.contains("<c>"))
        let rows = SVGChart.rows(title: "r", [("b", 1), ("a", 4)])
        #expect(rows.labels.filter { $0.anchor == "end" }.map(\.text) == ["a", "b"])
    }

    @Test("form bodies decode as browsers encode them")
    func formDecoding() {
        let fields = ConsoleForm.fields(Array("csrf=a%2Bb&q=hello+world&days=7&empty=&bare&x=%3Cscript%3E".utf8))
        #expect(fields == ["csrf": "a+b", "q": "hello world", "days": "7", "empty": "", "bare": "", "x": "<script>"])
        #expect(ConsoleForm.pathSegment("a/b?c#d e") == "a%2Fb%3Fc%23d%20e")
    }
}

/// The console over HTTP, with Python's http.client as the browser: sign-in, cookies, CSRF,
/// roles, headers, the customer's page, the throttle and its metric.
@Suite("Support console over HTTP")
struct ConsoleHTTPTests {
    @Test("sign in, read a customer, refused without CSRF or as read-only, signed out; failed sign-ins slowed and counted")
    func pages() async throws {
        let (bed, events) = try await EntitlementAPITests.ranBed(store: "outbox_retention: 1d")
        defer { bed.remove() }
        let credentials = bed.directory.appendingPathComponent("console-credentials")
        try ConsoleTests.credentialsText.write(to: credentials, atomically: true, encoding: .utf8)
        let event = try #require(events.first { $0["appAccountToken"] is String })
        let original = try #require(event["originalTransactionId"] as? String)
        let account = try #require(event["appAccountToken"] as? String)
        let report = try await EntitlementAPITests.whileRunning(
            bed, http: "address: 127.0.0.1:0", sections: "console:\n  credentials: \(credentials.path)\n"
        ) { port in
            try await Self.browse(port: port, original: original, account: account)
        }
        let failures = report.filter { !$0.hasPrefix("ok ") }
        #expect(failures.isEmpty, "\(report.joined(separator: "\n"))")
        #expect(report.count == Self.expectedChecks, "\(report.joined(separator: "\n"))")
    }

    static let expectedChecks = 23

    /// Runs the browsing script on a Dispatch thread (the server runs on the cooperative pool).
    static func browse(port: Int, original: String, account: String) async throws -> [String] {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result {
                    let result = try Python.run(script, arguments: [
                        String(port), original, account, ConsoleTests.operatorToken, ConsoleTests.readerToken,
                    ])
                    return result.output.split(separator: "\n").map(String.init)
                })
            }
        }
    }

    static let script = #"""
        import http.client, re, sys, urllib.parse
        port, original, account, operator_token, reader_token = sys.argv[1:6]

        def request(method, path, body=None, cookies=None, headers=None):
            conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=20)
            h = dict(headers or {})
            if cookies:
                h["Cookie"] = "; ".join(f"{k}={v}" for k, v in cookies.items())
            if body is not None:
                body = urllib.parse.urlencode(body)
                h["Content-Type"] = "application/x-www-form-urlencoded"
            conn.request(method, path, body=body, headers=h)
            r = conn.getresponse()
            text = r.read().decode()
            return r.status, r.headers, text

        def check(name, ok, detail=""):
            print(("ok " if ok else "FAIL ") + name + ("" if ok else f": {detail}"[:600]))

        def cookie_of(headers, name):
            for value in headers.get_all("Set-Cookie") or []:
                if value.startswith(name + "="):
                    return value
            return None

        def sign_in(token):
            status, headers, text = request("GET", "/console/sign-in")
            pre = cookie_of(headers, "signet_console_sign_in").split(";")[0].split("=", 1)[1]
            csrf = re.search(r'name="csrf" value="([^"]+)"', text).group(1)
            return request("POST", "/console/sign-in", {"csrf": csrf, "token": token}, cookies={"signet_console_sign_in": pre})

        status, headers, _ = request("GET", "/console")
        check("signed out, /console sends to sign-in", status == 303 and headers["Location"] == "/console/sign-in", (status, headers["Location"]))

        status, headers, text = sign_in("sgc_wrong")
        check("a wrong token is refused", status == 401 and "not valid" in text, status)
        status, headers, text = sign_in(operator_token)
        check("the next attempt from the address waits (429, Retry-After)", status == 429 and headers["Retry-After"] == "1", (status, headers["Retry-After"]))
        status, _, metrics = request("GET", "/metrics")
        counted = dict(re.findall(r'signet_console_sign_ins_total\{result="(\w+)"\} (\d+)', metrics))
        check("sign-ins counted by result", counted == {"ok": "0", "refused": "1", "throttled": "1"}, counted)
        import time; time.sleep(1.1)

        status, headers, text = sign_in(reader_token)
        session_cookie = cookie_of(headers, "signet_console")
        check("signed in: 303 to /console", status == 303 and headers["Location"] == "/console", status)
        check("session cookie HttpOnly, SameSite=Strict, Path=/console, not Secure on plain HTTP",
              session_cookie and "HttpOnly" in session_cookie and "SameSite=Strict" in session_cookie
              and "Path=/console" in session_cookie and "Secure" not in session_cookie, session_cookie)
        reader = {"signet_console": session_cookie.split(";")[0].split("=", 1)[1]}

        status, headers, text = request("GET", f"/console/customers/{original}", cookies=reader)
        csp = headers["Content-Security-Policy"] or ""
        check("customer page 200", status == 200, status)
        check("strict CSP: nothing allowed by default, no script", "default-src 'none'" in csp and "script-src" not in csp and "frame-ancestors 'none'" in csp, csp)
        check("no <script> on the page", "<script" not in text.lower())
        check("the page shows why, the timeline and the purchase", "Why" in text and "Timeline" in text and original in text)
        check("read-only: no action forms", "/extend" not in text and "/token" not in text)
        reader_csrf = re.search(r'name="csrf" value="([^"]+)"', text).group(1)
        status, _, text = request("POST", f"/console/customers/{original}/extend", {"csrf": reader_csrf, "days": "3", "reason": "3"}, cookies=reader)
        check("read-only: an action is refused", status == 403 and "read-only" in text, status)

        status, headers, _ = request("GET", f"/console/search?q={account.upper()}", cookies=reader)
        check("search by an upper-case appAccountToken opens the customer",
              status == 303 and headers["Location"] == f"/console/customers/{account.upper()}", (status, headers["Location"]))
        status, _, text = request("GET", f"/console/customers/{account.upper()}", cookies=reader)
        check("found by appAccountToken", status == 200 and "appAccountToken" in text and original in text, status)
        status, _, text = request("GET", "/console/search?q=0000", cookies=reader)
        check("an unknown id: not found, said why", status == 404 and "knows no purchase" in text, status)

        status, headers, _ = sign_in(operator_token)
        operator = {"signet_console": cookie_of(headers, "signet_console").split(";")[0].split("=", 1)[1]}
        status, _, text = request("GET", f"/console/customers/{original}", cookies=operator)
        check("operator: action forms shown", f"/console/customers/{original}/extend" in text)
        csrf = re.search(r'name="csrf" value="([^"]+)"', text).group(1)
        status, _, text = request("POST", f"/console/customers/{original}/extend", {"days": "3", "reason": "3"}, cookies=operator)
        check("a form without the CSRF token is refused", status == 403 and "CSRF" in text, status)
        status, _, text = request("POST", f"/console/customers/{original}/extend", {"csrf": reader_csrf, "days": "3", "reason": "3"}, cookies=operator)
        check("another session's CSRF token is refused", status == 403, status)
        status, _, text = request("POST", f"/console/customers/{original}/extend", {"csrf": csrf, "days": "91", "reason": "3"}, cookies=operator)
        check("91 days: not sent, Apple's rule said", status == 400 and "90" in text, (status, text[-400:]))

        status, headers, text = request("GET", "/console/operations", cookies=operator)
        check("operations page: charts drawn as SVG, no script", status == 200 and "<svg" in text and "<script" not in text.lower() and "Refund questions" in text, status)

        status, headers, text = request("GET", "/console/dead-letters", cookies=operator)
        check("dead letters page: no webhook here, says how to replay", status == 200 and "signet dead-letters replay" in text, status)

        status, headers, _ = request("POST", "/console/sign-out", {"csrf": csrf}, cookies=operator)
        check("signed out", status == 303 and "Max-Age=0" in (cookie_of(headers, "signet_console") or ""), status)
        status, headers, _ = request("GET", f"/console/customers/{original}", cookies=operator)
        check("the old cookie reaches nothing", status == 303 and headers["Location"] == "/console/sign-in", status)
        """#
}
