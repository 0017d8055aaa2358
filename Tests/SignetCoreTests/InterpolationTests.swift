import Foundation
import Testing
import SignetTestSupport

@testable import SignetCore

@Suite("Interpolation of ${VAR} in configuration scalars")
struct InterpolationTests {
    @Test func substitutesSetVariable() throws {
        let node = try parseNode("bundle_id: ${BUNDLE}\n", environment: ["BUNDLE": "com.example.app"])
        #expect(scalar(child(node, "bundle_id")) == "com.example.app")
    }

    @Test func setVariableWinsOverDefault() throws {
        let node = try parseNode("a: ${A:fallback}\n", environment: ["A": "real"])
        #expect(scalar(child(node, "a")) == "real")
    }

    @Test func defaultIsUsedWhenUnset() throws {
        let node = try parseNode("a: ${A:fallback}\nurl: ${URL:http://localhost:8080/x}\n")
        #expect(scalar(child(node, "a")) == "fallback")
        // Only the first colon separates the default; the rest belongs to it.
        #expect(scalar(child(node, "url")) == "http://localhost:8080/x")
    }

    @Test func emptyDefaultMakesTheValueAbsent() throws {
        let yaml = "a: ${A:}\nb: \"${B:}\"\nc: x${C:}\n"
        let node = try parseNode(yaml)
        #expect(isNull(child(node, "a")))
        #expect(isNull(child(node, "b")))
        #expect(scalar(child(node, "c")) == "x")
        // Absent to a spec: the default applies.
        var validator = ConfigValidator(storeNames: [])
        let parsed = validator.validate(node, fields: [
            ConfigField("a", .string, .default("d"), "a"), ConfigField("b", .int(0...10), .default("3"), "b"),
            ConfigField("c", .string, .required, "c"),
        ])
        #expect(validator.errors.isEmpty)
        guard case .string("d")? = parsed.entries["a"]?.value, case .int(3)? = parsed.entries["b"]?.value else {
            Issue.record("defaults not applied: \(parsed.entries)")
            return
        }
        #expect(!parsed.contains("a") && !parsed.contains("b"))
    }

    @Test func variableSetToEmptyStringIsAbsentToo() throws {
        let node = try parseNode("a: ${A}\n", environment: ["A": ""])
        #expect(isNull(child(node, "a")))
        // A required key then reports it missing instead of quietly using "".
        var validator = ConfigValidator(storeNames: [])
        _ = validator.validate(node, fields: [ConfigField("a", .string, .required, "a")])
        #expect(validator.errors.count == 1)
    }

    @Test func dollarDollarBraceEscapesToLiteral() throws {
        let node = try parseNode("a: $${HOME}\nb: pre $${X:y} post\n", environment: ["HOME": "/root", "X": "no"])
        #expect(scalar(child(node, "a")) == "${HOME}")
        #expect(scalar(child(node, "b")) == "pre ${X:y} post")
    }

    @Test func lonelyDollarsStayLiteral() throws {
        let node = try parseNode("a: cost $5 and $HOME and $\nb: a$$b\n", environment: ["HOME": "/root"])
        #expect(scalar(child(node, "a")) == "cost $5 and $HOME and $")
        #expect(scalar(child(node, "b")) == "a$$b")
    }

    @Test func severalVariablesInOneScalar() throws {
        let node = try parseNode(
            "path: ${ROOT}/${NAME:events}-${ENV}${SUFFIX:}.ndjson\n",
            environment: ["ROOT": "/var/signet", "ENV": "prod"])
        #expect(scalar(child(node, "path")) == "/var/signet/events-prod.ndjson")
    }

    @Test func interpolatesInsideListsQuotedAndBlockScalars() throws {
        let yaml = """
            list: [ "${A}", '${B:b}', "plain-${A}" ]
            block_list:
              - plain-${A}
              - ${B:b}
            block: |
              first ${A}
              second
            """
        let node = try parseNode(yaml + "\n", environment: ["A": "1"])
        guard case .sequence(let items)? = child(node, "list")?.value else {
            Issue.record("list expected")
            return
        }
        #expect(items.map { scalar($0) } == ["1", "b", "plain-1"])
        guard case .sequence(let blockItems)? = child(node, "block_list")?.value else {
            Issue.record("block list expected")
            return
        }
        #expect(blockItems.map { scalar($0) } == ["plain-1", "b"])
        #expect(scalar(child(node, "block")) == "first 1\nsecond\n")
    }

    @Test func valuesAreNotReinterpolated() throws {
        // A variable's value containing ${...} is used as is, not expanded again.
        let node = try parseNode("a: ${A}\n", environment: ["A": "${B}", "B": "nested"])
        #expect(scalar(child(node, "a")) == "${B}")
    }

    @Test func unsetWithoutDefaultFailsAtTheScalarWithTheVariableName() throws {
        let yaml = """
            source:
              type: file
              path: /data/${INPUT_NAME}.ndjson
            """
        do {
            _ = try parseNode(yaml + "\n")
            Issue.record("expected an error")
        } catch {
            #expect(error.location == ConfigLocation(file: "c.yaml", line: 3, column: 9))
            #expect(error.message.contains("INPUT_NAME"))
            #expect(error.message.contains("source.path"))
            #expect(error.description.hasPrefix("c.yaml:3:9: error: "))
        }
    }

