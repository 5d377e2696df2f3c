#!/usr/bin/env bash
# What a LoRA adapter costs: `tern bench` of a base GGUF without and with
# an adapter (--lora), alternating one repetition at a time in one sitting,
# medians compared (the adapter's tokens/s over the base's).
#   bench/lora/cost.sh -m BASE.gguf -a ADAPTER [-t 1,2] [-p 512] [-n 128] [-r 5]
# Run nothing else meanwhile (2 cores). bench/lora/make.py writes a random
# adapter of any rank for a base.
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=1,2; np=512; ng=128; reps=5; model=; adapter=
while getopts "m:a:t:p:n:r:" o; do
  case $o in m) model=$OPTARG;; a) adapter=$OPTARG;; t) threads=$OPTARG;; p) np=$OPTARG;; n) ng=$OPTARG;;
    r) reps=$OPTARG;; *) exit 2;; esac
done
cargo build --release --quiet -p tern-llm --features serve
tern=target/release/tern
out=$(mktemp -d)
for r in $(seq "$reps"); do
  "$tern" bench -m "$model" -p "$np" -n "$ng" -t "$threads" -r 1 -o json > "$out/base.$r.json"
  "$tern" bench -m "$model" --lora "$adapter" -p "$np" -n "$ng" -t "$threads" -r 1 -o json > "$out/lora.$r.json"
done
python3 - "$out" "$model" "$adapter" <<'PY'
import glob, json, os, statistics, sys
out, model, adapter = sys.argv[1:4]
res = {}
for f in sorted(glob.glob(os.path.join(out, "*.json"))):
    kind = os.path.basename(f).split(".")[0]
    for row in json.load(open(f)):
        test = f"pp{row['n_prompt']}" if row["n_prompt"] else f"tg{row['n_gen']}"
        res.setdefault((test, row["n_threads"]), {}).setdefault(kind, []).extend(row["samples_ts"])
print(f"{os.path.basename(model)} with {os.path.basename(adapter)}")
print("| test | threads | base t/s | with adapter t/s | adapter / base |\n| --- | ---: | ---: | ---: | ---: |")
for (test, t), v in sorted(res.items()):
    b, l = statistics.median(v["base"]), statistics.median(v["lora"])
    print(f"| {test} | {t} | {b:.1f} | {l:.1f} | {l / b:.3f} |")
PY
