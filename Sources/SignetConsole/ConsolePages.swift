import Foundation
import Mustache

/// The console's pages: Mustache templates (every `{{value}}` HTML-escaped; `{{{body}}}` only
/// for the page the layout wraps, itself rendered from a template) and the values they show.
struct ConsolePages: Sendable {
    /// The signed-in operator, shown in the header with the sign-out form.
    struct User {
        var name: String
        var role: String
        var csrf: String
        var isOperator: Bool
    }

    private let library: MustacheLibrary

    init() {
        var library = MustacheLibrary()
        for (name, text) in Self.templates {
            // The templates are this file's constants: one that does not parse is a bug caught by every console test.
            try! library.register(text, named: name)  // swiftlint:disable:this force_try
        }
        self.library = library
    }

    /// `page` rendered with `values`, inside the layout.
    func render(_ page: String, title: String, user: User?, _ values: Any) -> String {
        let body = library.render(values, withTemplate: page) ?? ""
        struct Layout {
            var title: String
            var user: User?
            var body: String
        }
        return library.render(Layout(title: title, user: user, body: body), withTemplate: "layout") ?? body
    }

    static let templates: [String: String] = [
        "layout": """
            <!doctype html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <meta name="referrer" content="no-referrer">
            <title>{{title}} · Signet console</title>
            <link rel="stylesheet" href="/console/static/console.css">
            </head>
            <body>
            <a class="skip" href="#main">Skip to content</a>
            <header><nav aria-label="Console">
            <a class="brand" href="/console">Signet console</a>
            {{#user}}<a href="/console">Search</a><a href="/console/operations">Operations</a><a href="/console/dead-letters">Dead letters</a><a href="/console/audit">Audit log</a>
            <form method="post" action="/console/sign-out"><input type="hidden" name="csrf" value="{{csrf}}"><button type="submit">Sign out {{name}} ({{role}})</button></form>{{/user}}
            </nav></header>
            <main id="main">
            {{{body}}}
            </main>
            </body>
            </html>
            """,
        "sign-in": """
            <form class="signin" method="post" action="/console/sign-in">
            <h1>Sign in</h1>
            {{#message}}<p class="banner error" role="alert">{{message}}</p>{{/message}}
            <input type="hidden" name="csrf" value="{{csrf}}">
            <label for="token">Access token</label>
            <input id="token" name="token" type="password" autocomplete="current-password" required autofocus>
            <p><button type="submit">Sign in</button></p>
            <p class="muted">A named credential from the console's credentials file (docs/console.md).</p>
            </form>
            """,
        "home": """
            <h1>Find a customer</h1>
            {{> search}}
            <h2>Recent operator actions</h2>
            {{> audit-table}}
            """,
        "search": """
            <form class="search" method="get" action="/console/search" role="search">
            <label class="skip" for="q">Order ID or purchase identifier</label>
            <input id="q" name="q" value="{{query}}" placeholder="Order ID, transaction id, originalTransactionId, appAccountToken or appTransactionId" required>
            <button type="submit">Search</button>
            </form>
            """,
        "results": """
            <h1>Search</h1>
            {{> search}}
            {{#message}}<p class="banner {{tone}}" role="status">{{message}}</p>{{/message}}
            {{#hasMatches}}
            <table><thead><tr><th>originalTransactionId</th><th>product</th><th>found by</th></tr></thead><tbody>
            {{#matches}}<tr><td class="mono"><a href="/console/customers/{{originalTransactionId}}">{{originalTransactionId}}</a></td><td>{{productId}}</td><td>{{via}}</td></tr>{{/matches}}
            </tbody></table>
            {{/hasMatches}}
            """,
        "customer": """
            <h1>Customer <span class="mono">{{query}}</span></h1>
            <p class="muted">Found by {{matchedBy}}. Times are UTC.</p>
            {{#banner}}<p class="banner {{tone}}" role="status">{{text}}</p>{{/banner}}
            {{#purchases}}
            <section aria-labelledby="p-{{originalTransactionId}}">
            <h2 id="p-{{originalTransactionId}}">{{productId}} <span class="mono">{{originalTransactionId}}</span></h2>
            <table><tbody>
            <tr><th scope="row">Access</th><td>{{#entitled}}<span class="access-yes">yes</span>{{/entitled}}{{^entitled}}<span class="access-no">no</span>{{/entitled}} — {{state}}{{#entitlements}} · {{.}}{{/entitlements}}</td></tr>
            <tr><th scope="row">Why</th><td><p class="why">{{why}}</p></td></tr>
            <tr><th scope="row">Expires</th><td>{{expires}}</td></tr>
            <tr><th scope="row">Environment</th><td>{{environment}}</td></tr>
            <tr><th scope="row">appAccountToken</th><td class="mono">{{appAccountToken}}</td></tr>
            <tr><th scope="row">appTransactionId</th><td class="mono">{{appTransactionId}}</td></tr>
            </tbody></table>
            {{#canAct}}
            <div class="actions">
            <form method="post" action="/console/customers/{{originalTransactionId}}/extend">
            <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="q" value="{{query}}">
            <strong>Extend the renewal date</strong>
            <label for="days-{{originalTransactionId}}">Days (1–90)</label>
            <input id="days-{{originalTransactionId}}" name="days" type="number" min="1" max="90" value="7" required>
            <label for="reason-{{originalTransactionId}}">Reason</label>
            <select id="reason-{{originalTransactionId}}" name="reason">{{#reasons}}<option value="{{value}}">{{label}}</option>{{/reasons}}</select>
            <p><button type="submit">Review extension…</button></p>
            </form>
            <form method="post" action="/console/customers/{{originalTransactionId}}/token">
            <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="q" value="{{query}}">
            <strong>Set the app account token</strong>
            <label for="token-{{originalTransactionId}}">Account UUID</label>
            <input id="token-{{originalTransactionId}}" name="token" required pattern="[0-9A-Fa-f-]{36}">
            <p><button type="submit">Review token…</button></p>
            </form>
            {{#consentRestricted}}
            <form method="post" action="/console/customers/{{originalTransactionId}}/consent">
            <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="q" value="{{query}}">
            <strong>Record consent again</strong>
            <p class="muted">The customer withdrew consent (RESCIND_CONSENT); record it only when they gave it again.</p>
            <p><button type="submit">Review consent…</button></p>
            </form>
            {{/consentRestricted}}
            </div>
            {{/canAct}}
            </section>
            {{/purchases}}
            <h2>Timeline</h2>
            <table><thead><tr><th>when</th><th>what</th><th>purchase</th><th>detail</th></tr></thead><tbody>
            {{#timeline}}<tr><td>{{when}}</td><td><span class="kind">{{kind}}</span></td><td class="mono">{{originalTransactionId}}</td><td>{{summary}}</td></tr>{{/timeline}}
            {{^timeline}}<tr><td colspan="4" class="muted">Nothing recorded yet.</td></tr>{{/timeline}}
            </tbody></table>
            <h2>Operator actions</h2>
            {{> audit-table}}
            """,
        "audit-table": """
            <table><thead><tr><th>when</th><th>who</th><th>action</th><th>purchase</th><th>status</th><th>Apple's answer</th></tr></thead><tbody>
            {{#actions}}<tr id="action-{{requestIdentifier}}"><td>{{when}}</td><td>{{actor}}</td><td>{{action}}</td><td class="mono">{{#originalTransactionId}}<a href="/console/customers/{{originalTransactionId}}">{{originalTransactionId}}</a>{{/originalTransactionId}}{{productId}}</td><td>{{status}}</td><td class="mono">{{answer}}</td></tr>{{/actions}}
            {{^actions}}<tr><td colspan="6" class="muted">No operator action recorded.</td></tr>{{/actions}}
            </tbody></table>
            """,
        "audit": """
            <h1>Audit log</h1>
            <p class="muted">Every operator action, newest first (the last {{days}} days; <code>signet support audit</code> exports it all).</p>
            {{> audit-table}}
            """,
        "confirm": """
            <h1>{{heading}}</h1>
            <p>{{warning}}</p>
            <dl class="confirm">{{#facts}}<dt>{{name}}</dt><dd class="mono">{{value}}</dd>{{/facts}}</dl>
            <form method="post" action="{{action}}">
            <input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="confirm" value="yes">
            {{#fields}}<input type="hidden" name="{{name}}" value="{{value}}">{{/fields}}
            <p><button type="submit" class="danger" autofocus>{{button}}</button> <a class="button" href="{{cancel}}">Cancel</a></p>
            </form>
            """,
        "chart": """
            <svg class="chart" role="img" width="{{width}}" height="{{height}}" viewBox="0 0 {{width}} {{height}}" xmlns="http://www.w3.org/2000/svg">
            <title>{{title}}</title>
            {{#bars}}<rect class="{{tone}}" x="{{x}}" y="{{y}}" width="{{width}}" height="{{height}}"><title>{{title}}</title></rect>{{/bars}}
            {{#labels}}<text x="{{x}}" y="{{y}}" text-anchor="{{anchor}}">{{text}}</text>{{/labels}}
            </svg>
            """,
        "operations": """
            <h1>Operations</h1>
            <p class="muted">Since {{since}} (this process; a restart starts the charts again). {{totals}}.</p>
            <h2>Notifications</h2>
            {{#throughput}}{{> chart}}{{/throughput}}
            <h2>Dead letters by reason</h2>
            {{#deadLetters}}{{> chart}}{{/deadLetters}}{{^deadLetters}}<p class="muted">No dead letters in the last 24 hours.</p>{{/deadLetters}}
            <h2>Delivery health</h2>
            {{#hasDeliveryHealth}}
            <table><thead><tr><th>asked</th><th>result</th><th>round trip</th><th>detail</th></tr></thead><tbody>
            {{#roundTrips}}<tr><td>{{when}}</td><td>{{result}}</td><td>{{latency}}</td><td>{{detail}}</td></tr>{{/roundTrips}}
            {{^roundTrips}}<tr><td colspan="4" class="muted">No round trip yet.</td></tr>{{/roundTrips}}
            </tbody></table>
            {{/hasDeliveryHealth}}
            {{^hasDeliveryHealth}}<p class="muted">No appstore_delivery_health stage in this pipeline (docs/operations.md).</p>{{/hasDeliveryHealth}}
            <h2>Refund questions waiting for an answer ({{questionCount}})</h2>
            <table><thead><tr><th>transaction</th><th>purchase</th><th>asked</th><th>deadline</th><th>status</th></tr></thead><tbody>
            {{#questions}}<tr><td class="mono">{{transactionId}}</td><td class="mono"><a href="/console/customers/{{originalTransactionId}}">{{originalTransactionId}}</a></td><td>{{requested}}</td><td>{{deadline}}</td><td>{{status}}</td></tr>{{/questions}}
            {{^questions}}<tr><td colspan="5" class="muted">None pending.</td></tr>{{/questions}}
            </tbody></table>
            <h2>App Store Server API pauses</h2>
            <table><thead><tr><th>environment</th><th>endpoint</th><th>no request before</th></tr></thead><tbody>
            {{#pauses}}<tr><td>{{environment}}</td><td>{{endpoint}}</td><td>{{until}}</td></tr>{{/pauses}}
            {{^pauses}}<tr><td colspan="3" class="muted">None: Apple asked for no pause.</td></tr>{{/pauses}}
            </tbody></table>
            """,
        "dead-letters": """
            <h1>Dead letters</h1>
            <p class="muted">The newest in <span class="mono">{{file}}</span>, newest first (docs/reason-codes.md).</p>
            {{#note}}<p class="banner pending">{{note}}</p>{{/note}}
            {{#banner}}<p class="banner {{tone}}" role="status">{{text}}</p>{{/banner}}
            <table><thead><tr><th>refused at</th><th>reason</th><th>stage</th><th>detail</th><th>id</th><th></th></tr></thead><tbody>
            {{#rows}}<tr><td>{{when}}</td><td>{{reason}}</td><td>{{stage}}</td><td>{{detail}}</td><td class="mono">{{id}}</td><td>
            {{#canReplay}}<form method="post" action="/console/dead-letters/replay"><input type="hidden" name="csrf" value="{{csrf}}"><input type="hidden" name="id" value="{{id}}"><button type="submit">Replay…</button></form>{{/canReplay}}
            {{^replayable}}<span class="muted">input not kept</span>{{/replayable}}
            </td></tr>{{/rows}}
            {{^rows}}<tr><td colspan="6" class="muted">No dead letters.</td></tr>{{/rows}}
            </tbody></table>
            """,
        "error": """
            <h1>{{heading}}</h1>
            <p class="banner error" role="alert">{{message}}</p>
            <p><a href="/console">Back to search</a></p>
            """,
    ]
}
