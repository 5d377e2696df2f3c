//! Pair encoding, as a cross-encoder takes (query, document): both texts
//! tokenized, the longer cut first until the pair and the template's
//! special tokens fit (HF's `longest_first`), then laid out by the
//! post-processor's pair template with each token's type (segment).

use alloc::vec::Vec;

use serde_json::Value;
use tokenizers::utils::truncation::{truncate_encodings, TruncationDirection, TruncationParams, TruncationStrategy};

use super::Tokenizer;
use crate::error::{Error, Result};

/// One piece of a pair template, with the token type it gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Piece {
    /// A special token's id.
    Special(u32, u32),
    /// The first text's tokens.
    First(u32),
    /// The second text's tokens.
    Second(u32),
}

/// tokenizer.json's post-processor's pair template (BERT's `[CLS] A [SEP]
/// B [SEP]`, RoBERTa's `<s> A </s></s> B </s>`, a `TemplateProcessing`'s
/// `pair`), if it has one whose tokens are all in the vocabulary.
pub(super) fn template(v: &Value, id: &dyn Fn(&str) -> Option<u32>) -> Option<Vec<Piece>> {
    let token = |p: &str| id(v.pointer(p)?.as_str()?);
    match v.get("type")?.as_str()? {
        "BertProcessing" => {
            let (cls, sep) = (token("/cls/0")?, token("/sep/0")?);
            Some(alloc::vec![
                Piece::Special(cls, 0),
                Piece::First(0),
                Piece::Special(sep, 0),
                Piece::Second(1),
                Piece::Special(sep, 1)
            ])
        }
        "RobertaProcessing" => {
            let (cls, sep) = (token("/cls/0")?, token("/sep/0")?);
            let s = |t| Piece::Special(t, 0);
            Some(alloc::vec![s(cls), Piece::First(0), s(sep), s(sep), Piece::Second(0), s(sep)])
        }
        "TemplateProcessing" => v
            .get("pair")?
            .as_array()?
            .iter()
            .map(|p| {
                if let Some(s) = p.get("SpecialToken") {
                    Some(Piece::Special(id(s.get("id")?.as_str()?)?, s.get("type_id")?.as_u64()? as u32))
                } else {
                    let s = p.get("Sequence")?;
                    let ty = s.get("type_id")?.as_u64()? as u32;
                    match s.get("id")?.as_str()? {
                        "A" => Some(Piece::First(ty)),
                        "B" => Some(Piece::Second(ty)),
                        _ => None,
                    }
                }
            })
            .collect(),
        "Sequence" => v.get("processors")?.as_array()?.iter().find_map(|p| template(p, id)),
        _ => None,
    }
}

impl Tokenizer {
    /// The model's input for the pair (`first`, `second`) and each token's
    /// type, at most `max_len` tokens: the longer text loses its last
    /// tokens first. An error if the tokenizer has no pair template.
    pub fn encode_pair(&self, first: &str, second: &str, max_len: usize) -> Result<(Vec<u32>, Vec<u32>)> {
        let template = self.pair.as_ref().ok_or_else(|| Error::Unsupported {
            what: "pairs with this tokenizer (its post-processor has no pair template)".into(),
        })?;
        let specials = template.iter().filter(|p| matches!(p, Piece::Special(..))).count();
        let params = TruncationParams {
            max_length: max_len.saturating_sub(specials),
            strategy: TruncationStrategy::LongestFirst,
            stride: 0,
            direction: TruncationDirection::Right,
        };
        let (a, b) = truncate_encodings(self.raw(first)?, Some(self.raw(second)?), &params).map_err(super::tok_err)?;
        let b = b.unwrap_or_default();
        let (mut ids, mut types) = (Vec::new(), Vec::new());
        for &p in template {
            let (part, ty) = match p {
                Piece::Special(id, ty) => {
                    ids.push(id);
                    types.push(ty);
                    continue;
                }
                Piece::First(ty) => (a.get_ids(), ty),
                Piece::Second(ty) => (b.get_ids(), ty),
            };
            ids.extend_from_slice(part);
            types.extend(core::iter::repeat_n(ty, part.len()));
        }
        Ok((ids, types))
    }
}
