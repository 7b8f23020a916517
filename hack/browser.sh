#!/usr/bin/env bash
# Makes sure the headless browser the web view's test drives is on this
# machine: Debian's chromium and chromium-driver, installed when missing and
# this runs as root. Without root it says what to install and fails, since
# make test runs that test (GITSYNC_REQUIRE_BROWSER) rather than skipping it.
set -euo pipefail

if command -v chromedriver >/dev/null && { command -v chromium || command -v chromium-browser || command -v google-chrome; } >/dev/null; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "the web view's test needs Chromium and ChromeDriver: apt-get install chromium chromium-driver (as root)" >&2
  exit 1
fi
echo "installing chromium and chromium-driver from Debian (first time on this machine)" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver fonts-dejavu-core >/dev/null
