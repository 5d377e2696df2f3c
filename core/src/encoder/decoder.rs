//! A decoder as an embedding model (Qwen3-Embedding, gte-Qwen2): the
//! causal LM's own forward pass, each input alone in a session of its own
//! length, the final norm's output pooled (usually the last token's) as the
//! model says.

use alloc::format;
use alloc::vec::Vec;

use super::{Pooling, PoolingMode};
use crate::error::{Error, Result};
use crate::gguf::Gguf;
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
    /// The pooled (and, as the pooling says, normalised) vector of each
    /// input. Inputs never share a pass, so a vector is the same bits
    /// whatever else is embedded with it.
    pub fn embed(&self, e: &Engine, inputs: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        let dim = self.model.config.n_embd;
        let want = match self.pooling.mode {
            PoolingMode::Last => Logits::Last,
            PoolingMode::Mean | PoolingMode::Cls => Logits::All,
        };
        inputs
            .iter()
            .map(|&ids| {
                if ids.is_empty() {
                    return Err(Error::InvalidArgument { what: "an input of no tokens".into() });
                }
                let mut session = self.model.session(ids.len(), ids.len().min(STEP_TOKENS));
                let hidden = session.hidden(&self.model, e, ids, want)?;
                let mut v = alloc::vec![0.0; dim];
                self.pooling.pool(hidden, hidden.len() / dim, dim, &mut v);
                Ok(v)
            })
            .collect()
    }
}

impl Pooling {
    /// A decoder GGUF's `{arch}.pooling_type` (llama.cpp's numbers: 1
    /// mean, 2 CLS, 3 last), normalised as llama.cpp's embeddings are by
    /// default; None when absent or 0 (a generation model).
    pub fn from_gguf_decoder(g: &Gguf) -> Result<Option<Pooling>> {
        let arch = g.get_str("general.architecture")?.unwrap_or_default();
        let key = format!("{arch}.pooling_type");
        let mode = match g.get_u64(&key)? {
            None | Some(0) => return Ok(None),
            Some(1) => PoolingMode::Mean,
            Some(2) => PoolingMode::Cls,
            Some(3) => PoolingMode::Last,
            Some(n) => return Err(Error::Unsupported { what: format!("{key} {n}") }),
        };
        Ok(Some(Pooling { mode, normalize: true }))
    }
}
