#!/usr/bin/env bash
# Builds dist/signet_<version>_amd64.deb: a release `signet` with the Swift runtime and
# Foundation linked in (dynamic only against Debian's libc, libssl3, librdkafka1,
# libsqlite3-0), the shipped pipelines, /etc/signet/signet.env, the systemd units and the
# notices. Proof on a clean Debian root: scripts/package-test.sh. docs/deploy.md.
#
#   scripts/package.sh              # build and package: dist/signet_<version>_amd64.deb
#   scripts/package.sh --no-build   # package the release binary already built
#   scripts/package.sh --debug      # the debug build instead, for the tests only (CI): a relink
#                                   # of what `swift build --build-tests` compiled, so CI proves
#                                   # the package without a second, 10-minute release build.
#                                   # Written to .build/package/debug/, never to dist/: not for use.
set -euo pipefail
cd "$(dirname "$0")/.."
build=1
configuration=release
case "${1:-}" in
  "") ;;
  --no-build) build=0 ;;
  --debug) configuration=debug ;;
  *) echo "usage: scripts/package.sh [--no-build | --debug]" >&2; exit 2 ;;
esac

# The version's one place is Signet.version (signet --version prints it).
version=$(sed -n 's/.*public static let version = "\([^"]*\)".*/\1/p' Sources/Signet/Signet.swift)
[ -n "$version" ] || { echo "package: no version in Sources/Signet/Signet.swift" >&2; exit 1; }
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || commit="$commit-modified"
date=$(date -u +%Y-%m-%d)

for tool in dpkg-deb dpkg-shlibdeps; do
  command -v "$tool" >/dev/null || { echo "package: $tool is missing (apt-get install dpkg-dev)" >&2; exit 1; }
done

# Release builds go to a scratch folder of their own: SwiftPM does not notice when
# --static-swift-stdlib is dropped again (objects compiled for it ask for the static Foundation
# archives), so sharing .build/release with a plain `swift build -c release` (the benchmarks)
# would break that build's link.
scratch=.build/package/release-build
if [ "$configuration" = release ]; then
  bin_path=$(swift build -c release --scratch-path "$scratch" --show-bin-path)
else
  bin_path=$(swift build --show-bin-path)
fi
binary=$bin_path/signet

# The commit and date in a header beside Sources/CBuildInfo/shim.h. Touching the one Swift file
# that reads it makes the build recompile that file (and nothing else); afterwards the header
# goes and the file is touched again, so a later build from source says "unknown".
stamp_build_info() {
  info=Sources/CBuildInfo/signet_build_info.h
  trap 'rm -f "$info"; touch Sources/CBuildInfo/shim.h Sources/signet/BuildInfo.swift' EXIT
  printf '#define SIGNET_COMMIT "%s"\n#define SIGNET_BUILD_DATE "%s"\n' "$commit" "$date" > "$info"
  touch Sources/CBuildInfo/shim.h Sources/signet/BuildInfo.swift
  "$@"
  rm -f "$info"
  touch Sources/CBuildInfo/shim.h Sources/signet/BuildInfo.swift
  trap - EXIT
}

if [ "$build" = 1 ] && [ "$configuration" = release ]; then
  echo "package: building signet $version ($commit) for release in $scratch, Swift runtime linked statically" >&2
  stamp_build_info swift build -c release --scratch-path "$scratch" --product signet --static-swift-stdlib
elif [ "$build" = 1 ]; then
  echo "package: relinking the debug signet $version ($commit) with the Swift runtime linked statically (for tests)" >&2
  stamp_build_info swift build --product signet
  # SwiftPM's own link command for `signet` (from its build manifest), pointed at a new file,
  # with the Swift runtime and Foundation's archives instead of their shared libraries. Those
  # archives need their own support archives, which objects compiled for a dynamic runtime do
  # not name: the group below lists them (a toolchain that adds one fails this link, loudly).
  binary=.build/package/debug/signet
  mkdir -p .build/package/debug
  python3 - "$binary" <<'PYTHON'
import json, re, subprocess, sys
manifest = open(".build/debug.yaml").read()
# The `signet` product only: the package's other executables (signet-http-floor) share the prefix.
match = re.search(r'"C\.signet-[a-z0-9_]+-unknown-linux-gnu-debug\.exe":\n(?:    .*\n)*?    args: (\[.*\])', manifest)
if not match:
    sys.exit("package: no link command for signet in .build/debug.yaml (is it built?)")
args = json.loads(match.group(1))
output = args.index("-o") + 1
args[output] = sys.argv[1]
args = [a for i, a in enumerate(args) if not (a.startswith("-rpath=") or (a == "-Xlinker" and i + 1 < len(args) and args[i + 1].startswith("-rpath=")))]
archives = ["Foundation", "FoundationEssentials", "FoundationInternationalization", "FoundationNetworking",
            "CoreFoundation", "_FoundationCShims", "_FoundationCollections", "_FoundationICU"]
