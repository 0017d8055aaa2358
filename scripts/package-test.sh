#!/usr/bin/env bash
# Proves the .deb on a machine that has never seen the project: a minimal Debian 12 root
# (debootstrap; its downloads cached in .build/debootstrap), the package installed there with
# apt (so its Depends must be exactly right), and inside it, with no Swift and nothing of the
# build machine: --version, no libswift in ldd, Apple's real notifications verify, signed
# samples through the shipped stdin pipeline as user `signet` with the packaged env file, the
# systemd units verified, and remove/purge leave what they promise. Needs root (chroot).
#
#   scripts/package.sh && scripts/package-test.sh [dist/signet_<version>_amd64.deb]
#   scripts/package-test.sh --prepare   # only download the Debian root into the cache (CI does
#                                       # this in the background while the tests run)
set -euo pipefail
cd "$(dirname "$0")/.."
prepare=0
[ "${1:-}" = "--prepare" ] && prepare=1 && shift
[ "$(id -u)" -eq 0 ] || { echo "package-test: needs root (debootstrap, chroot)" >&2; exit 1; }
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
if ! command -v debootstrap >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

step() { echo "package-test: $*" >&2; }
fail() { echo "package-test: FAILED: $*" >&2; exit 1; }

cache="$PWD/.build/debootstrap/bookworm-minbase.tgz"
if [ ! -f "$cache" ]; then
  step "downloading a minimal Debian 12 (cached in $cache)"
  mkdir -p "$(dirname "$cache")"
  scratch=$(mktemp -d)
  # Into a temporary name first: an interrupted download must not leave a tarball that looks whole.
  debootstrap --variant=minbase --make-tarball="$cache.partial" bookworm "$scratch" "$mirror" >/dev/null
  rm -rf "$scratch"
  mv "$cache.partial" "$cache"
fi
[ "$prepare" = 0 ] || exit 0

deb=${1:-$(ls -t dist/signet_*_amd64.deb 2>/dev/null | head -1)}
[ -f "$deb" ] || { echo "package-test: no .deb (run scripts/package.sh first)" >&2; exit 1; }
root=$(mktemp -d /tmp/signet-clean-root.XXXXXX)
chmod 0755 "$root"  # it is the root's "/": mktemp's 0700 would shut out every other user
cleanup() {
  umount "$root/proc" 2>/dev/null || true
  rm -rf "$root"
}
trap cleanup EXIT
inside() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }

started=$(date +%s)
step "debootstrap bookworm (minbase) into $root"
debootstrap --variant=minbase --unpack-tarball="$cache" bookworm "$root" "$mirror" >/dev/null
mount -t proc proc "$root/proc"
cp /etc/resolv.conf "$root/etc/resolv.conf"
[ ! -e "$root/usr/bin/swift" ] && ! ls "$root"/usr/lib/swift >/dev/null 2>&1 || fail "the clean root has Swift"

step "apt-get install $(basename "$deb")"
cp "$deb" "$root/tmp/signet.deb"
installing=$(date +%s)
inside apt-get update -qq
DEBIAN_FRONTEND=noninteractive inside apt-get install -y -qq /tmp/signet.deb >/dev/null
installed=$(date +%s)

step "signet --version"
version_line=$(inside signet --version)
echo "  $version_line" >&2
version=$(dpkg-deb -f "$deb" Version)  # the package's own version: the binary must say the same
[[ "$version_line" == "$version (commit "* ]] || fail "--version printed '$version_line', not version $version"
[[ "$version_line" != *"commit unknown"* ]] || fail "--version does not name the commit"

step "ldd: no Swift runtime"
inside ldd /usr/bin/signet >&2
! inside ldd /usr/bin/signet | grep -q 'libswift\|libFoundation\|libdispatch\|not found' || fail "ldd shows Swift libraries or a missing one"

step "the alert rules and the dashboard are installed under /usr/share/signet"
for file in prometheus/signet-alerts.yml prometheus/signet-alerts.test.yml grafana/signet-dashboard.json; do
  [ -s "$root/usr/share/signet/$file" ] || fail "/usr/share/signet/$file is missing"
done

step "Apple's real notifications verify (built-in Apple Root CA - G3)"
cp Tests/Fixtures/apple-real/notifications.ndjson "$root/tmp/apple.ndjson"
verdicts=$(inside signet verify /tmp/apple.ndjson) || fail "signet verify rejected real Apple notifications: $verdicts"
echo "  $(grep -c '"ok":true' <<<"$verdicts") of $(wc -l < Tests/Fixtures/apple-real/notifications.ndjson) verified" >&2

step "signed samples through the shipped stdin pipeline, as user signet, with /etc/signet/signet.env"
inside signet fixtures --out /tmp/fx --count 50 --now >/dev/null
chmod -R a+rX "$root/tmp/fx"
inside getent passwd signet >/dev/null || fail "no signet user"
[ "$(inside stat -c %U /var/lib/signet)" = signet ] || fail "/var/lib/signet is not owned by signet"
events=$(inside setpriv --reuid=signet --regid=signet --init-groups sh -c \
  'set -a; . /etc/signet/signet.env; . /tmp/fx/fixtures.env; SIGNET_DATA_DIR=/var/lib/signet exec signet run --pipeline /usr/share/signet/pipelines/stdin.yaml < /tmp/fx/notifications.ndjson' \
  2>"$root/tmp/run.log") || { cat "$root/tmp/run.log" >&2; fail "signet run failed"; }
count=$(grep -c '"eventId"' <<<"$events" || true)
[ "$count" -gt 0 ] || fail "no events from 50 signed samples"
echo "  $count events; state in $(inside ls /var/lib/signet | tr '\n' ' ')" >&2
[ "$(inside stat -c %U /var/lib/signet/signet.sqlite)" = signet ] || fail "the store is not the signet user's"

step "systemd-analyze verify signet.service signet@.service (systemd and procps installed into the root for it)"
DEBIAN_FRONTEND=noninteractive inside apt-get install -y -qq --no-install-recommends systemd procps >/dev/null
mkdir -p "$root/etc/signet/pipelines"
cp "$root/usr/share/signet/pipelines/kafka.yaml" "$root/etc/signet/pipelines/kafka.yaml"
if systemd-analyze --help 2>/dev/null | grep -q -- '--root'; then
  systemd-analyze verify --root="$root" /lib/systemd/system/signet.service /lib/systemd/system/signet@kafka.service \
    || fail "systemd-analyze verify"
else
  systemd-analyze verify "$root/lib/systemd/system/signet.service" || fail "systemd-analyze verify"
fi

step "remove keeps the data and the settings; purge takes them"
DEBIAN_FRONTEND=noninteractive inside apt-get remove -y -qq signet >/dev/null
[ -f "$root/var/lib/signet/signet.sqlite" ] && [ -f "$root/etc/signet/signet.env" ] || fail "remove took the data or the settings"
DEBIAN_FRONTEND=noninteractive inside apt-get purge -y -qq signet >/dev/null
[ ! -e "$root/var/lib/signet" ] && [ ! -e "$root/etc/signet/signet.env" ] || fail "purge left /var/lib/signet or the settings"
! inside getent passwd signet >/dev/null || fail "purge left the signet user"

echo "package-test: PASS: $(basename "$deb") ($(du -h "$deb" | cut -f1)), apt install in a clean Debian 12 root $((installed - installing)) s, whole test $(( $(date +%s) - started )) s" >&2
