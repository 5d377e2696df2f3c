#!/usr/bin/env bash
# The real-world JSON Schemas of the structured-output suite
# (tests/fixtures/schemas/suite.json says which file each case is), from the
# packages that ship them, pinned by version and SHA-256, unpacked into
# target/schemas/PACKAGE/:
#   check-jsonschema 0.39.0 (PyPI): SchemaStore's CI/config-file schemas it vendors
#   ansible-lint 26.10.1 (PyPI): Ansible's file schemas
#   poetry-core 2.5.0, validate-pyproject 0.27 (PyPI): pyproject.toml tables
#   @octokit/webhooks-schemas 7.6.1 (npm): GitHub's webhook payloads
set -euo pipefail
cd "$(dirname "$0")/.."

out=target/schemas
mkdir -p "$out/dl"
fetch() { # name, sha256, command that downloads into $out/dl
  local name=$1 sha=$2
  shift 2
  local f="$out/dl/$name"
  if ! { [ -f "$f" ] && echo "$sha  $f" | sha256sum -c --quiet 2>/dev/null; }; then
    (cd "$out/dl" && "$@" >/dev/null)
    echo "$sha  $f" | sha256sum -c --quiet || { echo "fetch-schemas: $name: wrong SHA-256" >&2; exit 1; }
  fi
}
pip_get() { python3 -m pip download --quiet --disable-pip-version-check --no-deps "$1" -d .; }

fetch check_jsonschema-0.39.0-py3-none-any.whl 14ce5c94871c551268ea948ffe21e9f1464dc48fb20bf9a4c13deeaaf756cf9b pip_get check-jsonschema==0.39.0
fetch ansible_lint-26.10.1-py3-none-any.whl cc26d405ee38c3390e80ec18c4137b5685c36d03ce7d4d8233b0470d9a0e21e9 pip_get ansible-lint==26.10.1
fetch poetry_core-2.5.0-py3-none-any.whl 98ee465b66f7e14bb9fbe68fb5e00d0cff184f036993ec94610ae4b5612f3add pip_get poetry-core==2.5.0
fetch validate_pyproject-0.27-py3-none-any.whl 6ad8a9a80480a5a833753f4e1c1b22cb01b8a5ad0015b1e9dbd4a5f8e898aba0 pip_get validate-pyproject==0.27
fetch octokit-webhooks-schemas-7.6.1.tgz 94be9136c02e5246912d6a4b1f178f8d5430ae36839e46ecfcad0020f42f33ca npm pack --silent @octokit/webhooks-schemas@7.6.1

for w in "$out"/dl/*.whl; do
  d="$out/$(basename "$w" | cut -d- -f1)"
  [ -d "$d" ] || python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$w" "$d"
done
[ -d "$out/octokit" ] || { mkdir -p "$out/octokit" && tar xzf "$out/dl/octokit-webhooks-schemas-7.6.1.tgz" -C "$out/octokit"; }
