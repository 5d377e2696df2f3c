//! Any bytes as a grammar: the first byte picks JSON Schema, GBNF or Lark,
//! or regex, the rest is its source. It is compiled by llguidance over a
//! byte-level vocabulary (a refusal is fine) and, if it compiles, driven
//! for a few steps, each taking the lowest allowed token: an error or a
//! mask, never a panic, an abort (a stack overflow) or a hang.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use tern_core::runtime::Allowed;
use tern_core::{Grammar, runtime::GrammarCompiler};
use tern_core::Tokenizer;

/// GPT-2's byte-to-character map: each byte a token, then a few merges.
fn tokenizer() -> Tokenizer {
    let mut vocab = serde_json::Map::new();
    let printable = |b: u32| (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
    let mut extra = 0;
    for b in 0..256u32 {
        let c = if printable(b) {
            char::from_u32(b).unwrap()
        } else {
            extra += 1;
            char::from_u32(255 + extra).unwrap()
        };
        vocab.insert(c.to_string(), b.into());
    }
    let merges = ["\" :", "Ġ \"", "t r", "tr u", "tru e", "a b"];
    for (i, m) in merges.iter().enumerate() {
        vocab.insert(m.replace(' ', ""), (256 + i).into());
    }
    let json = serde_json::json!({
        "model": {"type": "BPE", "vocab": vocab, "merges": merges},
        "added_tokens": [{"id": 300, "content": "<|end|>", "special": true}],
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
        "decoder": {"type": "ByteLevel"}
    });
    Tokenizer::from_hf(json.to_string().as_bytes(), None, None, &[300]).unwrap()
}

fuzz_target!(|data: &[u8]| {
    static COMPILER: OnceLock<GrammarCompiler> = OnceLock::new();
    let compiler = COMPILER.get_or_init(|| GrammarCompiler::new(&tokenizer(), 301).unwrap());
    let Some((&kind, src)) = data.split_first() else { return };
    let Ok(src) = std::str::from_utf8(src) else { return };
    let g = match kind % 4 {
        0 => Grammar::json_schema(src),
        1 => Grammar::gbnf_or_lark(src),
        2 => Grammar::regex(src),
        _ => Grammar::json_schema(src).map(Grammar::lenient),
    };
    let Ok(Ok(mut c)) = g.map(|g| compiler.compile(&g)) else { return };
    for _ in 0..8 {
        let id = match c.allowed() {
            Ok(Allowed::Only(id)) => id,
            Ok(Allowed::Mask(m)) => match m.iter().position(|&w| w != 0) {
                Some(w) => w as u32 * 32 + m[w].trailing_zeros(),
                None => return,
            },
            Ok(Allowed::End(_) | Allowed::Any) | Err(_) => return,
        };
        if c.accept(id).is_err() {
            return;
        }
    }
});
