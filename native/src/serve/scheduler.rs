//! Continuous batching on one engine thread. Requests wait in a FIFO queue
//! and are admitted into free slots (a session each) between forward
//! passes, taking the longest cached prefix of their prompt: from the
//! prefix cache (blocks of earlier requests, keyed by their tokens), from
//! a running slot, or a slot's own. A request is admitted only when the KV
//! blocks it may still allocate, with those every running sequence may,
//! fit the budget (`--kv-memory`); blocks only the prefix cache holds are
//! evicted, least recently used, to make room. Every
//! pass decodes one token for each running sequence and fills the rest of
//! its token budget with prefill chunks, oldest first, so a long prompt
//! never stalls the streams already running. Each sequence's logits are
//! the same bits as running it alone (core's batch invariance). Encoder
//! requests (embeddings, rerank) queue beside them and run one batch per
//! step between the forward passes (`encode`), on the same threads.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tern_core::backend::KV_BLOCK;
use tern_core::runtime::Scratch;
use tern_core::{
    runtime::prefill_start, runtime::reusable_prefix, FinishReason, GenerateConfig, GenerationResult, Vocab,
};
use tern_core::{runtime::verify, Drafter, Ngram, SpecConfig, Speculation};
use tern_core::{runtime::PrefixCache, AdapterSet, Engine, Model, Session};
use tern_core::{runtime::Sampled, runtime::Sequence, Constraint, TokenLogprob};
use tokio::sync::mpsc::UnboundedSender;

use super::encode::{EncodeJob, Queue};
use super::metrics::Metrics;
use crate::{Buffer, Draft, Loaded};

/// What a request hears from the engine.
pub enum Update {
    /// A token's text (may be empty: held back) and its log-probability if asked for.
    Token {
        text: String,
        logprob: Option<TokenLogprob>,
    },
    Done(GenerationResult),
    Error(String),
}

pub struct Job {
    pub prompt: Vec<u32>,
    pub cfg: GenerateConfig,
    /// The request's grammar, compiled.
    pub constraint: Option<Box<dyn Constraint>>,
    /// How to speculate, if the request does.
    pub spec: Option<SpecConfig>,
    pub events: UnboundedSender<Update>,
    pub arrived: Instant,
}

pub enum Msg {
    Job(Job),
    /// An embeddings or rerank request's inputs.
    Encode(EncodeJob),
    /// Take nothing more; finish what was admitted (cancel it after the
    /// deadline), then stop.
    Drain(Duration),
}

pub struct Limits {
    pub slots: usize,
    pub n_ctx: usize,
    /// Tokens per forward pass (decodes first, then prefill chunks).
    pub n_batch: usize,
    /// Prefill tokens one sequence may take in one pass.
    pub chunk: usize,
    /// Reuse cached prompt prefixes (the prefix cache's, a slot's own, or
    /// copied from another).
    pub prefix_cache: bool,
    /// KV blocks all sequences and the prefix cache may hold together.
    pub kv_blocks: usize,
    /// Element type of the cached rows.
    pub kv_type: tern_core::KvType,
}

/// Where a running sequence is.
enum Phase {
    /// Prompt tokens in the cache so far.
    Prefill { next: usize },
    /// The last sampled token, to be fed next.
    Decode { pending: u32 },
}

/// A request running in a slot.
struct Active {
    job: Job,
    seq: Sequence,
    phase: Phase,
    /// Tokens this pass feeds it (`plan`); 0 when it sits this pass out.
    step: usize,
    /// When its last token was heard (None before the first).
    last_token: Option<Instant>,
    /// Positions it may come to hold: prompt and completion, within the context.
    cap: usize,
    /// Its full blocks already in the prefix cache.
    indexed: usize,
    /// Its drafts, if it speculates; `drafted` of this pass's tokens are.
    spec: Option<Speculation>,
    drafted: usize,
}

