//! A tokenizer from a GGUF's embedded vocabulary: byte-level BPE with the
//! pre-tokenizer the file names (`gpt2`), SentencePiece (`llama`, in
//! `spm`) or WordPiece (`bert`, in `wpm`).

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::collections::HashMap;

use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{AddedToken, PreTokenizerWrapper, SplitDelimiterBehavior};

use super::{byte_chars, ends_turns, spm, tok_err, Tokenizer};
use crate::error::{Error, Result};
use crate::gguf::Gguf;
use crate::model::family::Family;
use crate::model::limits::MAX_VOCAB;

/// Split regexes of the pre-tokenizers tern knows (as llama.cpp names them).
const QWEN2_REGEX: &str =
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const LLAMA3_REGEX: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// GGUF token types.
const TOKEN_CONTROL: i64 = 3;
const TOKEN_USER_DEFINED: i64 = 4;

/// An array of at most `max` strings, as views into the file.
fn strings<'a>(g: &Gguf<'a>, key: &str, max: usize) -> Result<Vec<&'a str>> {
    let arr = g.get_array(key)?.ok_or_else(|| Error::MissingKey { key: key.into() })?;
    if arr.len() > max {
        return Err(Error::Tokenizer { detail: alloc::format!("{key} has {} entries (at most {max})", arr.len()) });
    }
    arr.iter()
        .map(|v| v.as_str().ok_or_else(|| Error::KeyType { key: key.into(), expected: "an array of strings" }))
        .collect()
}

fn id_key(g: &Gguf, key: &str, n: usize) -> Result<Option<u32>> {
    match g.get_u64(key)? {
        Some(id) if (id as usize) < n => Ok(Some(id as u32)),
        Some(id) => Err(Error::TokenOutOfRange { id: id as u32, n_vocab: n }),
        None => Ok(None),
    }
}

impl Tokenizer {
    /// The tokenizer a GGUF file describes (`tokenizer.ggml.*`).
    pub fn from_gguf(g: &Gguf) -> Result<Tokenizer> {
        let model = g.require_str("tokenizer.ggml.model")?;
        let tokens = strings(g, "tokenizer.ggml.tokens", MAX_VOCAB)?;
        let n = tokens.len();
        let types: Vec<i64> = match g.get_array("tokenizer.ggml.token_type")? {
            None => alloc::vec![1; n],
            Some(a) if a.len() == n => a.iter().map(|v| v.as_i64().unwrap_or(1)).collect(),
            Some(a) => {
                return Err(Error::Tokenizer { detail: alloc::format!("{} token types for {n} tokens", a.len()) })
            }
        };
        if model == "bert" {
            return super::wpm::from_gguf(g, &tokens, &types);
        }
        let pre = g.get_str("tokenizer.ggml.pre")?.unwrap_or("default");
        let (mut inner, token_bytes, strip_first_space) = match model {
            "gpt2" => {
                let (inner, bytes) = byte_level(g, pre, &tokens, &types)?;
                (inner, bytes, false)
            }
            "llama" => {
                let scores: Vec<f32> = match g.get_array("tokenizer.ggml.scores")? {
                    Some(a) if a.len() == n => a.iter().map(|v| v.as_f32().unwrap_or(0.0)).collect(),
                    Some(a) => {
                        return Err(Error::Tokenizer { detail: alloc::format!("{} scores for {n} tokens", a.len()) })
                    }
                    None => return Err(Error::MissingKey { key: "tokenizer.ggml.scores".into() }),
                };
                let unk = id_key(g, "tokenizer.ggml.unknown_token_id", n)?.map(|i| tokens[i as usize]);
                // the family's spelling; an architecture tern does not run, Llama's
                let arch = g.get_str("general.architecture")?.unwrap_or("");
                let flavor = Family::by_gguf_name(arch).map_or(spm::Flavor::Llama, |f| f.spm);
                let (inner, bytes) = spm::build(flavor, &tokens, &scores, &types, unk)?;
                (inner, bytes, flavor.strips_first_space())
            }
            other => return Err(Error::UnsupportedTokenizer { model: other.to_string() }),
        };
        // control tokens, and the ones the file names BOS, EOS, UNK or padding
        // (a SentencePiece `<unk>` is typed UNKNOWN, yet matched whole)
        let mut named = Vec::new();
        for key in ["bos", "eos", "unknown", "padding"] {
            named.extend(id_key(g, &alloc::format!("tokenizer.ggml.{key}_token_id"), n)?);
        }
        let special: Vec<AddedToken> = (0..n)
            .filter(|&i| types[i] == TOKEN_CONTROL || named.contains(&(i as u32)))
            .map(|i| AddedToken::from(tokens[i].to_string(), true).normalized(false))
            .collect();
        inner.add_special_tokens(&special);
        // user-defined tokens match whole in the text, as llama.cpp does —
        // those the vocabulary spells as they are (as transformers does:
        // Gemma's runs of spaces are `▁`s in it)
        let user: Vec<AddedToken> = (0..n)
            .filter(|&i| types[i] == TOKEN_USER_DEFINED && inner.token_to_id(tokens[i]).is_some())
            .map(|i| AddedToken::from(tokens[i].to_string(), false).normalized(false))
            .collect();
        inner.add_tokens(&user);

        let bos = id_key(g, "tokenizer.ggml.bos_token_id", n)?;
        let eos = id_key(g, "tokenizer.ggml.eos_token_id", n)?;
        let eot = id_key(g, "tokenizer.ggml.eot_token_id", n)?;
        let eom = id_key(g, "tokenizer.ggml.eom_token_id", n)?;
        let mut eog: Vec<u32> = [eos, eot, eom].into_iter().flatten().collect();
        for (i, t) in tokens.iter().enumerate() {
            if ends_turns(t) && types[i] == TOKEN_CONTROL {
                eog.push(i as u32);
            }
        }
        eog.sort_unstable();
        eog.dedup();
        let tok = Tokenizer {
            literals: Tokenizer::literals(&inner)?,
            strip_first_space,
            pair: None,
            inner,
            token_bytes,
            is_control: types.iter().map(|&t| t == TOKEN_CONTROL).collect(),
            bos,
            eos,
            eog,
            // a SentencePiece file that does not say adds BOS (llama.cpp, transformers)
            add_bos: g.get_bool("tokenizer.ggml.add_bos_token")?.unwrap_or(model == "llama"),
            append: match g.get_bool("tokenizer.ggml.add_eos_token")? {
                Some(true) => eos,
                _ => None,
            },
            chat_template: match g.get_str("tokenizer.chat_template")? {
                Some(t) => Some(t.to_string()),
                // the family's own for a file that carries none (Gemma's
                // turn format for the 270M base model)
                None => {
                    let arch = g.get_str("general.architecture")?.unwrap_or("");
                    Family::by_gguf_name(arch).ok().and_then(|f| f.chat_template).map(Into::into)
                }
            },
            model: model.to_string(),
            pre: pre.to_string(),
        };
        if let Ok(n_vocab) = crate::tensors::n_vocab(g) {
            tok.check_fits(n_vocab)?;
        }
        Ok(tok)
    }
}

