#!/usr/bin/env bash
# The whole test suite (what CI runs): installs missing system packages, builds, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# The package test's minimal Debian root is a download (network, not the cores): it comes in
# while the tests run. Needs root (debootstrap, chroot); without it the package test is skipped.
packaging=0
if [ "$(id -u)" -eq 0 ]; then
  packaging=1
  mkdir -p .build
  scripts/package-test.sh --prepare > .build/package-prepare.log 2>&1 &
  prepare=$!
  trap 'kill "$prepare" 2>/dev/null || true' EXIT
fi
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
# The Debian package, installed and run in a clean Debian 12 root (scripts/package-test.sh). CI
# packages the debug build it already has (a relink, not a second 10-minute release build); the
# release package is `scripts/package.sh && scripts/package-test.sh` (docs/deploy.md).
if [ "$packaging" = 1 ]; then
  wait "$prepare" || { cat .build/package-prepare.log >&2; echo "test: could not download the Debian root for the package test" >&2; exit 1; }
  trap - EXIT
  scripts/package.sh --debug
  scripts/package-test.sh "$(ls -t .build/package/debug/signet_*_amd64.deb | head -1)"
else
  echo "test: package test skipped: it needs root (debootstrap, chroot); run scripts/package-test.sh as root" >&2
fi
# DocC for every library with its warnings as errors, and the doc comments of the public API.
scripts/docs.sh
# The embedding examples (Examples/, docs/embedding.md) built against this checkout and run, their
# output checked. Last: they share .build, and package.sh reads the main package's build manifest.
scripts/examples.sh