impl Active {
    /// The tokens this pass feeds it: a prompt chunk, or the pending token
    /// and its draft.
    fn tokens(&self) -> &[u32] {
        match (&self.phase, &self.spec) {
            (Phase::Prefill { next }, _) => &self.job.prompt[*next..*next + self.step],
            (Phase::Decode { .. }, Some(sp)) => sp.fed(),
            (Phase::Decode { pending }, None) => core::slice::from_ref(pending),
        }
    }

    /// Logits rows this pass gives it: one a token of a draft step.
    fn rows(&self) -> usize {
        1 + self.drafted
    }
}

struct Slot {
    session: Session,
    active: Option<Active>,
}

impl Slot {
    /// Its running sequence if this pass feeds it.
    fn stepped(&mut self) -> Option<(&mut Session, &mut Active)> {
        let a = self.active.as_mut().filter(|a| a.step > 0)?;
        Some((&mut self.session, a))
    }
}

/// What one pass did to a sequence. (Moved once a token: boxing the
/// running one would cost an allocation a sequence for nothing.)
#[allow(clippy::large_enum_variant)]
enum Outcome {
    /// It runs on.
    Running(Active),
    /// It ended: its result goes to the client.
    Done(Job, GenerationResult),
    /// Sampling failed: the error goes to the client.
    Failed(Job, String),
}

/// Run the engine until the channel closes or a drain completes.
/// `draft`: the draft model, if one was loaded.
pub fn run(
    lm: Arc<Loaded>,
    engine: Engine,
    limits: Limits,
    metrics: Arc<Metrics>,
    rx: Receiver<Msg>,
    draft: Option<Draft>,
) {
    let vocab = lm.vocab();
    let model = &lm.model;
    let slots = (0..limits.slots)
        .map(|_| Slot { session: model.session_kv(limits.n_ctx, limits.n_batch, limits.kv_type), active: None })
        .collect();
    let mut s = Scheduler {
        model,
        engine,
        vocab: &vocab,
        metrics: &metrics,
        slots,
        scratch: model.batch_scratch(limits.n_batch),
        cache: PrefixCache::new(),
        waiting: VecDeque::new(),
        encodes: Queue::default(),
        logits: Vec::new(),
        order: Vec::with_capacity(limits.slots),
        drain_at: None,
        limits,
        draft,
    };
    s.run(&rx)
}

/// The engine thread's state between passes.
struct Scheduler<'a> {
    model: &'a Model<Buffer>,
    engine: Engine<'a>,
    vocab: &'a dyn Vocab,
    metrics: &'a Metrics,
    limits: Limits,
    slots: Vec<Slot>,
    scratch: Scratch,
    cache: PrefixCache,
    waiting: VecDeque<Job>,
    encodes: Queue,
    logits: Vec<f32>,
    /// The running slots in the order `plan` feeds them (kept across
    /// passes, so a pass allocates nothing for it).
    order: Vec<usize>,
    /// When a drain cancels what still runs.
    drain_at: Option<Instant>,
    /// The draft model, if one was loaded.
    draft: Option<Draft>,
}

/// Whether the loop goes on.
enum Flow {
    Go,
    Stop,
}

