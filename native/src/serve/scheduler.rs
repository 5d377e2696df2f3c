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
use tern_core::generate::{prefill_start, reusable_prefix, FinishReason, GenerateConfig, GenerationResult, Vocab};
use tern_core::generate::{Constraint, Sampled, Sequence, TokenLogprob};
use tern_core::{Engine, PrefixCache, Session};
use tokio::sync::mpsc::UnboundedSender;

use super::encode::{EncodeJob, Queue};
use super::metrics::Metrics;
use crate::{IdsOnly, Loaded};

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

struct Active {
    job: Job,
    seq: Sequence,
    /// Prompt tokens in the cache so far.
    next: usize,
    /// The last sampled token, to be fed next (once prefilled).
    pending: [u32; 1],
    prefilled: bool,
    last_token: Instant,
    /// Positions it may come to hold: prompt and completion, within the context.
    cap: usize,
    /// Its full blocks already in the prefix cache.
    indexed: usize,
}

struct Slot {
    session: Session,
    active: Option<Active>,
}

/// Run the engine until the channel closes or a drain completes.
pub fn run(lm: Arc<Loaded>, engine: Engine, limits: Limits, metrics: Arc<Metrics>, rx: Receiver<Msg>) {
    let model = &lm.model;
    let eog = lm.eog();
    let ids_only = IdsOnly(&eog);
    let vocab: &dyn Vocab = match &lm.tokenizer {
        Some(t) => t,
        None => &ids_only,
    };
    let mut slots: Vec<Slot> = (0..limits.slots)
        .map(|_| Slot { session: model.session_kv(limits.n_ctx, limits.n_batch, limits.kv_type), active: None })
        .collect();
    let mut scratch = model.batch_scratch(limits.n_batch);
    let mut cache = PrefixCache::new();
    let mut waiting: VecDeque<Job> = VecDeque::new();
    let mut encodes = Queue::default();
    let mut logits = Vec::new();
    let mut drain: Option<Instant> = None;
    let nv = model.config.n_vocab;
    // per-step lists, kept across steps: (slot), (slot, tokens)
    let mut order: Vec<usize> = Vec::with_capacity(limits.slots);
    let mut work: Vec<(usize, usize)> = Vec::with_capacity(limits.slots);

    loop {
        // take requests; block only when there is nothing to run
        let idle = slots.iter().all(|s| s.active.is_none()) && waiting.is_empty() && encodes.is_empty();
        let first = if idle && drain.is_none() {
            match rx.recv_timeout(Duration::from_secs(1)) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => continue,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        } else {
            None
        };
        for m in first.into_iter().chain(std::iter::from_fn(|| rx.try_recv().ok())) {
            match m {
                Msg::Job(j) if drain.is_none() => waiting.push_back(j),
                Msg::Job(j) => finish(j, None, &metrics),
                Msg::Encode(j) if drain.is_none() => encodes.push(j),
                Msg::Encode(j) => {
                    let _ = j.reply.send(Err("the server is shutting down".into()));
                }
                Msg::Drain(d) => drain = Some(Instant::now() + d),
            }
        }
        if let Some(deadline) = drain {
            // what was admitted runs on; past the deadline it is cancelled
            if Instant::now() >= deadline {
                for j in waiting.drain(..) {
                    finish(j, None, &metrics);
                }
                for s in slots.iter_mut() {
                    cancel(s, &metrics);
                }
                encodes.cancel("the server is shutting down");
            }
            if waiting.is_empty() && encodes.is_empty() && slots.iter().all(|s| s.active.is_none()) {
                return;
            }
        }

        // clients that went away: their sequences end, their cache is freed
        for s in slots.iter_mut() {
            if s.active.as_ref().is_some_and(|a| a.job.events.is_closed()) {
                cancel(s, &metrics);
            }
        }
        // (a queued request whose client left is cancelled, and counted so)
        let before = waiting.len();
        waiting.retain(|j| !j.events.is_closed());
        metrics.cancelled.fetch_add((before - waiting.len()) as u64, Relaxed);
        encodes.drop_closed();

        // one encoder batch between forward passes
        let (inputs, tokens) = encodes.step(&engine, limits.n_batch);
        if inputs > 0 {
            metrics.encoder_batches.fetch_add(1, Relaxed);
            metrics.encoder_inputs.fetch_add(inputs as u64, Relaxed);
            metrics.encoder_tokens.fetch_add(tokens as u64, Relaxed);
        }

        // admit into free slots, preferring the longest cached prefix; a
        // longer one in another slot (running or not) is copied over, and a
        // prompt whose prefix another slot is still prefilling waits for it
        // rather than computing it again (a burst sharing a system prompt)
        let mut k = 0;
        while k < waiting.len() {
            let prompt = &waiting[k].prompt;
            let free = slots.iter().enumerate().filter(|(_, s)| s.active.is_none());
            let Some((i, _)) = free.max_by_key(|(_, s)| s.session.common_prefix(prompt)) else { break };
            if limits.prefix_cache
                && coming_prefix(&slots, prompt) > cached_prefix(&slots, &cache, prompt) + limits.chunk
            {
                k += 1;
                continue;
            }
            if limits.prefix_cache {
                let copied = take_longest_prefix(&mut slots, &mut cache, i, prompt);
                metrics.copied_tokens.fetch_add(copied as u64, Relaxed);
            } else {
                slots[i].session.truncate(0);
            }
            let keep = prefill_start(&mut slots[i].session, prompt);
            let cap = (prompt.len() + waiting[k].cfg.max_tokens).min(limits.n_ctx);
            if !fits(&mut slots, i, cap, limits.kv_blocks, &cache) {
                // (the oldest request waits for blocks: none overtakes it)
                slots[i].session.truncate(0);
                break;
            }
            let mut job = waiting.remove(k).expect("k is in the queue");
            let s = &mut slots[i];
            let mut seq = Sequence::new(&job.cfg, job.prompt.len(), keep, crate::clock);
            if let Some(c) = job.constraint.take() {
                seq.constrain(c);
            }
            let now = Instant::now();
            let indexed = keep / KV_BLOCK;
            s.active =
                Some(Active { job, seq, next: keep, pending: [0], prefilled: false, last_token: now, cap, indexed });
        }
        publish(&slots, &cache, waiting.len(), &metrics);

        // the batch: every decode, then prefill chunks in admission order
        let mut budget = limits.n_batch;
        order.clear();
        order.extend((0..slots.len()).filter(|&i| slots[i].active.is_some()));
        order.sort_by_key(|&i| (slots[i].active.as_ref().is_some_and(|a| !a.prefilled), arrival(&slots[i])));
        work.clear();
        for &i in &order {
            let a = slots[i].active.as_ref().expect("active");
            let n = if a.prefilled { 1 } else { (a.job.prompt.len() - a.next).min(limits.chunk) };
            let n = n.min(budget);
            if n == 0 {
                continue;
            }
            budget -= n;
            work.push((i, n));
        }
        if work.is_empty() {
            continue;
        }
        work.sort_by_key(|w| w.0); // the order items (and logits rows) take
        make_room(&slots, &work, &mut cache, limits.kv_blocks, &metrics);
        let result = {
            let mut items: Vec<(&mut Session, &[u32])> = Vec::with_capacity(work.len());
            let mut want = work.iter().peekable();
            for (i, s) in slots.iter_mut().enumerate() {
                let Some(&(_, n)) = want.next_if(|w| w.0 == i) else { continue };
                let a = s.active.as_ref().expect("active");
                let toks = if a.prefilled { &a.pending[..] } else { &a.job.prompt[a.next..a.next + n] };
                items.push((&mut s.session, toks));
            }
            model.forward_batch(&engine, &mut scratch, &mut items, &mut logits)
        };
        metrics.steps.fetch_add(1, Relaxed);
        metrics.batch_tokens.fetch_add(work.iter().map(|w| w.1 as u64).sum(), Relaxed);
        if let Err(e) = result {
            for &(i, _) in &work {
                if let Some(a) = slots[i].active.take() {
                    let _ = a.job.events.send(Update::Error(e.to_string()));
                    metrics.errors.fetch_add(1, Relaxed);
                }
                slots[i].session.truncate(0);
            }
            continue;
        }
        // (the cache now holds the step's tokens: say so before any client
        // hears of them; full blocks go to the prefix cache as they fill)
        if limits.prefix_cache {
            for &(i, _) in &work {
                let s = &mut slots[i];
                let a = s.active.as_mut().expect("active");
                if s.session.n_past() / KV_BLOCK > a.indexed {
                    a.indexed = s.session.n_past() / KV_BLOCK;
                    cache.insert(&s.session, a.indexed * KV_BLOCK);
                }
            }
        }
        publish(&slots, &cache, waiting.len(), &metrics);

        for (row, &(i, n)) in work.iter().enumerate() {
            let s = &mut slots[i];
            let a = s.active.as_mut().expect("active");
            if !a.prefilled {
                a.next += n;
                if a.next < a.job.prompt.len() {
                    continue;
                }
                a.prefilled = true;
                a.seq.prefilled(&mut s.session);
                if a.job.cfg.max_tokens == 0 {
                    let r = a.seq.finish(FinishReason::Length);
                    let a = s.active.take().expect("active");
                    finish(a.job, Some(r), &metrics);
                    retire(s, &mut cache, limits.prefix_cache);
                    continue;
                }
            }
            let row = &logits[row * nv..(row + 1) * nv];
            let Sampled { id, text, logprob, end } = match a.seq.sample(&mut s.session, Some(row), vocab) {
                Ok(x) => x,
                Err(e) => {
                    let a = s.active.take().expect("active");
                    let _ = a.job.events.send(Update::Error(e.to_string()));
                    metrics.errors.fetch_add(1, Relaxed);
                    s.session.truncate(0);
                    continue;
                }
            };
            let now = Instant::now();
            if a.seq.n_generated() == 1 {
                metrics.ttft.observe((now - a.job.arrived).as_secs_f64());
            } else {
                metrics.itl.observe((now - a.last_token).as_secs_f64());
            }
            a.last_token = now;
            a.pending = [id];
            if !text.is_empty() || logprob.is_some() {
                let _ = a.job.events.send(Update::Token { text, logprob });
            }
            if let Some(r) = end {
                let a = s.active.take().expect("active");
                finish(a.job, Some(r), &metrics);
                retire(s, &mut cache, limits.prefix_cache);
            }
        }
        publish(&slots, &cache, waiting.len(), &metrics);
    }
}

