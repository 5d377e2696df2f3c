//! Generation as a stream of events: prefill what the cache lacks, then
//! sample, check stops, feed each token back, until a stop, the length
//! limit or cancellation. Reuses the session's cache for any prefix it holds.
//!
//! Stop precedence, checked after each sampled token: (1) a stop token —
//! the model's end-of-generation tokens unless `ignore_eos`, and
//! `stop_tokens` — ends with `stop`, the token reported with empty text;
//! (2) a stop string anywhere in the generated text ends with `stop`, the
//! text cut before it (no byte of it is ever emitted: text that could be the
//! start of a stop string is held back until it cannot); (3) `max_tokens`
//! ends with `length`. Cancellation, checked before each forward step, ends
//! with `cancelled`.

use alloc::boxed::Box;
use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;

use crate::error::Result;
use crate::model::{Engine, Logits, Model, Session};
use crate::speculative::Speculation;

mod constraint;
mod logprobs;
mod output;
mod sequence;
mod speculate;
#[cfg(test)]
mod speculate_tests;

pub use constraint::{allows, Allowed, Constraint};
pub use logprobs::{TokenLogprob, MAX_TOP_LOGPROBS};
use output::no_clock;
pub use output::{CancelFlag, Clock, Event, FinishReason, GenerateConfig, GenerationResult, Timings, Usage, Vocab};
pub use sequence::{Sampled, Sequence};
pub use speculate::{verify, Verified};

/// One generation's own state (sampler, stops, output, timings): stepped
/// with the model, engine, vocabulary and session lent to each step, so a
/// host that cannot hold borrows across calls (the wasm bindings) can keep
/// it. `Generator` is the same with the parts held.
pub struct Generation {
    cfg: GenerateConfig,
    prompt: Vec<u32>,
    cancel: Option<CancelFlag>,
    constraint: Option<Box<dyn Constraint>>,
    clock: Clock,
    /// Sampling, stops and timings, from the start of the prefill.
    seq: Option<Sequence>,
    /// The last sampled token, still to be fed to the model.
    pending: Option<u32>,
    done: Option<GenerationResult>,
    finished: bool,
    /// Drafts verified several tokens a step, if asked for.
    spec: Option<Speculation>,
    /// Tokens a verified step took beyond the one it returned.
    queued: VecDeque<Event>,
}

/// What a step borrows.
pub struct Parts<'a, 'b, B> {
    /// The model.
    pub model: &'a Model<B>,
    /// What the forward passes run on.
    pub engine: &'a Engine<'b>,
    /// The vocabulary, for the tokens' text and end ids.
    pub vocab: &'a dyn Vocab,
    /// The session whose cache the generation fills.
    pub session: &'a mut Session,
}

impl Generation {
    /// Generate after `prompt`: the whole token sequence the session should
    /// hold before the first new token (a chat's full rendered history). The
    /// part of it already in the session's cache is not prefilled again.
    pub fn new(prompt: &[u32], cfg: GenerateConfig) -> Self {
        Generation {
            prompt: prompt.to_vec(),
            cfg,
            cancel: None,
            constraint: None,
            clock: no_clock,
            seq: None,
            pending: None,
            done: None,
            finished: false,
            spec: None,
            queued: VecDeque::new(),
        }
    }

    /// Decode speculatively: `spec` drafts tokens, each step verifies
    /// them in one forward pass (see [`crate::Speculation`]).
    pub fn with_speculation(mut self, spec: Speculation) -> Self {
        self.spec = Some(spec);
        self
    }

    /// End the generation (finish reason `cancelled`) once `flag` is set.
    pub fn with_cancel(mut self, flag: CancelFlag) -> Self {
        self.cancel = Some(flag);
        self
    }

    /// Measure timings with `clock` (none without one).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Sample only what `c` allows (a grammar, a JSON Schema: see
    /// [`crate::Grammar`]).
    pub fn with_constraint(mut self, c: Box<dyn Constraint>) -> Self {
        self.constraint = Some(c);
        self
    }

