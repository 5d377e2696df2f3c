#!/usr/bin/env bash
# Embeddings per second: 256 sentences of ~30 tokens (made here,
# deterministic) through `tern embed`, each thread count, repeated,
# medians. The llama.cpp peer (llama-embedding on a GGUF of the same
# model) joins once tern reads BERT GGUFs (bench/NOTES.md E1).
#   bench/embed.sh [-m MODEL_DIR] [-t 1,2] [-r 5] [-q]   (-q: --quantize q8_0)
set -euo pipefail
cd "$(dirname "$0")/.."
model="${TERN_MODELS:-$HOME/.cache/tern/models}/all-minilm-l6-v2"
threads=1,2 reps=5 quant=()
while getopts "m:t:r:q" o; do
  case $o in m) model=$OPTARG ;; t) threads=$OPTARG ;; r) reps=$OPTARG ;; q) quant=(--quantize q8_0) ;; *) exit 2 ;; esac
done
[ -x target/release/tern ] || { echo "cargo build --release first" >&2; exit 2; }
text=$(mktemp)
trap 'rm -f "$text"' EXIT
python3 - "$text" <<'PY'
import random, sys
random.seed(7)
words = ("the a river city model engine quiet bright people walk along old road under rain while small "
         "children read books about stars ships music and distant mountains near green fields every morning").split()
with open(sys.argv[1], "w") as f:
    for i in range(256):
        f.write(" ".join(random.choice(words) for _ in range(24)).capitalize() + f" number {i}.\n")
PY
echo "model $(basename "$model") ${quant[*]}, 256 sentences"
for t in ${threads//,/ }; do
  runs=()
  for _ in $(seq "$reps"); do
    runs+=("$(target/release/tern embed -m "$model" "${quant[@]}" -f "$text" -t "$t" --json |
      python3 -c 'import json,sys; d=json.load(sys.stdin); print(round(len(d["data"])/d["seconds"],1), d["tokens"])')")
  done
  printf '%s\n' "${runs[@]}" | python3 -c '
import sys; r=[l.split() for l in sys.stdin if l.strip()]; v=sorted(float(x[0]) for x in r)
print(f"threads '"$t"': {v[len(v)//2]} embeddings/s (median of {len(v)}: {v}), {r[0][1]} tokens")'
done
