#!/usr/bin/env bash
# Make Debian's chromium available for the browser tests and the viewer benchmark.
# Idempotent: does nothing when /usr/bin/chromium exists.  Installs it with apt when run
# as root; never downloads a browser any other way.  Exit 0 when chromium is there.
set -euo pipefail
CHROMIUM=/usr/bin/chromium
if [ -x "$CHROMIUM" ]; then
    exit 0
fi
if [ "$(id -u)" != "0" ]; then
    echo "ensure-chromium: $CHROMIUM is missing and installing it needs root (apt-get install chromium)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
test -x "$CHROMIUM"
echo "ensure-chromium: installed $($CHROMIUM --version 2>/dev/null || echo chromium)"