impl Scheduler<'_> {
    /// The steps of one pass, until the channel closes or a drain ends.
    fn run(&mut self, rx: &Receiver<Msg>) {
        loop {
            if let Flow::Stop = self.receive(rx) {
                return;
            }
            if let Flow::Stop = self.drain() {
                return;
            }
            self.drop_departed();
            self.encode();
            self.admit();
            self.publish();
            if !self.plan() {
                continue;
            }
            if !self.forward() {
                continue;
            }
            self.index_prefixes();
            self.publish();
            self.deliver();
            self.publish();
        }
    }

    fn idle(&self) -> bool {
        self.slots.iter().all(|s| s.active.is_none()) && self.waiting.is_empty() && self.encodes.is_empty()
    }

    /// Take requests; block (a second at a time) only when there is
    /// nothing to run. Stops when the channel has closed.
    fn receive(&mut self, rx: &Receiver<Msg>) -> Flow {
        let first = if self.idle() && self.drain_at.is_none() {
            match rx.recv_timeout(Duration::from_secs(1)) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return Flow::Stop,
            }
        } else {
            None
        };
        for m in first.into_iter().chain(std::iter::from_fn(|| rx.try_recv().ok())) {
            match m {
                Msg::Job(j) if self.drain_at.is_none() => self.waiting.push_back(j),
                Msg::Job(j) => finish(j, None, self.metrics),
                Msg::Encode(j) if self.drain_at.is_none() => self.encodes.push(j),
                Msg::Encode(j) => {
                    let _ = j.reply.send(Err("the server is shutting down".into()));
                }
                Msg::Drain(d) => self.drain_at = Some(Instant::now() + d),
            }
        }
        Flow::Go
    }

    /// While draining, what was admitted runs on; past the deadline it is
    /// cancelled. Stops once nothing is left.
    fn drain(&mut self) -> Flow {
        let Some(deadline) = self.drain_at else { return Flow::Go };
        if Instant::now() >= deadline {
            for j in self.waiting.drain(..) {
                finish(j, None, self.metrics);
            }
            for s in self.slots.iter_mut() {
                cancel(s, self.metrics);
            }
            self.encodes.cancel("the server is shutting down");
        }
        if self.idle() {
            Flow::Stop
        } else {
            Flow::Go
        }
    }

    /// Clients that went away: their sequences end, their cache is freed
    /// (a queued request whose client left is cancelled, and counted so).
    fn drop_departed(&mut self) {
        for s in self.slots.iter_mut() {
            if s.active.as_ref().is_some_and(|a| a.job.events.is_closed()) {
                cancel(s, self.metrics);
            }
        }
        let before = self.waiting.len();
        self.waiting.retain(|j| !j.events.is_closed());
        self.metrics.cancelled.fetch_add((before - self.waiting.len()) as u64, Relaxed);
        self.encodes.drop_closed();
    }

    /// One encoder batch between forward passes.
    fn encode(&mut self) {
        let (inputs, tokens) = self.encodes.step(&self.engine, self.limits.n_batch);
        if inputs > 0 {
            self.metrics.encoder_batches.fetch_add(1, Relaxed);
            self.metrics.encoder_inputs.fetch_add(inputs as u64, Relaxed);
            self.metrics.encoder_tokens.fetch_add(tokens as u64, Relaxed);
        }
    }

    /// Admit into free slots, preferring the longest cached prefix; a
    /// longer one in another slot (running or not) is copied over, and a
    /// prompt whose prefix another slot is still prefilling waits for it
    /// rather than computing it again (a burst sharing a system prompt).
    fn admit(&mut self) {
        let (limits, slots, cache) = (&self.limits, &mut self.slots, &mut self.cache);
        let mut k = 0;
        while k < self.waiting.len() {
            let (prompt, adapters) = (&self.waiting[k].prompt, &self.waiting[k].cfg.adapters);
            let free = slots.iter().enumerate().filter(|(_, s)| s.active.is_none());
            let Some((i, _)) = free.max_by_key(|(_, s)| held(&s.session, adapters, prompt)) else { break };
            if limits.prefix_cache
                && coming_prefix(slots, adapters, prompt) > cached_prefix(slots, cache, adapters, prompt) + limits.chunk
            {
                k += 1;
                continue;
            }
            // (a cache computed with other adapters is dropped)
            slots[i].session.set_adapters(adapters);
            if limits.prefix_cache {
                let copied = take_longest_prefix(slots, cache, i, prompt);
                self.metrics.copied_tokens.fetch_add(copied as u64, Relaxed);
            } else {
                slots[i].session.truncate(0);
            }
            let keep = prefill_start(&mut slots[i].session, prompt);
            let cap = (prompt.len() + self.waiting[k].cfg.max_tokens).min(limits.n_ctx);
            if !fits(slots, i, cap, limits.kv_blocks, cache) {
                // (the oldest request waits for blocks: none overtakes it)
                slots[i].session.truncate(0);
                break;
            }
            let Some(mut job) = self.waiting.remove(k) else { break };
            let mut seq = Sequence::new(&job.cfg, job.prompt.len(), keep, crate::clock);
            if let Some(c) = job.constraint.take() {
                seq.constrain(c);
            }
            let spec = job.spec.map(|c| {
                let d: Box<dyn Drafter> = match &self.draft {
                    Some(d) => d.drafter(limits.n_ctx, c.p_min),
                    None => Box::new(Ngram),
                };
                Speculation::new(c, d)
            });
            let phase = Phase::Prefill { next: keep };
            let (last_token, indexed) = (None, keep / KV_BLOCK);
            slots[i].active = Some(Active { job, seq, phase, step: 0, last_token, cap, indexed, spec, drafted: 0 });
        }
    }

    /// The pass's tokens: every decode, then prefill chunks in admission
    /// order, within the token budget. False if there is nothing to run.
    fn plan(&mut self) -> bool {
        let slots = &mut self.slots;
        self.order.clear();
        self.order.extend((0..slots.len()).filter(|&i| slots[i].active.is_some()));
        let key = |a: &Active| (matches!(a.phase, Phase::Prefill { .. }), a.job.arrived);
        self.order.sort_by_key(|&i| slots[i].active.as_ref().map(key));
        let mut budget = self.limits.n_batch;
        for &i in &self.order {
            let slot = &mut slots[i];
            let Some(a) = slot.active.as_mut() else { continue };
            a.drafted = 0;
            let n = match (&a.phase, a.spec.as_mut()) {
                (Phase::Decode { pending }, Some(sp)) if budget > 0 => {
                    // a draft within the budget, the length left and the context
                    let s = &slot.session;
                    let left = a.job.cfg.max_tokens.saturating_sub(a.seq.n_generated() + 1);
                    let room = left.min(a.cap.saturating_sub(s.n_past() + 1)).min(budget - 1);
                    match sp.step(&self.engine, s, *pending, room, self.model.config.n_vocab) {
                        Ok(fed) => {
                            a.drafted = fed.len() - 1;
                            fed.len()
                        }
                        // a draft model that failed: this step decodes plainly
                        Err(_) => 1,
                    }
                }
                (Phase::Decode { .. }, _) => 1,
                (Phase::Prefill { next }, _) => (a.job.prompt.len() - next).min(self.limits.chunk),
            };
            a.step = n.min(budget);
            budget -= a.step;
        }
        budget < self.limits.n_batch
    }

    /// Evict what only the prefix cache holds until the blocks held and
    /// those the pass allocates fit the budget; then run the pass (logits
    /// rows in slot order). False if it failed: its sequences end with the
    /// error.
    fn forward(&mut self) -> bool {
        let c = self.cache.counts(self.slots.iter().map(|s| &s.session));
        let step: usize =
            self.slots.iter_mut().filter_map(Slot::stepped).map(|(s, a)| s.kv_blocks_to_write(a.step)).sum();
        let mut over = (c.in_use + c.cached + step).saturating_sub(self.limits.kv_blocks);
        while over > 0 && self.cache.evict() {
            self.metrics.evictions.fetch_add(1, Relaxed);
            over -= 1;
        }
        let rows: Vec<usize> = self.slots.iter_mut().filter_map(Slot::stepped).map(|(_, a)| a.rows()).collect();
        let mut items: Vec<(&mut Session, &[u32])> =
            self.slots.iter_mut().filter_map(Slot::stepped).map(|(s, a)| (s, a.tokens())).collect();
        let tokens: usize = items.iter().map(|(_, t)| t.len()).sum();
        let (e, scratch, logits) = (&self.engine, &mut self.scratch, &mut self.logits);
        let result = self.model.forward_batch_rows(e, scratch, &mut items, &mut |i| rows[i], logits);
        self.metrics.steps.fetch_add(1, Relaxed);
        self.metrics.batch_tokens.fetch_add(tokens as u64, Relaxed);
        let Err(e) = result else { return true };
        for s in self.slots.iter_mut() {
            if let Some(a) = s.active.take_if(|a| a.step > 0) {
                let _ = a.job.events.send(Update::Error(e.to_string()));
                self.metrics.errors.fetch_add(1, Relaxed);
                s.session.truncate(0);
            }
        }
        false
    }

    /// The cache now holds the pass's tokens: its full blocks go to the
    /// prefix cache before any client hears of them.
    fn index_prefixes(&mut self) {
        if !self.limits.prefix_cache {
            return;
        }
        for (session, a) in self.slots.iter_mut().filter_map(Slot::stepped) {
            // (not the drafted positions: the verification may drop them)
            let held = session.n_past() - a.drafted;
            if held / KV_BLOCK > a.indexed {
                a.indexed = held / KV_BLOCK;
                self.cache.insert(session, a.indexed * KV_BLOCK);
            }
        }
    }

    /// Each fed sequence takes its logits row: prompts advance, the
    /// prefilled sample a token and hear it, the ended retire.
    fn deliver(&mut self) {
        let nv = self.model.config.n_vocab;
        let mut row = 0;
        for s in self.slots.iter_mut() {
            let Some(a) = s.active.take_if(|a| a.step > 0) else { continue };
            let logits = &self.logits[row * nv..(row + a.rows()) * nv];
            row += a.rows();
            let outcome = match a.drafted {
                0 => advance(a, &mut s.session, logits, self.vocab, self.metrics),
                _ => advance_drafted(a, &mut s.session, logits, self.vocab, self.metrics),
            };
            match outcome {
                Outcome::Running(a) => s.active = Some(a),
                Outcome::Done(job, r) => {
                    finish(job, Some(r), self.metrics);
                    retire(s, &mut self.cache, self.limits.prefix_cache);
                }
                Outcome::Failed(job, e) => {
                    let _ = job.events.send(Update::Error(e));
                    self.metrics.errors.fetch_add(1, Relaxed);
                    s.session.truncate(0);
                }
            }
        }
    }

    /// Queue depth, running sequences, the cache positions they hold, and
    /// where the KV blocks are.
    fn publish(&self) {
        let (slots, metrics) = (&self.slots, self.metrics);
        let running = slots.iter().filter(|s| s.active.is_some());
        metrics.queue_depth.store(self.waiting.len() as u64, Relaxed);
        metrics.active.store(running.clone().count() as u64, Relaxed);
        metrics.kv_used.store(running.map(|s| s.session.n_past() as u64).sum(), Relaxed);
        let c = self.cache.counts(slots.iter().map(|s| &s.session));
        metrics.blocks_in_use.store(c.in_use as u64, Relaxed);
        metrics.blocks_shared.store(c.shared as u64, Relaxed);
        metrics.blocks_cached.store(c.cached as u64, Relaxed);
    }
}

