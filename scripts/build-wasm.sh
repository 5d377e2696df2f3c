#!/usr/bin/env bash
# Build the two wasm modules of the npm package, each with its wasm-bindgen
# glue: npm/dist/ (single thread, SIMD128) and npm/dist/threads/ (wasm
# threads: atomics and shared memory, std rebuilt for them, which needs
# rust-src and, on the stable toolchain, RUSTC_BOOTSTRAP for -Z build-std).
# Needs what scripts/install-wasm-tools.sh installs.
set -euo pipefail
cd "$(dirname "$0")/.."

# -disable-lsr: LLVM's loop strength reduction rewrites the kernels' block
# addresses without their no-wrap flag, so every load's constant offset
# became an `i32.add` that V8 computes apart (bench/NOTES.md, W19)
lsr="-C llvm-args=-disable-lsr"
RUSTFLAGS="-C target-feature=+simd128 $lsr" \
  cargo build --locked --profile wasm -p tern-llm-wasm --target wasm32-unknown-unknown

threads_link="--shared-memory --import-memory --max-memory=4294967296 --export=__wasm_init_tls
  --export=__tls_size --export=__tls_align --export=__tls_base"
flags="-C target-feature=+simd128,+atomics,+bulk-memory,+mutable-globals $lsr"
for a in $threads_link; do flags+=" -C link-arg=$a"; done
RUSTC_BOOTSTRAP=1 RUSTFLAGS="$flags" \
  cargo build --locked --profile wasm -p tern-llm-wasm --features threads --target wasm32-unknown-unknown \
  -Z build-std=std,panic_abort --target-dir target/wasm-threads

rm -rf npm/dist
bindgen() { wasm-bindgen --target web --no-typescript --remove-producers-section --remove-name-section --out-dir "$@"; }
bindgen npm/dist target/wasm32-unknown-unknown/wasm/tern_wasm.wasm
bindgen npm/dist/threads target/wasm-threads/wasm32-unknown-unknown/wasm/tern_wasm.wasm
ls -l npm/dist npm/dist/threads
