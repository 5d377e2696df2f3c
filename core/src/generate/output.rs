//! What a generation reports and how it is measured: the configuration,
//! events, the result with usage and timings, the text output with stop
//! strings held back, and the stopwatch.

use crate::model::AdapterSet;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::AtomicBool;

use super::logprobs::TokenLogprob;
use crate::sampler::SamplerConfig;
use crate::utf8::Utf8Stream;

/// What generation needs of a tokenizer.
pub trait Vocab {
    /// The bytes a token stands for.
    fn token_bytes(&self, id: u32) -> &[u8];
    /// Whether a token ends generation (EOS, end of turn).
    fn is_eog(&self, id: u32) -> bool;
}

/// What to generate: length, sampling, stops.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerateConfig {
    /// At most this many new tokens.
    pub max_tokens: usize,
    /// The sampler chain.
    pub sampler: SamplerConfig,
    /// Stop strings (never emitted).
    pub stop: Vec<String>,
    /// Extra stop token ids.
    pub stop_tokens: Vec<u32>,
    /// Do not stop at the model's end-of-generation tokens.
    pub ignore_eos: bool,
    /// Report each token's log-probability with this many most likely
    /// alternatives (at most [`super::MAX_TOP_LOGPROBS`]); None: none.
    pub logprobs: Option<usize>,
    /// Generate at least this many tokens: `end_ids` cannot be sampled
    /// before (a finished grammar still ends the output).
    pub min_tokens: usize,
    /// The tokens `min_tokens` holds back (the end-of-generation and stop
    /// tokens; filled by `Bundle::prepare`).
    pub end_ids: Vec<u32>,
    /// llama-server's `t_max_predict_ms`: end (`length`) at a token
    /// holding a newline once this many milliseconds have passed since
    /// the first token.
    pub max_predict_ms: Option<u64>,
    /// The LoRA adapters the sequence runs with (its session takes them
    /// before the prefill; a cache computed with others is dropped).
    pub adapters: AdapterSet,
}

impl Default for GenerateConfig {
    fn default() -> Self {
        GenerateConfig {
            max_tokens: 256,
            sampler: SamplerConfig::default(),
            stop: Vec::new(),
            stop_tokens: Vec::new(),
            ignore_eos: false,
            logprobs: None,
            min_tokens: 0,
            end_ids: Vec::new(),
            max_predict_ms: None,
            adapters: AdapterSet::new(),
        }
    }
}

impl GenerateConfig {
    /// The sampler's settings in range and `logprobs` at most
    /// [`super::MAX_TOP_LOGPROBS`]: an error naming the first that is not.
    pub fn validate(&self) -> crate::error::Result<()> {
        self.sampler.validate()?;
        match self.logprobs {
            Some(n) if n > super::MAX_TOP_LOGPROBS => Err(crate::Error::InvalidArgument {
                what: alloc::format!("{n} top logprobs (at most {})", super::MAX_TOP_LOGPROBS),
            }),
            _ => Ok(()),
        }
    }
}

/// Why a generation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// A stop token or stop string.
    Stop,
    /// `max_tokens` were generated.
    Length,
    /// Cancelled by the caller.
    Cancelled,
}

impl FinishReason {
    /// The OpenAI name: `stop`, `length` or `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::Cancelled => "cancelled",
        }
    }
}

/// Token counts of a generation.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// Tokens of the prompt (the whole sequence the cache had to hold).
    pub prompt_tokens: usize,
    /// Of those, already in the session's cache (not prefilled again).
    pub cached_tokens: usize,
    /// Tokens generated.
    pub completion_tokens: usize,
    /// Tokens drafted for speculative decoding (0 without it).
    pub draft_tokens: usize,
    /// Of those, accepted: generated without a forward pass of their own.
    pub accepted_draft_tokens: usize,
}