/// One pass's end for a fed sequence, given its logits row.
fn advance(mut a: Active, session: &mut Session, logits: &[f32], vocab: &dyn Vocab, metrics: &Metrics) -> Outcome {
    if let Phase::Prefill { next } = a.phase {
        let next = next + a.step;
        if next < a.job.prompt.len() {
            a.phase = Phase::Prefill { next };
            return Outcome::Running(a);
        }
        a.seq.prefilled(session);
        if a.job.cfg.max_tokens == 0 {
            let r = a.seq.finish(FinishReason::Length);
            return Outcome::Done(a.job, r);
        }
    }
    let Sampled { id, text, logprob, end } = match a.seq.sample(session, Some(logits), vocab) {
        Ok(x) => x,
        Err(e) => return Outcome::Failed(a.job, e.to_string()),
    };
    heard(&a.job, &mut a.last_token, text, logprob, metrics);
    a.phase = Phase::Decode { pending: id };
    match end {
        Some(r) => Outcome::Done(a.job, r),
        None => Outcome::Running(a),
    }
}

/// A token for the client (its text, if any): the time to it observed —
/// since the request arrived for the first, since the last one after.
fn heard(job: &Job, last: &mut Option<Instant>, text: String, logprob: Option<TokenLogprob>, metrics: &Metrics) {
    let now = Instant::now();
    match last.replace(now) {
        None => metrics.ttft.observe((now - job.arrived).as_secs_f64()),
        Some(t) => metrics.itl.observe((now - t).as_secs_f64()),
    }
    if !text.is_empty() || logprob.is_some() {
        let _ = job.events.send(Update::Token { text, logprob });
    }
}

