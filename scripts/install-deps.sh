#!/usr/bin/env bash
# Installs the Debian packages attnspec builds against, and only those that
# are missing (running it twice installs nothing the second time).
# Usage: scripts/install-deps.sh [--check]   (--check: only report what is missing)
set -euo pipefail

packages=(
  build-essential cmake python3
  libgtest-dev libbenchmark-dev
  libboost-dev libgmp-dev libmpfr-dev libmpfi-dev
  nlohmann-json3-dev libcli11-dev libeigen3-dev librapidcheck-dev
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
if [ "${1:-}" = "--check" ]; then
  echo "install-deps: missing: ${missing[*]}"
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing packages: ${missing[*]}" >&2
  echo "install-deps: run as root (or: sudo apt-get install ${missing[*]})" >&2
  exit 2
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
