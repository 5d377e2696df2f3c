//! The tokenizer: the `tokenizers` crate's, built from a GGUF's embedded
//! vocabulary (`gguf`) or read from an HF `tokenizer.json` (`hf`), plus the
//! bytes each token stands for, special tokens and end-of-generation ids.

mod charsmap;
mod gguf;
mod hf;
mod literal;
mod pair;
mod spm;
mod wpm;

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::error::{Error, Result};

/// A model's tokenizer (the `tokenizers` crate underneath), with its special ids and chat template.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    /// The bytes each token stands for (special tokens: their text).
    token_bytes: Vec<Vec<u8>>,
    is_control: Vec<bool>,
    /// Beginning-of-sequence id.
    pub bos: Option<u32>,
    /// End-of-sequence id.
    pub eos: Option<u32>,
    /// End-of-turn / other ids that end generation (EOS included).
    pub eog: Vec<u32>,
    /// Whether encoding a prompt puts BOS first.
    pub add_bos: bool,
    /// A token encoding with special tokens puts last (BERT's `[SEP]`).
    pub append: Option<u32>,
    /// The chat template's source, if the model has one.
    pub chat_template: Option<String>,
    /// The tokenizer model's name (`gpt2`, `BPE`, ...).
    pub model: String,
    /// The pre-tokenizer's name (GGUF `tokenizer.ggml.pre`).
    pub pre: String,
    /// Control-token strings, to keep message content literal.
    literals: literal::Literals,
    /// The post-processor's pair template (cross-encoders' input).
    pair: Option<Vec<pair::Piece>>,
    /// Whether decoding a whole sequence drops its first space
    /// (SentencePiece's prefix space: the decoder's `Strip`).
    strip_first_space: bool,
}

pub(super) fn tok_err(e: impl core::fmt::Display) -> Error {
    Error::Tokenizer { detail: e.to_string() }
}

/// GPT-2's byte ↔ printable-char table: char for each byte.
pub(super) fn byte_chars() -> [char; 256] {
    let mut table = ['\0'; 256];
    let mut n = 0u32;
    for b in 0..256u32 {
        let printable = (33..=126).contains(&b) || (161..=172).contains(&b) || (174..=255).contains(&b);
        table[b as usize] = if printable {
            char::from_u32(b).unwrap_or('\0')
        } else {
            n += 1;
            char::from_u32(255 + n).unwrap_or('\0')
        };
    }
    table
}

/// Chat models end turns with these special tokens whatever the files
/// name as EOS.
pub(super) fn ends_turns(token: &str) -> bool {
    matches!(token, "<|im_end|>" | "<|endoftext|>" | "<|eot_id|>" | "<|end_of_text|>" | "<end_of_turn>")
}

impl Tokenizer {
    /// The control tokens' strings (what message content must not forge).
    fn literals(inner: &tokenizers::Tokenizer) -> Result<literal::Literals> {
        let specials = inner.get_added_tokens_decoder().into_values().filter(|t| t.special).map(|t| t.content);
        literal::Literals::new(specials.collect())
    }

    /// Tokens in the vocabulary.
    pub fn n_vocab(&self) -> usize {
        self.token_bytes.len()
    }

    /// The vocabulary must fit the model's: every id the tokenizer can
    /// produce has a row in the embedding and the output head.
    pub fn check_fits(&self, n_vocab: usize) -> Result<()> {
        let largest = [self.n_vocab().checked_sub(1), self.bos.map(|b| b as usize), self.eos.map(|e| e as usize)]
            .into_iter()
            .flatten()
            .chain(self.eog.iter().map(|&e| e as usize))
            .max();
        match largest {
            Some(id) if id >= n_vocab => Err(Error::Tokenizer {
                detail: alloc::format!(
                    "the vocabulary has token id {id}, but the model's embedding has {n_vocab} rows"
                ),
            }),
            _ => Ok(()),
        }
    }

