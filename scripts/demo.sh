#!/usr/bin/env bash
# From a fresh clone to a running pipeline: installs what is missing, builds signet
# (release), makes demo notifications with `signet fixtures`, and runs the embedded
# default pipeline (Pipelines/stdin.yaml) on them; its last line says how to open the support console
# on demo data (scripts/console-demo.py).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build -c release --product signet
signet=.build/release/signet
demo=${SIGNET_DEMO_DIR:-.build/demo}
rm -rf "$demo"
"$signet" fixtures --out "$demo" --count "${SIGNET_DEMO_COUNT:-200}"
# shellcheck disable=SC1091
source "$demo/fixtures.env"   # SIGNET_ROOT_CERTS, SIGNET_ENVIRONMENT, SIGNET_BUNDLE_ID, SIGNET_APP_APPLE_ID
export SIGNET_DATA_DIR="$demo/data"
# A few bad lines, so the dead-letter file has something to show.
cat "$demo/notifications.ndjson" "$demo/forged.ndjson" | "$signet" run > "$demo/events.ndjson"
echo "--- first output line ($(wc -l < "$demo/events.ndjson") in $demo/events.ndjson):"
head -c 600 "$demo/events.ndjson"; echo
echo "--- dead letters ($SIGNET_DATA_DIR/dead-letter.ndjson), by reason:"
python3 -c 'import json,sys,collections; c=collections.Counter(json.loads(l)["reason"] for l in open(sys.argv[1])); [print(f"  {k}: {v}") for k,v in sorted(c.items())]' "$SIGNET_DATA_DIR/dead-letter.ndjson"
echo "--- the support console on demo data, a local fake App Store answering Apple's calls: python3 scripts/console-demo.py $signet   (prints the URL and tokens; Ctrl-C stops it)"
