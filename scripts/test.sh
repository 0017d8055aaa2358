#!/usr/bin/env bash
# The whole test suite (what CI runs): installs missing system packages, builds, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --build-tests
swift test --skip-build
FUZZ_SECONDS=${FUZZ_SECONDS:-60} scripts/fuzz.sh  # libFuzzer over the input path (60 s here; fuzz.sh alone: 120 s); fails on any crash
