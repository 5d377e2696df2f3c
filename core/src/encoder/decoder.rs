//! A decoder as an embedding model (Qwen3-Embedding, gte-Qwen2): the
//! causal LM's own forward pass, each input alone in a session of its own
//! length, the final norm's output pooled (usually the last token's) as the
//! model says.

use alloc::format;
use alloc::vec::Vec;

use super::{Pooling, PoolingMode};
use crate::error::{Error, Result};
use crate::model::{Engine, Logits, Model, Session};

/// Tokens one forward call of an input takes at most (longer inputs run in
/// parts, which changes no result).
const STEP_TOKENS: usize = 256;

/// An input part-way through its forward pass ([`Decoder::advance`]): a
/// server runs a long input a budget of tokens at a time between its other
/// work, with the same result as at once.
pub struct Progress {
    session: Session,
    /// Hidden rows kept so far (all of them, unless pooled by the last).
    rows: Vec<f32>,
}

impl Progress {
    /// Tokens of the input already run.
    pub fn done(&self) -> usize {
        self.session.n_past()
    }
}

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
        inputs
            .iter()
            .map(|&ids| {
                let mut p = self.start(ids, max_len)?;
                let v = self.advance(e, ids, &mut p, usize::MAX)?;
                Ok(v.expect("an unbounded budget runs the whole input"))
            })
            .collect()
    }

    /// Begin embedding `ids` (checked as [`Decoder::check_input`] says).
    pub fn start(&self, ids: &[u32], max_len: usize) -> Result<Progress> {
        self.check_input(ids, max_len)?;
        let session = self.model.session(ids.len(), ids.len().min(STEP_TOKENS));
        Ok(Progress { session, rows: Vec::new() })
    }

    /// Run at most `budget` (at least one) more tokens of `ids` (the input
    /// `p` was started with). A row does not depend on the forward call it
    /// ran in (the kernels' batch invariance), so the vector, once the
    /// whole input has run, is the same bits however it was split.
    pub fn advance(&self, e: &Engine, ids: &[u32], p: &mut Progress, budget: usize) -> Result<Option<Vec<f32>>> {
        let dim = self.model.config.n_embd;
        let at = p.done();
        let left = ids.len() - at;
        let n = left.min(budget.max(1));
        let last = at + n == ids.len();
        let want = match self.pooling.mode {
            PoolingMode::Last if last => Logits::Last,
            PoolingMode::Last => Logits::None,
            PoolingMode::Mean | PoolingMode::Cls => Logits::All,
        };
        let hidden = p.session.hidden(&self.model, e, &ids[at..at + n], want)?;
        p.rows.extend_from_slice(hidden);
        if !last {
            return Ok(None);
        }
        let mut v = alloc::vec![0.0; dim];
        self.pooling.pool(&p.rows, p.rows.len() / dim, dim, &mut v);
        Ok(Some(v))
    }
}
