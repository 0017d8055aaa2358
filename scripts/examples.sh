#!/usr/bin/env bash
# Builds the embedding examples (Examples/, docs/embedding.md) against this checkout and runs
# each on fresh fixtures, checking what it prints and its exit status. Part of scripts/test.sh.
# The examples share this package's build directory, so only their own code is compiled.
set -euo pipefail
cd "$(dirname "$0")/.."
swift build --package-path Examples --scratch-path .build --build-tests
examples=$(swift build --package-path Examples --scratch-path .build --show-bin-path)
signet=.build/debug/signet
[ -x "$signet" ] || swift build --product signet
work=$(mktemp -d)
webhook=""
trap '[ -n "$webhook" ] && kill "$webhook" 2>/dev/null; rm -rf "$work"' EXIT

fail() { echo "examples: $*" >&2; exit 1; }
expect() {  # expect FILE PATTERN WHAT
  grep -Eq -- "$2" "$1" || { cat "$1" >&2; fail "$3"; }
}

# Subscriptions dated just before now, so the entitlement answers say "has access".
"$signet" fixtures --out "$work/fx" --count 40 --now >/dev/null
trust=(--bundle-id com.example.signet --environment Sandbox --root "$work/fx/root.pem")

# 1. Verify one notification: a genuine one, a forged one, and a genuine one against Apple's root only.
head -1 "$work/fx/notifications.ndjson" | "$examples/VerifyNotification" "${trust[@]}" > "$work/verify.out"
expect "$work/verify.out" '^verified [A-Z_]+' "VerifyNotification did not verify a genuine notification"
expect "$work/verify.out" 'originalTransaction +[0-9]+' "VerifyNotification did not print the transaction"
status=0; head -1 "$work/fx/forged.ndjson" | "$examples/VerifyNotification" "${trust[@]}" > "$work/forged.out" || status=$?
[ "$status" = 1 ] || fail "VerifyNotification exited $status on a forged notification, not 1"
expect "$work/forged.out" '^rejected: [a-z_]+: ' "VerifyNotification did not give the reason code of a forged notification"
status=0; head -1 "$work/fx/notifications.ndjson" | "$examples/VerifyNotification" --bundle-id com.example.signet --environment Sandbox > "$work/apple.out" || status=$?
[ "$status" = 1 ] || fail "VerifyNotification trusted a test root without --root (exit $status)"
expect "$work/apple.out" '^rejected: invalid_certificate_chain' "a test chain checked against Apple's root was not refused for its chain"

# 2. The state stages in code into a typed sink; the same file again: every line a retry.
"$examples/EventPipeline" "${trust[@]}" --store "$work/state.sqlite" "$work/fx/notifications.ndjson" > "$work/run1.out"
expect "$work/run1.out" '^read 40, passed 40, rejected 0, duplicates 0$' "EventPipeline's first run did not pass every notification"
grep -Eq '^granted [0-9]+ .* entitled=true' "$work/run1.out" || { cat "$work/run1.out" >&2; fail "EventPipeline's sink received no grant"; }
"$examples/EventPipeline" "${trust[@]}" --store "$work/state.sqlite" "$work/fx/notifications.ndjson" > "$work/run2.out"
[ "$(wc -l < "$work/run2.out")" = 1 ] || { cat "$work/run2.out" >&2; fail "EventPipeline published events again for retries"; }
expect "$work/run2.out" '^read 40, passed 0, rejected 0, duplicates 40$' "EventPipeline's second run did not drop every retry"

# 3. The entitlement answer, by purchase and by token as an app writes it (upper case).
entitled=$(awk '{ last[$2] = $4 } END { for (p in last) if (last[p] == "entitled=true") { print p; exit } }' "$work/run1.out")
[ -n "$entitled" ] || fail "no purchase ended entitled in EventPipeline's output"
"$examples/EntitlementQuery" --store "$work/state.sqlite" --original-transaction-id "$entitled" > "$work/query.out" \
  || { cat "$work/query.out" >&2; fail "EntitlementQuery said no access for $entitled, entitled by its last event"; }
expect "$work/query.out" '^has access$' "EntitlementQuery did not say 'has access'"
token=$(awk -v p="$entitled" '$2 == p && $6 != "token=-" { sub("token=", "", $6); t = $6 } END { print t }' "$work/run1.out")
if [ -n "$token" ]; then
  "$examples/EntitlementQuery" --store "$work/state.sqlite" --app-account-token "${token^^}" > "$work/token.out" \
    || { cat "$work/token.out" >&2; fail "EntitlementQuery by the upper-case token ${token^^} said no access"; }
