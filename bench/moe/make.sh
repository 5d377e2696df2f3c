#!/usr/bin/env bash
# Real-shape random-weight models for the speed comparison (issue 49): the
# mixtures of experts (make_random_moe.py) and Gemma 3n E2B's shapes
# (bench/gemma3n/make_random_gemma3n.py), written in f16 with gguf-py,
# quantized to Q4_K_M by the peer build's llama-quantize (bench/peer.sh),
# the f16 removed.
# Qwen3-30B-A3B's f16 (61 GB) does not fit this disk: it is written as
# random Q4_K blocks directly (every matrix Q4_K, the routers f32).
#   bench/moe/make.sh [olmoe-1b-7b|qwen3-30b-a3b|gemma3n-e2b] -> target/moe-bench/SHAPE-q4_k_m.gguf
#                                                 (qwen3-30b-a3b: SHAPE-q4_k.gguf)
set -euo pipefail
cd "$(dirname "$0")/../.."
shape=${1:-olmoe-1b-7b}
out=target/moe-bench
mkdir -p "$out"
[ -f "$out/$shape-q4_k_m.gguf" ] && { echo "$out/$shape-q4_k_m.gguf"; exit 0; }
[ -f "$out/$shape-q4_k.gguf" ] && { echo "$out/$shape-q4_k.gguf"; exit 0; }
scripts/install-test-python.sh >&2
models="${TERN_MODELS:-$HOME/.cache/tern/models}"
if [ "$shape" = qwen3-30b-a3b ]; then
  target/pyenv/bin/python bench/moe/make_random_moe.py "$shape" "$out/$shape-q4_k.gguf.part" \
    "$models/smollm2-135m-instruct-q4_1.gguf" q4_k
  mv "$out/$shape-q4_k.gguf.part" "$out/$shape-q4_k.gguf"
  echo "$out/$shape-q4_k.gguf"
  exit 0
fi
if [ "$shape" = gemma3n-e2b ]; then
  target/pyenv/bin/python bench/gemma3n/make_random_gemma3n.py "$out/$shape-f16.gguf.part" "$models/gemma-3-270m-q4_k_m.gguf"
else
  target/pyenv/bin/python bench/moe/make_random_moe.py "$shape" "$out/$shape-f16.gguf.part" "$models/smollm2-135m-instruct-q4_1.gguf"
fi
mv "$out/$shape-f16.gguf.part" "$out/$shape-f16.gguf"
peer=$(bench/peer.sh)
LD_LIBRARY_PATH="$peer" "$peer/llama-quantize" "$out/$shape-f16.gguf" "$out/$shape-q4_k_m.gguf.part" Q4_K_M >&2
mv "$out/$shape-q4_k_m.gguf.part" "$out/$shape-q4_k_m.gguf"
rm "$out/$shape-f16.gguf"
echo "$out/$shape-q4_k_m.gguf"
