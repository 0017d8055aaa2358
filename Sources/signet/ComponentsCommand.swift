import ArgumentParser
import Foundation
import Signet
import SignetCore

struct ComponentsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "components",
        abstract: "Lists the source, stage, sink and store types a pipeline file can name, with their keys.",
        discussion: """
            Without options, prints every component with its keys, types, defaults and required keys; \
            with a NAME (for example `signet components retention`), that component with its description \
            and examples. \
            --json prints the same as a stable JSON document for tools (its structure is described in \
            docs/pipelines.md). --markdown prints the reference tables of docs/pipelines.md and \
            --json-schema the JSON Schema of pipeline files (Schemas/pipeline.schema.json); \
            scripts/generate-reference.sh writes both.
            """)

    enum Format: String, EnumerableFlag {
        case json, markdown, jsonSchema

        static func help(for value: Self) -> ArgumentHelp? {
            switch value {
            case .json: "Print the catalog as JSON."
            case .markdown: "Print the reference tables of docs/pipelines.md."
            case .jsonSchema: "Print the JSON Schema of pipeline files."
            }
        }
    }

    @Flag var format: Format?

    @Argument(help: "A component's type or section name (http, verify, retention, ...): show only it.")
    var name: String?

    func run() throws {
        let catalog = ComponentCatalog(registry: Signet.makeRegistry())
        if let name {
            guard let text = catalog.text(named: name) else {
                throw ValidationError("no component is called '\(name)'" + ConfigWording.suggestion(for: name, among: catalog.names))
            }
            try Terminal.printLine(Array(text.dropLast().utf8))
            return
        }
        let text: String =
            switch format {
            case nil: catalog.text
            case .json: catalog.json.prettyText
            case .markdown: catalog.markdown + "\n"
            case .jsonSchema: catalog.jsonSchema.prettyText
            }
        try Terminal.printLine(Array(text.dropLast().utf8))
    }
}
