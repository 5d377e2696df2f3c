#!/usr/bin/env bash
# What the tests need beyond the host toolchain: the wasm32, aarch64,
# Windows and macOS Rust targets, and Debian's aarch64 cross linker and qemu-user to run aarch64
# tests. Idempotent; installs with apt-get only what is missing (as root).
set -euo pipefail
# (Windows and macOS only for `cargo check`, which needs no linker)
targets=(wasm32-unknown-unknown aarch64-unknown-linux-gnu x86_64-pc-windows-gnu aarch64-apple-darwin)
rustup target add "${targets[@]}" >/dev/null 2>&1 || rustup target add "${targets[@]}"
need=()
command -v qemu-aarch64 >/dev/null || need+=(qemu-user)
command -v aarch64-linux-gnu-gcc >/dev/null || need+=(gcc-aarch64-linux-gnu)
[ -e /usr/aarch64-linux-gnu/lib/libc.so.6 ] || need+=(libc6-dev-arm64-cross)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-cross: need ${need[*]} (apt-get install as root)" >&2
    exit 1
  fi
  apt-get update -q >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
fi
# clippy, for the kernels' unsafe-block lints in the test command
cargo clippy --version >/dev/null 2>&1 || rustup component add clippy
# the declared minimum Rust (Cargo.toml's rust-version), which the test
# command checks the crates with
msrv=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' "$(dirname "$0")/../Cargo.toml")
rustup toolchain list | grep -q "^$msrv" || rustup toolchain install "$msrv" --profile minimal