/// The longest prefix of `prompt` a prefill could skip with the prefix
/// cache or any slot's cache.
fn cached_prefix(slots: &[Slot], cache: &PrefixCache, prompt: &[u32]) -> usize {
    let from_cache = cache.longest(&prompt[..prompt.len().saturating_sub(1)]);
    slots.iter().map(|s| reusable_prefix(s.session.tokens(), prompt)).max().unwrap_or(0).max(from_cache)
}

/// The longest prefix of `prompt` a slot still prefilling will hold once
/// its prompt is in.
fn coming_prefix(slots: &[Slot], prompt: &[u32]) -> usize {
    let prefilling = slots.iter().filter_map(|s| s.active.as_ref().filter(|a| !a.prefilled));
    prefilling.map(|a| reusable_prefix(&a.job.prompt, prompt)).max().unwrap_or(0)
}

/// If the prefix cache or another slot's cache holds a longer prefix of
/// `prompt` than slot `i`'s, make slot `i` hold it (the K/V a prefill of it
/// would write, the same bits); the positions copied from another slot.
/// The prompt's last token is always run again, for its logits.
fn take_longest_prefix(slots: &mut [Slot], cache: &mut PrefixCache, i: usize, prompt: &[u32]) -> usize {
    let want = |s: &Slot| reusable_prefix(s.session.tokens(), prompt);
    let own = want(&slots[i]);
    let from_cache = cache.longest(&prompt[..prompt.len() - 1]);
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

/// Before a step: evict what only the prefix cache holds until the blocks
/// held and those the step allocates fit the budget.
fn make_room(slots: &[Slot], work: &[(usize, usize)], cache: &mut PrefixCache, kv_blocks: usize, metrics: &Metrics) {
    let c = cache.counts(slots.iter().map(|s| &s.session));
    let step: usize = work.iter().map(|&(i, n)| slots[i].session.kv_blocks_to_write(n)).sum();
    let mut over = (c.in_use + c.cached + step).saturating_sub(kv_blocks);
    while over > 0 && cache.evict() {
        metrics.evictions.fetch_add(1, Relaxed);
        over -= 1;
    }
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

/// Queue depth, running sequences, the cache positions they hold, and
/// where the KV blocks are.
fn publish(slots: &[Slot], cache: &PrefixCache, waiting: usize, metrics: &Metrics) {
    let running = slots.iter().filter(|s| s.active.is_some());
    metrics.queue_depth.store(waiting as u64, Relaxed);
    metrics.active.store(running.clone().count() as u64, Relaxed);
    metrics.kv_used.store(running.map(|s| s.session.n_past() as u64).sum(), Relaxed);
    let c = cache.counts(slots.iter().map(|s| &s.session));
    metrics.blocks_in_use.store(c.in_use as u64, Relaxed);
    metrics.blocks_shared.store(c.shared as u64, Relaxed);
    metrics.blocks_cached.store(c.cached as u64, Relaxed);
}

fn arrival(s: &Slot) -> Instant {
    s.active.as_ref().map_or_else(Instant::now, |a| a.job.arrived)
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
