//! A tokenizer from an HF directory: `tokenizer.json`'s components built
//! with the `tokenizers` crate (its BPE model, normalizers and
//! pre-tokenizers; the JSON is mapped here rather than by the crate's serde
//! code, which would add 100+ KB of gzip to each wasm module for component
//! kinds tern's models do not use — those are refused by name), special
//! tokens and the chat template from `tokenizer_config.json` (or
//! `chat_template.jinja`, as transformers 5 writes it).

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::collections::HashMap;

use serde_json::Value;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::models::unigram::Unigram;
use tokenizers::models::wordpiece::WordPiece;
use tokenizers::normalizers::replace::ReplacePattern;
use tokenizers::normalizers::{
    BertNormalizer, Lowercase, Prepend, Replace, Sequence as NormSeq, Strip, StripAccents, NFC, NFD, NFKC, NFKD,
};
use tokenizers::pre_tokenizers::bert::BertPreTokenizer;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::pre_tokenizers::whitespace::{Whitespace, WhitespaceSplit};
use tokenizers::{AddedToken, NormalizerWrapper, PreTokenizerWrapper, SplitDelimiterBehavior};

use super::{byte_chars, ends_turns, tok_err, Tokenizer};
use crate::error::{Error, Result};
use crate::model::limits::MAX_VOCAB;

const FILE: &str = "tokenizer.json";

fn unsupported(what: &str, v: &Value) -> Error {
    Error::UnsupportedTokenizer { model: alloc::format!("tokenizer.json {what} {}", v.get("type").unwrap_or(v)) }
}

fn flag(v: &Value, k: &str, default: bool) -> bool {
    v.get(k).and_then(Value::as_bool).unwrap_or(default)
}

fn text<'a>(v: &'a Value, k: &str) -> Result<&'a str> {
    v.get(k).and_then(Value::as_str).ok_or_else(|| bad(FILE, k, alloc::format!("missing in {v}")))
}

fn normalizer(v: &Value) -> Result<NormalizerWrapper> {
    Ok(match v.get("type").and_then(Value::as_str).unwrap_or("") {
        "NFC" => NFC.into(),
        "NFD" => NFD.into(),
        "NFKC" => NFKC.into(),
        "NFKD" => NFKD.into(),
        "Prepend" => Prepend::new(text(v, "prepend")?.to_string()).into(),
        "BertNormalizer" => BertNormalizer::new(
            flag(v, "clean_text", true),
            flag(v, "handle_chinese_chars", true),
            v.get("strip_accents").and_then(Value::as_bool),
            flag(v, "lowercase", true),
        )
        .into(),
        "Lowercase" => Lowercase.into(),
        "StripAccents" => StripAccents.into(),
        "Strip" => Strip::new(flag(v, "strip_left", true), flag(v, "strip_right", true)).into(),
        "Replace" => {
            let pattern = match (v.pointer("/pattern/String"), v.pointer("/pattern/Regex")) {
                (Some(Value::String(s)), _) => ReplacePattern::String(s.clone()),
                (_, Some(Value::String(r))) => ReplacePattern::Regex(r.clone()),
                _ => return Err(unsupported("normalizer", v)),
            };
            Replace::new(pattern, text(v, "content")?).map_err(tok_err)?.into()
        }
        "Precompiled" => super::charsmap::precompiled(text(v, "precompiled_charsmap")?)?.into(),
        "Sequence" => {
            let list = v.get("normalizers").and_then(Value::as_array).ok_or_else(|| unsupported("normalizer", v))?;
            NormSeq::new(list.iter().map(normalizer).collect::<Result<_>>()?).into()
        }
        _ => return Err(unsupported("normalizer", v)),
    })
}

