#!/usr/bin/env bash
# Test-only models made from the fixtures and the fetched GGUFs with the
# `gguf` package from PyPI (in a venv under target/), into target/test-models:
#   tiny-qwen3.gguf         the tiny Qwen3 oracle model written as GGUF
#   qwen2.5-hf-f32/         the Qwen2.5 GGUF dequantized to an HF directory
#   smollm2-hf-f32/         the same for SmolLM2 (llama: Q/K un-permuted)
# Idempotent: each is made once.
set -euo pipefail
cd "$(dirname "$0")/.."

out=target/test-models
py=target/pyenv/bin/python
mkdir -p "$out"
scripts/install-test-python.sh

oracle=tests/fixtures/oracle
if [ ! -f "$out/tiny-qwen3.gguf" ]; then
  "$py" tests/tools/tiny_to_gguf.py "$oracle/tiny/tiny-qwen3" "$out/tiny-qwen3.gguf.part"
  mv "$out/tiny-qwen3.gguf.part" "$out/tiny-qwen3.gguf"
fi
models="${TERN_MODELS:-$HOME/.cache/tern/models}"
to_hf() { # gguf oracle-name out-name
  [ -f "$out/$3/config.json" ] && return
  rm -rf "$out/$3" "$out/$3.part"
  "$py" tests/tools/gguf_to_hf.py "$models/$1" "$oracle/hf/$2" "$out/$3.part"
  mv "$out/$3.part" "$out/$3"
}
to_hf qwen2.5-coder-0.5b-instruct-q4_k_m.gguf qwen2.5-coder-0.5b qwen2.5-hf-f32
to_hf smollm2-135m-instruct-q4_1.gguf smollm2-135m smollm2-hf-f32
echo "test models in $out"
