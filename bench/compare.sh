#!/usr/bin/env bash
# tern bench beside llama.cpp's llama-bench on the same GGUF, in one sitting:
# the two alternate, one repetition at a time, and medians are compared.
# At a depth (-d > 0) each run does all -r repetitions, because both tools
# fill the depth once per run and cut back to it for every repetition
# (llama-bench restores a saved state): tern, then llama.cpp, -R rounds.
# The depth is filled at the larger thread count (tern: on all cores; the
# thread list goes to llama-bench largest first, so it fills at that one).
#   bench/compare.sh [-m MODEL] [-t 1,2] [-p 512] [-n 128] [-r 5] [-d 0] [-R 1]
# Run nothing else meanwhile (2 cores). Prints a table of tokens/s and ratios.
set -euo pipefail
cd "$(dirname "$0")/.."
model="${TERN_MODELS:-$HOME/.cache/tern/models}/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
threads=1,2; np=512; ng=128; reps=5; depth=0; rounds=1
while getopts "m:t:p:n:r:d:R:" o; do
  case $o in m) model=$OPTARG;; t) threads=$OPTARG;; p) np=$OPTARG;; n) ng=$OPTARG;; r) reps=$OPTARG;; d) depth=$OPTARG;;
    R) rounds=$OPTARG;; *) exit 2;; esac
done
if [ "$depth" -gt 0 ]; then inner=$reps; runs=$rounds; else inner=1; runs=$reps; fi
down=$(tr , '\n' <<<"$threads" | sort -rn | paste -sd,)
peer=$(bench/peer.sh)
cargo build --release --quiet -p tern-llm
tern=target/release/tern
out=$(mktemp -d)
for r in $(seq "$runs"); do
  "$tern" bench -m "$model" -p "$np" -n "$ng" -d "$depth" -t "$threads" -r "$inner" -o json > "$out/tern.$r.json"
  LD_LIBRARY_PATH="$peer" "$peer/llama-bench" -m "$model" -p "$np" -n "$ng" -d "$depth" -t "$down" -r "$inner" -o json \
    > "$out/llama.$r.json" 2>/dev/null
done
python3 - "$out" "$model" "$((inner * runs))" <<'PY'
import glob, json, os, statistics, sys
out, model, reps = sys.argv[1], sys.argv[2], int(sys.argv[3])
res = {}
for f in sorted(glob.glob(os.path.join(out, "*.json"))):
    eng = os.path.basename(f).split(".")[0]
    for row in json.load(open(f)):
        test = f"pp{row['n_prompt']}" if row["n_prompt"] else f"tg{row['n_gen']}"
        if row.get("n_depth"):
            test += f"@d{row['n_depth']}"
        res.setdefault((test, row["n_threads"]), {}).setdefault(eng, []).extend(row["samples_ts"])
print(f"model {os.path.basename(model)}, {reps} repetitions, medians")
print("| test | threads | tern t/s | llama.cpp t/s | tern / llama.cpp |")
print("| --- | ---: | ---: | ---: | ---: |")
for (test, t), v in sorted(res.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    a, b = statistics.median(v.get("tern", [0])), statistics.median(v.get("llama", [0]))
    print(f"| {test} | {t} | {a:.2f} | {b:.2f} | {a / b if b else 0:.2f}× |")
PY
rm -rf "$out"