fn pre_tokenizer(v: &Value) -> Result<PreTokenizerWrapper> {
    Ok(match v.get("type").and_then(Value::as_str).unwrap_or("") {
        "ByteLevel" => {
            ByteLevel::new(flag(v, "add_prefix_space", true), flag(v, "trim_offsets", true), flag(v, "use_regex", true))
                .into()
        }
        "Split" => {
            let pattern = match (v.pointer("/pattern/Regex"), v.pointer("/pattern/String")) {
                (Some(Value::String(r)), _) => SplitPattern::Regex(r.clone()),
                (_, Some(Value::String(s))) => SplitPattern::String(s.clone()),
                _ => return Err(unsupported("pre_tokenizer", v)),
            };
            let behavior = match v.get("behavior").and_then(Value::as_str) {
                Some("Isolated") => SplitDelimiterBehavior::Isolated,
                Some("Removed") => SplitDelimiterBehavior::Removed,
                Some("MergedWithPrevious") => SplitDelimiterBehavior::MergedWithPrevious,
                Some("MergedWithNext") => SplitDelimiterBehavior::MergedWithNext,
                Some("Contiguous") => SplitDelimiterBehavior::Contiguous,
                _ => return Err(unsupported("pre_tokenizer", v)),
            };
            Split::new(pattern, behavior, flag(v, "invert", false)).map_err(tok_err)?.into()
        }
        "Digits" => Digits::new(flag(v, "individual_digits", false)).into(),
        "BertPreTokenizer" => BertPreTokenizer.into(),
        "Whitespace" => Whitespace.into(),
        "WhitespaceSplit" => WhitespaceSplit.into(),
        "Metaspace" => {
            let replacement = text(v, "replacement")?.chars().next().unwrap_or('▁');
            let scheme = match v.get("prepend_scheme").and_then(Value::as_str) {
                Some("first") => PrependScheme::First,
                Some("never") => PrependScheme::Never,
                _ => PrependScheme::Always,
            };
            Metaspace::new(replacement, scheme, flag(v, "split", true)).into()
        }
        "Sequence" => {
            let list =
                v.get("pretokenizers").and_then(Value::as_array).ok_or_else(|| unsupported("pre_tokenizer", v))?;
            Sequence::new(list.iter().map(pre_tokenizer).collect::<Result<_>>()?).into()
        }
        _ => return Err(unsupported("pre_tokenizer", v)),
    })
}

/// A token's id: an integer below the largest vocabulary tern takes (ids
/// size tables, so an id of 2^32-2 must not become a 100 GB one).
fn token_id(id: &Value, field: &str, token: &str) -> Result<u32> {
    match id.as_u64() {
        Some(i) if i < MAX_VOCAB as u64 => Ok(i as u32),
        _ => Err(bad(FILE, field, alloc::format!("{token:?}: id {id} is not an integer below {MAX_VOCAB}"))),
    }
}

/// The model (BPE, WordPiece or Unigram) with the added tokens, and its
/// normalizer and pre-tokenizer.
fn build(json: &Value) -> Result<tokenizers::Tokenizer> {
    let m = json.get("model").ok_or_else(|| bad(FILE, "model", "missing"))?;
    let added = json.get("added_tokens").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut inner = match m.get("type").and_then(Value::as_str) {
        Some("BPE") => tokenizers::Tokenizer::new(bpe(m, &added)?),
        Some("WordPiece") => tokenizers::Tokenizer::new(wordpiece(m)?),
        Some("Unigram") => tokenizers::Tokenizer::new(unigram(m)?),
        _ => return Err(unsupported("model", m)),
    };
    match json.get("normalizer") {
        None | Some(Value::Null) => {}
        Some(v) => {
            inner.with_normalizer(Some(normalizer(v)?));
        }
    }
    match json.get("pre_tokenizer") {
        None | Some(Value::Null) => {}
        Some(v) => {
            inner.with_pre_tokenizer(Some(pre_tokenizer(v)?));
        }
    }
    let tokens: Vec<AddedToken> = added
        .iter()
        .map(|a| {
            Ok(AddedToken::from(text(a, "content")?.to_string(), flag(a, "special", false))
                .single_word(flag(a, "single_word", false))
                .lstrip(flag(a, "lstrip", false))
                .rstrip(flag(a, "rstrip", false))
                .normalized(flag(a, "normalized", false)))
        })
        .collect::<Result<_>>()?;
    let (special, plain): (Vec<_>, Vec<_>) = tokens.into_iter().partition(|t| t.special);
    inner.add_special_tokens(&special);
    inner.add_tokens(&plain);
    Ok(inner)
}

/// WordPiece (BERT): a vocabulary of words and `##`-continued pieces.
fn wordpiece(m: &Value) -> Result<WordPiece> {
    let mut vocab = Vocab::default();
    for (t, id) in m.get("vocab").and_then(Value::as_object).ok_or_else(|| bad(FILE, "model.vocab", "missing"))? {
        vocab.insert(t.clone(), token_id(id, "model.vocab", t)?);
    }
    let max_chars = m.get("max_input_chars_per_word").and_then(Value::as_u64).unwrap_or(100).min(1 << 16) as usize;
    WordPiece::builder()
        .vocab(vocab)
        .unk_token(text(m, "unk_token")?.to_string())
        .continuing_subword_prefix(m.get("continuing_subword_prefix").and_then(Value::as_str).unwrap_or("##").into())
        .max_input_chars_per_word(max_chars)
        .build()
        .map_err(tok_err)
}

