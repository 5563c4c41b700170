#!/usr/bin/env bash
# Renders an `attnspec audit` HTML report in headless Chromium and saves a
# screenshot, to check by eye that the page and its plots display offline.
# Needs Debian's chromium (apt-get install chromium); not used by CI.
# Usage: scripts/screenshot_report.sh REPORT.html SCREENSHOT.png [WIDTH,HEIGHT]
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 REPORT.html SCREENSHOT.png [WIDTH,HEIGHT]" >&2
  exit 2
fi
report="$(realpath "$1")"
screenshot="$(realpath -m "$2")"
size="${3:-1200,2000}"
[ -f "$report" ] || { echo "$0: $1: no such file" >&2; exit 2; }
command -v chromium >/dev/null || { echo "$0: chromium not found (apt-get install chromium)" >&2; exit 2; }
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT
# --no-sandbox: Chromium refuses to run as root with its sandbox; the page
# is our own local file. The other switches keep it from touching the network.
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --user-data-dir="$profile" --hide-scrollbars \
  --screenshot="$screenshot" --window-size="$size" "file://$report" 2>/dev/null
[ -s "$screenshot" ] || { echo "$0: no screenshot written" >&2; exit 1; }
echo "screenshot: $screenshot"