/// Milliseconds, from the clock given to the generator.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Timings {
    /// Prefill time.
    pub prefill_ms: f64,
    /// From the start to the first sampled token.
    pub first_token_ms: f64,
    /// Between consecutive tokens (decode steps), percentiles.
    pub per_token_p50_ms: f64,
    /// 90th percentile of the time between tokens.
    pub per_token_p90_ms: f64,
    /// 99th percentile of the time between tokens.
    pub per_token_p99_ms: f64,
    /// From the start to the end.
    pub total_ms: f64,
    /// Prefilled tokens per second.
    pub prompt_tokens_per_s: f64,
    /// Decoded tokens per second after the first.
    pub tokens_per_s: f64,
}

/// What a generation produced.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationResult {
    /// The generated token ids.
    pub tokens: Vec<u32>,
    /// Their text (without any stop string).
    pub text: String,
    /// Why it ended.
    pub finish_reason: FinishReason,
    /// Token counts.
    pub usage: Usage,
    /// Timings.
    pub timings: Timings,
    /// Each token's log-probability, if asked for (`GenerateConfig::logprobs`).
    pub logprobs: Vec<TokenLogprob>,
    /// The stop string that ended it, if one did (llama-server's
    /// `stopping_word`, Anthropic's `stop_sequence`).
    pub stop_string: Option<String>,
}

/// A step of a generation.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// A sampled token and the text it completes (may be empty: held back
    /// or an incomplete UTF-8 sequence). Deltas concatenate to the result's text.
    Token {
        /// The token's id.
        id: u32,
        /// Text it adds to the output.
        text: String,
        /// Its log-probability, if asked for.
        logprob: Option<TokenLogprob>,
    },
    /// The generation ended; its result.
    Done(GenerationResult),
}

/// A monotonic clock in nanoseconds (the host provides it; core has none).
pub type Clock = fn() -> u64;

pub(super) fn no_clock() -> u64 {
    0
}

/// Set to cancel a generation from another thread.
pub type CancelFlag = Arc<AtomicBool>;

/// What one sequence has produced so far, and the stop rules over it: the
/// part of generation shared by single and batched runs.
pub(crate) struct Output {
    stop: Vec<String>,
    stop_tokens: Vec<u32>,
    ignore_eos: bool,
    max_tokens: usize,
    pub tokens: Vec<u32>,
    text: String,
    emitted: usize,
    utf8: Utf8Stream,
    /// The stop string that ended the text, if one did.
    stopped_by: Option<String>,
}

impl Output {
    pub fn new(cfg: &GenerateConfig) -> Output {
        Output {
            stop: cfg.stop.clone(),
            stop_tokens: cfg.stop_tokens.clone(),
            ignore_eos: cfg.ignore_eos,
            max_tokens: cfg.max_tokens,
            tokens: Vec::with_capacity(cfg.max_tokens.min(1 << 16)),
            text: String::new(),
            emitted: 0,
            utf8: Utf8Stream::new(),
            stopped_by: None,
        }
    }

    /// Take a sampled token: the text it releases, and whether (and why)
    /// generation ends with it.
    pub fn accept(&mut self, vocab: &dyn Vocab, id: u32) -> (String, Option<FinishReason>) {
        self.tokens.push(id);
        if self.stop_tokens.contains(&id) || (!self.ignore_eos && vocab.is_eog(id)) {
            return (self.flush(), Some(FinishReason::Stop));
        }
        let delta = self.utf8.push(vocab.token_bytes(id));
        self.text.push_str(&delta);
        if let Some((at, k)) = self.find_stop() {
            self.stopped_by = Some(self.stop[k].clone());
            self.text.truncate(at);
            let text = String::from(&self.text[self.emitted.min(at)..]);
            self.emitted = at;
            return (text, Some(FinishReason::Stop));
        }
        if self.tokens.len() >= self.max_tokens {
            return (self.flush(), Some(FinishReason::Length));
        }
        let safe = self.text.len() - self.held_back();
        let text = String::from(&self.text[self.emitted..safe]);
        self.emitted = safe;
        (text, None)
    }

