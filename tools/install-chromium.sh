#!/usr/bin/env bash
# Install Debian's chromium for the Neo4j Browser tests when it is missing.
#
# Idempotent and non-interactive: does nothing when $SONALITY_CHROMIUM (default
# /usr/bin/chromium) already runs; otherwise apt-get installs the distribution's `chromium`
# and `fonts-liberation` packages, through sudo only when not root. It never downloads a
# browser build (no `playwright install`): the tests drive this system browser.
set -euo pipefail

CHROMIUM="${SONALITY_CHROMIUM:-/usr/bin/chromium}"

if [ -x "$CHROMIUM" ] && "$CHROMIUM" --version >/dev/null 2>&1; then
  echo "chromium: $("$CHROMIUM" --version 2>/dev/null) at $CHROMIUM"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium: $CHROMIUM is missing and there is no apt-get here;" \
       "install Chromium yourself and set SONALITY_CHROMIUM to its path" >&2
  exit 1
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "chromium: not root and no sudo; run as root: apt-get install chromium" >&2
    exit 1
  fi
  SUDO=(sudo)
fi

echo "chromium: installing Debian's chromium package (apt-get)"
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  chromium fonts-liberation >/dev/null

if ! "$CHROMIUM" --version >/dev/null 2>&1; then
  echo "chromium: installed, but $CHROMIUM does not run" >&2
  exit 1
fi
echo "chromium: $("$CHROMIUM" --version 2>/dev/null) at $CHROMIUM"
