//! SentencePiece vocabularies from GGUF files (`tokenizer.ggml.model =
//! llama`) against transformers (tests/fixtures/oracle/spm/, made by
//! make_spm_oracle.py): Gemma 3's (262 144 tokens), Llama 2's and Phi-3's,
//! on 287 texts each — the repository's 195 tokenizer cases, llama.cpp's
//! test strings, and a mixed corpus of code, CJK, emoji, whitespace runs
//! and special-token look-alikes. Ids equal, decoding equals, and streaming
//! the tokens' bytes gives the decoded text.

use tern_core::gguf::Gguf;
use tern_core::tokenizer::Tokenizer;
use tern_core::utf8::Utf8Stream;
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
        // streamed bytes: the text as generated (the decoder's one
        // dropped leading space is for whole-sequence decoding only)
        let mut stream = Utf8Stream::new();
        let mut streamed = String::new();
        for &id in &got {
            streamed += &stream.push(tok.token_bytes(id));
        }
        streamed += &stream.finish();
        let same = streamed == decoded || streamed.strip_prefix(' ') == Some(&decoded[..]);
        assert!(same, "{name} case {i}: streamed {streamed:?}, decoded {decoded:?}");
    }
    assert!(failures.is_empty(), "{name}: {} of {} cases differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
    println!("{name}: {}/{} cases equal transformers (ids, decoding, streaming); built in {built:?}", cases.len(), cases.len());
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