    /// The next event: tokens, then one `Done`; None after it (or after an error).
    pub fn next<B: AsRef<[u8]>>(&mut self, p: Parts<'_, '_, B>) -> Option<Result<Event>> {
        if let Some(e) = self.queued.pop_front() {
            return Some(Ok(e));
        }
        if let Some(r) = self.done.take() {
            return Some(Ok(Event::Done(r)));
        }
        if self.finished {
            return None;
        }
        let r = self.step(p);
        if r.is_err() {
            self.finished = true;
        }
        Some(r)
    }

    /// End now with `cancelled` (the host saw its own cancel signal): the
    /// `Done` event, or None if generation had already ended.
    pub fn cancel(&mut self) -> Option<Event> {
        if self.finished {
            return self.done.take().map(Event::Done);
        }
        Some(self.finish(FinishReason::Cancelled))
    }

    fn step<B: AsRef<[u8]>>(&mut self, mut p: Parts<'_, '_, B>) -> Result<Event> {
        if self.cancel.as_ref().is_some_and(|c| c.load(Ordering::Relaxed)) {
            return Ok(self.finish(FinishReason::Cancelled));
        }
        if self.seq.is_none() {
            if self.prompt.is_empty() {
                return Err(crate::Error::InvalidArgument { what: "an empty prompt".into() });
            }
            self.cfg.validate()?;
            p.session.set_adapters(&self.cfg.adapters);
            let keep = prefill_start(p.session, &self.prompt);
            let mut q = Sequence::new(&self.cfg, self.prompt.len(), keep, self.clock);
            if let Some(c) = self.constraint.take() {
                q.constrain(c);
            }
            if self.cfg.max_tokens == 0 {
                self.seq = Some(q);
                return Ok(self.finish(FinishReason::Length));
            }
            p.session.forward(p.model, p.engine, &self.prompt[keep..], Logits::Last)?;
            q.prefilled(p.session);
            self.seq = Some(q);
        } else if let Some(t) = self.pending.take() {
            if let Some(e) = self.speculate(&mut p, t)? {
                return Ok(e);
            }
            p.session.forward(p.model, p.engine, &[t], Logits::Last)?;
        }
        let q = self.seq.as_mut().expect("started above");
        let Sampled { id, text, logprob, end } = q.sample(p.session, None, p.vocab)?;
        match end {
            Some(r) => {
                self.finished = true;
                self.done = Some(r);
            }
            None => self.pending = Some(id),
        }
        Ok(Event::Token { id, text, logprob })
    }

    /// Feed `t` with a draft after it and verify the draft: the first
    /// token taken (the rest queued), or None when there is no draft
    /// (then `t` is fed plainly).
    fn speculate<B: AsRef<[u8]>>(&mut self, p: &mut Parts<'_, '_, B>, t: u32) -> Result<Option<Event>> {
        let (Some(spec), Some(q)) = (self.spec.as_mut(), self.seq.as_mut()) else { return Ok(None) };
        // drafts past the length limit are wasted
        let left = self.cfg.max_tokens.saturating_sub(q.n_generated() + 1);
        let fed = spec.step(p.engine, p.session, t, left, p.model.config.n_vocab)?;
        if fed.len() == 1 {
            return Ok(None);
        }
        p.session.forward(p.model, p.engine, fed, Logits::All)?;
        let drafts = &fed[1..];
        let (queued, done) = (&mut self.queued, &mut self.done);
        let v = p.session.with_rows(|session, rows| {
            verify(q, session, rows, drafts, p.vocab, |s| {
                if let Some(r) = s.end {
                    *done = Some(r);
                }
                queued.push_back(Event::Token { id: s.id, text: s.text, logprob: s.logprob });
            })
        })?;
        let drafted = drafts.len();
        spec.record(drafted, v.accepted);
        self.pending = v.next;
        self.finished = v.next.is_none();
        Ok(self.queued.pop_front())
    }

