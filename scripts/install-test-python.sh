#!/usr/bin/env bash
# The Python packages the tests use, from PyPI, in a venv under target/:
# gguf (gguf-py, writes and dequantizes GGUF for the test-only models) and
# openai and anthropic (the official clients, driving `tern serve` in the
# tests).
set -euo pipefail
cd "$(dirname "$0")/.."

py=target/pyenv/bin/python
if ! "$py" -c "import gguf, openai, anthropic" 2>/dev/null; then
  [ -x "$py" ] || python3 -m venv target/pyenv
  target/pyenv/bin/pip install --quiet --disable-pip-version-check gguf==0.19.0 openai==3.57.0 anthropic==2.17.0
fi
