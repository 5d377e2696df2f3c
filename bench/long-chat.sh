#!/usr/bin/env bash
# A conversation that grows to a whole context (bench/long-chat.py) against
# `tern serve` holding one sequence, its KV blocks bounded to the least
# memory that context takes (Qwen2.5-0.5B at f16: 3 MiB a block of 256
# positions; 32768 positions take 129 blocks, 387 MiB). Prints the turns,
# then the server's peak RSS and KV metrics.
#   bench/long-chat.sh [-m MODEL] [-c 32768] [-M 387MiB] [-k f16] [-t 2] [-n 48]
# Run nothing else meanwhile (2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
model="${TERN_MODELS:-$HOME/.cache/tern/models}/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
ctx=32768 mem=387MiB kv=f16 threads=2 reply=48 port=8093
while getopts "m:c:M:k:t:n:" o; do
  case $o in m) model=$OPTARG ;; c) ctx=$OPTARG ;; M) mem=$OPTARG ;; k) kv=$OPTARG ;; t) threads=$OPTARG ;;
    n) reply=$OPTARG ;; *) exit 2 ;; esac
done
py=target/pyenv/bin/python
cargo build --release --quiet -p tern-llm --features serve
target/release/tern serve -m "$model" --port $port --parallel 1 --ctx "$ctx" --kv-memory "$mem" --kv-type "$kv" \
  -t "$threads" 2>/tmp/long-chat-serve.log &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
for _ in $(seq 300); do curl -sf "http://127.0.0.1:$port/health" >/dev/null && break; kill -0 $pid; sleep 0.2; done
"$py" bench/long-chat.py "http://127.0.0.1:$port/v1" "$ctx" "$reply"
echo "server: $(grep VmHWM /proc/$pid/status) (model $(du -m "$model" | cut -f1) MiB, --kv-memory $mem, --kv-type $kv)"
curl -sf "http://127.0.0.1:$port/metrics" | grep -E '^tern_(kv_|prompt_tokens)' 
