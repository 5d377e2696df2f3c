#!/usr/bin/env bash
# Embeddings per second: 256 sentences of ~30 tokens (made here,
# deterministic) through `tern embed`, each thread count, repeated,
# medians. With -p, llama.cpp's llama-embedding (bench/peer.sh) embeds the
# same sentences from the same GGUF in the same sitting, alternating with
# tern; each side's own timing of the embedding (not the load): tern's
# `seconds` (tokenizing to vectors), llama.cpp's `total time` (its first
# batch to its last vector: every batch's graph, compute and pooling). -m takes a directory or a GGUF
# (-p needs a GGUF: tests-crate example bert_gguf writes one).
#   bench/embed.sh [-m MODEL] [-t 1,2] [-r 5] [-q] [-p] [-b UBATCH]
#   (-q: --quantize q8_0 at load; -b: llama.cpp's -b/-ub, default 2048)
set -euo pipefail
cd "$(dirname "$0")/.."
model="${TERN_MODELS:-$HOME/.cache/tern/models}/all-minilm-l6-v2"
threads=1,2 reps=5 quant=() peer= ub=2048
while getopts "m:t:r:qpb:" o; do
  case $o in
    m) model=$OPTARG ;; t) threads=$OPTARG ;; r) reps=$OPTARG ;; q) quant=(--quantize q8_0) ;;
    p) peer=$(bash bench/peer.sh) ;; b) ub=$OPTARG ;; *) exit 2 ;;
  esac
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
tern_rate() {
  target/release/tern embed -m "$model" "${quant[@]}" -f "$text" -t "$1" --json |
    python3 -c 'import json,sys; d=json.load(sys.stdin); print(round(len(d["data"])/d["seconds"],1))'
}
peer_rate() {
  "$peer/llama-embedding" -m "$model" -f "$text" -t "$1" -c "$ub" -b "$ub" -ub "$ub" --pooling mean \
    --perf -lv 4 2>&1 >/dev/null |
    python3 -c '
import re, sys
m = re.search(r"total time =\s*([\d.]+) ms", sys.stdin.read())
print(round(256 / (float(m[1]) / 1e3), 1) if m else "nan")'
}
median() { python3 -c 'import sys; v=sorted(float(x) for x in sys.argv[1:]); print(v[len(v)//2], v)' "$@"; }
echo "model $(basename "$model") ${quant[*]}, 256 sentences"
for t in ${threads//,/ }; do
  ours=() theirs=()
  for _ in $(seq "$reps"); do
    ours+=("$(tern_rate "$t")")
    [ -n "$peer" ] && theirs+=("$(peer_rate "$t")")
  done
  read -r a av <<<"$(median "${ours[@]}")"
  echo "threads $t: tern $a embeddings/s (median of ${#ours[@]}: $av)"
  if [ -n "$peer" ]; then
    read -r b bv <<<"$(median "${theirs[@]}")"
    echo "threads $t: llama.cpp $b embeddings/s (median of ${#theirs[@]}: $bv); tern/llama.cpp = $(python3 -c "print(round($a/$b, 2))")"
  fi
done
