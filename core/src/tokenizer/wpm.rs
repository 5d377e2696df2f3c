//! A WordPiece tokenizer from a GGUF's `bert` vocabulary (llama.cpp's
//! "phantom space" spelling: a word-initial piece carries a leading `▁`, a
//! continuation none, control tokens as they are). The vocabulary is spelled
//! back as BERT's (`##` on continuations) and built as the tokenizer.json
//! of a BERT model would describe it: lower-casing and accent-stripping
//! normaliser (llama.cpp's WordPiece lower-cases too), BERT's
//! pre-tokenizer, `[CLS] A [SEP]` and the pair template.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::{json, Map};

use super::Tokenizer;
use crate::error::{Error, Result};
use crate::gguf::Gguf;

const TOKEN_CONTROL: i64 = 3;

/// The tokenizer a `bert` GGUF describes: `tokens` its vocabulary, `types`
/// their GGUF token types.
pub(super) fn from_gguf(g: &Gguf, tokens: &[&str], types: &[i64]) -> Result<Tokenizer> {
    let n = tokens.len();
    let id = |key: &str| -> Result<Option<u32>> {
        match g.get_u64(key)? {
            Some(i) if (i as usize) < n => Ok(Some(i as u32)),
            Some(i) => Err(Error::TokenOutOfRange { id: i as u32, n_vocab: n }),
            None => Ok(None),
        }
    };
    let need = |key: &str, alt: &str| -> Result<u32> {
        id(key)?.or(id(alt)?).ok_or_else(|| Error::MissingKey { key: key.into() })
    };
    let cls = need("tokenizer.ggml.cls_token_id", "tokenizer.ggml.bos_token_id")?;
    let sep = need("tokenizer.ggml.seperator_token_id", "tokenizer.ggml.eos_token_id")?;
    let unk = need("tokenizer.ggml.unknown_token_id", "tokenizer.ggml.unknown_token_id")?;
    let mut vocab = Map::new();
    let mut added = Vec::new();
    for (i, (&t, &ty)) in tokens.iter().zip(types).enumerate() {
        let bert: String = match (ty, t.strip_prefix('▁')) {
            (TOKEN_CONTROL, _) => t.to_string(),
            (_, Some(word)) => word.to_string(),
            (_, None) => alloc::format!("##{t}"),
        };
        if ty == TOKEN_CONTROL {
            added.push(json!({"id": i, "content": bert, "single_word": false, "lstrip": false, "rstrip": false,
                              "normalized": false, "special": true}));
        }
        // the first of two spellings wins, as llama.cpp's lookup does
        vocab.entry(bert).or_insert(json!(i));
    }
    let name = |i: u32| tokens[i as usize].to_string();
    let (c, s) = (name(cls), name(sep));
    let special = |t: &str, ty: u32| json!({"SpecialToken": {"id": t, "type_id": ty}});
    let seq = |t: &str, ty: u32| json!({"Sequence": {"id": t, "type_id": ty}});
    let json = json!({
        "added_tokens": added,
        "normalizer": {"type": "BertNormalizer", "clean_text": true, "handle_chinese_chars": true,
                       "strip_accents": null, "lowercase": true},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
            "single": [special(&c, 0), seq("A", 0), special(&s, 0)],
            "pair": [special(&c, 0), seq("A", 0), special(&s, 0), seq("B", 1), special(&s, 1)],
            "special_tokens": {
                c.clone(): {"id": c, "ids": [cls], "tokens": [c]},
                s.clone(): {"id": s, "ids": [sep], "tokens": [s]},
            }},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": true},
        "model": {"type": "WordPiece", "unk_token": name(unk), "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": vocab},
    });
    let bytes = serde_json::to_vec(&json).map_err(super::tok_err)?;
    Tokenizer::from_hf(&bytes, None, None, &[])
}
