//! tokenizer.json WordPiece and Unigram models against HF `tokenizers`
//! (fixtures/oracle/tokenizer_json, made by make_cases.py): all-MiniLM-L6-v2's
//! BERT WordPiece (BertNormalizer, BertPreTokenizer, [CLS] … [SEP]) and a
//! Unigram model over Llama 2's SentencePiece pieces (byte fallback,
//! Metaspace), and a T5-style one with sentencepiece's NFKC charsmap, on
//! 287 texts each (the last on 20 more): ids with and without special tokens
//! equal; decoding is HF's; streaming the tokens' bytes gives it too.

use tern_core::Tokenizer;
use tern_tests::*;

fn check(name: &str) {
    let oracle = read_json("tokenizer_json/cases.json");
    let v = &oracle["tokenizers"][name];
    let bytes = std::fs::read(oracle_dir().join("tokenizer_json").join(v["file"].as_str().unwrap())).unwrap();
    let tok = Tokenizer::from_hf(&bytes, None, None, &[]).unwrap();
    let texts = v.get("texts").unwrap_or(&oracle["texts"]).as_array().unwrap();
    let cases = v["cases"].as_array().unwrap();
    let mut failures = Vec::new();
    for (i, (text, want)) in texts.iter().zip(cases).enumerate() {
        let text = text.as_str().unwrap();
        let got = tok.encode(text, false).unwrap();
        if got != ids(&want["ids"]) {
            failures.push(format!("{i} {text:?}: {got:?} != {:?}", ids(&want["ids"])));
            continue;
        }
        let special = tok.encode(text, true).unwrap();
        if special != ids(&want["ids_special"]) {
            failures.push(format!("{i} {text:?}: with specials {special:?} != {:?}", ids(&want["ids_special"])));
        }
        let decoded = tok.decode(&got);
        if decoded != want["decoded"].as_str().unwrap() {
            failures.push(format!("{i} {text:?}: decoded {decoded:?}, HF {:?}", want["decoded"]));
        }
        assert_streams_as_decoded(&tok, &got, &decoded, &format!("{name} case {i}"));
    }
    assert!(failures.is_empty(), "{name}: {} of {} differ:\n{}", failures.len(), cases.len(), failures.join("\n"));
    println!(
        "{name}: {0}/{0} cases equal HF tokenizers (ids with and without specials, decoding, streaming)",
        cases.len()
    );
}

#[test]
fn wordpiece_equals_hf() {
    check("wordpiece");
}

#[test]
fn unigram_equals_hf() {
    check("unigram");
}

/// A T5-style tokenizer.json from a sentencepiece model: its
/// precompiled_charsmap (NFKC, sentencepiece's grapheme-wise rules),
/// Replace(" {2,}"), no byte fallback (<unk>), `$A </s>`; 307 texts, the
/// 287 and 20 that NFKC rewrites.
#[test]
fn t5_precompiled_charsmap_equals_hf() {
    check("t5-nfkc");
}
