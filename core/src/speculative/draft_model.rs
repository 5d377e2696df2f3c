//! A draft model: a smaller model with the target's vocabulary, run
//! greedily on its own session. Its cache follows the sequence: each draft
//! first drops what the target rejected and feeds what it has not seen.

use alloc::vec::Vec;
use core::ops::Deref;

use super::{Drafter, Evidence};
use crate::error::Result;
use crate::model::{Engine, Logits, Model, Session};
use crate::sampler::argmax;

/// A model drafting for another.
pub struct DraftModel<M> {
    model: M,
    session: Session,
    p_min: f32,
    feed: Vec<u32>,
}

impl<M, B> DraftModel<M>
where
    M: Deref<Target = Model<B>>,
    B: AsRef<[u8]>,
{
    /// Draft with `model` (its vocabulary the target's: see
    /// [`crate::Tokenizer::first_difference`]) in a session of `n_ctx`
    /// positions and `n_batch`-token steps, stopping at a token it gives
    /// less than `p_min` probability.
    pub fn new(model: M, n_ctx: usize, n_batch: usize, p_min: f32) -> Self {
        let session = model.session(n_ctx, n_batch);
        DraftModel { model, session, p_min, feed: Vec::new() }
    }
}

impl<M, B> Drafter for DraftModel<M>
where
    M: Deref<Target = Model<B>> + Send,
    B: AsRef<[u8]>,
{
    fn draft(&mut self, e: &Engine, history: &[u32], last: u32, max: usize, out: &mut Vec<u32>) -> Result<Evidence> {
        out.clear();
        let s = &mut self.session;
        // keep what the draft's cache shares with the sequence, all but
        // the last token at most (its logits are needed); feed the rest
        let mut keep = s.common_prefix(history);
        if keep == history.len() && s.tokens().get(keep) == Some(&last) {
            keep += 1;
        }
        let keep = s.truncate(keep.min(history.len()));
        self.feed.clear();
        self.feed.extend_from_slice(&history[keep..]);
        self.feed.push(last);
        let room = s.n_ctx().saturating_sub(history.len() + 1);
        let mut logits = s.forward(&self.model, e, &self.feed, Logits::Last)?;
        for _ in 0..max.min(room) {
            let id = argmax(logits);
            // (p_min 0 takes every token: no softmax to compute)
            if self.p_min > 0.0 && top_probability(logits, id) < self.p_min {
                break;
            }
            out.push(id);
            if out.len() == max.min(room) {
                break;
            }
            logits = s.forward(&self.model, e, &[id], Logits::Last)?;
        }
        Ok(Evidence::Firm)
    }
}

/// Softmax probability of `id`, the row's largest logit.
fn top_probability(logits: &[f32], id: u32) -> f32 {
    let top = logits[id as usize];
    let sum: f32 = logits.iter().map(|&l| libm::expf(l - top)).sum();
    1.0 / sum
}