/// A drafted step's end: the draft verified against its rows, each token
/// taken sent, the rejected positions dropped from the cache.
fn advance_drafted(
    mut a: Active,
    session: &mut Session,
    rows: &[f32],
    vocab: &dyn Vocab,
    metrics: &Metrics,
) -> Outcome {
    // (only a decode step of a speculating sequence drafts: `plan`)
    let drafts = a.drafted;
    let Some(sp) = a.spec.as_mut() else { return Outcome::Failed(a.job, "a draft without its drafter".into()) };
    let mut end = None;
    let (job, last) = (&a.job, &mut a.last_token);
    let v = verify(&mut a.seq, session, rows, &sp.fed()[1..=drafts], vocab, |s: Sampled| {
        heard(job, last, s.text, s.logprob, metrics);
        end = s.end;
    });
    let v = match v {
        Ok(v) => v,
        Err(e) => return Outcome::Failed(a.job, e.to_string()),
    };
    sp.record(drafts, v.accepted);
    metrics.draft_tokens.fetch_add(drafts as u64, Relaxed);
    metrics.draft_accepted.fetch_add(v.accepted as u64, Relaxed);
    a.drafted = 0;
    match (v.next, end) {
        (Some(t), _) => {
            a.phase = Phase::Decode { pending: t };
            Outcome::Running(a)
        }
        (None, Some(r)) => Outcome::Done(a.job, r),
        (None, None) => Outcome::Failed(a.job, "a verified step ended without a result".into()),
    }
}