    fn finish(&mut self, reason: FinishReason) -> Event {
        self.finished = true;
        let (cfg, n, clock) = (&self.cfg, self.prompt.len(), self.clock);
        let q = self.seq.get_or_insert_with(|| Sequence::new(cfg, n, 0, clock));
        Event::Done(q.finish(reason))
    }
}

/// A generation with the model, engine, vocabulary and session it runs on.
pub struct Generator<'a, B> {
    model: &'a Model<B>,
    engine: Engine<'a>,
    vocab: &'a dyn Vocab,
    session: &'a mut Session,
    state: Generation,
}

impl<'a, B: AsRef<[u8]>> Generator<'a, B> {
    /// See `Generation::new`.
    pub fn new(
        model: &'a Model<B>,
        engine: Engine<'a>,
        vocab: &'a dyn Vocab,
        session: &'a mut Session,
        prompt: &[u32],
        cfg: GenerateConfig,
    ) -> Self {
        Generator { model, engine, vocab, session, state: Generation::new(prompt, cfg) }
    }

    /// `generation` (as `Bundle::prepare` makes it) run on these parts.
    pub fn over(
        model: &'a Model<B>,
        engine: Engine<'a>,
        vocab: &'a dyn Vocab,
        session: &'a mut Session,
        generation: Generation,
    ) -> Self {
        Generator { model, engine, vocab, session, state: generation }
    }

    /// End the generation (finish reason `cancelled`) once `flag` is set.
    pub fn with_cancel(mut self, flag: CancelFlag) -> Self {
        self.state = self.state.with_cancel(flag);
        self
    }

    /// Measure timings with `clock` (none without one).
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.state = self.state.with_clock(clock);
        self
    }

    /// Sample only what `c` allows (see `Generation::with_constraint`).
    pub fn with_constraint(mut self, c: Box<dyn Constraint>) -> Self {
        self.state = self.state.with_constraint(c);
        self
    }

    /// The logits the latest token was sampled from.
    pub fn last_logits(&mut self) -> &[f32] {
        self.session.sampling_parts().0
    }

    /// Run to the end, calling `on_token` for each token event.
    pub fn run(mut self, mut on_token: impl FnMut(u32, &str)) -> Result<GenerationResult> {
        loop {
            match self.next() {
                Some(Ok(Event::Token { id, text, .. })) => on_token(id, &text),
                Some(Ok(Event::Done(r))) => return Ok(r),
                Some(Err(e)) => return Err(e),
                None => unreachable!("a generator always ends with Done"),
            }
        }
    }
}

/// Of `prompt`, the leading tokens `cached` (a cache's tokens, or another
/// prompt that will be) holds and a prefill may skip: all but the prompt's
/// last token at most, since that one must run to give logits.
pub fn reusable_prefix(cached: &[u32], prompt: &[u32]) -> usize {
    let common = cached.iter().zip(prompt).take_while(|(a, b)| a == b).count();
    common.min(prompt.len().saturating_sub(1))
}

/// Keep the cached prefix of `prompt` ([`reusable_prefix`]); return how
/// many tokens are kept.
pub fn prefill_start(session: &mut Session, prompt: &[u32]) -> usize {
    let keep = reusable_prefix(session.tokens(), prompt);
    session.truncate(keep)
}

impl<B: AsRef<[u8]>> Iterator for Generator<'_, B> {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Self::Item> {
        let parts = Parts { model: self.model, engine: &self.engine, vocab: self.vocab, session: self.session };
        self.state.next(parts)
    }
}

/// One request of a batch.
#[derive(Debug, Clone)]
pub struct BatchItem {
    /// The prompt's token ids.
    pub prompt: Vec<u32>,
    /// How to generate.
    pub cfg: GenerateConfig,
}

/// Generate for every item, each in its own session (its cache, RNG,
/// sampler, stops and length), decoding all unfinished sequences together in
/// one forward per step so the weights are read once per step. Each
/// sequence's logits are bit-identical to running it alone.
pub fn generate_batch<B: AsRef<[u8]>>(
    model: &Model<B>,
    engine: &Engine,
    vocab: &dyn Vocab,
    sessions: &mut [Session],
    items: &[BatchItem],
    clock: Clock,
) -> Result<Vec<GenerationResult>> {
    let none = items.iter().map(|_| None).collect();
    generate_batch_constrained(model, engine, vocab, sessions, items, none, clock)
}

