#!/usr/bin/env bash
# Test-only models made from the fixtures and the fetched GGUFs with the
# `gguf` package from PyPI (in a venv under target/), into target/test-models:
#   tiny-qwen3.gguf         the tiny Qwen3 oracle model written as GGUF
#   qwen2.5-hf-f32/         the Qwen2.5 GGUF dequantized to an HF directory
# Idempotent: each is made once.
set -euo pipefail
cd "$(dirname "$0")/.."

out=target/test-models
py=target/pyenv/bin/python
mkdir -p "$out"
if ! "$py" -c "import gguf" 2>/dev/null; then
  python3 -m venv target/pyenv
  target/pyenv/bin/pip install --quiet --disable-pip-version-check gguf==0.19.0
fi

oracle=tests/fixtures/oracle
if [ ! -f "$out/tiny-qwen3.gguf" ]; then
  "$py" tests/tools/tiny_to_gguf.py "$oracle/tiny/tiny-qwen3" "$out/tiny-qwen3.gguf.part"
  mv "$out/tiny-qwen3.gguf.part" "$out/tiny-qwen3.gguf"
fi
if [ ! -f "$out/qwen2.5-hf-f32/model.safetensors.index.json" ]; then
  models="${TERN_MODELS:-$HOME/.cache/tern/models}"
  rm -rf "$out/qwen2.5-hf-f32"
  "$py" tests/tools/gguf_to_hf.py "$models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf" \
    "$oracle/hf/qwen2.5-coder-0.5b" "$out/qwen2.5-hf-f32.part"
  mv "$out/qwen2.5-hf-f32.part" "$out/qwen2.5-hf-f32"
fi
echo "test models in $out"
