//! The tokenizer built from each GGUF against HF's on all 195 oracle cases:
//! the same ids, and decoding gives back the recorded text. Also the
//! streaming detokenizer: token by token it yields the same text, never a
//! partial UTF-8 sequence.

use tern_core::utf8::Utf8Stream;
use tern_tests::*;

fn check(model: &str, file: &str) {
    let lm = load(file);
    let tok = &lm.tokenizer;
    let cases = read_json("tokenizer_cases.json");
    let cases = cases["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 195);
    let mut failures = Vec::new();
    for c in cases {
        let text = c["text"].as_str().unwrap();
        let hex: String = text.bytes().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, c["utf8_hex"].as_str().unwrap(), "case {} text decoded wrongly from JSON", c["index"]);
        let want = &c["models"][model];
        let got = tok.encode(text, true).unwrap();
        if got != ids(&want["ids"]) {
            failures.push(format!("case {} {text:?}: ids {got:?} != {:?}", c["index"], ids(&want["ids"])));
            continue;
        }
        let decoded = tok.decode(&got);
        if decoded != want["decoded"].as_str().unwrap() {
            failures.push(format!("case {} {text:?}: decoded {decoded:?}", c["index"]));
        }
        let mut stream = Utf8Stream::new();
        let mut streamed = String::new();
        for &id in &got {
            streamed += &stream.push(tok.token_bytes(id));
        }
        streamed += &stream.finish();
        assert_eq!(streamed, decoded, "case {}: streamed text differs", c["index"]);
    }
    assert!(failures.is_empty(), "{model}: {} of 195 cases fail:\n{}", failures.len(), failures.join("\n"));
    println!("{model}: 195/195 tokenizer cases equal HF (ids and decoded text)");
}

#[test]
fn qwen_tokenizer_matches_hf() {
    check(MODELS[0].0, MODELS[0].1);
}

#[test]
fn smollm2_tokenizer_matches_hf() {
    check(MODELS[1].0, MODELS[1].1);
}
