//! One sequence's sampling, stop rules, usage and timings, for a host that
//! runs the forward passes itself (batched decoding, a serving scheduler
//! that mixes prefill chunks with decode steps): the host fills the cache,
//! this samples from the logits it got and says when the sequence ends.

use alloc::string::String;

use super::output::{Clock, FinishReason, GenerateConfig, GenerationResult, Output, Stopwatch, Usage, Vocab};
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
}

impl Sequence {
    /// A sequence over a prompt of `prompt_len` tokens of which `cached`
    /// are already in its session (see `generate::prefill_start`).
    pub fn new(cfg: &GenerateConfig, prompt_len: usize, cached: usize, clock: Clock) -> Sequence {
        Sequence {
            sampler: Sampler::new(cfg.sampler.clone()),
            out: Output::new(cfg),
            usage: Usage { prompt_tokens: prompt_len, cached_tokens: cached, completion_tokens: 0 },
            watch: Stopwatch::start(clock(), cfg.max_tokens.min(1 << 16)),
            clock,
            seed: cfg.sampler.seed,
        }
    }

    /// The whole prompt is in the cache: seed the session's RNG as asked.
    pub fn prefilled(&mut self, session: &mut Session) {
        self.watch.prefilled((self.clock)());
        if let Some(seed) = self.seed {
            session.rng = Rng::new(seed);
        }
    }

    /// Sample the next token from `logits` (this sequence's row; None: the
    /// session's last computed row) with the session's RNG and history:
    /// the token, the text it releases, and the result if it ends here.
    pub fn sample(
        &mut self,
        session: &mut Session,
        logits: Option<&[f32]>,
        vocab: &dyn Vocab,
    ) -> (u32, String, Option<GenerationResult>) {
        let id = match logits {
            Some(l) => session.sample_with(&mut self.sampler, l),
            None => session.sample_last(&mut self.sampler),
        };
        self.watch.token((self.clock)());
        let (text, end) = self.out.accept(vocab, id);
        (id, text, end.map(|r| self.finish(r)))
    }

    /// End now (`cancelled`, or `length` for a sequence allowed no tokens).
    pub fn finish(&mut self, reason: FinishReason) -> GenerationResult {
        let u = &mut self.usage;
        let timings = self.watch.timings((self.clock)(), u.prompt_tokens - u.cached_tokens);
        let (tokens, text) = self.out.take();
        u.completion_tokens = tokens.len();
        GenerationResult { tokens, text, finish_reason: reason, usage: *u, timings }
    }

    /// Tokens sampled so far.
    pub fn n_generated(&self) -> usize {
        self.out.tokens.len()
    }
}
