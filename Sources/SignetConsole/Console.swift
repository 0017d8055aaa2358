import AppStoreModels
import Foundation
import HTTPTypes
public import Hummingbird
public import Logging
public import Metrics
import NIOCore
public import SignetAppStoreAPI
import SignetAppStorePipeline
public import SignetCore
public import SignetJWS
public import SignetState

/// What the console needs to ask Apple: the App Store Server API client (the In-App Purchase
/// key's) and the verifier for its signed answers. Without it the console reads and records
/// consent, but cannot look up order ids or act through Apple.
public struct ConsoleAppleAccess: Sendable {
    public var client: AppStoreServerAPIClient
    public var verifier: AppStoreVerifier

    public init(client: AppStoreServerAPIClient, verifier: AppStoreVerifier) {
        self.client = client
        self.verifier = verifier
    }
}

/// The support console (docs/console.md): server-rendered pages under `/console` on the
/// operators' listener. Sign in with a named credential; find a customer by order id or any
/// purchase identifier; read their purchases, "why", timeline and the operator actions on
/// them; act (an operator only, each with a confirmation step): extend a renewal date, set the
/// app account token, record consent. Every action is recorded in the audit log under its
/// request identifier, so a form sent twice acts once.
public final class Console: Sendable {
    let configuration: ConsoleConfiguration
    let credentials: ConsoleCredentials
    let store: StateStoreResource
    let apple: ConsoleAppleAccess?
    let sessions: ConsoleSessions
    let throttle: SignInThrottle
    let pages = ConsolePages()
    let logger: Logger
    /// The pipeline's last 24 hours, for the operations page.
    let history: OperationsHistory
    /// The delivery health stage's file of round trips, once it opened; nil without one.
    let deliveryHealthPath: @Sendable () -> String?
    /// The pipeline's dead-letter file and how to replay one, when the console can.
    let deadLetters: ConsoleDeadLetters?
    /// Store reads and writes block: on a thread of their own, never the event loops.
    let reads = BlockingExecutor(label: "signet.console.store")

    static let sessionCookie = "signet_console"
    static let signInCookie = "signet_console_sign_in"

    /// - Parameters:
    ///   - configuration: the `console:` section.
    ///   - credentials: who may sign in, and as what.
    ///   - store: the state store customers are read from and actions recorded in.
    ///   - apple: the App Store Server API client and its answers' verifier, when the key is configured.
    ///   - summary: the running pipeline's counts so far (`PipelineRunner.currentSummary`), drawn on the operations page.
    ///   - deliveryHealthPath: the delivery health stage's file of round trips, when there is one.
    ///   - deadLetters: the dead-letter file and its replay, when the pipeline writes one the console can read.
    ///   - metrics: where the sign-in counts go.
    ///   - logger: where sign-ins and actions are logged.
    public init(
        configuration: ConsoleConfiguration, credentials: ConsoleCredentials, store: StateStoreResource, apple: ConsoleAppleAccess?,
        summary: @escaping @Sendable () -> RunSummary = { RunSummary() }, deliveryHealthPath: @escaping @Sendable () -> String? = { nil },
        deadLetters: ConsoleDeadLetters? = nil, metrics: any MetricsFactory = MetricsSystem.factory, logger: Logger = Logger(label: "signet.console")
    ) {
        self.configuration = configuration
        self.credentials = credentials
        self.store = store
        self.apple = apple
        self.logger = logger
        sessions = ConsoleSessions(lifetime: configuration.sessionLifetime, idleTimeout: configuration.idleTimeout)
        throttle = SignInThrottle(factory: metrics)
        history = OperationsHistory(summary: summary)
        self.deliveryHealthPath = deliveryHealthPath
        self.deadLetters = deadLetters
    }

