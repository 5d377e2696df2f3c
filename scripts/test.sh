#!/usr/bin/env bash
# The project's test command (README, .ci/run): fetch the test models if
# needed, check that core builds no_std for wasm32, run every test.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/fetch-models.sh all
rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || true
cargo build --locked -p tern-core --no-default-features --target wasm32-unknown-unknown
cargo test --locked --release --workspace
