import ArgumentParser
import SignetConsole

/// `signet console ...`: what the support console needs besides its `console:` section (docs/console.md).
struct ConsoleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "console",
        abstract: "Makes credentials for the support console (served by `signet run` under /console).",
        discussion: """
            The console is on when the pipeline file has a `console:` section and an `http:` listener; see `signet components console` and docs/console.md.
            """,
        subcommands: [Credential.self])

    struct Credential: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "credential",
            abstract: "Makes a new sign-in token for a named operator: the token once on stderr, the credentials file's line on stdout.",
            discussion: """
                The file keeps only the token's SHA-256, so a reader of the file cannot sign in. Give the token to the operator; append the line to the file `console.credentials` names, and restart signet run.

                Examples:
                  signet console credential alice --role operator \\
                    >> /etc/signet/console-credentials
                  signet console credential helpdesk --role read_only
                """)

        @Argument(help: "The operator's name, as the audit log shows it (letters, digits, . _ - @).")
        var name: String

        @Option(help: "read_only (searches and reads) or operator (also acts).")
        var role = "read_only"

        func validate() throws {
            guard ConsoleRole(rawValue: role) != nil else { throw ValidationError("--role is read_only or operator, not '\(role)'") }
            guard (try? ConsoleCredentials(text: ConsoleCredential(name: name, role: .readOnly, token: "x").line)) != nil else {
                throw ValidationError("the name must be 1-64 letters, digits, '.', '_', '-' or '@'")
            }
        }

        func run() throws {
            let token = ConsoleCredentials.newToken()
            let credential = ConsoleCredential(name: name, role: ConsoleRole(rawValue: role) ?? .readOnly, token: token)
            Terminal.error("token for \(name) (shown once; give it to them): \(token)")
            try Terminal.printLine(Array(credential.line.utf8))
        }
    }
}
