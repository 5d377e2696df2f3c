//! A decoder as an embedding model (Qwen3-Embedding, gte-Qwen2): the
//! causal LM's own forward pass, each input alone in a session of its own
//! length, the final norm's output pooled (usually the last token's) as the
//! model says.

use alloc::format;
use alloc::vec::Vec;

use super::{Pooling, PoolingMode};
use crate::error::{Error, Result};
use crate::model::{Engine, Logits, Model};

/// Tokens one forward call of an input takes at most (longer inputs run in
/// parts, which changes no result).
const STEP_TOKENS: usize = 256;

/// A causal LM whose final hidden states are pooled into vectors.
pub struct Decoder<B> {
    /// The model.
    pub model: Model<B>,
    /// How an input's hidden states become one vector.
    pub pooling: Pooling,
}

impl<B: AsRef<[u8]>> Decoder<B> {
    /// Whether `ids` is an input the model takes: 1..=`max_len` ids, each
    /// in its vocabulary.
    pub fn check_input(&self, ids: &[u32], max_len: usize) -> Result<()> {
        let n_vocab = self.model.config.n_vocab;
        if ids.is_empty() {
            return Err(Error::InvalidArgument { what: "an input of no tokens".into() });
        }
        if ids.len() > max_len {
            return Err(Error::InvalidArgument {
                what: format!("an input of {} tokens (the model takes {max_len})", ids.len()),
            });
        }
        match ids.iter().find(|&&id| id as usize >= n_vocab) {
            Some(&id) => Err(Error::TokenOutOfRange { id, n_vocab }),
            None => Ok(()),
        }
    }

    /// The pooled (and, as the pooling says, normalised) vector of each
    /// input, each checked as [`Decoder::check_input`] says. Inputs never
    /// share a pass, so a vector is the same bits whatever else is embedded
    /// with it.
    pub fn embed(&self, e: &Engine, inputs: &[&[u32]], max_len: usize) -> Result<Vec<Vec<f32>>> {
        let dim = self.model.config.n_embd;
        let want = match self.pooling.mode {
            PoolingMode::Last => Logits::Last,
            PoolingMode::Mean | PoolingMode::Cls => Logits::All,
        };
        inputs
            .iter()
            .map(|&ids| {
                self.check_input(ids, max_len)?;
                let mut session = self.model.session(ids.len(), ids.len().min(STEP_TOKENS));
                let hidden = session.hidden(&self.model, e, ids, want)?;
                let mut v = alloc::vec![0.0; dim];
                self.pooling.pool(hidden, hidden.len() / dim, dim, &mut v);
                Ok(v)
            })
            .collect()
    }
}
