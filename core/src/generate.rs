//! The decode loop: prefill the prompt, then sample, check stops and feed
//! each new token back, reusing the KV cache (the prefix is never re-run).

use alloc::vec::Vec;

use crate::error::Result;
use crate::model::{Engine, Logits, Model, Session};
use crate::sampler::Sampler;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// An end-of-generation token was sampled.
    Stop,
    /// `max_tokens` were generated.
    Length,
}

impl FinishReason {
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
        }
    }
}

/// What the loop reports for each step.
pub struct Step<'a> {
    pub index: usize,
    pub token: u32,
    /// The logits the token was sampled from.
    pub logits: &'a [f32],
}

/// Generate up to `max_tokens` after `prompt` (which must be non-empty and
/// is appended to whatever `session` already holds). `is_stop` says which
/// sampled tokens end generation (they are reported but not fed back).
#[allow(clippy::too_many_arguments)]
pub fn generate<B: AsRef<[u8]>>(
    model: &Model<B>,
    engine: &Engine,
    session: &mut Session,
    sampler: &mut Sampler,
    prompt: &[u32],
    max_tokens: usize,
    is_stop: impl Fn(u32) -> bool,
    mut on_step: impl FnMut(Step) -> Result<()>,
) -> Result<(Vec<u32>, FinishReason)> {
    let mut history: Vec<u32> = prompt.to_vec();
    let mut out = Vec::with_capacity(max_tokens);
    if max_tokens == 0 {
        return Ok((out, FinishReason::Length));
    }
    let mut logits = session.forward(model, engine, prompt, Logits::Last)?;
    loop {
        let token = sampler.sample(logits, &history);
        on_step(Step { index: out.len(), token, logits })?;
        out.push(token);
        history.push(token);
        if is_stop(token) {
            return Ok((out, FinishReason::Stop));
        }
        if out.len() >= max_tokens {
            return Ok((out, FinishReason::Length));
        }
        logits = session.forward(model, engine, &[token], Logits::Last)?;
    }
}
