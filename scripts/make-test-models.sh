#!/usr/bin/env bash
# Test-only models made from the fixtures and the fetched GGUFs with the
# `gguf` package from PyPI (in a venv under target/), into target/test-models:
#   tiny-qwen3.gguf         the tiny Qwen3 oracle model written as GGUF
#   tiny-phi3-bf16.gguf     the tiny Phi-3 (fused matrices, windowed) as GGUF
#   tiny-{gemma,gemma2,mistral}-bf16.gguf, tiny-phi3-longrope.gguf,
#   tiny-qwen3-yarn.gguf    the other tiny families' oracles, likewise
#   tiny-{qwen2-moe,qwen3-moe,mixtral,olmoe}.gguf  the mixtures of experts,
#                           experts stacked as llama.cpp's converter does,
#                           SmolLM2's tokenizer cut to their 512 tokens
#   tiny-gemma3n.gguf       Gemma 3n as llama.cpp's converter writes it,
#                           Gemma 3's SentencePiece vocabulary cut to 512
#   qwen2.5-hf-f32/         the Qwen2.5 GGUF dequantized to an HF directory
#   smollm2-hf-f32/         the same for SmolLM2 (llama: Q/K un-permuted)
#   ggml-vocab-{llama-spm,phi-3}.gguf(.inp)  llama.cpp's vocabulary-only
#                           GGUFs (Llama 2's and Phi-3's SentencePiece
#                           vocabularies) and their test strings, from the
#                           llama-cpp-python 0.3.9 sdist, SHA-256 checked
#   templates/*.jinja       chat templates of other families (Qwen3's, DeepSeek-R1's)
# Idempotent: each is made once.
set -euo pipefail
cd "$(dirname "$0")/.."

out=target/test-models
py=target/pyenv/bin/python
mkdir -p "$out"
scripts/install-test-python.sh

oracle=tests/fixtures/oracle
tiny_gguf() { # HF dir, name[, vocabulary GGUF]
  [ -f "$out/$2.gguf" ] && return
  "$py" tests/tools/tiny_to_gguf.py "$1" "$out/$2.gguf.part" ${3:+"$3"}
  mv "$out/$2.gguf.part" "$out/$2.gguf"
}
tiny_gguf "$oracle/tiny/tiny-qwen3" tiny-qwen3
tiny_gguf tests/fixtures/tiny/tiny-phi3-bf16 tiny-phi3-bf16
tiny_gguf tests/fixtures/tiny/tiny-gemma-bf16 tiny-gemma-bf16
tiny_gguf tests/fixtures/tiny/tiny-gemma2-bf16 tiny-gemma2-bf16
tiny_gguf tests/fixtures/tiny/tiny-qwen3-yarn tiny-qwen3-yarn
tiny_gguf tests/fixtures/tiny/tiny-mistral-bf16 tiny-mistral-bf16
tiny_gguf tests/fixtures/tiny/tiny-phi3-longrope tiny-phi3-longrope
models="${TERN_MODELS:-$HOME/.cache/tern/models}"
for moe in tiny-qwen2-moe tiny-qwen3-moe tiny-mixtral tiny-olmoe; do
  tiny_gguf "tests/fixtures/tiny/$moe" "$moe" "$models/smollm2-135m-instruct-q4_1.gguf"
