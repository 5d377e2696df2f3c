//! One sequence's sampling, stop rules, usage and timings, for a host that
//! runs the forward passes itself (batched decoding, a serving scheduler
//! that mixes prefill chunks with decode steps): the host fills the cache,
//! this samples from the logits it got and says when the sequence ends.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use super::constraint::{mask_logits, Allowed, Constraint};
use super::logprobs::{token_logprob, TokenLogprob};
use super::output::{Clock, FinishReason, GenerateConfig, GenerationResult, Output, Stopwatch, Usage, Vocab};
use crate::error::Result;
use crate::model::Session;
use crate::sampler::{Rng, Sampler};

/// One sequence's sampling, stops, output and timings, for a host that runs the forward passes
/// itself.
pub struct Sequence {
    sampler: Sampler,
    out: Output,
    usage: Usage,
    watch: Stopwatch,
    clock: Clock,
    seed: Option<u64>,
    constraint: Option<Box<dyn Constraint>>,
    /// The logits with what the constraint forbids at −∞.
    masked: Vec<f32>,
    n_logprobs: Option<usize>,
    logprobs: Vec<TokenLogprob>,
    /// Tokens to hold back until `min_tokens` are out.
    min_tokens: usize,
    end_ids: Vec<u32>,
    max_predict_ns: Option<u64>,
}

/// A sampled token.
#[derive(Debug)]
pub struct Sampled {
    /// Its id.
    pub id: u32,
    /// The text it releases.
    pub text: String,
    /// Its log-probability, if asked for.
    pub logprob: Option<TokenLogprob>,
    /// The result, if the sequence ends with it.
    pub end: Option<GenerationResult>,
}

impl Sequence {
    /// A sequence over a prompt of `prompt_len` tokens of which `cached`
    /// are already in its session (see `generate::prefill_start`).
    pub fn new(cfg: &GenerateConfig, prompt_len: usize, cached: usize, clock: Clock) -> Sequence {
        Sequence {
            sampler: Sampler::new(cfg.sampler.clone()),
            out: Output::new(cfg),
            usage: Usage { prompt_tokens: prompt_len, cached_tokens: cached, ..Usage::default() },
            watch: Stopwatch::start(clock(), cfg.max_tokens.min(1 << 16)),
            clock,
            seed: cfg.sampler.seed,
            constraint: None,
            min_tokens: cfg.min_tokens,
            end_ids: cfg.end_ids.clone(),
            max_predict_ns: cfg.max_predict_ms.map(|ms| ms.saturating_mul(1_000_000)),
            masked: Vec::new(),
            n_logprobs: cfg.logprobs,
            logprobs: Vec::new(),
        }
    }

    /// Sample only what `c` allows (see [`Constraint`]).
    pub fn constrain(&mut self, c: Box<dyn Constraint>) {
        self.constraint = Some(c);
    }

    /// The whole prompt is in the cache: seed the session's RNG as asked.
    pub fn prefilled(&mut self, session: &mut Session) {
        self.watch.prefilled((self.clock)());
        if let Some(seed) = self.seed {
            session.rng = Rng::new(seed);
        }
    }

    /// Sample the next token from `logits` (this sequence's row; None: the
    /// session's last computed row) with the session's RNG and history, and
    /// the constraint's mask if there is one.
    pub fn sample(&mut self, session: &mut Session, logits: Option<&[f32]>, vocab: &dyn Vocab) -> Result<Sampled> {
        let (last, rng, history) = session.sampling_parts();
        let row = logits.unwrap_or(last);
        self.take(row, history, rng, None, vocab).map(|(s, _)| s)
    }

    /// The next token from `row`, the logits after the session's first
    /// `n_history` tokens, where a draft proposed `draft` (see
    /// [`crate::runtime::Sampler::verify`]): the token, as `sample` gives
    /// it, and whether it is the draft's. The constraint's mask applies
    /// first, so a draft it forbids is never taken.
    pub fn verify(
        &mut self,
        session: &mut Session,
        row: &[f32],
        n_history: usize,
        draft: u32,
        vocab: &dyn Vocab,
    ) -> Result<(Sampled, bool)> {
        let (_, rng, history) = session.sampling_parts();
        let history = &history[..n_history.min(history.len())];
        self.take(row, history, rng, Some(draft), vocab)
    }

    /// Drafted tokens, and how many of them were accepted, for the result.
    pub fn count_drafts(&mut self, drafted: usize, accepted: usize) {
        self.usage.draft_tokens += drafted;
        self.usage.accepted_draft_tokens += accepted;
    }

    fn take(
        &mut self,
        row: &[f32],
        history: &[u32],
        rng: &mut Rng,
        draft: Option<u32>,
        vocab: &dyn Vocab,
    ) -> Result<(Sampled, bool)> {
        let mut forced_end = false;
        // the end tokens held back until min_tokens are out
        let hold = self.out.tokens.len() < self.min_tokens && !self.end_ids.is_empty();
        let allowed = match self.constraint.as_deref_mut() {
            Some(c) => c.allowed()?,
            None => Allowed::Any,
        };
        let pick = |s: &mut Sampler, x: &[f32], rng: &mut Rng| match draft {
            Some(d) => s.verify(x, history, rng, d),
            None => (s.sample(x, history, rng), false),
        };
        let (id, accepted) = match allowed {
            Allowed::Only(id) => (id, draft == Some(id)),
            Allowed::End(id) => {
                forced_end = true;
                (id, draft == Some(id))
            }
            Allowed::Any if !hold => pick(&mut self.sampler, row, rng),
            a => {
                match a {
                    Allowed::Mask(bits) => mask_logits(row, bits, &mut self.masked),
                    _ => {
                        self.masked.clear();
                        self.masked.extend_from_slice(row);
                    }
                }
                if hold {
                    for &e in &self.end_ids {
                        if let Some(l) = self.masked.get_mut(e as usize) {
                            *l = f32::NEG_INFINITY;
                        }
                    }
                }
                pick(&mut self.sampler, &self.masked, rng)
            }
        };
        let logprob = self.n_logprobs.map(|n| token_logprob(row, id, n));
        self.watch.token((self.clock)());
        let (mut text, mut end) = if forced_end { self.out.end(id) } else { self.out.accept(vocab, id) };
        // llama-server's t_max_predict_ms: out of time, at a newline
        if let (None, Some(limit)) = (end, self.max_predict_ns) {
            if text.contains('\n') && self.watch.since_first((self.clock)()) > limit {
                text.push_str(&self.out.flush());
                end = Some(FinishReason::Length);
            }
        }
        if let (None, Some(c)) = (end, self.constraint.as_deref_mut()) {
            c.accept(id)?;
        }
        if let Some(lp) = &logprob {
            self.logprobs.push(lp.clone());
        }
        Ok((Sampled { id, text, logprob, end: end.map(|r| self.finish(r)) }, accepted))
    }

    /// End now (`cancelled`, or `length` for a sequence allowed no tokens).
    pub fn finish(&mut self, reason: FinishReason) -> GenerationResult {
        let u = &mut self.usage;
        let timings = self.watch.timings((self.clock)(), u.prompt_tokens - u.cached_tokens);
        let (tokens, text, stop_string) = self.out.take();
        u.completion_tokens = tokens.len();
        let logprobs = core::mem::take(&mut self.logprobs);
        GenerationResult { tokens, text, finish_reason: reason, usage: *u, timings, logprobs, stop_string }
    }

    /// Tokens sampled so far.
    pub fn n_generated(&self) -> usize {
        self.out.tokens.len()
    }
}