    /// Adds the console's routes under `/console`.
    public func register(on router: Router<OperatorRequestContext>) {
        let group = router.group(RouterPath(ConsoleConfiguration.path)).add(middleware: ConsoleSecurityMiddleware<OperatorRequestContext>())
        group.get("/static/console.css") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/css; charset=utf-8", .cacheControl: "max-age=3600"],
                body: .init(byteBuffer: ByteBuffer(string: ConsoleStyle.css)))
        }
        group.get("/sign-in") { [self] request, _ in signInPage(request, message: nil, status: .ok) }
        group.post("/sign-in") { [self] request, context in try await signIn(request, context) }
        group.post("/sign-out") { [self] request, _ in try await signOut(request) }
        group.get("") { [self] request, _ in await signedIn(request) { session in await home(session) } }
        group.get("/audit") { [self] request, _ in await signedIn(request) { session in await audit(session) } }
        group.get("/dead-letters") { [self] request, _ in
            let action = request.uri.queryParameters["action"].map(String.init)
            return await signedIn(request) { session in await deadLetterList(session, action: action) }
        }
        group.post("/dead-letters/replay") { [self] request, _ in
            try await form(request) { session, fields in await replayDeadLetter(fields, session) }
        }
        group.get("/operations") { [self] request, _ in await signedIn(request) { session in await operations(session) } }
        group.get("/search") { [self] request, _ in
            await signedIn(request) { session in await search(request.uri.queryParameters["q"].map(String.init) ?? "", session) }
        }
        // One parameter name at this position: Hummingbird's trie refuses two.
        group.get("/customers/:id") { [self] request, context in
            let query = context.parameters.get("id")?.removingPercentEncoding ?? ""
            let action = request.uri.queryParameters["action"].map(String.init)
            return await signedIn(request) { session in await customer(query, session, action: action) }
        }
        for action in ConsoleAction.allCases {
            group.post("/customers/:id/\(action.rawValue)") { [self] request, context in
                let id = context.parameters.get("id")?.removingPercentEncoding ?? ""
                return try await form(request) { session, fields in await act(action, on: id, fields, session) }
            }
        }
    }

    // MARK: pages

    func html(_ status: HTTPResponse.Status, _ page: String, title: String, session: ConsoleSessions.Session?, _ values: Any) -> Response {
        let user = session.map {
            ConsolePages.User(name: $0.name, role: $0.role.rawValue, csrf: $0.csrf, isOperator: $0.role == .operator)
        }
        return Response(
            status: status, headers: [.contentType: "text/html; charset=utf-8"],
            body: .init(byteBuffer: ByteBuffer(string: pages.render(page, title: title, user: user, values))))
    }

    func failure(_ status: HTTPResponse.Status, _ heading: String, _ message: String, session: ConsoleSessions.Session?) -> Response {
        struct Values {
            var heading: String
            var message: String
        }
        return html(status, "error", title: heading, session: session, Values(heading: heading, message: message))
    }

    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location])
    }

    /// Runs `body` with the request's session; without one, sends the browser to sign in.
    func signedIn(_ request: Request, _ body: (ConsoleSessions.Session) async -> Response) async -> Response {
        guard let id = request.cookies[Self.sessionCookie]?.value, let session = sessions.session(id) else {
            return Self.redirect("\(ConsoleConfiguration.path)/sign-in")
        }
        return await body(session)
    }

    /// A form post: signed in, the body read, its CSRF token the session's (else 403, nothing done).
    func form(_ request: Request, _ body: (ConsoleSessions.Session, [String: String]) async -> Response) async throws -> Response {
        guard let id = request.cookies[Self.sessionCookie]?.value, let session = sessions.session(id) else {
            return failure(.forbidden, "Signed out", "Your session ended: sign in again, then repeat the action.", session: nil)
        }
        var request = request
        guard let buffer = try? await request.collectBody(upTo: ConsoleForm.maxBytes) else {
            return failure(.contentTooLarge, "Too large", "The form is larger than 16 KB.", session: session)
        }
        let fields = ConsoleForm.fields(Array(buffer: buffer))
        guard ConsoleForm.sameSecret(fields["csrf"], session.csrf) else {
            logger.warning("console: a form without this session's CSRF token was refused (\(session.name))")
            return failure(
                .forbidden, "Refused", "The form did not come from this console session (no valid CSRF token): nothing was done.",
                session: session)
        }
        return await body(session, fields)
    }

    func onStore<T: Sendable>(_ body: @Sendable () throws -> T) async throws -> T {
        try await withTaskExecutorPreference(reads) { try body() }
    }

    // MARK: sign-in

    func signInPage(_ request: Request, message: String?, status: HTTPResponse.Status) -> Response {
        struct Values {
            var csrf: String
            var message: String?
        }
        // Login CSRF: the form's token must match a cookie only this origin could set.
        let token = ConsoleSessions.randomToken()
        var response = html(status, "sign-in", title: "Sign in", session: nil, Values(csrf: token, message: message))
        response.headers.append(HTTPField(
            name: .setCookie, value: cookie(Self.signInCookie, token, path: "\(ConsoleConfiguration.path)/sign-in", maxAge: 3600, request)))
        return response
    }

    func cookie(_ name: String, _ value: String, path: String, maxAge: Int, _ request: Request) -> String {
        let secure: Bool = switch configuration.secureCookie {
        case .always: true
        case .never: false
        case .auto: request.headers[HTTPField.Name("X-Forwarded-Proto")!]?.lowercased() == "https"
        }
        return "\(name)=\(value); Path=\(path); Max-Age=\(maxAge); HttpOnly; SameSite=Strict\(secure ? "; Secure" : "")"
    }

    func signIn(_ request: Request, _ context: OperatorRequestContext) async throws -> Response {
        let address = context.remoteAddress?.ipAddress ?? "unknown"
        if let wait = throttle.wait(address) {
            let seconds = Int((Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18).rounded(.up))
            var response = signInPage(
                request, message: "Too many failed sign-ins from your address: try again in \(seconds) s.", status: .tooManyRequests)
            response.headers[.retryAfter] = "\(seconds)"
            return response
        }
        var request = request
        let fields = ConsoleForm.fields(Array(buffer: (try? await request.collectBody(upTo: ConsoleForm.maxBytes)) ?? ByteBuffer()))
        guard let expected = request.cookies[Self.signInCookie]?.value, ConsoleForm.sameSecret(fields["csrf"], expected) else {
            return signInPage(request, message: "The sign-in form expired or did not come from this console: try again.", status: .forbidden)
        }
        guard let credential = credentials.credential(for: fields["token"] ?? "") else {
            let wait = throttle.failed(address)
            logger.warning("console: a sign-in from \(address) was refused (wrong token); next attempt considered in \(wait)")
            return signInPage(request, message: "That token is not valid.", status: .unauthorized)
        }
        throttle.succeeded(address)
        let session = sessions.start(credential)
        logger.info("console: \(credential.name) (\(credential.role.rawValue)) signed in from \(address)")
        var response = Self.redirect(ConsoleConfiguration.path)
        let lifetime = Int(configuration.sessionLifetime.components.seconds)
        response.headers.append(HTTPField(
            name: .setCookie, value: cookie(Self.sessionCookie, session.id, path: ConsoleConfiguration.path, maxAge: lifetime, request)))
        response.headers.append(HTTPField(
            name: .setCookie, value: cookie(Self.signInCookie, "", path: "\(ConsoleConfiguration.path)/sign-in", maxAge: 0, request)))
        return response
    }

    func signOut(_ request: Request) async throws -> Response {
        try await form(request) { session, _ in
            sessions.end(session.id)
            logger.info("console: \(session.name) signed out")
            var response = Self.redirect("\(ConsoleConfiguration.path)/sign-in")
            response.headers.append(HTTPField(
                name: .setCookie, value: cookie(Self.sessionCookie, "", path: ConsoleConfiguration.path, maxAge: 0, request)))
            return response
        }
    }
}