/// Unigram (SentencePiece's other model): pieces with log-probabilities.
fn unigram(m: &Value) -> Result<Unigram> {
    let list = m.get("vocab").and_then(Value::as_array).ok_or_else(|| bad(FILE, "model.vocab", "missing"))?;
    if list.len() > MAX_VOCAB {
        return Err(bad(FILE, "model.vocab", alloc::format!("{} pieces, more than {MAX_VOCAB}", list.len())));
    }
    let vocab = list
        .iter()
        .map(|p| match (p.get(0).and_then(Value::as_str), p.get(1).and_then(Value::as_f64)) {
            (Some(piece), Some(score)) if score.is_finite() => Ok((piece.to_string(), score)),
            _ => Err(bad(FILE, "model.vocab", alloc::format!("{p} is not a [piece, score] pair"))),
        })
        .collect::<Result<Vec<_>>>()?;
    let unk = match m.get("unk_id") {
        None | Some(Value::Null) => None,
        Some(v) => match v.as_u64() {
            Some(i) if (i as usize) < vocab.len() => Some(i as usize),
            _ => return Err(bad(FILE, "model.unk_id", alloc::format!("{v} is not a piece's index"))),
        },
    };
    Unigram::from(vocab, unk, flag(m, "byte_fallback", false)).map_err(tok_err)
}

/// The BPE model with the added tokens in its vocabulary at their ids.
fn bpe(m: &Value, added: &[Value]) -> Result<BPE> {
    for k in ["continuing_subword_prefix", "end_of_word_suffix"] {
        if m.get(k).and_then(Value::as_str).is_some_and(|s| !s.is_empty()) {
            return Err(unsupported(&alloc::format!("BPE {k}"), m));
        }
    }
    let mut vocab = Vocab::default();
    for (t, id) in m.get("vocab").and_then(Value::as_object).ok_or_else(|| bad(FILE, "model.vocab", "missing"))? {
        vocab.insert(t.clone(), token_id(id, "model.vocab", t)?);
    }
    for a in added {
        let content = text(a, "content")?;
        vocab.insert(content.to_string(), token_id(a.get("id").unwrap_or(&Value::Null), "added_tokens", content)?);
    }
    let merges = m.get("merges").and_then(Value::as_array).ok_or_else(|| bad(FILE, "model.merges", "missing"))?;
    let pair = |mg: &Value| match mg {
        Value::String(s) => s.split_once(' ').map(|(a, b)| (a.to_string(), b.to_string())),
        Value::Array(p) if p.len() == 2 => Some((p[0].as_str()?.to_string(), p[1].as_str()?.to_string())),
        _ => None,
    };
    let merges = merges
        .iter()
        .map(|mg| pair(mg).ok_or_else(|| bad(FILE, "model.merges", alloc::format!("{mg} is not a pair"))))
        .collect::<Result<Vec<_>>>()?;
    let mut b = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .byte_fallback(flag(m, "byte_fallback", false))
        .ignore_merges(flag(m, "ignore_merges", false))
        .fuse_unk(flag(m, "fuse_unk", false));
    if let Some(unk) = m.get("unk_token").and_then(Value::as_str) {
        b = b.unk_token(unk.to_string());
    }
    b.build().map_err(tok_err)
}

/// The token tokenizer.json's post-processor puts first, if any (BOS).
fn prepended(v: &Value) -> Option<&str> {
    match v.get("type")?.as_str()? {
        "TemplateProcessing" => v.pointer("/single/0/SpecialToken/id")?.as_str(),
        "Sequence" => v.get("processors")?.as_array()?.iter().find_map(prepended),
        _ => None,
    }
}

/// The token tokenizer.json's post-processor puts last, if any (BERT's
/// `[SEP]`).
fn appended(v: &Value) -> Option<&str> {
    match v.get("type")?.as_str()? {
        "TemplateProcessing" => {
            let single = v.get("single")?.as_array()?;
            let after_text = single.iter().position(|p| p.get("Sequence").is_some())? + 1;
            single.get(after_text)?.pointer("/SpecialToken/id")?.as_str()
        }
        "BertProcessing" | "RobertaProcessing" => v.pointer("/sep/0")?.as_str(),
        "Sequence" => v.get("processors")?.as_array()?.iter().find_map(appended),
        _ => None,
    }
}

/// A WordPiece token as HF's decoder writes it after the first: a
/// continuation piece without its prefix, any other token after a space;
/// with `cleanup`, its rules (` .` → `.`, ` ,` → `,`…), which act within
/// one token, so streaming the tokens gives the whole decoding.
fn wordpiece_bytes(t: &str, prefix: &str, cleanup: bool) -> Vec<u8> {
    let s = match t.strip_prefix(prefix) {
        Some(rest) => rest.to_string(),
        None => alloc::format!(" {t}"),
    };
    if !cleanup {
        return s.into_bytes();
    }
    let rules = [
        (" .", "."),
        (" ?", "?"),
        (" !", "!"),
        (" ,", ","),
        (" ' ", "'"),
        (" n't", "n't"),
        (" 'm", "'m"),
        (" do not", " don't"),
        (" 's", "'s"),
        (" 've", "'ve"),
        (" 're", "'re"),
    ];
    rules.iter().fold(s, |s, (from, to)| s.replace(from, to)).into_bytes()
}

