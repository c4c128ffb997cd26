#!/usr/bin/env bash
# Install headless Chromium for the report rendering test (tests/test_report.py).
# Idempotent: does nothing when /usr/bin/chromium is already there.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
    echo "chromium already installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
    exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y chromium
/usr/bin/chromium --version