/// The prefix of `prompt` a session holds that a sequence running
/// `adapters` could skip (none if it holds another set's rows).
fn held(s: &Session, adapters: &AdapterSet, prompt: &[u32]) -> usize {
    if s.adapters() != adapters {
        return 0;
    }
    reusable_prefix(s.tokens(), prompt)
}

/// The longest prefix of `prompt` a prefill with `adapters` could skip
/// with the prefix cache or any slot's cache.
fn cached_prefix(slots: &[Slot], cache: &PrefixCache, adapters: &AdapterSet, prompt: &[u32]) -> usize {
    let from_cache = cache.longest(adapters, &prompt[..prompt.len().saturating_sub(1)]);
    slots.iter().map(|s| held(&s.session, adapters, prompt)).max().unwrap_or(0).max(from_cache)
}

/// The longest prefix of `prompt` a slot still prefilling with the same
/// adapters will hold once its prompt is in.
fn coming_prefix(slots: &[Slot], adapters: &AdapterSet, prompt: &[u32]) -> usize {
    let prefilling = slots.iter().filter_map(|s| s.active.as_ref());
    let prefilling = prefilling.filter(|a| matches!(a.phase, Phase::Prefill { .. }) && a.job.cfg.adapters == *adapters);
    prefilling.map(|a| reusable_prefix(&a.job.prompt, prompt)).max().unwrap_or(0)
}

