#!/usr/bin/env bash
# The whole test suite (what CI runs): installs missing system packages, builds, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --build-tests
swift test --skip-build
scripts/fuzz.sh  # libFuzzer over the input path for FUZZ_SECONDS (default 120); fails on any crash
