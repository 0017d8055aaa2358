#!/usr/bin/env bash
# Fuzzes Signet's input path with libFuzzer for a bounded time (docs/fuzzing.md).
#
#   scripts/fuzz.sh                          120 s (what CI runs)
#   FUZZ_SECONDS=3600 scripts/fuzz.sh        an hour
#   FUZZ_SANITIZERS=fuzzer,address scripts/fuzz.sh   with AddressSanitizer (slower build and run)
#   FUZZ_JOBS=2 scripts/fuzz.sh              two fuzzing processes
#   scripts/fuzz.sh .fuzz/artifacts/crash-…  replay one input (reproduce a crash)
#
# Builds Tests/Fuzz (its own package, scratch path .build-fuzz) with -sanitize=fuzzer, seeds a
# temporary corpus from Tests/Fixtures (and `signet fixtures` if a built signet exists), runs,
# prints the number of inputs executed. On a crash it exits non-zero, keeps the input under
# .fuzz/artifacts/ and prints it base64 (CI artifacts may not be downloadable).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=${FUZZ_SECONDS:-120}
sanitizers=${FUZZ_SANITIZERS:-fuzzer}
jobs=${FUZZ_JOBS:-1}
configuration=${FUZZ_CONFIGURATION:-release}
# Each sanitizer set builds into its own scratch path (.build-fuzz, .build-fuzz-fuzzer-address).
scratch=.build-fuzz
[[ "$sanitizers" != fuzzer ]] && scratch=".build-fuzz-${sanitizers//,/-}"
artifacts=.fuzz/artifacts
mkdir -p "$artifacts" .fuzz/corpus

build_started=$(date +%s)
swift build --package-path Tests/Fuzz --scratch-path "$scratch" -c "$configuration" \
    -Xswiftc "-sanitize=$sanitizers"
binary="$scratch/$configuration/SignetFuzz"
echo "fuzz: built $binary in $(( $(date +%s) - build_started )) s"

if [[ $# -gt 0 ]]; then
    # Replay: leave SIGILL/SIGTRAP (Swift traps) to the Swift runtime, which prints the
    # trap message and a symbolicated backtrace.
    exec "$binary" -handle_ill=0 -handle_trap=0 "$@"
fi

seeds=$(mktemp -d)
log=$(mktemp)
trap 'rm -rf "$seeds" "$log"' EXIT

# Seeds: every fixture line as a `line` input (mode byte 0), and every JWS payload found in
# them as JSON (1) and behind a trusted signature (2-6 by payload kind).
signet_bin=${SIGNET:-.build/debug/signet}
if [[ -x "$signet_bin" ]]; then
    "$signet_bin" fixtures --out "$seeds/generated" --count 20 >/dev/null 2>&1 || echo "fuzz: signet fixtures failed; seeding from Tests/Fixtures only"
fi
python3 - "$seeds" Tests/Fixtures "$seeds/generated" <<'PY'
import base64, hashlib, json, os, re, sys

out, roots = sys.argv[1], sys.argv[2:]
jws_re = re.compile(rb"[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*")
count = 0

def write(mode, data):
    global count
    data = bytes([mode]) + data
    path = os.path.join(out, hashlib.sha1(data).hexdigest())
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(data)
        count += 1

def payload_modes(obj):
    if not isinstance(obj, dict):
        return [1]
    if "notificationType" in obj:
        return [1, 2]
    if "transactionId" in obj:
        return [1, 3, 5]
    if "autoRenewProductId" in obj or "renewalDate" in obj:
        return [1, 4, 6]
    return [1]

def payloads(blob, depth=0):
    for match in jws_re.finditer(blob):
        segment = match.group(0).split(b".")[1]
        try:
            raw = base64.urlsafe_b64decode(segment + b"=" * (-len(segment) % 4))
            obj = json.loads(raw)
        except Exception:
            continue
        for mode in payload_modes(obj):
            write(mode, raw)
        if depth < 2:
            payloads(raw, depth + 1)

for root in roots:
    for directory, _, files in os.walk(root):
        for name in files:
            if name.endswith((".der", ".pem", ".md")) or name == "manifest.json":
                continue
            blob = open(os.path.join(directory, name), "rb").read()
            lines = blob.splitlines() if name.endswith(".ndjson") else [blob.strip()]
            for line in lines[:200]:
                if line:
                    write(0, line)
            if name.endswith(".json") and "payloads" in directory:
                try:
                    obj = json.loads(blob)
                except ValueError:
                    obj = None
                for mode in payload_modes(obj):
                    write(mode, blob)
            payloads(blob)
print(f"fuzz: {count} seed inputs")
PY
rm -rf "$seeds/generated"

echo "fuzz: running for $seconds s ($jobs job(s)); longer: FUZZ_SECONDS=N scripts/fuzz.sh"
before=$(ls "$artifacts" | sort)
status=0
fork=()
[[ "$jobs" -gt 1 ]] && fork=(-fork="$jobs" -ignore_crashes=0)
# libFuzzer must see the trap's signal to save the input: the Swift runtime's own
# backtracer would take it first and exit.
SWIFT_BACKTRACE=enable=no "$binary" .fuzz/corpus "$seeds" "${fork[@]}" \
    -max_total_time="$seconds" -max_len=16384 -timeout=20 -rss_limit_mb=4096 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1 || status=$?
# The log without the progress lines and libFuzzer's suggested dictionary.
awk '/Recommended dictionary/ {skip = 1} !skip && !/^#[0-9]+[ \t]+(NEW|REDUCE|pulse)/ {print} /End of recommended dictionary/ {skip = 0}' "$log" | tail -40

executed=$( (grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" || true) | awk '{s+=$2} END {print s+0}')
if [[ "$executed" == 0 ]]; then
    # fork mode prints no final stats; take the last status line's count.
    executed=$( (grep -o '^#[0-9]*' "$log" || true) | tail -1 | tr -d '#')
fi
echo "fuzz: executed ${executed:-0} inputs in $seconds s"

new=$(comm -13 <(echo "$before") <(ls "$artifacts" | sort) || true)
if [[ $status -ne 0 || -n "$new" ]]; then
    echo "fuzz: FAILED (libFuzzer exit $status)"
    for name in $new; do
        echo "fuzz: input kept at $artifacts/$name; base64:"
        base64 -w0 "$artifacts/$name"
        echo
    done
    echo "fuzz: reproduce with: scripts/fuzz.sh $artifacts/<name>   (see docs/fuzzing.md)"
    exit 1
fi
echo "fuzz: no crash"