    @Test func unsetInFlowSequenceReportsThatItemsColumn() throws {
        do {
            _ = try parseNode("roots: [a.pem, \"${ROOT_B}\"]\n")
            Issue.record("expected an error")
        } catch {
            #expect(error.location?.line == 1)
            #expect(error.location?.column == 16)
            #expect(error.message.contains("ROOT_B"))
        }
    }

    @Test(arguments: ["${1ABC}", "${A-B}", "${}", "${ A }", "${A.B:x}", "${:x}"])
    func invalidVariableNamesAreErrors(_ reference: String) throws {
        do {
            _ = try parseNode("\n  key: \"\(reference)\"\n")
            Issue.record("expected an error for \(reference)")
        } catch {
            #expect(error.location?.line == 2)
            #expect(error.location?.column == 8)
            #expect(error.message.contains("variable name"))
        }
    }

    @Test func validNamesWithUnderscoresAndDigits() throws {
        let node = try parseNode("a: ${_A1_b2}\n", environment: ["_A1_b2": "ok"])
        #expect(scalar(child(node, "a")) == "ok")
    }

    @Test(arguments: ["${ABC", "x ${ABC:default", "${"])
    func unterminatedReferenceIsAnError(_ value: String) throws {
        do {
            _ = try parseNode("a: 1\nb: '\(value)'\n", environment: ["ABC": "v"])
            Issue.record("expected an error for \(value)")
        } catch {
            #expect(error.location?.line == 2)
            #expect(error.location?.column == 4)
            #expect(error.message.contains("unterminated"))
        }
    }

    @Test func yamlNullSpellingsAreNullButQuotedNullIsAString() throws {
        let node = try parseNode("a: ~\nb: null\nc:\nd: 'null'\ne: \"\"\n")
        #expect(isNull(child(node, "a")))
        #expect(isNull(child(node, "b")))
        #expect(isNull(child(node, "c")))
        #expect(scalar(child(node, "d")) == "null")
        #expect(isNull(child(node, "e")))
    }

    @Test func pathsAndLocationsOfNestedNodes() throws {
        let node = try parseNode("stages:\n  - type: decode\n  - type: verify\n    bundle_id: x\n")
        guard case .sequence(let items)? = child(node, "stages")?.value else {
            Issue.record("list expected")
            return
        }
        let bundle = child(items[1], "bundle_id")
        #expect(bundle?.path == "stages[1].bundle_id")
        #expect(bundle?.location == ConfigLocation(file: "c.yaml", line: 4, column: 16))
    }

    @Test func unquotedReferenceInsideAFlowCollectionIsAYAMLSyntaxError() throws {
        // `{` ends a plain scalar in flow context, so `[a, ${X}]` must be written `[a, "${X}"]`.
        // Pinned here so the message keeps pointing at the place.
        do {
            _ = try parseNode("a: 1\nroots: [a.pem, ${ROOT_B}]\n", environment: ["ROOT_B": "b.pem"])
            Issue.record("expected an error")
        } catch {
            #expect(error.message.hasPrefix("invalid YAML"))
            #expect(error.location?.line == 2)
            #expect(error.message.contains("must be quoted, e.g. key: \"${VAR}\""), "\(error.message)")
        }
        do {
            _ = try parseNode("source: {type: file, path: ${INPUT}}\n", environment: ["INPUT": "in.ndjson"])
            Issue.record("expected an error")
        } catch {
            #expect(error.message.contains("must be quoted"), "\(error.message)")
        }
        // Quoted, it parses.
        let quoted = try parseNode("source: {type: file, path: \"${INPUT}\"}\n", environment: ["INPUT": "in.ndjson"])
        #expect(quoted.path == "")
    }

    @Test func tabIndentationGetsAHint() throws {
        do {
            _ = try parseNode("sinks:\n  out:\n\ttype: stdout\n", environment: [:])
            Issue.record("expected an error")
        } catch {
            #expect(error.message.hasPrefix("invalid YAML"))
            #expect(error.message.contains("indented with a tab"), "\(error.message)")
        }
    }

    @Test func aliasesAreExpanded() throws {
        // Anchors and aliases are plain YAML: the alias stands for a copy of the anchored value
        // (docs/pipelines.md says so; errors about it point at the anchor).
        let node = try parseNode("a: &x 1\nb: *x\n")
        guard case .mapping(let pairs) = node.value else {
            Issue.record("expected a mapping")
            return
        }
        #expect(pairs.count == 2)
        guard case .scalar(let value) = pairs[1].value.value else {
            Issue.record("expected b to be a scalar")
            return
        }
        #expect(value == "1")
    }

    @Test func emptyDocumentIsAnError() throws {
        #expect(throws: ConfigError.self) { try parseNode("") }
        #expect(throws: ConfigError.self) { try parseNode("# only a comment\n") }
    }

    @Test func lintPlaceholderRecordsEveryUnsetVariable() throws {
        let interpolator = Interpolator(environment: ["SET": "s"], unsetPlaceholder: "1")
        let location = ConfigLocation(file: "f", line: 7, column: 3)
        let result = try interpolator.interpolate("${A}-${SET}-${B:b}-${C}", at: location, path: "x")
        #expect(result == "1-s-b-1")
        #expect(interpolator.unset.map(\.name) == ["A", "C"])
        #expect(interpolator.unset.allSatisfy { $0.location == location })
    }
}
