#!/usr/bin/env bash
# The project's test command (README, .ci/run): fetch the test models if
# needed, check that core builds no_std for wasm32, run every test natively,
# then core's tests and the kernel/cross-architecture tests for aarch64
# under qemu-user emulation.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/fetch-models.sh all
scripts/install-cross.sh
cargo build --locked -p tern-core --no-default-features --target wasm32-unknown-unknown
cargo test --locked --release --workspace

# aarch64 (runner and linker: .cargo/config.toml)
aarch64=(--locked --release --target aarch64-unknown-linux-gnu)
cargo test "${aarch64[@]}" -p tern-core
cargo test "${aarch64[@]}" -p tern --lib widening
cargo test "${aarch64[@]}" -p tern --test kernels -- every_available logits_bits default_backend model_logits_identical
