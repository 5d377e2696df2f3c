//! A tokenizer from an HF directory: `tokenizer.json` through the
//! `tokenizers` crate, special tokens and the chat template from
//! `tokenizer_config.json` (or `chat_template.jinja`, as transformers 5
//! writes it).

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::collections::HashMap;

use serde_json::Value;

use super::{byte_chars, ends_turns, tok_err, Tokenizer};
use crate::error::{Error, Result};

/// How the vocabulary spells bytes.
#[derive(Clone, Copy, PartialEq)]
enum Spelling {
    /// GPT-2 byte-level: each byte one printable char.
    ByteLevel,
    /// SentencePiece: `▁` for space, `<0xAB>` byte tokens.
    Metaspace,
}

fn spelling(decoder: &Value) -> Option<Spelling> {
    match decoder.get("type")?.as_str()? {
        "ByteLevel" => Some(Spelling::ByteLevel),
        "Metaspace" | "ByteFallback" => Some(Spelling::Metaspace),
        "Replace" if decoder.pointer("/pattern/String").and_then(Value::as_str) == Some("▁") => {
            Some(Spelling::Metaspace)
        }
        "Sequence" => decoder.get("decoders")?.as_array()?.iter().find_map(spelling),
        _ => None,
    }
}

/// A special token given as a string or as `{"content": …}`.
fn token_text(v: Option<&Value>) -> Option<&str> {
    match v? {
        Value::String(s) => Some(s),
        o => o.get("content")?.as_str(),
    }
}

fn bad(file: &str, field: &str, detail: impl Into<String>) -> Error {
    Error::ModelFile { file: file.into(), field: field.into(), detail: detail.into() }
}

/// The template in `tokenizer_config.json`: a string, or a list of named
/// templates of which tern takes `default`.
fn config_template(cfg: &Value) -> Result<Option<String>> {
    match cfg.get("chat_template") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Array(list)) => Ok(list
            .iter()
            .find(|t| t.get("name").and_then(Value::as_str) == Some("default"))
            .and_then(|t| t.get("template")?.as_str())
            .map(str::to_string)),
        Some(v) => Err(bad("tokenizer_config.json", "chat_template", alloc::format!("{v} is not a template"))),
    }
}

impl Tokenizer {
    /// `tokenizer_json`: tokenizer.json; `config`: tokenizer_config.json;
    /// `template`: chat_template.jinja (wins over the config's);
    /// `eos_ids`: end ids from generation_config.json / config.json.
    pub fn from_hf(
        tokenizer_json: &[u8],
        config: Option<&[u8]>,
        template: Option<&str>,
        eos_ids: &[u32],
    ) -> Result<Tokenizer> {
        const FILE: &str = "tokenizer.json";
        let inner =
            tokenizers::Tokenizer::from_bytes(tokenizer_json).map_err(|e| bad(FILE, "(file)", e.to_string()))?;
        let json: Value = serde_json::from_slice(tokenizer_json).map_err(|e| bad(FILE, "(file)", e.to_string()))?;
        let cfg: Value = match config {
            Some(b) => serde_json::from_slice(b).map_err(|e| bad("tokenizer_config.json", "(file)", e.to_string()))?,
            None => Value::Null,
        };
        let model = json.pointer("/model/type").and_then(Value::as_str).unwrap_or("?").to_string();
        let pre = json.pointer("/pre_tokenizer/type").and_then(Value::as_str).unwrap_or("none").to_string();
        let spelling = json.get("decoder").and_then(spelling).ok_or_else(|| Error::UnsupportedTokenizer {
            model: alloc::format!(
                "{model} with decoder {} (tern reads byte-level and SentencePiece-style vocabularies)",
                json.get("decoder").unwrap_or(&Value::Null)
            ),
        })?;

        let added = inner.get_added_tokens_decoder();
        let n = inner.get_vocab_size(true).max(added.keys().map(|&i| i as usize + 1).max().unwrap_or(0));
        let chars = byte_chars();
        let char_byte: HashMap<char, u8> = chars.iter().enumerate().map(|(b, &c)| (c, b as u8)).collect();
        let mut token_bytes = Vec::with_capacity(n);
        let mut is_control = alloc::vec![false; n];
        for id in 0..n as u32 {
            if let Some(t) = added.get(&id) {
                is_control[id as usize] = t.special;
                token_bytes.push(t.content.as_bytes().to_vec());
                continue;
            }
            let Some(t) = inner.id_to_token(id) else {
                token_bytes.push(Vec::new());
                continue;
            };
            token_bytes.push(match spelling {
                Spelling::ByteLevel => t
                    .chars()
                    .flat_map(|c| match char_byte.get(&c) {
                        Some(&b) => alloc::vec![b],
                        None => c.to_string().into_bytes(),
                    })
                    .collect(),
                Spelling::Metaspace => match t.strip_prefix("<0x").and_then(|h| h.strip_suffix('>')) {
                    Some(hex) if hex.len() == 2 => {
                        u8::from_str_radix(hex, 16).map_or(t.clone().into_bytes(), |b| alloc::vec![b])
                    }
                    _ => t.replace('▁', " ").into_bytes(),
                },
            });
        }

        let id_of = |field: &str| -> Result<Option<u32>> {
            match token_text(cfg.get(field)) {
                None => Ok(None),
                Some(text) => inner.token_to_id(text).map(Some).ok_or_else(|| {
                    bad("tokenizer_config.json", field, alloc::format!("{text:?} is not in the vocabulary"))
                }),
            }
        };
        let eos = id_of("eos_token")?;
        let mut bos = id_of("bos_token")?;
        // BOS is added when the config says so, or when tokenizer.json's
        // post-processor prepends a token
        let with = inner.encode("a", true).map_err(tok_err)?;
        let without = inner.encode("a", false).map_err(tok_err)?;
        let prepended = (with.len() > without.len()).then(|| with.get_ids()[0]);
        let add_bos = match cfg.get("add_bos_token").and_then(Value::as_bool) {
            Some(b) => b,
            None => prepended.is_some(),
        };
        if add_bos && bos.is_none() {
            bos = prepended;
        }
        if let Some(&id) = eos_ids.iter().find(|&&id| id as usize >= n) {
            return Err(Error::TokenOutOfRange { id, n_vocab: n });
        }
        let mut eog: Vec<u32> = eos.into_iter().chain(eos_ids.iter().copied()).collect();
        for (&id, t) in &added {
            if t.special && ends_turns(&t.content) {
                eog.push(id);
            }
        }
        eog.sort_unstable();
        eog.dedup();
        let chat_template = match template {
            Some(t) => Some(t.to_string()),
            None => config_template(&cfg)?,
        };
        Ok(Tokenizer { inner, token_bytes, is_control, bos, eos, eog, add_bos, chat_template, model, pre })
    }
}
