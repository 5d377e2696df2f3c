#!/usr/bin/env bash
# The project's test command (README, .ci/run): fetch the test models if
# needed (and make the test-only ones from them with gguf-py), check that core builds no_std for wasm32, run every test natively,
# then a 5-second run of each fuzz target, then the kernel and
# cross-architecture tests for aarch64
# under qemu-user emulation, then the wasm build: its kernel conformance in
# Node (wasm-bindgen-test), the npm package's tests in Node, and the
# browser tests in headless Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
# a clean build gains nothing from incremental compilation (the dev-profile
# checks and the packages' verifying builds)
export CARGO_INCREMENTAL=0
# how long each part took, for keeping the whole under CI's budget
# how much disk is left (a full disk shows up as a linker's bus error)
mark() {
  local free; free=$(df -Ph . | awk 'NR == 2 { print $4 }')
  echo "[test.sh] $((SECONDS / 60)) min $((SECONDS % 60)) s: $1 done; $free free on disk" >&2
}

scripts/fetch-models.sh all
scripts/make-test-models.sh
scripts/install-cross.sh
scripts/install-wasm-tools.sh
scripts/fetch-schemas.sh
mark "models and tools"
cargo build --locked -p tern-llm-core --no-default-features --target wasm32-unknown-unknown
# (the wasm crate's tests are wasm32 ones, run below)
cargo test --locked --release --workspace --exclude tern-llm-wasm
# which kernels those tests ran on (amx, or why not)
target/release/tern info "${TERN_MODELS:-$HOME/.cache/tern/models}/smollm2-135m-instruct-q4_1.gguf" | grep '^kernels' >&2
mark "native tests"
# the documentation builds without a warning (every public item documented,
# every link resolves); in the kernels every unsafe block carries its SAFETY
# comment and unsafe fns use unsafe blocks (x86-64, aarch64, wasm32)
RUSTDOCFLAGS="-D warnings" cargo doc --locked --no-deps --workspace
kernel_lints=(-- -A clippy::all -D clippy::undocumented_unsafe_blocks -D unsafe_op_in_unsafe_fn)
# (x86-64 in the dev profile: the dependencies cargo doc just checked)
cargo clippy --locked -p tern-llm --all-targets --features serve "${kernel_lints[@]}"
cargo clippy --locked --release -p tern-llm --target aarch64-unknown-linux-gnu "${kernel_lints[@]}"
cargo clippy --locked --release -p tern-llm-wasm --all-targets --target wasm32-unknown-unknown "${kernel_lints[@]}"
mark "docs and lints"
# the published crates package (and build from their packages), and build
# with the minimum Rust they declare
# (cargo package verifies each crate against the others' packages, unpacked
# under ~/.cargo/registry/src/-HASH/; a copy an earlier run left there is
# reused as it is, stale, so tern's own are cleared first)
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rm -rf "$cargo_home"/registry/src/-*/tern-llm-* "$cargo_home"/registry/cache/-*/tern-llm-*
# (the verifying builds are dev builds that nothing runs: no debug info)
CARGO_PROFILE_DEV_DEBUG=false cargo package --locked --workspace --exclude tern-llm-wasm --exclude tern-tests
msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml)
cargo "+$msrv" check --locked -p tern-llm --features serve
# the tern binary with its server builds for Windows and macOS (no C code to
# cross-compile: a check needs no linker)
# (one cargo for both: their build scripts and proc macros are built once)
cargo check --locked --release -p tern-llm --features serve --bins --target x86_64-pc-windows-gnu --target aarch64-apple-darwin
mark "packages, minimum Rust, Windows and macOS"
# every fuzz target for 5 s (fuzz/README.md has the long campaigns)
scripts/fuzz-smoke.sh 5
mark "fuzz smoke"

# aarch64 (runner and linker: .cargo/config.toml)
# (core's own tests are portable Rust; its numerics on aarch64 are what the
# conformance suite, the recorded logits hash and the whole-model comparison
# below check)
aarch64=(--locked --release --target aarch64-unknown-linux-gnu)
cargo test "${aarch64[@]}" -p tern-llm --lib widening
# (the whole-model comparison across backends on the quantized paths; the
# exact path's f32 kernels are the same NEON code in all three backends,
# and the recorded hash checks them, at two threads: under qemu each
# emulated f32 forward pass takes about a minute)
cargo test "${aarch64[@]}" -p tern-llm --test kernels -- every_available logits_bits default_backend \
  model_logits_identical_across_backends_and_threads_f16_cache model_logits_identical_across_backends_and_threads_q8_0_cache
mark "aarch64"

# wasm: SIMD128 kernels against the reference (in Node), then the package
# (not kernel_speed: its one test is an ignored benchmark, which clippy
# --all-targets above checks)
cargo test --locked --release -p tern-llm-wasm --target wasm32-unknown-unknown --lib --test conformance
scripts/build-wasm.sh
# two test files at a time (Node's default on 2 cores is one): npm 129 ->
# 110 s, Chromium 93 -> 80 s here
(cd npm && node --test --test-concurrency=2 test/*.test.js)
(cd npm/test-browser && node --test --test-concurrency=2 *.test.js)
mark "wasm and npm"