    /// `text` through the tokenizers crate, no special tokens added.
    fn raw(&self, text: &str) -> Result<tokenizers::Encoding> {
        // Should the tokenizers crate panic on some input (it did on
        // Oniguruma's retry limit, before the regex engine was fancy-regex),
        // it is an error naming the input's size here, not a crash.
        std::panic::catch_unwind(core::panic::AssertUnwindSafe(|| self.inner.encode(text, false)))
            .map_err(|_| Error::Tokenizer {
                detail: alloc::format!(
                    "the pre-tokenizer's regex gave up on this text of {} bytes (too much backtracking)",
                    text.len()
                ),
            })?
            .map_err(tok_err)
    }

    /// Token ids of `text`; special-token strings in it become their ids.
    /// `add_special`: prepend BOS if the model asks for it.
    pub fn encode(&self, text: &str, add_special: bool) -> Result<Vec<u32>> {
        let enc = self.raw(text)?;
        let mut ids = Vec::with_capacity(enc.len() + 1);
        if add_special && self.add_bos {
            ids.extend(self.bos);
        }
        ids.extend_from_slice(enc.get_ids());
        if add_special {
            ids.extend(self.append);
        }
        Ok(ids)
    }

    /// The bytes a token stands for.
    pub fn token_bytes(&self, id: u32) -> &[u8] {
        self.token_bytes.get(id as usize).map_or(&[], |b| b.as_slice())
    }

    /// The most bytes one token stands for (at least 1): a text of more
    /// than `n × longest_token()` bytes cannot fit in `n` tokens.
    pub fn longest_token(&self) -> usize {
        self.token_bytes.iter().map(Vec::len).max().unwrap_or(0).max(1)
    }

    /// Whether `id` is a control token.
    pub fn is_control(&self, id: u32) -> bool {
        self.is_control.get(id as usize).copied().unwrap_or(false)
    }

    /// Whether `id` ends generation.
    pub fn is_eog(&self, id: u32) -> bool {
        self.eog.contains(&id)
    }

    /// The first token id whose text differs from `other`'s (or that one
    /// of the two lacks), with both texts; None when the vocabularies are
    /// the same — as a draft model's must be its target's. Token ids past
    /// either model's output rows are never sampled, so only the first
    /// `n_rows` are compared.
    pub fn first_difference(&self, other: &Tokenizer, n_rows: usize) -> Option<(u32, String, String)> {
        let n = self.n_vocab().max(other.n_vocab()).min(n_rows);
        let text = |t: &Tokenizer, id| String::from_utf8_lossy(t.token_bytes(id)).into_owned();
        (0..n as u32)
            .find(|&id| {
                self.token_bytes(id) != other.token_bytes(id) || (id as usize) >= self.n_vocab().min(other.n_vocab())
            })
            .map(|id| (id, text(self, id), text(other, id)))
    }

    /// Text of `ids` as a whole sequence, special tokens included (as the
    /// tokenizer's decoder gives it: a SentencePiece prefix space dropped);
    /// invalid UTF-8 becomes U+FFFD. Streamed text is the tokens' bytes
    /// ([`Tokenizer::token_bytes`]), prefix space included.
    pub fn decode(&self, ids: &[u32]) -> String {
        let bytes: Vec<u8> = ids.iter().flat_map(|&i| self.token_bytes(i).iter().copied()).collect();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        match text.strip_prefix(' ') {
            Some(rest) if self.strip_first_space => rest.to_string(),
            _ => text,
        }
    }

    /// The token string as stored in the vocabulary.
    pub fn token_str(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    /// The id of a token by its string in the vocabulary.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }
}

impl core::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Tokenizer({} {}, {} tokens)", self.model, self.pre, self.n_vocab())
    }
}

impl crate::generate::Vocab for Tokenizer {
    fn token_bytes(&self, id: u32) -> &[u8] {
        Tokenizer::token_bytes(self, id)
    }
    fn is_eog(&self, id: u32) -> bool {
        Tokenizer::is_eog(self, id)
    }
}
