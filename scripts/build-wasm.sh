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
# std rebuilt with panic=immediate-abort: a panic traps at once, without
# formatting a message. wasm32-unknown-unknown prints panic messages
# nowhere anyway (no hook), and the formatting machinery is ~67 KB gzip per
# module (the npm package stays under 2 MB). Both builds are unstable-flag
# builds on the stable toolchain (RUSTC_BOOTSTRAP), each in its own target
# directory.
abort="-Zunstable-options -Cpanic=immediate-abort"
build_std=(-Z build-std=std,panic_abort)
RUSTC_BOOTSTRAP=1 RUSTFLAGS="-C target-feature=+simd128 $lsr $abort" \
  cargo build --locked --profile wasm -p tern-llm-wasm --target wasm32-unknown-unknown \
  "${build_std[@]}" --target-dir target/wasm-single

threads_link="--shared-memory --import-memory --max-memory=4294967296 --export=__wasm_init_tls
  --export=__tls_size --export=__tls_align --export=__tls_base"
flags="-C target-feature=+simd128,+atomics,+bulk-memory,+mutable-globals $lsr $abort"
for a in $threads_link; do flags+=" -C link-arg=$a"; done
RUSTC_BOOTSTRAP=1 RUSTFLAGS="$flags" \
  cargo build --locked --profile wasm -p tern-llm-wasm --features threads --target wasm32-unknown-unknown \
  "${build_std[@]}" --target-dir target/wasm-threads

bindgen() { wasm-bindgen --target web --no-typescript --remove-producers-section --remove-name-section --out-dir "$@"; }
# into a fresh folder, then each file renamed into npm/dist: a test reading
# dist/ while another's `npm pack` rebuilds it (prepack) sees the old file
# or the new one, never none
new=$(mktemp -d npm/.dist-XXXXXX)
trap 'rm -rf "$new"' EXIT
bindgen "$new" target/wasm-single/wasm32-unknown-unknown/wasm/tern_wasm.wasm
bindgen "$new/threads" target/wasm-threads/wasm32-unknown-unknown/wasm/tern_wasm.wasm
made=$(cd "$new" && find . -type f | sort)
mkdir -p npm/dist/threads
for f in $made; do mv -f "$new/$f" "npm/dist/$f"; done
# and nothing else stays in dist/ (what an earlier wasm-bindgen wrote)
for f in $(cd npm/dist && find . -type f); do
  grep -qxF "$f" <<<"$made" || rm -f "npm/dist/$f"
done
ls -l npm/dist npm/dist/threads