fi
status=0; "$examples/EntitlementQuery" --store "$work/state.sqlite" --original-transaction-id 1 > "$work/none.out" || status=$?
[ "$status" = 3 ] || fail "EntitlementQuery exited $status for an unknown purchase, not 3"

# 4. The webhook in the example's own ServiceGroup: posts, a retry, a forgery, then SIGTERM.
"$examples/WebhookService" "${trust[@]}" --store "$work/webhook.sqlite" > "$work/webhook.out" 2> "$work/webhook.err" &
webhook=$!
for _ in $(seq 1 200); do grep -q '^webhook listening on' "$work/webhook.out" && break; sleep 0.05; done
url=$(grep -o 'http://[^ ]*' "$work/webhook.out") || { cat "$work/webhook.err" >&2; fail "WebhookService did not say where it listens"; }
post() { curl -sS -o "$work/answer" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary "$1" "$url"; }
head -3 "$work/fx/notifications.ndjson" > "$work/three.ndjson"
while IFS= read -r line; do
  [ "$(post "$line")" = 200 ] || fail "the webhook did not answer 200 to a genuine notification"
done < "$work/three.ndjson"
[ "$(post "$(head -1 "$work/fx/notifications.ndjson")")" = 200 ] || fail "the webhook did not answer 200 to a retry"
expect "$work/answer" '"reason":"duplicate"' "the webhook did not say a retry was a duplicate"
[ "$(post "$(head -1 "$work/fx/forged.ndjson")")" = 200 ] || fail "the webhook did not answer a forgery (it is dead-lettered, not retried)"
expect "$work/answer" '"status":"dead_lettered"' "the webhook did not dead-letter a forgery"
kill -TERM "$webhook"
status=0; wait "$webhook" || status=$?
webhook=""
[ "$status" = 0 ] || { cat "$work/webhook.err" >&2; fail "WebhookService exited $status on SIGTERM, not 0"; }
[ "$(grep -c '^access ' "$work/webhook.out")" -ge 1 ] || { cat "$work/webhook.out" >&2; fail "WebhookService's cache saw no event"; }
expect "$work/webhook.out" '^app service stopped$' "the example's own service did not stop gracefully"
expect "$work/webhook.out" '^stopped cleanly$' "WebhookService did not stop cleanly"
# 5. The acceptance tests of the embedding use case (Examples/Tests/EmbeddingAcceptanceTests): the
# public API as another package sees it, on fixtures made in-process.
swift test --package-path Examples --scratch-path .build --skip-build
# 6. An embedder of the verify and state libraries alone (`traits: []`, docs/embedding.md)
# resolves Signet's three core dependencies, not the service's 28, and builds: a dependency added
# to Package.swift without `.whenService` fails here.
light="$work/light"
mkdir -p "$light/Sources/VerifyNotification" "$light/Sources/EntitlementQuery"
cp Examples/Sources/VerifyNotification/*.swift "$light/Sources/VerifyNotification/"
cp Examples/Sources/EntitlementQuery/*.swift "$light/Sources/EntitlementQuery/"
cat > "$light/Package.swift" <<SWIFT
// swift-tools-version:6.1
import PackageDescription
let package = Package(
    name: "LightEmbedder", platforms: [.macOS(.v15)],
    dependencies: [.package(name: "Signet", path: "$PWD", traits: [])],
    targets: [
        .executableTarget(name: "VerifyNotification", dependencies: [.product(name: "SignetJWS", package: "Signet")]),
        .executableTarget(name: "EntitlementQuery", dependencies: [.product(name: "SignetState", package: "Signet")]),
    ])
SWIFT
swift package --package-path "$light" resolve >/dev/null 2>&1 || fail "an embedder with traits: [] could not resolve"
resolved=$(LC_ALL=C ls "$light/.build/checkouts" | LC_ALL=C sort | tr '\n' ' ')
[ "$resolved" = "Yams swift-log swift-metrics " ] || fail "an embedder with traits: [] resolved $resolved(expected Yams swift-log swift-metrics)"
swift build --package-path "$light" >/dev/null || fail "the verify and state libraries do not build with traits: []"
head -1 "$work/fx/notifications.ndjson" | "$light/.build/debug/VerifyNotification" "${trust[@]}" > "$work/light.out"
expect "$work/light.out" '^verified [A-Z_]+' "VerifyNotification built with traits: [] did not verify"
echo "examples: the four embedding examples built and ran as documented; traits: [] resolves 3 packages"
