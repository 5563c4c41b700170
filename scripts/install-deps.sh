#!/usr/bin/env bash
# Installs what attnspec needs, and only what is missing (running it twice
# installs nothing the second time):
#   - the Debian packages it builds against (apt);
#   - the ONNX Runtime adapter's npm packages (adapters/onnxruntime, from its
#     lock file);
#   - llama.cpp's prebuilt ggml CPU libraries (adapters/ggml, npm, from its
#     lock file) and the ggml headers they were built from, which the npm
#     package node-llama-cpp carries in a git bundle of llama.cpp
#     (adapters/ggml/headers, checked against the tarball's pinned sha1);
#   - the Python packages of the PyTorch 2 adapter (PyPI, requirements.txt:
#     every version pinned with its hash) into the project-local virtual
#     environment .venv, made with Debian's /usr/bin/python3. Scripts and
#     tests name its interpreter, .venv/bin/python, never `python3` (which
#     may be a pyenv shim without these packages).
# Usage: scripts/install-deps.sh [--check]   (--check: only report what is missing)
set -euo pipefail

packages=(
  build-essential cmake git python3 python3-venv
  libgtest-dev libbenchmark-dev
  libboost-dev libgmp-dev libmpfr-dev libmpfi-dev
  nlohmann-json3-dev libcli11-dev libeigen3-dev librapidcheck-dev
  libtorch-dev libdnnl-dev libxnnpack-dev libpthreadpool-dev python3-numpy
  python3-matplotlib clang libclang-rt-14-dev
)
root="$(cd "$(dirname "$0")/.." && pwd)"

# ONNX Runtime's npm package would download a CUDA provider in its
# postinstall step; the CPU binaries it needs ship in the package itself.
install_npm_packages() {
  local dir="$root/adapters/onnxruntime"
  [ -d "$dir/node_modules/onnxruntime-node" ] && [ -d "$dir/node_modules/onnxruntime-web" ] && return 0
  if ! command -v npm >/dev/null; then
    echo "install-deps: npm not found; the ONNX Runtime adapter needs Node.js 20 and npm" >&2
    exit 2
  fi
  echo "install-deps: npm packages for adapters/onnxruntime"
  (cd "$dir" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error)
}

# The ggml adapter's libraries (npm ci) and headers: node-llama-cpp 3.22.1
# packs llama.cpp's source as a git bundle; only ggml/include is taken out.
ggml_dir="$root/adapters/ggml"
ggml_headers_sha1="e908932762f21939024263d58f1d6dc3e88b23e6"  # node-llama-cpp-3.22.1.tgz (npm's dist.shasum)
install_ggml_packages() {
  if [ ! -d "$ggml_dir/node_modules/@node-llama-cpp/linux-x64" ]; then
    echo "install-deps: npm packages for adapters/ggml"
    (cd "$ggml_dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
  fi
  [ -f "$ggml_dir/headers/ggml.h" ] && return 0
  echo "install-deps: ggml headers for adapters/ggml (from npm node-llama-cpp 3.22.1)"
  local work
  work="$(mktemp -d)"
  (cd "$work" && npm pack node-llama-cpp@3.22.1 --silent >/dev/null)
  echo "$ggml_headers_sha1  $work/node-llama-cpp-3.22.1.tgz" | sha1sum --check --status ||
    { echo "install-deps: node-llama-cpp-3.22.1.tgz does not have the pinned sha1" >&2; rm -rf "$work"; exit 2; }
  tar -xzf "$work/node-llama-cpp-3.22.1.tgz" -C "$work" package/llama/gitRelease.bundle
  git clone --quiet --no-checkout "$work/package/llama/gitRelease.bundle" "$work/llama.cpp" 2>/dev/null
  rm -rf "$ggml_dir/headers.partial" && mkdir -p "$ggml_dir/headers.partial"
  git -C "$work/llama.cpp" archive HEAD ggml/include | tar -x -C "$ggml_dir/headers.partial" --strip-components=2
  rm -rf "$ggml_dir/headers" && mv "$ggml_dir/headers.partial" "$ggml_dir/headers"
  rm -rf "$work"
}

# PyPI's Linux torch wheel is a CUDA build (about 5.4 GB installed with
# the CUDA libraries it loads at import, even on a machine without a GPU);
# README, Dependencies, gives the time it takes. The stamp records which
# requirements.txt the environment was made from.
venv="$root/.venv"
requirements_digest() { sha256sum "$root/requirements.txt" | cut -d' ' -f1; }
python_packages_present() {
  [ -x "$venv/bin/python" ] && [ "$(cat "$venv/requirements.sha256" 2>/dev/null)" = "$(requirements_digest)" ]
}
install_python_packages() {
  python_packages_present && return 0
  echo "install-deps: Python packages into .venv (requirements.txt: PyTorch with its CUDA libraries, OpenVINO, JAX; about 6.1 GB)"
  rm -f "$venv/requirements.sha256"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --require-hashes --only-binary=:all: -r "$root/requirements.txt"
  requirements_digest >"$venv/requirements.sha256"
}

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ "${1:-}" = "--check" ]; then
  [ -d "$root/adapters/onnxruntime/node_modules/onnxruntime-node" ] &&
    [ -d "$root/adapters/onnxruntime/node_modules/onnxruntime-web" ] || missing+=("npm:adapters/onnxruntime")
  [ -f "$ggml_dir/headers/ggml.h" ] && [ -d "$ggml_dir/node_modules/@node-llama-cpp/linux-x64" ] ||
    missing+=("npm:adapters/ggml")
  python_packages_present || missing+=("pip:.venv")
  if [ ${#missing[@]} -eq 0 ]; then echo "install-deps: nothing missing"; exit 0; fi
  echo "install-deps: missing: ${missing[*]}"
  exit 1
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  install_npm_packages
  install_ggml_packages
  install_python_packages
  exit 0
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
install_npm_packages
install_ggml_packages
install_python_packages
