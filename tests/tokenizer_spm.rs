//! SentencePiece vocabularies from GGUF files (`tokenizer.ggml.model =
//! llama`) against transformers (tests/fixtures/oracle/spm/, made by
//! make_spm_oracle.py): Gemma 3's (262 144 tokens), Llama 2's and Phi-3's,
//! on 287 texts each — the repository's 195 tokenizer cases, llama.cpp's
//! test strings, and a mixed corpus of code, CJK, emoji, whitespace runs
//! and special-token look-alikes. Ids equal, decoding equals, and streaming
//! the tokens' bytes gives the decoded text.

use tern_core::runtime::Gguf;
use tern_core::Tokenizer;
use tern_tests::*;

fn vocab_path(file: &str) -> std::path::PathBuf {
    let test_models = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-models").join(file);
    if test_models.exists() {
        return test_models;
    }
    model_path(file)
}

fn check(name: &str) {
    let oracle = read_json("spm/spm_cases.json");
    let v = &oracle["vocabs"][name];
    let path = vocab_path(v["file"].as_str().unwrap());
    let bytes = std::fs::read(&path).unwrap();
    let g = Gguf::parse(&bytes).unwrap();
    let t0 = std::time::Instant::now();
    let tok = Tokenizer::from_gguf(&g).unwrap();
    let built = t0.elapsed();
    let texts = oracle["texts"].as_array().unwrap();
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(texts.len(), cases.len());
    let mut failures = Vec::new();
    for (i, (text, want)) in texts.iter().zip(cases).enumerate() {
        let text = text.as_str().unwrap();
        let got = tok.encode(text, false).unwrap();
        if got != ids(&want["ids"]) {
            failures.push(format!("{i} {text:?}: {got:?} != {:?}", ids(&want["ids"])));
            continue;
        }
        let decoded = tok.decode(&got);
        if decoded != want["decoded"].as_str().unwrap() {
            failures.push(format!("{i} {text:?}: decoded {decoded:?}"));
        }
        assert_streams_as_decoded(&tok, &got, &decoded, &format!("{name} case {i}"));
    }
    assert!(
        failures.is_empty(),
        "{name}: {} of {} cases differ:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    println!(
        "{name}: {}/{} cases equal transformers (ids, decoding, streaming); built in {built:?}",
        cases.len(),
        cases.len()
    );
}

#[test]
fn gemma3_vocabulary_equals_transformers() {
    check("gemma3-270m");
}

#[test]
fn llama2_vocabulary_equals_transformers() {
    check("llama-spm");
}

#[test]
fn phi3_vocabulary_equals_transformers() {
    check("phi-3");
}

/// A hostile SentencePiece vocabulary: megabyte-long tokens would cost
/// time quadratic in their length to split into merges; they take no part
/// in merges, so the tokenizer builds (and encodes) in bounded time.
#[test]
fn megabyte_tokens_build_in_bounded_time() {
    use tern_core::runtime::Value;
    let long: Vec<String> = (0..16).map(|i| format!("{i}{}", "a".repeat(1 << 20))).collect();
    let mut tokens: Vec<Value> = vec![Value::Str("<unk>"), Value::Str("a"), Value::Str("aa")];
    tokens.extend(long.iter().map(|t| Value::Str(String::leak(t.clone()))));
    let n = tokens.len();
    let meta: Vec<(&str, Value)> = vec![
        ("general.architecture", Value::Str("llama")),
        ("tokenizer.ggml.model", Value::Str("llama")),
        ("tokenizer.ggml.tokens", Value::Array(tokens.into())),
        ("tokenizer.ggml.scores", Value::Array(vec![Value::F32(0.0); n].into())),
        ("tokenizer.ggml.token_type", Value::Array(vec![Value::I32(1); n].into())),
    ];
    let bytes = tern_core::runtime::write::gguf(&meta, &[]);
    let t0 = std::time::Instant::now();
    let tok = Tokenizer::from_gguf(&Gguf::parse(&bytes).unwrap()).unwrap();
    let ids = tok.encode("aaaa", false).unwrap();
    let time = t0.elapsed();
    println!("{} MiB vocabulary: built and encoded in {time:?}", bytes.len() >> 20);
    assert_eq!(tok.decode(&ids), "aaaa");
    assert!(time < std::time::Duration::from_secs(3), "{time:?}");
}
