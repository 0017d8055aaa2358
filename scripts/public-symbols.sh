#!/usr/bin/env bash
# Counts the public symbols each Signet library module exposes (what embedders can reach and
# what a release must keep stable), from the compiler's symbol graphs.
# Usage: scripts/public-symbols.sh [--list MODULE]   (--list prints MODULE's public paths)
set -euo pipefail
cd "$(dirname "$0")/.."
# Graphs of an earlier run (another commit's modules) must not be counted.
rm -rf .build/*/symbolgraph
# It fails on the test modules when the tests were not built; the libraries' graphs are written
# first, and a library without one is reported below.
swift package dump-symbol-graph --minimum-access-level public >/tmp/signet-symbol-graph.log 2>&1 || true
python3 - "$@" <<'PY'
import glob, json, os, sys
graphs = (glob.glob(".build/*/symbolgraph") + [None])[0]
if graphs is None: sys.exit(open("/tmp/signet-symbol-graph.log").read() + "public-symbols: no symbol graphs written")
modules = ["SignetCore", "AppStoreModels", "SignetOpenSSL", "SignetJWS", "SignetFixtures", "SignetState",
           "SignetKafka", "SignetHTTP", "SignetPostgres", "SignetAppStoreAPI", "SignetAppStorePipeline", "SignetTesting", "Signet"]
def symbols(module):
    # The module's own graph and its extensions of other modules' types (Module@Other). A module
    # this commit does not have counts 0 (an older commit, for a before/after comparison).
    if not os.path.exists(f"{graphs}/{module}.symbols.json"):
        if os.path.isdir(f"Sources/{module}"):
            sys.exit(open("/tmp/signet-symbol-graph.log").read() + f"public-symbols: no symbol graph for {module}")
        return
    for path in [f"{graphs}/{module}.symbols.json"] + glob.glob(f"{graphs}/{module}@*.symbols.json"):
        for symbol in json.load(open(path))["symbols"]:
            # A synthesized symbol is another module's default implementation, listed again on
            # a type that gained a conformance here (Int: ConfigBindable re-lists Int's
            # operators): not declared by this module.
            if "::SYNTHESIZED::" in symbol["identifier"]["precise"]:
                continue
            if symbol["accessLevel"] in ("public", "open"):
                yield ".".join(symbol["pathComponents"])
if sys.argv[1:2] == ["--list"]:
    print("\n".join(sorted(symbols(sys.argv[2]))))
    sys.exit(0)
total = 0
for module in modules:
    count = sum(1 for _ in symbols(module))
    total += count
    print(f"{module:20} {count:6}")
print(f"{'total':20} {total:6}")
PY