done
tiny_gguf tests/fixtures/tiny/tiny-gemma3n tiny-gemma3n "$models/gemma-3-270m-q4_k_m.gguf"
# (with a vocabulary: the server's LoRA test compares texts)
tiny_gguf tests/fixtures/tiny/tiny-qwen3-yarn tiny-qwen3-yarn-vocab "$models/smollm2-135m-instruct-q4_1.gguf"
to_hf() { # gguf oracle-name out-name
  [ -f "$out/$3/config.json" ] && return
  rm -rf "$out/$3" "$out/$3.part"
  "$py" tests/tools/gguf_to_hf.py "$models/$1" "$oracle/hf/$2" "$out/$3.part"
  mv "$out/$3.part" "$out/$3"
}
to_hf qwen2.5-coder-0.5b-instruct-q4_k_m.gguf qwen2.5-coder-0.5b qwen2.5-hf-f32
to_hf smollm2-135m-instruct-q4_1.gguf smollm2-135m smollm2-hf-f32
vocab() { # file sha256
  [ -f "$out/$1" ] && echo "$2  $out/$1" | sha256sum --check --status && return
  if [ ! -f "$out/llama-cpp-python.tar.gz" ]; then
    curl -sSfL -o "$out/llama-cpp-python.tar.gz.part" \
      https://files.pythonhosted.org/packages/de/6d/4a20e676bdf7d9d3523be3a081bf327af958f9bdfe2a564f5cf485faeaec/llama_cpp_python-0.3.9.tar.gz
    echo "a3a985f558385e2f5de5b663f4e9b0817506d6af98122450142cd98e79216370  $out/llama-cpp-python.tar.gz.part" \
      | sha256sum --check --status || { echo "sha256 mismatch for the llama-cpp-python sdist" >&2; exit 1; }
    mv "$out/llama-cpp-python.tar.gz.part" "$out/llama-cpp-python.tar.gz"
  fi
  tar -xzf "$out/llama-cpp-python.tar.gz" -O "llama_cpp_python-0.3.9/vendor/llama.cpp/models/$1" > "$out/$1.part"
  echo "$2  $out/$1.part" | sha256sum --check --status || { echo "sha256 mismatch for $1" >&2; exit 1; }
  mv "$out/$1.part" "$out/$1"
}
vocab ggml-vocab-llama-spm.gguf 16c3724582d59aa8bf84711894e833f916ee46a31d80e21312759c48bf8d0e69
vocab ggml-vocab-llama-spm.gguf.inp ef7a25a263fba141f64a8a842ceb1c572cdb8e1313f592d974f7a06bbd3a4934
vocab ggml-vocab-phi-3.gguf 967d7190d11c4842eab697079d98d56c2116e10eb617be355a2733bfc132e326
# chat templates of other families (llama.cpp's models/templates, MIT), from
# the llama-cpp-python 0.3.36 sdist, SHA-256 checked
template() { # name sha256
  [ -f "$out/templates/$1.jinja" ] && echo "$2  $out/templates/$1.jinja" | sha256sum --check --status && return
  mkdir -p "$out/templates"
  if [ ! -f "$out/llama-cpp-python-0.3.36.tar.gz" ]; then
    curl -sSfL -o "$out/llama-cpp-python-0.3.36.tar.gz.part" \
      https://files.pythonhosted.org/packages/ec/e9/e7de2b0463ea3ffbf0ede6cb21b58c1258a8f6521aae45ca773a59fe7cf3/llama_cpp_python-0.3.36.tar.gz
    echo "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e  $out/llama-cpp-python-0.3.36.tar.gz.part" \
      | sha256sum --check --status || { echo "sha256 mismatch for the llama-cpp-python 0.3.36 sdist" >&2; exit 1; }
    mv "$out/llama-cpp-python-0.3.36.tar.gz.part" "$out/llama-cpp-python-0.3.36.tar.gz"
  fi
  tar -xzf "$out/llama-cpp-python-0.3.36.tar.gz" -O "llama_cpp_python-0.3.36/vendor/llama.cpp/models/templates/$1.jinja" \
    > "$out/templates/$1.jinja.part"
  echo "$2  $out/templates/$1.jinja.part" | sha256sum --check --status || { echo "sha256 mismatch for $1" >&2; exit 1; }
  mv "$out/templates/$1.jinja.part" "$out/templates/$1.jinja"
}
template Qwen-Qwen3-0.6B 87a2728cb8dc9fe424d624542f6060ec05a1d285ebbec578bb078900e33396b5
template deepseek-ai-DeepSeek-R1-Distill-Qwen-32B bbe594884b44d740667ee65a70bc8d333a565eab3d63ea59f291ea73ada84ba6
# a tool-call format each (issue 47): Hermes, Llama 3.x (JSON and <|python_tag|>), Mistral
template NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use 7ce09d55d3690e06c70b5c07228cc7e8c99c43a23cdc027762be4011efcdea6c
template meta-llama-Llama-3.2-3B-Instruct 5816fce10444e03c2e9ee1ef8a4a1ea61ae7e69e438613f3b17b69d0426223a4
template meta-llama-Llama-3.1-8B-Instruct e10ca381b1ccc5cf9db52e371f3b6651576caee0a630b452e2816b2d404d4b65
template mistralai-Mistral-Nemo-Instruct-2407 e4676cb56dffea7782fd3e2b577cfaf1e123537e6ef49b3ec7caa6c095c62272
echo "test models in $out"
