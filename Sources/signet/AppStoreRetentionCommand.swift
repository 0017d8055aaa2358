import AppStoreModels
import ArgumentParser
import Foundation
import Logging
import SignetAppStoreAPI
import SignetCore

/// `signet appstore retention ...`: the Retention Messaging API's configuration calls.
struct AppStoreRetentionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retention",
        abstract: "Configures Apple's retention messaging: the realtime URL, messages, images, default messages, the performance test.",
        discussion: """
            Each subcommand is one call of Apple's Retention Messaging API for the app and environment of SIGNET_BUNDLE_ID and SIGNET_ENVIRONMENT, with the In-App Purchase key's variables (`signet help backfill`). Requests are checked against Apple's documented rules before they are sent (a header over 66 characters, a URL that is not https, a PNG with transparency, ...: exit 2, nothing sent). Apple allows one call a second per endpoint in Production and a tenth of that in Sandbox: calls wait their turn.

            The order Apple requires: upload messages (and images), set each product's default message per locale, set the Sandbox realtime URL, pass a performance test in Sandbox, then set the Production URL. docs/retention.md.

            Exit status: 0 done, 1 Apple refused or could not be reached (its error printed), 2 a request Apple's rules refuse or a configuration problem.
            """,
        subcommands: [URLCommand.self, Messages.self, Images.self, DefaultMessage.self, PerformanceTest.self])

    /// A client from the environment, `body` run with it, and every failure turned into the exit status above.
    static func withClient(_ command: String, _ body: (AppStoreServerAPIClient) async throws -> Void) async throws {
        try await AppStoreCall.withClient("signet appstore retention \(command)", explanation: explanation, body)
    }

    /// What Apple's retention error codes mean, for the ones an operator meets.
    static func explanation(_ error: AppStoreAPIError) -> String? {
        switch error.errorCode {
        case 4_030_026?: "Production needs a performance test that passed in Sandbox first: `signet appstore retention performance-test`"
        case 4_090_001?: "that message identifier was used before; messages cannot be edited: upload under a new identifier"
        case 4_090_000?: "that image identifier was used before: upload under a new identifier"
        case 4_030_017?, 4_030_018?: "the message (or its image) is not APPROVED yet: `signet appstore retention messages list`"
        case 4_030_019?: "a message uses this image: delete the message first"
        case 4_030_014?, 4_030_016?: "Apple keeps at most 2000 messages and 2000 images per app: delete some first"
        case 4_000_213?: "a performance test is already running: wait for its result"
        case 4_040_018?: "no performance test with that request id"
        default: nil
        }
    }

    static func printJSON(_ value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        try Terminal.printLine(Array(try encoder.encode(value)))
    }

    static func say(_ line: String) throws { try Terminal.printLine(Array(line.utf8)) }

    // MARK: realtime URL

    struct URLCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "url",
            abstract: "Shows, sets or deletes where Apple sends Get Retention Message requests in this environment.",
            discussion: """
                Examples:
                  signet appstore retention url show
                  signet appstore retention url set https://signet.example.com/retention
                  signet appstore retention url delete
                """)

        @Argument(help: "show, set or delete.")
        var action: String

        @Argument(help: "For set: the https URL (at most 256 characters): the webhook's host with the retention section's path.")
        var url: String?

        func validate() throws {
            guard ["show", "set", "delete"].contains(action) else { throw ValidationError("the action is show, set or delete, not '\(action)'") }
            if action == "set", url == nil { throw ValidationError("set needs the URL") }
            if action != "set", url != nil { throw ValidationError("only set takes a URL") }
        }

        func run() async throws {
            try await AppStoreRetentionCommand.withClient("url \(action)") { client in
                let environment = client.configuration.environment.rawValue
                switch action {
                case "set":
                    try await client.configureRealtimeURL(url ?? "")
                    try say("\(environment) realtime URL set to \(url ?? "")")
                case "delete":
                    try await client.deleteRealtimeURL()
                    try say("\(environment) realtime URL deleted: Apple sends no retention requests in \(environment)")
                default:
                    guard let configured = try await client.realtimeURL() else {
                        Terminal.error("no realtime URL is configured in \(environment) (Apple: 404, errorCode 4040021 RealtimeUrlNotFoundError)")
                        throw ExitCode.failure
                    }
                    try say(configured)
                }
            }
        }
    }

    // MARK: messages

    struct Messages: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "messages",
            abstract: "Lists, uploads or deletes retention messages.",
            discussion: """
                upload prints the new message's identifier (a new UUID unless --id is given): the id rules and default messages name. Apple reviews every message (PENDING, then APPROVED or REJECTED; Sandbox approves at once); a message cannot be edited, only deleted and uploaded anew under a new id. Messages meant for switch-plan or promotional-offer answers must have no image and no bullet points.

                Examples:
                  signet appstore retention messages list
                  signet appstore retention messages upload \\
                    --header "Stay with Pro" --body "Half the price for 3 months."
                  signet appstore retention messages upload --json message.json
                  signet appstore retention messages delete 6f1e3c2a-1b2c-4d5e-8f90-a1b2c3d4e5f6
                """)

        @Argument(help: "list, upload or delete.")
        var action: String

        @Argument(help: "For delete: the message's identifier.")
        var identifier: String?

        @Option(help: "upload: the message's identifier (a UUID); default: a new one.")
        var id: String?

        @Option(help: "upload: the header, at most 66 characters.")
        var header: String?

        @Option(help: "upload: the body, at most 144 characters.")
        var body: String?

        @Option(help: "upload: an uploaded FULL_SIZE image's identifier.")
        var imageId: String?

        @Option(help: "upload: the image's alternative text, at most 150 characters.")
        var imageAltText: String?

        @Option(help: "upload: ABOVE_BODY (default) or ABOVE_IMAGE.")
        var headerPosition: String?

        @Option(help: "upload: a file holding Apple's UploadMessageRequestBody as JSON (header, body, image, bulletPoints, headerPosition), instead of the options.")
        var json: String?

        func validate() throws {
            guard ["list", "upload", "delete"].contains(action) else { throw ValidationError("the action is list, upload or delete, not '\(action)'") }
            if action == "delete", identifier == nil { throw ValidationError("delete needs the message's identifier") }
            if action == "upload" {
                if json == nil, header == nil || body == nil { throw ValidationError("upload needs --header and --body, or --json FILE") }
                if (imageId == nil) != (imageAltText == nil) { throw ValidationError("--image-id and --image-alt-text go together") }
                if let headerPosition, RetentionMessage.HeaderPosition(rawValue: headerPosition) == nil {
                    throw ValidationError("--header-position is ABOVE_BODY or ABOVE_IMAGE, not '\(headerPosition)'")
                }
            }
        }

        func message() throws -> RetentionMessage {
            if let json {
                do {
                    return try JSONDecoder().decode(RetentionMessage.self, from: Data(contentsOf: URL(fileURLWithPath: json)))
                } catch {
                    throw ConfigurationFailure(description: "signet appstore retention messages upload: \(json) is not an UploadMessageRequestBody: \(error)")
                }
            }
            return RetentionMessage(
                header: header ?? "", body: body ?? "",
                image: imageId.map { RetentionMessage.Image(imageIdentifier: $0, altText: imageAltText ?? "") },
                headerPosition: headerPosition.flatMap(RetentionMessage.HeaderPosition.init(rawValue:)))
        }

        func run() async throws {
            let upload = action == "upload" ? try message() : nil
            try await AppStoreRetentionCommand.withClient("messages \(action)") { client in
                switch action {
                case "upload":
                    let identifier = try RetentionIdentifier.canonical(id ?? UUID().uuidString, field: "--id")
                    try await client.uploadMessage(identifier: identifier, upload ?? RetentionMessage(header: "", body: ""))
                    try say(identifier)
                    Terminal.note("uploaded message \(identifier); Apple reviews it: `signet appstore retention messages list` shows its state")
                case "delete":
                    try await client.deleteMessage(identifier: identifier ?? "")
                    try say("deleted message \(try RetentionIdentifier.canonical(identifier ?? "", field: "identifier"))")
                default:
                    try printJSON(try await client.messageList())
                }
            }
        }
    }

    // MARK: images

    struct Images: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "images",
            abstract: "Lists, uploads or deletes the images retention messages show.",
            discussion: """
                Apple takes PNG files without transparency: FULL_SIZE images 3840 px wide and 160 to 2160 px high, BULLET_POINT images 1024 × 1024 px. upload prints the image's identifier (a new UUID unless --id is given). An image a message uses cannot be deleted until the message is.

                Examples:
                  signet appstore retention images upload banner.png
                  signet appstore retention images upload star.png --size BULLET_POINT
                  signet appstore retention images list
                """)

        @Argument(help: "list, upload or delete.")
        var action: String

        @Argument(help: "upload: the PNG file; delete: the image's identifier.")
        var target: String?

        @Option(help: "upload: FULL_SIZE (default) or BULLET_POINT.")
        var size: String = RetentionImage.Size.fullSize.rawValue

        @Option(help: "upload: the image's identifier (a UUID); default: a new one.")
        var id: String?

        func validate() throws {
            guard ["list", "upload", "delete"].contains(action) else { throw ValidationError("the action is list, upload or delete, not '\(action)'") }
            if action != "list", target == nil { throw ValidationError("\(action) needs \(action == "upload" ? "the PNG file" : "the image's identifier")") }
            guard RetentionImage.Size(rawValue: size) != nil else { throw ValidationError("--size is FULL_SIZE or BULLET_POINT, not '\(size)'") }
        }

        func run() async throws {
            var image: RetentionImage?
            if action == "upload", let target {
                guard let data = FileManager.default.contents(atPath: target) else {
                    throw ConfigurationFailure(description: "signet appstore retention images upload: cannot read \(target)")
                }
                do {
                    image = try RetentionImage(png: Array(data), size: RetentionImage.Size(rawValue: size) ?? .fullSize)
                } catch {
                    throw ConfigurationFailure(description: "signet appstore retention images upload: not sent: \(target) \(error.message)")
                }
            }
            try await AppStoreRetentionCommand.withClient("images \(action)") { client in
                switch action {
                case "upload":
                    let identifier = try RetentionIdentifier.canonical(id ?? UUID().uuidString, field: "--id")
                    try await client.uploadImage(identifier: identifier, image ?? (try RetentionImage(png: [])))
                    try say(identifier)
                    Terminal.note("uploaded image \(identifier); Apple reviews it: `signet appstore retention images list` shows its state")
                case "delete":
                    try await client.deleteImage(identifier: target ?? "")
                    try say("deleted image \(try RetentionIdentifier.canonical(target ?? "", field: "identifier"))")
                default:
                    try printJSON(try await client.imageList())
                }
            }
        }
    }

    // MARK: default messages

    struct DefaultMessage: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "default",
            abstract: "Shows, sets or deletes a product's default message in one locale.",
            discussion: """
                Apple shows the default when the realtime endpoint fails, is slow, or answers nothing better; with a realtime URL a default is required for every product in each locale served. Only approved text messages (with or without an image) can be defaults. Locales are case-sensitive (en-US).

                Examples:
                  signet appstore retention default set --product pro.monthly \\
                    --locale en-US --message 0d6a8f2e-3f4b-4c55-9a1e-2b7c8d9e0f11
                  signet appstore retention default show --product pro.monthly \\
                    --locale en-US
                """)

        @Argument(help: "show, set or delete.")
        var action: String

        @Option(help: "The auto-renewable subscription's product id.")
        var product: String

        @Option(help: "The App Store locale (case-sensitive), e.g. en-US.")
        var locale: String

        @Option(help: "set: the approved message's identifier.")
        var message: String?

        func validate() throws {
            guard ["show", "set", "delete"].contains(action) else { throw ValidationError("the action is show, set or delete, not '\(action)'") }
            if action == "set", message == nil { throw ValidationError("set needs --message") }
        }

        func run() async throws {
            try await AppStoreRetentionCommand.withClient("default \(action)") { client in
                switch action {
                case "set":
                    try await client.configureDefaultMessage(productId: product, locale: locale, messageIdentifier: message ?? "")
                    try say("default message of \(product) in \(locale): \(try RetentionIdentifier.canonical(message ?? "", field: "--message"))")
                case "delete":
                    try await client.deleteDefaultMessage(productId: product, locale: locale)
                    try say("default message of \(product) in \(locale) deleted")
                default:
                    guard let identifier = try await client.defaultMessage(productId: product, locale: locale) else {
                        Terminal.error("no default message for \(product) in \(locale) (Apple: 404, errorCode 4040020 DefaultMessageNotFoundError)")
                        throw ExitCode.failure
                    }
                    try say(identifier)
                }
            }
        }
    }

    // MARK: performance test

    struct PerformanceTest: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "performance-test",
            abstract: "Starts Apple's performance test of the Sandbox realtime URL, or shows a test's result.",
            discussion: """
                Apple must see the endpoint answer its test requests (Sandbox, about 700 ms at most each) before a Production realtime URL can be set. Start one with an active auto-renewable subscription bought in Sandbox; Apple answers the test's parameters and a request id, then sends its requests for totalDuration. With --wait the command polls the result until it is PASS or FAIL (exit 0 for PASS, 1 for FAIL). Apple serves these calls only on the Sandbox host, whatever SIGNET_ENVIRONMENT says.

                Examples:
                  signet appstore retention performance-test \\
                    --original-transaction-id 2000000123456789 --wait
                  signet appstore retention performance-test --result REQUEST_ID
                """)

        @Option(help: "Start a test with this active Sandbox subscription (its originalTransactionId).")
        var originalTransactionId: String?

        @Option(help: "Show the result of the test with this request id.")
        var result: String?

        @Flag(help: "After starting, poll until the result is PASS or FAIL.")
        var wait = false

        @Option(help: "With --wait: how often to ask (e.g. 10s; Sandbox allows one call every 10 s).")
        var interval: String = "10s"

        func validate() throws {
            guard (originalTransactionId == nil) != (result == nil) else {
                throw ValidationError("give exactly one of --original-transaction-id (start a test) and --result (show one)")
            }
            guard (try? ConfigDuration.parse(interval).get()) != nil else { throw ValidationError("--interval '\(interval)' is not a duration such as 10s") }
        }

        func run() async throws {
            try await AppStoreRetentionCommand.withClient("performance-test") { client in
                var requestId = result ?? ""
                if let originalTransactionId {
                    let started = try await client.initiatePerformanceTest(originalTransactionId: originalTransactionId)
                    requestId = started.requestId
                    try printJSON(started)
                    let config = started.config
                    Terminal.note(
                        "started performance test \(requestId): \(config.totalRequests) requests, up to \(config.maxConcurrentRequests) at once, over \(config.totalDuration / 1000) s; each within \(config.responseTimeThreshold) ms, \(config.successRateThreshold)% to pass")
                    guard wait else { return }
                    try await Task.sleep(for: .milliseconds(min(config.totalDuration, 3_600_000)))
                }
                let pause = (try? ConfigDuration.parse(interval).get()) ?? .seconds(10)
                while true {
                    let outcome = try await client.performanceTestResult(requestId: requestId)
                    if !outcome.isPending || !wait {
                        try printJSON(outcome)
                        if outcome.result == "FAIL" { throw ExitCode.failure }
                        return
                    }
                    Terminal.note("performance test \(requestId): still running (\(outcome.numPending ?? 0) requests pending)")
                    try await Task.sleep(for: pause)
                }
            }
        }
    }
}
