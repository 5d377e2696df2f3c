#!/usr/bin/env bash
# Real-shape random-weight MoE models for the speed comparison (issue 49):
# f16 written by make_random_moe.py (gguf-py), quantized to Q4_K_M by the
# peer build's llama-quantize (bench/peer.sh), the f16 removed.
#   bench/moe/make.sh [olmoe-1b-7b|qwen3-30b-a3b] -> target/moe-bench/SHAPE-q4_k_m.gguf
set -euo pipefail
cd "$(dirname "$0")/../.."
shape=${1:-olmoe-1b-7b}
out=target/moe-bench
mkdir -p "$out"
[ -f "$out/$shape-q4_k_m.gguf" ] && { echo "$out/$shape-q4_k_m.gguf"; exit 0; }
scripts/install-test-python.sh >&2
vocab="${TERN_MODELS:-$HOME/.cache/tern/models}/smollm2-135m-instruct-q4_1.gguf"
target/pyenv/bin/python bench/moe/make_random_moe.py "$shape" "$out/$shape-f16.gguf.part" "$vocab"
mv "$out/$shape-f16.gguf.part" "$out/$shape-f16.gguf"
peer=$(bench/peer.sh)
LD_LIBRARY_PATH="$peer" "$peer/llama-quantize" "$out/$shape-f16.gguf" "$out/$shape-q4_k_m.gguf.part" Q4_K_M >&2
mv "$out/$shape-q4_k_m.gguf.part" "$out/$shape-q4_k_m.gguf"
rm "$out/$shape-f16.gguf"
echo "$out/$shape-q4_k_m.gguf"