/// [`generate_batch`], each item sampling only what its constraint allows
/// (None: unconstrained).
pub fn generate_batch_constrained<B: AsRef<[u8]>>(
    model: &Model<B>,
    engine: &Engine,
    vocab: &dyn Vocab,
    sessions: &mut [Session],
    items: &[BatchItem],
    constraints: Vec<Option<Box<dyn Constraint>>>,
    clock: Clock,
) -> Result<Vec<GenerationResult>> {
    if sessions.len() != items.len() || constraints.len() != items.len() {
        return Err(crate::Error::InvalidArgument {
            what: alloc::format!(
                "{} sessions and {} constraints for {} batch items",
                sessions.len(),
                constraints.len(),
                items.len()
            ),
        });
    }
    let nv = model.config.n_vocab;
    let mut seqs: Vec<Sequence> = Vec::with_capacity(items.len());
    let mut results: Vec<Option<GenerationResult>> = items.iter().map(|_| None).collect();
    let mut pending = alloc::vec![0u32; items.len()];
    let mut active: Vec<usize> = Vec::with_capacity(items.len());

    // prefill each sequence on its own, then sample its first token
    for (i, ((sess, it), c)) in sessions.iter_mut().zip(items).zip(constraints).enumerate() {
        if it.prompt.is_empty() {
            return Err(crate::Error::InvalidArgument { what: alloc::format!("batch item {i} has an empty prompt") });
        }
        it.cfg.validate()?;
        sess.set_adapters(&it.cfg.adapters);
        let keep = prefill_start(sess, &it.prompt);
        let mut q = Sequence::new(&it.cfg, it.prompt.len(), keep, clock);
        if let Some(c) = c {
            q.constrain(c);
        }
        if it.cfg.max_tokens > 0 {
            sess.forward(model, engine, &it.prompt[keep..], Logits::Last)?;
        }
        q.prefilled(sess);
        if it.cfg.max_tokens == 0 {
            results[i] = Some(q.finish(FinishReason::Length));
        } else {
            match q.sample(sess, None, vocab)? {
                Sampled { end: Some(r), .. } => results[i] = Some(r),
                Sampled { id, .. } => {
                    pending[i] = id;
                    active.push(i);
                }
            }
        }
        seqs.push(q);
    }

    // decode: one forward per step over every unfinished sequence
    let mut scratch = model.batch_scratch(items.len());
    let mut logits = Vec::new();
    let mut still = Vec::with_capacity(items.len());
    while !active.is_empty() {
        {
            // (one small vector of session borrows per step)
            let mut work: Vec<(&mut Session, &[u32])> = Vec::with_capacity(active.len());
            let mut next = active.iter().peekable();
            for ((i, sess), tok) in sessions.iter_mut().enumerate().zip(pending.chunks(1)) {
                if next.next_if(|&&a| a == i).is_some() {
                    work.push((sess, tok));
                }
            }
            model.forward_batch(engine, &mut scratch, &mut work, &mut logits)?;
        }
        still.clear();
        for (row, &i) in active.iter().enumerate() {
            let row = &logits[row * nv..(row + 1) * nv];
            match seqs[i].sample(&mut sessions[i], Some(row), vocab)? {
                Sampled { end: Some(r), .. } => results[i] = Some(r),
                Sampled { id, .. } => {
                    pending[i] = id;
                    still.push(i);
                }
            }
        }
        core::mem::swap(&mut active, &mut still);
    }
    Ok(results.into_iter().map(|r| r.expect("every item finished")).collect())
}

#[cfg(test)]
mod tests {
    use super::output::Output;
    use super::*;
    use alloc::string::{String, ToString};
    use alloc::vec;

