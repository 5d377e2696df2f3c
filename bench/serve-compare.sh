#!/usr/bin/env bash
# tern serve beside llama.cpp's llama-server (bench/peer.sh) on the same
# model file, threads and slots: the openai client's load run (N prompts
# alone, then all N as concurrent streams, greedy), repeated, alternating.
# With -s, N chat streams at once under that JSON Schema (response_format
# json_schema), then the same N free, each server in turn. With -w, every
# prompt starts with the same system text of about that many words (1050:
# ~1500 tokens), and tern runs a third time with --no-prefix-cache. With
# -M BYTES, tern also runs with a slot for each of the N streams and its KV
# blocks bounded to BYTES (--kv-memory; the blocks of -p slots of -c
# positions: the memory llama-server's slots take).
#   bench/serve-compare.sh [-m MODEL] [-n 32] [-k 16] [-p 8] [-r 3] [-c CTX] [-s SCHEMA.json | -w WORDS] [-M BYTES]
set -euo pipefail
cd "$(dirname "$0")/.."
model="${TERN_MODELS:-$HOME/.cache/tern/models}/smollm2-135m-instruct-q4_1.gguf"
n=32 k=16 par=8 reps=3 ctx=1024 threads=2 schema= words=0 kvmem=
while getopts "m:n:k:p:r:s:w:c:M:" o; do
  case $o in m) model=$OPTARG ;; n) n=$OPTARG ;; k) k=$OPTARG ;; p) par=$OPTARG ;; r) reps=$OPTARG ;; s) schema=$OPTARG ;;
    w) words=$OPTARG ;; c) ctx=$OPTARG ;; M) kvmem=$OPTARG ;; *) exit 2 ;; esac
done
peer="$(bench/peer.sh)/llama-server"
py=target/pyenv/bin/python
[ -x target/release/tern ] || { echo "build tern with --features serve first" >&2; exit 2; }

wait_up() { for _ in $(seq 100); do curl -sf "http://127.0.0.1:$1/health" >/dev/null && return; sleep 0.2; done; return 1; }
run() { # name port command...
  local name=$1 port=$2; shift 2
  "$@" >/dev/null 2>&1 & local pid=$!
  wait_up "$port"
  if [ -n "$schema" ]; then
    for s in "$schema" -; do
      "$py" tests/tools/openai_client.py load_chat "http://127.0.0.1:$port/v1" "$n" "$k" "$s" |
        NAME=$name S=$s "$py" -c 'import json,os,sys; d=json.load(sys.stdin)
print(os.environ["NAME"], "schema" if os.environ["S"] != "-" else "free", d["tokens"], round(d["tokens_per_s"],1), round(d["ttft_p50_s"],3), d["whole_json"], d["length"])'
    done
  else
    "$py" tests/tools/openai_client.py load "http://127.0.0.1:$port/v1" "$n" "$k" "$words" |
      NAME=$name "$py" -c 'import json,os,sys; d=json.load(sys.stdin); same=sum(a==b for a,b in zip(d["alone"],d["together"]))
print(os.environ["NAME"], round(d["tokens_per_s"],1), round(d["ttft_p50_s"],3), round(d["ttft_p99_s"],3), same)'
  fi
  kill -INT $pid; wait $pid 2>/dev/null || true
}
echo "model $(basename "$model"), $n streams × $k tokens, $par slots of $ctx, $threads threads, shared text $words words"
if [ -n "$schema" ]; then echo "server mode tokens tok/s ttft_p50 whole_json at_length"
else echo "server tok/s ttft_p50 ttft_p99 same_as_alone"; fi
for _ in $(seq "$reps"); do
  run tern 18181 target/release/tern serve -m "$model" --port 18181 --parallel "$par" --ctx "$ctx" --queue "$n" -t "$threads"
  if [ -n "$kvmem" ]; then
    run "tern-$n-slots-$kvmem-bytes" 18184 target/release/tern serve -m "$model" --port 18184 --parallel "$n" \
      --ctx "$ctx" --queue "$n" -t "$threads" --kv-memory "$kvmem"
  fi
  if [ "$words" -gt 0 ]; then
    run tern-no-prefix-cache 18183 target/release/tern serve -m "$model" --port 18183 --parallel "$par" --ctx "$ctx" \
      --queue "$n" -t "$threads" --no-prefix-cache
  fi
  run llama-server 18182 "$peer" -m "$model" --port 18182 -np "$par" -c $((par * ctx)) -t "$threads" -tb "$threads"
done
