#!/usr/bin/env bash
# The whole test suite (what CI runs): installs missing system packages, builds, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
swift build --build-tests
# Two test cases per core at once: unbounded, Swift Testing starts every suite together and the
# servers, children and Kafka mock clusters of the end-to-end tests starve each other on a
# 2-core machine (a different time-out failed on each run); bounded, the suite is steady.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-$(( $(nproc) * 2 ))}
# A crash prints only the crashed thread: CI keeps the tail of the output, and the other
# threads' stacks used to push the fatal error's message and place out of it.
export SWIFT_BACKTRACE=${SWIFT_BACKTRACE:-enable=yes,threads=crashed,registers=none,images=none}
swift test --skip-build
FUZZ_SECONDS=${FUZZ_SECONDS:-60} scripts/fuzz.sh  # libFuzzer over the input path (60 s here; fuzz.sh alone: 120 s); fails on any crash
