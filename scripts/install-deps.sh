#!/usr/bin/env bash
# Installs the system packages Signet builds and tests against (Debian 12), only
# when something is missing, so repeated runs are fast and need no network.
set -euo pipefail
# openssl: the tests run `openssl ocsp` as a local OCSP responder; postgresql: the tests start
# their own server (initdb + pg_ctl on 127.0.0.1); curl: an independent HTTP client in tests;
# wrk: the HTTP benchmark; prometheus (promtool and prometheus): the tests check and unit-test
# packaging/prometheus/signet-alerts.yml and scrape a running signet to evaluate the Grafana
# dashboard's queries; tmux: the test of `signet top` drives it in a real terminal; sqlite3: the
# alerts test ages a running store's forward queue and refund question with the sqlite3 shell;
# python3-cryptography: the offer signature tests verify Signet's signatures with it; chromium and
# chromium-driver: the support console's browser tests drive a real headless Chromium (Selenium, from PyPI below).
packages=(libssl-dev openssl librdkafka-dev libsqlite3-dev pkg-config kcat python3-jsonschema python3-yaml python3-cryptography postgresql curl wrk prometheus tmux sqlite3 chromium chromium-driver)
missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}" >&2
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# Selenium from PyPI (Debian's is older than Chromium's driver protocol needs), for python3 as the tests run it.
if ! python3 -c "import selenium" >/dev/null 2>&1; then
  echo "installing: selenium (PyPI)" >&2
  python3 -m pip install -q --disable-pip-version-check selenium 2>/dev/null \
    || python3 -m pip install -q --disable-pip-version-check --break-system-packages selenium
fi
if ! command -v swift >/dev/null 2>&1; then
  echo "Swift 6 is required (https://www.swift.org/install/linux/) and was not found on PATH" >&2
  exit 1
fi