/// Byte-level BPE (`gpt2`): the merges the file lists, the pre-tokenizer
/// it names; each token's bytes through GPT-2's byte alphabet.
fn byte_level(g: &Gguf, pre: &str, tokens: &[&str], types: &[i64]) -> Result<(tokenizers::Tokenizer, Vec<Vec<u8>>)> {
    let pre_tok: PreTokenizerWrapper = match pre {
        "qwen2" | "deepseek-r1-qwen" => split_then_bytes(QWEN2_REGEX)?,
        "llama3" | "llama-bpe" | "smaug-bpe" => split_then_bytes(LLAMA3_REGEX)?,
        "smollm" | "gpt2" | "default" => ByteLevel::new(false, true, true).into(),
        other => {
            return Err(Error::UnsupportedTokenizer { model: alloc::format!("gpt2 with pre-tokenizer {other:?}") })
        }
    };
    let merges: Vec<(String, String)> = strings(g, "tokenizer.ggml.merges", 2 * MAX_VOCAB)?
        .into_iter()
        .map(|m| {
            m.split_once(' ')
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .ok_or_else(|| Error::Tokenizer { detail: alloc::format!("merge {m:?} has no space") })
        })
        .collect::<Result<_>>()?;
    let mut vocab = tokenizers::models::bpe::Vocab::default();
    for (i, t) in tokens.iter().enumerate() {
        vocab.entry(t.to_string()).or_insert(i as u32);
    }
    let bpe = BPE::builder().vocab_and_merges(vocab, merges).build().map_err(tok_err)?;
    let mut inner = tokenizers::Tokenizer::new(bpe);
    inner.with_pre_tokenizer(Some(pre_tok));

    let chars = byte_chars();
    let mut char_byte: HashMap<char, u8> = HashMap::new();
    for (b, &c) in chars.iter().enumerate() {
        char_byte.insert(c, b as u8);
    }
    let token_bytes = tokens
        .iter()
        .zip(types)
        .map(|(t, &ty)| {
            if ty == TOKEN_CONTROL || ty == TOKEN_USER_DEFINED {
                return t.as_bytes().to_vec();
            }
            let mut out = Vec::with_capacity(t.len());
            for c in t.chars() {
                match char_byte.get(&c) {
                    Some(&b) => out.push(b),
                    None => out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes()),
                }
            }
            out
        })
        .collect();
    Ok((inner, token_bytes))
}

fn split_then_bytes(regex: &str) -> Result<PreTokenizerWrapper> {
    let split =
        Split::new(SplitPattern::Regex(regex.to_string()), SplitDelimiterBehavior::Isolated, false).map_err(tok_err)?;
    Ok(Sequence::new(alloc::vec![split.into(), ByteLevel::new(false, true, false).into()]).into())
}