args += ["-static-stdlib", "-Xlinker", "--start-group"] + ["-l" + name for name in archives] + ["-Xlinker", "--end-group"]
sys.exit(subprocess.run(args).returncode)
PYTHON
fi
[ -x "$binary" ] || { echo "package: $binary is not built (run without --no-build)" >&2; exit 1; }
if ldd "$binary" | grep -q 'libswift\|libFoundation\|libdispatch'; then
  echo "package: $binary links the Swift runtime dynamically:" >&2; ldd "$binary" >&2; exit 1
fi

stage=.build/package/signet_${version}_amd64
rm -rf "$stage" && mkdir -p "$stage/DEBIAN"
install -D -m 0755 "$binary" "$stage/usr/bin/signet"
strip --strip-unneeded "$stage/usr/bin/signet"
for pipeline in Pipelines/*.yaml; do install -D -m 0644 "$pipeline" "$stage/usr/share/signet/pipelines/$(basename "$pipeline")"; done
# Prometheus alert rules (and their promtool tests) and the Grafana dashboard (docs/operations.md,
# Alerts and dashboard).
for file in packaging/prometheus/signet-alerts.yml packaging/prometheus/signet-alerts.test.yml; do
  install -D -m 0644 "$file" "$stage/usr/share/signet/prometheus/$(basename "$file")"
done
install -D -m 0644 packaging/grafana/signet-dashboard.json "$stage/usr/share/signet/grafana/signet-dashboard.json"
install -D -m 0644 packaging/signet.env "$stage/etc/signet/signet.env"
install -d -m 0755 "$stage/etc/signet/pipelines"
install -D -m 0644 packaging/systemd/signet.service "$stage/lib/systemd/system/signet.service"
install -D -m 0644 packaging/systemd/signet@.service "$stage/lib/systemd/system/signet@.service"

doc="$stage/usr/share/doc/signet"
install -D -m 0644 README.md "$doc/README.md"
install -m 0644 docs/*.md "$doc/"
install -m 0644 packaging/copyright "$doc/copyright"
# Every command's --help, the reference a man page would hold.
{
  "$stage/usr/bin/signet" --help
  for command in $("$stage/usr/bin/signet" --help | sed -n '/^SUBCOMMANDS:/,/^$/p' | grep -E '^  [a-z]' | awk '{print $1}'); do
    printf '\n\n========== signet %s ==========\n\n' "$command"
    "$stage/usr/bin/signet" help "$command"
  done
} > "$doc/signet-help.txt" 2>&1
# The licences of what is linked in: the Swift runtime and each package of Package.swift.
notices="$doc/notices"
mkdir -p "$notices"
toolchain=$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")
for file in "$toolchain"/share/swift/LICENSE.txt "$toolchain"/share/doc/swift/LICENSE.txt; do
  [ -f "$file" ] && install -m 0644 "$file" "$notices/swift-runtime.LICENSE.txt" && break
done
for checkout in .build/checkouts/*/; do
  name=$(basename "$checkout")
  for file in "$checkout"LICENSE* "$checkout"NOTICE* "$checkout"COPYING*; do
    [ -f "$file" ] && install -m 0644 "$file" "$notices/$name.$(basename "$file")"
  done
done
gzip -9n "$doc/signet-help.txt"

install -m 0755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$stage/DEBIAN/"
echo /etc/signet/signet.env > "$stage/DEBIAN/conffiles"

# Depends from the binary's real dynamic links (dpkg-shlibdeps wants a debian/control beside it).
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/debian"
printf 'Source: signet\n\nPackage: signet\nArchitecture: amd64\n' > "$work/debian/control"
depends=$(cd "$work" && dpkg-shlibdeps -O -e"$OLDPWD/$stage/usr/bin/signet" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "package: dpkg-shlibdeps found no dependencies" >&2; exit 1; }
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@DEPENDS@/$depends/" -e "s/@SIZE@/$size/" packaging/debian/control.in > "$stage/DEBIAN/control"

if [ "$configuration" = release ]; then
  output=dist compression=-Zxz
else
  output=.build/package/debug compression=-Zgzip  # a test package: quick to pack, never shipped
fi
mkdir -p "$output"
deb="$output/signet_${version}_amd64.deb"
dpkg-deb --root-owner-group "$compression" --build "$stage" "$deb" >/dev/null
echo "package: $deb ($(du -h "$deb" | cut -f1); Depends: $depends; signet $version, commit $commit, built $date, $configuration)" >&2
