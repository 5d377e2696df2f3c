#!/usr/bin/env bash
# A short, bounded run of every fuzz target (fuzz/README.md), as the test
# command's smoke check: built with libFuzzer's coverage instrumentation on
# the stable toolchain (no cargo-fuzz), seeded from the test models and the
# oracle's HF files, SECONDS_EACH seconds per target (default 10). Any
# crash, OOM (2 GB) or slow input (10 s) fails it.
set -euo pipefail
cd "$(dirname "$0")/.."
each=${1:-10}
targets=(gguf safetensors hf_config tokenizer_json chat_template request grammar lora)

host=$(rustc -vV | sed -n 's/^host: //p')
flags=(-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4
       -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table
       -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks)
# --target: the flags reach the targets only, not build scripts
# opt-level 1: a smoke run needs coverage more than speed, and the build
# takes a fifth less time than at 3
(cd fuzz && CARGO_PROFILE_RELEASE_OPT_LEVEL=1 RUSTFLAGS="${flags[*]}" cargo build --locked --release --bins --target "$host")
bin=fuzz/target/$host/release

corpus=target/fuzz-corpus
rm -rf "$corpus"
for t in "${targets[@]}"; do mkdir -p "$corpus/$t"; done
models=${TERN_MODELS:-$HOME/.cache/tern/models}
head -c 1000000 "$models/smollm2-135m-instruct-q4_1.gguf" > "$corpus/gguf/smollm2-head"
cp target/test-models/tiny-qwen3.gguf "$corpus/gguf/"
hf=tests/fixtures/oracle/hf
for m in qwen2.5-coder-0.5b smollm2-135m; do
  cp "$hf/$m/chat_template.jinja" "$corpus/chat_template/$m"
  cp "$hf/$m/config.json" "$corpus/hf_config/$m-config"
  cp "$hf/$m/generation_config.json" "$corpus/hf_config/$m-generation"
done
cp "$hf/smollm2-135m/tokenizer.json" "$corpus/tokenizer_json/smollm2"
cat > "$corpus/tokenizer_json/tiny" <<'JSON'
{"model":{"type":"BPE","vocab":{"a":0,"b":1,"!":2,"ab":3},"merges":["a b"]},
 "added_tokens":[{"id":4,"content":"<|im_end|>","special":true}],"normalizer":{"type":"NFC"},
 "pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\s+"},"behavior":"Isolated","invert":false},
 {"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]},"decoder":{"type":"ByteLevel"}}
JSON
printf '\x1e\x00\x00\x00\x00\x00\x00\x00{"__metadata__":{"a":"b"}}    ' > "$corpus/safetensors/empty"
echo '{"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"temperature":0.5,"stop":["x"],"logit_bias":{"12":-100},"stream":true}' \
  > "$corpus/request/chat"
echo '{"prompt":[1,2,3],"top_k":4,"seed":-1,"n":1,"stream_options":{"include_usage":true}}' > "$corpus/request/ids"
# grammars: the first byte picks the kind (0 schema, 1 GBNF or Lark, 2 regex)
printf '\x00{"type":"object","properties":{"a":{"$ref":"#/$defs/b"},"n":{"type":"integer","maximum":9}},"$defs":{"b":{"anyOf":[{"type":"string","pattern":"^x{0,3}$"},{"$ref":"#/$defs/b"}]}}}' \
  > "$corpus/grammar/schema"
printf '\x01root ::= item ("," item){0,3}\nitem ::= [a-z]+ | "(" root ")"\n' > "$corpus/grammar/gbnf"
printf '\x01start: "x" obj\nobj: %%json {"type": "array", "items": {"type": "boolean"}}\n' > "$corpus/grammar/lark"
printf '\x02(ab|[0-9]{2,4})+c?' > "$corpus/grammar/regex"
# adapters for the tiny Qwen3: the GGUF LoRA twin, and the PEFT pair as
# (config length, 2 bytes LE; config; safetensors)
cp tests/fixtures/lora/tiny-qwen3-yarn-a/adapter.gguf "$corpus/lora/gguf"
peft=tests/fixtures/lora/tiny-qwen3-yarn-b
n=$(stat -c %s "$peft/adapter_config.json")
{ printf "\\x$(printf %02x $((n & 255)))\\x$(printf %02x $((n >> 8)))"; cat "$peft/adapter_config.json" "$peft/adapter_model.safetensors"; } \
  > "$corpus/lora/peft"

for t in "${targets[@]}"; do
  log=target/fuzz-smoke-$t.log
  if ! "$bin/$t" "$corpus/$t" -max_total_time="$each" -rss_limit_mb=2048 -timeout=10 -max_len=4000000 \
       -artifact_prefix="target/fuzz-$t-" >"$log" 2>&1; then
    tail -40 "$log"
    echo "fuzz-smoke: $t failed (artifact: target/fuzz-$t-*)"
    exit 1
  fi
  echo "fuzz-smoke: $t: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)"
done