/// How the vocabulary spells bytes.
#[derive(Clone, Copy, PartialEq)]
enum Spelling {
    /// GPT-2 byte-level: each byte one printable char.
    ByteLevel,
    /// SentencePiece: `▁` for space, `<0xAB>` byte tokens.
    Metaspace,
    /// WordPiece: a word's first piece starts a word (a space before it),
    /// the others carry the continuation prefix (`##`).
    WordPiece,
}

fn spelling(decoder: &Value) -> Option<Spelling> {
    match decoder.get("type")?.as_str()? {
        "ByteLevel" => Some(Spelling::ByteLevel),
        "WordPiece" => Some(Spelling::WordPiece),
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

/// Whether a decoder drops the text's first space (a `Strip` of one
/// leading `" "`, or a prepending `Metaspace`, alone or in a sequence).
fn strips_first_space(v: &Value) -> bool {
    let strip = v["type"] == "Strip" && v["content"] == " " && v["start"].as_u64().is_some_and(|n| n >= 1);
    // a Metaspace decoder that prepends drops the first token's space
    let metaspace = v["type"] == "Metaspace" && v["prepend_scheme"] != "never" && v["add_prefix_space"] != false;
    strip || metaspace || v["decoders"].as_array().is_some_and(|ds| ds.iter().any(strips_first_space))
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
        let json: Value = serde_json::from_slice(tokenizer_json).map_err(|e| bad(FILE, "(file)", e.to_string()))?;
        let inner = build(&json)?;
        let cfg: Value = match config {
            Some(b) => serde_json::from_slice(b).map_err(|e| bad("tokenizer_config.json", "(file)", e.to_string()))?,
            None => Value::Null,
        };
        let model = json.pointer("/model/type").and_then(Value::as_str).unwrap_or("?").to_string();
        let pre = json.pointer("/pre_tokenizer/type").and_then(Value::as_str).unwrap_or("none").to_string();
        let spelling = json.get("decoder").and_then(spelling).ok_or_else(|| Error::UnsupportedTokenizer {
            model: alloc::format!(
                "{model} with decoder {} (tern reads byte-level, SentencePiece-style and WordPiece vocabularies)",
                json.get("decoder").unwrap_or(&Value::Null)
            ),
        })?;

        // WordPiece's continuation prefix (as its decoder names it)
        let continuing: String = json
            .pointer("/decoder/prefix")
            .or_else(|| json.pointer("/model/continuing_subword_prefix"))
            .and_then(Value::as_str)
            .unwrap_or("##")
            .into();
        let cleanup = json.pointer("/decoder/cleanup").and_then(Value::as_bool).unwrap_or(true);
        let added = inner.get_added_tokens_decoder();
        let n = inner.get_vocab_size(true).max(added.keys().map(|&i| i as usize + 1).max().unwrap_or(0));
        let chars = byte_chars();
        let char_byte: HashMap<char, u8> = chars.iter().enumerate().map(|(b, &c)| (c, b as u8)).collect();
        let mut token_bytes = Vec::with_capacity(n);
        let mut is_control = alloc::vec![false; n];
        for id in 0..n as u32 {
            if let Some(t) = added.get(&id) {
                is_control[id as usize] = t.special;
                token_bytes.push(match spelling {
                    // HF's WordPiece decoder spaces every token alike
                    Spelling::WordPiece => wordpiece_bytes(&t.content, &continuing, cleanup),
                    _ => t.content.as_bytes().to_vec(),
                });
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
                Spelling::WordPiece => wordpiece_bytes(&t, &continuing, cleanup),
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
        let prepended = json.get("post_processor").and_then(prepended).and_then(|t| inner.token_to_id(t));
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
        let literals = Tokenizer::literals(&inner)?;
        // the text's first space: a SentencePiece decoder's `Strip`, or the
        // one WordPiece's spelling puts before the first word
        let strip_first_space = json.get("decoder").is_some_and(strips_first_space) || spelling == Spelling::WordPiece;
        // a token the post-processor appends (BERT's [SEP], T5's </s>),
        // unless the config turned off the BOS it prepends with it
        let append = match add_bos || prepended.is_none() {
            true => json.get("post_processor").and_then(appended).and_then(|t| inner.token_to_id(t)),
            false => None,
        };
        let pair = json.get("post_processor").and_then(|v| super::pair::template(v, &|t| inner.token_to_id(t)));
        Ok(Tokenizer {
            inner,
            token_bytes,
            is_control,
            bos,
            eos,
            eog,
            add_bos,
            append,
            chat_template,
            model,
            pre,
            literals,
            strip_first_space,
            pair,
        })
    }
}
