//! A SentencePiece vocabulary from a GGUF file (`tokenizer.ggml.model =
//! llama`: Llama 2, Mistral, TinyLlama, Gemma, Phi-3) as the `tokenizers`
//! crate's BPE with byte fallback — the shape transformers gives these
//! files: merges recovered from the vocabulary, ranked by the merged
//! token's score (Gemma: by its place in the file, as its scores do not
//! follow the merge order), spaces spelled `▁`.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use std::collections::HashMap;

use tokenizers::models::bpe::BPE;
use tokenizers::normalizers::{Prepend, Replace};
use tokenizers::pre_tokenizers::metaspace::{Metaspace, PrependScheme};
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::{NormalizerWrapper, SplitDelimiterBehavior};

use super::tok_err;
use crate::error::Result;

/// SentencePiece's space.
const SPACE: char = '\u{2581}';
/// Tokens longer than this take no part in merges: each split of a token
/// is a lookup of its parts, so a hostile file's megabyte-long tokens
/// would cost time quadratic in their length. Real SentencePiece pieces
/// are short (Gemma 3's longest: 48 bytes).
const MAX_MERGED_BYTES: usize = 256;
/// GGUF token type of byte tokens (`<0x0A>`).
pub(super) const TOKEN_BYTE: i64 = 6;

pub(super) use crate::model::family::SpmFlavor as Flavor;

impl Flavor {
    /// Whether decoding a whole sequence drops its first space (the
    /// decoder's `Strip`, which Gemma's lacks).
    pub(super) fn strips_first_space(self) -> bool {
        self != Flavor::Gemma
    }
}

/// The tokenizer of a SentencePiece vocabulary (`tokens`, `scores`), and
/// the bytes each token stands for.
pub(super) fn build(
    flavor: Flavor,
    tokens: &[&str],
    scores: &[f32],
    types: &[i64],
    unk: Option<&str>,
) -> Result<(tokenizers::Tokenizer, Vec<Vec<u8>>)> {
    // Gemma files store runs of spaces as spaces; its merges know them as `▁`s.
    let spelled: Vec<String> = tokens
        .iter()
        .map(|t| match flavor {
            Flavor::Gemma if t.contains(' ') && t.trim().is_empty() => t.chars().map(|_| SPACE).collect(),
            _ => t.to_string(),
        })
        .collect();
    let mut vocab = tokenizers::models::bpe::Vocab::default();
    for (i, t) in spelled.iter().enumerate() {
        vocab.insert(t.clone(), i as u32); // a repeated token: the last one, as transformers
    }
    let rank: Vec<f64> = match flavor {
        Flavor::Gemma => (0..spelled.len()).map(|i| -(i as f64)).collect(),
        _ => scores.iter().map(|&s| s as f64).collect(),
    };
    let merges = merges(&spelled, &rank, &vocab);
    let mut bpe = BPE::builder().vocab_and_merges(vocab, merges).byte_fallback(true).fuse_unk(true);
    if let (Some(unk), Flavor::Gemma) = (unk, flavor) {
        bpe = bpe.unk_token(unk.to_string());
    }
    let mut inner = tokenizers::Tokenizer::new(bpe.build().map_err(tok_err)?);
    // (decoding is tern's own, from the tokens' bytes: no decoder is set)
    let replace = || Replace::new(" ", SPACE.to_string()).map_err(tok_err);
    match flavor {
        Flavor::Llama => {
            inner.with_pre_tokenizer(Some(Metaspace::new(SPACE, PrependScheme::First, false)));
        }
        Flavor::Phi3 => {
            let norms: Vec<NormalizerWrapper> = alloc::vec![Prepend::new(SPACE.to_string()).into(), replace()?.into()];
            inner.with_normalizer(Some(tokenizers::normalizers::Sequence::new(norms)));
        }
        Flavor::Gemma => {
            inner.with_normalizer(Some(replace()?));
            let split = Split::new(SplitPattern::String(" ".into()), SplitDelimiterBehavior::MergedWithPrevious, false)
                .map_err(tok_err)?;
            inner.with_pre_tokenizer(Some(split));
        }
    }

    let token_bytes = tokens.iter().zip(types).map(|(t, &ty)| bytes_of(t, ty)).collect();
    Ok((inner, token_bytes))
}

/// The bytes a token stands for: `<0xAB>` byte tokens their byte, others
/// their text with `▁` as a space.
fn bytes_of(token: &str, ty: i64) -> Vec<u8> {
    if ty == TOKEN_BYTE {
        let hex = token.strip_prefix("<0x").and_then(|h| h.strip_suffix('>'));
        if let Some(b) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
            return alloc::vec![b];
        }
    }
    token.replace(SPACE, " ").into_bytes()
}

/// The merges a SentencePiece vocabulary implies, as transformers recovers
/// them: every split of a token into two tokens, best first — by the merged
/// token's rank, then the longer left part, then the longer right part;
/// ties keep vocabulary order (the splits of one token: by the parts' ids).
fn merges(tokens: &[String], rank: &[f64], vocab: &tokenizers::models::bpe::Vocab) -> Vec<(String, String)> {
    // the first place each token appears, with its last rank (a dict's order)
    let mut first: HashMap<&str, usize> = HashMap::new();
    let mut order: Vec<(&str, f64)> = Vec::new();
    for (t, &r) in tokens.iter().zip(rank) {
        match first.get(t.as_str()) {
            Some(&at) => order[at].1 = r,
            None => {
                first.insert(t, order.len());
                order.push((t, r));
            }
        }
    }
    let mut all: Vec<(f64, usize, usize, u32, u32, &str, &str)> = Vec::new();
    for (t, r) in order.into_iter().filter(|(t, _)| t.len() <= MAX_MERGED_BYTES) {
        let mut local = Vec::new();
        for (at, _) in t.char_indices().skip(1) {
            let (l, rt) = t.split_at(at);
            if let (Some(&li), Some(&ri)) = (vocab.get(l), vocab.get(rt)) {
                local.push((r, l.chars().count(), rt.chars().count(), li, ri, l, rt));
            }
        }
        local.sort_by_key(|m| (m.3, m.4));
        all.extend(local);
    }
    all.sort_by(|a, b| (b.0, b.1, b.2).partial_cmp(&(a.0, a.1, a.2)).unwrap_or(core::cmp::Ordering::Equal));
    all.into_iter().map(|m| (m.5.to_string(), m.6.to_string())).collect()
}
