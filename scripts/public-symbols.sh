#!/usr/bin/env bash
# Counts the public symbols each Signet library module exposes (what embedders can reach and
# what a release must keep stable), from the compiler's symbol graphs.
# Usage: scripts/public-symbols.sh [--list MODULE]   (--list prints MODULE's public paths)
set -euo pipefail
cd "$(dirname "$0")/.."
swift package dump-symbol-graph --minimum-access-level public >/tmp/signet-symbol-graph.log 2>&1 || { cat /tmp/signet-symbol-graph.log; exit 1; }
python3 - "$@" <<'PY'
import glob, json, sys
graphs = glob.glob(".build/*/symbolgraph")[0]
modules = ["SignetCore", "AppStoreModels", "SignetOpenSSL", "SignetJWS", "SignetFixtures", "SignetState",
           "SignetKafka", "SignetHTTP", "SignetPostgres", "SignetAppStoreAPI", "SignetAppStorePipeline", "SignetTesting", "Signet"]
def symbols(module):
    # The module's own graph and its extensions of other modules' types (Module@Other).
    for path in [f"{graphs}/{module}.symbols.json"] + glob.glob(f"{graphs}/{module}@*.symbols.json"):
        for symbol in json.load(open(path))["symbols"]:
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
