#!/usr/bin/env bash
# Build the wasm module (SIMD128, release) and its wasm-bindgen glue into
# npm/dist/. Needs the wasm32 target and wasm-bindgen-cli at the version
# wasm/Cargo.toml pins (scripts/install-wasm-tools.sh installs both).
set -euo pipefail
cd "$(dirname "$0")/.."

RUSTFLAGS="-C target-feature=+simd128" \
  cargo build --locked --release -p tern-wasm --target wasm32-unknown-unknown
rm -rf npm/dist
wasm-bindgen --target web --no-typescript --out-dir npm/dist \
  target/wasm32-unknown-unknown/release/tern_wasm.wasm
ls -l npm/dist
