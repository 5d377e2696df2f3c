//! The tokenizer built from each GGUF against HF's on all 195 oracle cases:
//! the same ids, and decoding gives back the recorded text. Also the
//! streaming detokenizer: token by token it yields the same text, never a
//! partial UTF-8 sequence.

use tern_core::hf::GenerationDefaults;
use tern_core::tokenizer::Tokenizer;
use tern_core::utf8::Utf8Stream;
use tern_tests::*;

fn check(model: &str, tok: &Tokenizer) {
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

/// The tokenizer of an HF directory: the oracle's tokenizer files.
fn from_hf_files(model: &str) -> Tokenizer {
    let dir = oracle_dir().join("hf").join(model);
    let read = |f: &str| std::fs::read(dir.join(f)).unwrap();
    let gen = GenerationDefaults::parse(&read("generation_config.json")).unwrap();
    let template = String::from_utf8(read("chat_template.jinja")).unwrap();
    Tokenizer::from_hf(
        &read("tokenizer.json"),
        Some(&read("tokenizer_config.json")),
        Some(&template),
        &gen.eos_token_ids,
    )
    .unwrap()
}

#[test]
fn gguf_tokenizers_match_hf() {
    for (model, file) in MODELS {
        check(model, load(file).tokenizer().unwrap());
    }
}

#[test]
fn tokenizer_json_tokenizers_match_hf_and_the_gguf_ones() {
    for (model, file) in MODELS {
        let tok = from_hf_files(model);
        check(model, &tok);
        let lm = load(file);
        let g = lm.tokenizer().unwrap();
        assert_eq!(tok.n_vocab(), g.n_vocab(), "{model}");
        assert!((0..g.n_vocab() as u32).all(|i| tok.token_bytes(i) == g.token_bytes(i)), "{model}: token bytes");
        assert!((0..g.n_vocab() as u32).all(|i| tok.is_control(i) == g.is_control(i)), "{model}: special tokens");
        assert_eq!(tok.chat_template, g.chat_template, "{model}: chat template");
        assert_eq!(tok.add_bos, g.add_bos, "{model}");
        assert!(g.eog.iter().all(|id| tok.is_eog(*id)), "{model}: end ids {:?} vs {:?}", tok.eog, g.eog);
    }
}
