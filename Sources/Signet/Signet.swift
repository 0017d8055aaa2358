import SignetAppStorePipeline
public import SignetCore
import SignetHTTP
import SignetJWS
import SignetKafka
import SignetPostgres
import SignetState

/// The whole of Signet behind one import: every built-in stage, source and sink in one
/// registry, and the default pipeline the CLI runs when given none.
public enum Signet {
    /// Signet's version, as `signet --version` prints it.
    public static let version = "0.1.0"

    /// A registry with every built-in component (`signet components` lists them with their
    /// keys): sources `stdin`, `file`, `kafka`, `http`, `appstore_history`,
    /// `appstore_statuses`; stores `sqlite`, `memory`, `postgres`, `auto`; stages `decode`,
    /// `verify`, `dedupe`, `transition`, `fanout`, `appstore_catch_up`, `appstore_reconcile`;
    /// sinks `stdout`, `file`, `kafka`, `http`, `forward`; the `http:` and `settings:` sections. Add your
    /// own before loading a pipeline.
    public static func makeRegistry() -> ComponentRegistry {
        var registry = ComponentRegistry()
        registry.registerCoreComponents()
        // The OCSP client comes from SignetHTTP: SignetJWS links no HTTP client (see registerJWSComponents).
        registry.registerJWSComponents(ocspTransport: { AsyncHTTPClientOCSPTransport() })
        registry.registerStateComponents()
        registry.registerPostgresComponents()
        registry.registerKafkaComponents()
        registry.registerWebhookComponents()
        registry.registerHTTPComponents()
        registry.registerForwardComponents()
        registry.registerAppStoreAPIComponents()
        return registry
    }
}
