import ArgumentParser
import Foundation
import Signet
import SignetCore

struct ComponentsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "components",
        abstract: "Lists the source, stage and sink types a pipeline file can name.")

    func run() throws {
        let registry = Signet.makeRegistry()
        func list<T>(_ title: String, _ entries: [String: ComponentRegistry.Entry<T>]) {
            print("\(title):")
            for (name, entry) in entries.sorted(by: { $0.key < $1.key }) {
                print("  \(name.padding(toLength: 12, withPad: " ", startingAt: 0)) \(entry.summary)")
            }
        }
        list("sources", registry.sources)
        list("stages", registry.stages)
        list("sinks", registry.sinks)
        print("\nSettings of each are documented in docs/pipelines.md.")
    }
}