    /// Token i is the i-th string of a tiny vocabulary; 0 is EOS.
    struct Toy(Vec<&'static [u8]>);
    impl Vocab for Toy {
        fn token_bytes(&self, id: u32) -> &[u8] {
            self.0[id as usize]
        }
        fn is_eog(&self, id: u32) -> bool {
            id == 0
        }
    }

    fn toy() -> Toy {
        let crab = "🦀".as_bytes();
        Toy(vec![b"</s>", b"Hel", b"lo", b" wor", b"ld", b"!", b"EN", b"D", &crab[..2], &crab[2..], b"E"])
    }

    fn feed(cfg: GenerateConfig, ids: &[u32]) -> (Vec<String>, String, Option<FinishReason>) {
        let v = toy();
        let mut out = Output::new(&cfg);
        let mut deltas = Vec::new();
        let mut end = None;
        for &id in ids {
            let (t, e) = out.accept(&v, id);
            deltas.push(t);
            if e.is_some() {
                end = e;
                break;
            }
        }
        let text = out.take().1;
        (deltas, text, end)
    }

    fn cfg(stop: &[&str], max: usize) -> GenerateConfig {
        GenerateConfig { max_tokens: max, stop: stop.iter().map(|s| s.to_string()).collect(), ..Default::default() }
    }

    #[test]
    fn stop_string_across_tokens_is_never_emitted() {
        // "Hello world!END": the stop "END" spans tokens 6 ("EN") and 7 ("D")
        let (d, text, end) = feed(cfg(&["END"], 100), &[1, 2, 3, 4, 5, 6, 7, 1]);
        assert_eq!(end, Some(FinishReason::Stop));
        assert_eq!(text, "Hello world!");
        assert_eq!(d.concat(), "Hello world!");
        assert_eq!(d[4], "!", "'!' cannot start END: emitted at once");
        assert_eq!(d[5], "", "'EN' is held back");
    }

    #[test]
    fn held_back_text_is_released_when_it_cannot_be_a_stop() {
        // "EN" then "!" : not "END", so "EN!" comes out
        let (d, text, end) = feed(cfg(&["END"], 100), &[6, 5, 0]);
        assert_eq!((d[0].as_str(), d[1].as_str()), ("", "EN!"));
        assert_eq!(text, "EN!");
        assert_eq!(end, Some(FinishReason::Stop)); // EOS
                                                   // at the length limit held-back text is flushed
        let (d, text, end) = feed(cfg(&["END"], 2), &[5, 6]);
        assert_eq!((d.concat(), text, end), ("!EN".into(), "!EN".into(), Some(FinishReason::Length)));
    }

    #[test]
    fn precedence_stop_token_then_string_then_length() {
        // EOS wins: not in the text
        let (_, text, end) = feed(cfg(&[], 1), &[0]);
        assert_eq!((text.as_str(), end), ("", Some(FinishReason::Stop)));
        // a stop string completed by the last allowed token is a stop
        let (_, text, end) = feed(cfg(&["lo"], 2), &[1, 2]);
        assert_eq!((text.as_str(), end), ("Hel", Some(FinishReason::Stop)));
        // extra stop ids and ignore_eos
        let c = GenerateConfig { stop_tokens: vec![5], ignore_eos: true, ..cfg(&[], 10) };
        let (_, text, end) = feed(c, &[0, 1, 5, 2]);
        assert_eq!((text.as_str(), end), ("</s>Hel", Some(FinishReason::Stop)));
    }

    #[test]
    fn deltas_are_whole_characters() {
        let (d, text, _) = feed(cfg(&[], 3), &[8, 9, 5]);
        assert_eq!(d, vec!["".to_string(), "🦀".to_string(), "!".to_string()]);
        assert_eq!(text, "🦀!");
        // a stop string after a multi-byte char
        let (d, text, end) = feed(cfg(&["!E"], 10), &[8, 9, 5, 10]);
        assert_eq!((d.concat(), text, end), ("🦀".into(), "🦀".into(), Some(FinishReason::Stop)));
    }
}
