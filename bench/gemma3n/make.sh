#!/usr/bin/env bash
# A real-shape random-weight Gemma 3n (E2B's shapes) for the speed
# comparison: f16 written by make_random_gemma3n.py (gguf-py), quantized to
# Q4_K_M by the peer build's llama-quantize (bench/peer.sh), the f16 removed.
#   bench/gemma3n/make.sh -> target/moe-bench/gemma3n-e2b-q4_k_m.gguf
set -euo pipefail
cd "$(dirname "$0")/../.."
out=target/moe-bench
name=gemma3n-e2b
mkdir -p "$out"
[ -f "$out/$name-q4_k_m.gguf" ] && { echo "$out/$name-q4_k_m.gguf"; exit 0; }
scripts/install-test-python.sh >&2
vocab="${TERN_MODELS:-$HOME/.cache/tern/models}/gemma-3-270m-q4_k_m.gguf"
target/pyenv/bin/python bench/gemma3n/make_random_gemma3n.py "$out/$name-f16.gguf.part" "$vocab"
mv "$out/$name-f16.gguf.part" "$out/$name-f16.gguf"
peer=$(bench/peer.sh)
LD_LIBRARY_PATH="$peer" "$peer/llama-quantize" "$out/$name-f16.gguf" "$out/$name-q4_k_m.gguf.part" Q4_K_M >&2
mv "$out/$name-q4_k_m.gguf.part" "$out/$name-q4_k_m.gguf"
rm "$out/$name-f16.gguf"
echo "$out/$name-q4_k_m.gguf"
