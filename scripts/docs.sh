#!/usr/bin/env bash
# Builds the DocC documentation of every library product with DocC's warnings as errors (a
# broken ``link``, a parameter documented that does not exist or one left out), then checks
# that every public symbol of SignetCore, SignetJWS and SignetState has a doc comment
# (scripts/doc-coverage.py). Part of scripts/test.sh. Archives: .build/plugins/Swift-DocC/outputs.
# Usage: scripts/docs.sh [TARGET...]   (default: every library)
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
if [ ${#targets[@]} = 0 ]; then
  targets=(SignetCore AppStoreModels SignetOpenSSL SignetJWS SignetFixtures SignetState SignetKafka SignetHTTP
           SignetPostgres SignetAppStoreAPI SignetAppStorePipeline SignetTesting Signet)
fi
args=()
for target in "${targets[@]}"; do args+=(--target "$target"); done
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! swift package generate-documentation "${args[@]}" --warnings-as-errors > "$log" 2>&1; then
  grep -E "^(error|warning):" -A3 "$log" | grep -v "NSCocoaErrorDomain\|invocation failed\|ExitCode" >&2 || tail -30 "$log" >&2
  echo "docs: DocC found problems (above); fix them, then run scripts/docs.sh ${targets[*]}" >&2
  exit 1
fi
echo "docs: ${#targets[@]} libraries documented without warnings"
# The graphs of the last commit's modules must not be counted; the test modules' graphs may fail
# to dump when the tests were not built, after the libraries' are written.
rm -rf .build/*/symbolgraph
swift package dump-symbol-graph --minimum-access-level public > "$log" 2>&1 || true
scripts/doc-coverage.py