/// If the prefix cache or another slot's cache holds a longer prefix of
/// `prompt` than slot `i`'s (computed with slot `i`'s adapters), make slot
/// `i` hold it (the K/V a prefill of it would write, the same bits); the
/// positions copied from another slot. The prompt's last token is always
/// run again, for its logits.
fn take_longest_prefix(slots: &mut [Slot], cache: &mut PrefixCache, i: usize, prompt: &[u32]) -> usize {
    let adapters = slots[i].session.adapters().clone();
    let want = |s: &Slot| held(&s.session, &adapters, prompt);
    let own = want(&slots[i]);
    let from_cache = cache.longest(&adapters, &prompt[..prompt.len() - 1]);
    // (with one slot there is no other: (i, 0))
    let others = (0..slots.len()).filter(|&j| j != i).map(|j| (j, want(&slots[j])));
    let (j, n) = others.max_by_key(|x| x.1).unwrap_or((i, 0));
    if from_cache > own.max(n) {
        cache.attach(&mut slots[i].session, prompt, prompt.len() - 1);
        return 0;
    }
    if n <= own {
        return 0;
    }
    let (to, from) = match i < j {
        true => {
            let (a, b) = slots.split_at_mut(j);
            (&mut a[i], &b[0])
        }
        false => {
            let (a, b) = slots.split_at_mut(i);
            (&mut b[0], &a[j])
        }
    };
    to.session.copy_prefix(&from.session, n)
}

/// Whether slot `i`'s new sequence, which may come to hold `cap`
/// positions, fits the budget of `kv_blocks` beside the running ones:
/// the blocks sequences hold, and those each may still allocate. (Blocks
/// only the prefix cache holds do not count: they can be evicted.) If not,
/// idle slots' caches are dropped and it is asked again.
fn fits(slots: &mut [Slot], i: usize, cap: usize, kv_blocks: usize, cache: &PrefixCache) -> bool {
    let need = |slots: &[Slot]| {
        let held = cache.counts(slots.iter().map(|s| &s.session)).in_use;
        let to_come = |j: usize, s: &Slot| {
            let cap = if j == i { cap } else { s.active.as_ref().map_or(0, |a| a.cap) };
            s.session.kv_blocks_to_write(cap.saturating_sub(s.session.n_past()))
        };
        held + slots.iter().enumerate().map(|(j, s)| to_come(j, s)).sum::<usize>()
    };
    if need(slots) <= kv_blocks {
        return true;
    }
    for (j, s) in slots.iter_mut().enumerate() {
        if j != i && s.active.is_none() {
            s.session.truncate(0);
        }
    }
    need(slots) <= kv_blocks
}

/// A sequence has ended: its blocks go to the prefix cache and the slot
/// drops them (a slot with window rings, which cannot share them, keeps
/// its cache for a next prompt that starts the same).
fn retire(s: &mut Slot, cache: &mut PrefixCache, prefix_cache: bool) {
    if prefix_cache {
        cache.insert(&s.session, s.session.n_past());
    }
    if s.session.shares_blocks() || !prefix_cache {
        s.session.truncate(0);
    }
}

/// End a job: its result (None: it never ran, cancelled).
fn finish(job: Job, result: Option<GenerationResult>, metrics: &Metrics) {
    let r = result.unwrap_or_else(|| {
        let mut q = Sequence::new(&job.cfg, job.prompt.len(), 0, crate::clock);
        q.finish(FinishReason::Cancelled)
    });
    metrics.prompt_tokens.fetch_add(r.usage.prompt_tokens as u64, Relaxed);
    metrics.cached_tokens.fetch_add(r.usage.cached_tokens as u64, Relaxed);
    metrics.completion_tokens.fetch_add(r.usage.completion_tokens as u64, Relaxed);
    if r.finish_reason == FinishReason::Cancelled {
        metrics.cancelled.fetch_add(1, Relaxed);
    }
    let _ = job.events.send(Update::Done(r));
}

/// Cancel what a slot runs and free its cache.
fn cancel(s: &mut Slot, metrics: &Metrics) {
    if let Some(mut a) = s.active.take() {
        let r = a.seq.finish(FinishReason::Cancelled);
        finish(a.job, Some(r), metrics);
    }
    s.session.truncate(0);
}

/// The engine thread's handle.
#[derive(Clone)]
pub struct Handle(pub Sender<Msg>);