    /// End with `id`, an end-of-generation token forced by a finished
    /// constraint (its text not part of the output, even with `ignore_eos`).
    pub fn end(&mut self, id: u32) -> (String, Option<FinishReason>) {
        self.tokens.push(id);
        (self.flush(), Some(FinishReason::Stop))
    }

    /// Earliest stop string in the text, and which (they cannot lie
    /// wholly in text emitted already, so search from just before it).
    fn find_stop(&self) -> Option<(usize, usize)> {
        let longest = self.stop.iter().map(String::len).max()?;
        let mut from = self.emitted.saturating_sub(longest);
        while !self.text.is_char_boundary(from) {
            from -= 1;
        }
        self.stop
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.is_empty())
            .filter_map(|(k, s)| self.text[from..].find(s.as_str()).map(|i| (from + i, k)))
            .min()
    }

    /// Length of the longest text suffix that begins some stop string.
    fn held_back(&self) -> usize {
        let mut held = 0;
        for s in &self.stop {
            for k in (1..s.len()).rev() {
                if k <= held || k > self.text.len() - self.emitted {
                    continue;
                }
                let start = self.text.len() - k;
                if self.text.is_char_boundary(start) && s.as_bytes().starts_with(&self.text.as_bytes()[start..]) {
                    held = k;
                    break;
                }
            }
        }
        held
    }

    /// All remaining text, at the end of generation.
    pub fn flush(&mut self) -> String {
        let tail = self.utf8.finish();
        self.text.push_str(&tail);
        let out = String::from(&self.text[self.emitted..]);
        self.emitted = self.text.len();
        out
    }

    /// The final tokens and text.
    pub fn take(&mut self) -> (Vec<u32>, String, Option<String>) {
        (core::mem::take(&mut self.tokens), core::mem::take(&mut self.text), self.stopped_by.take())
    }
}

/// Times of one generation, in clock nanoseconds.
#[derive(Default)]
pub(crate) struct Stopwatch {
    t0: u64,
    t_prefill: u64,
    t_first: u64,
    t_last: u64,
    n: usize,
    steps_ns: Vec<u64>,
}

impl Stopwatch {
    pub fn start(now: u64, cap: usize) -> Stopwatch {
        Stopwatch { t0: now, steps_ns: Vec::with_capacity(cap.min(1 << 16)), ..Default::default() }
    }
    pub fn prefilled(&mut self, now: u64) {
        self.t_prefill = now;
    }
    /// Nanoseconds since the first token (0 before it).
    pub fn since_first(&self, now: u64) -> u64 {
        if self.n == 0 {
            0
        } else {
            now.saturating_sub(self.t_first)
        }
    }
    pub fn token(&mut self, now: u64) {
        if self.n == 0 {
            self.t_first = now;
        } else {
            self.steps_ns.push(now - self.t_last);
        }
        self.n += 1;
        self.t_last = now;
    }
    pub fn timings(&mut self, end: u64, prefilled: usize) -> Timings {
        let ms = |ns: u64| ns as f64 / 1e6;
        let steps = &mut self.steps_ns;
        steps.sort_unstable();
        let pct =
            |p: usize| steps.get((steps.len() * p / 100).min(steps.len().saturating_sub(1))).map_or(0.0, |&v| ms(v));
        let prefill = self.t_prefill.saturating_sub(self.t0);
        let decode = self.t_last.saturating_sub(self.t_first);
        let per_s = |n: usize, ns: u64| {
            if ns > 0 {
                n as f64 / (ns as f64 / 1e9)
            } else {
                0.0
            }
        };
        Timings {
            prefill_ms: ms(prefill),
            first_token_ms: if self.n > 0 { ms(self.t_first.saturating_sub(self.t0)) } else { 0.0 },
            per_token_p50_ms: pct(50),
            per_token_p90_ms: pct(90),
            per_token_p99_ms: pct(99),
            total_ms: ms(end.saturating_sub(self.t0)),
            prompt_tokens_per_s: per_s(prefilled, prefill),
            tokens_per_s: per_s(steps.len(), decode),
        }
    }
}
