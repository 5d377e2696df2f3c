#!/usr/bin/env bash
# What the wasm build and its tests need: the wasm32 target, rust-src (the
# threaded build rebuilds std with atomics), wasm-bindgen-cli at exactly the
# version wasm/Cargo.toml pins, Debian's Chromium for the browser tests, and
# the npm packages of the browser tests and benchmark (npm/test-browser).
# Idempotent; installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || rustup target add wasm32-unknown-unknown
rustup component list --installed 2>/dev/null | grep -q '^rust-src' || rustup component add rust-src

want=$(sed -n 's/^wasm-bindgen = "=\(.*\)"/\1/p' wasm/Cargo.toml)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$want" ]; then
  echo "install-wasm-tools: wasm-bindgen-cli $want (have: ${have:-none})" >&2
  cargo install -q wasm-bindgen-cli --version "$want"
fi

if ! command -v chromium >/dev/null; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-wasm-tools: need chromium (apt-get install as root)" >&2
    exit 1
  fi
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >/dev/null
fi

if [ -f npm/test-browser/package.json ] && [ ! -d npm/test-browser/node_modules ]; then
  (cd npm/test-browser && npm ci --no-audit --no-fund --loglevel=error)
fi
