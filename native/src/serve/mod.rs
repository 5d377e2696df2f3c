//! `tern serve`: an OpenAI-compatible HTTP server (tokio + axum) over one
//! engine thread that batches every running request into each forward
//! pass (`scheduler`). Endpoints and error shapes: `http`, `openai`;
//! Prometheus metrics: `metrics`.

mod anthropic;
mod api_error;
mod embeddings;
mod encode;
mod http;
mod loading;
mod lora;
mod metrics;
pub mod openai;
mod rerank;
mod response_store;
mod responses;
mod routes;
mod scheduler;
mod utility;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{Error, Result};
use tern_core::Engine;

use crate::{Loaded, Threads};

/// How `tern serve` runs (its command-line options).
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The name `/v1/models` gives (the model file's or directory's).
    pub model_id: String,
    /// Address to listen on.
    pub host: IpAddr,
    /// Port to listen on.
    pub port: u16,
    /// Sequences decoded together (slots, each with its own KV cache).
    pub parallel: usize,
    /// Context positions per slot.
    pub ctx: usize,
    /// Bytes for the KV blocks of all slots and the prefix cache (None:
    /// what `parallel` sequences of `ctx` positions need or, if more, half
    /// the memory the weights leave free, at most 8 GiB).
    pub kv_memory: Option<u64>,
    /// Element type of the cached K and V rows (f16 as llama-server;
    /// q8_0 for about half of its memory).
    pub kv_type: tern_core::KvType,
    /// Requests that may wait for a slot; past parallel + queue: 429.
    pub queue: usize,
    /// A bearer key every request must carry, if set.
    pub api_key: Option<String>,
    /// Largest request body in bytes; larger: 413.
    pub max_body: usize,
    /// Tokens per forward pass (decodes first, then prefill chunks).
    pub n_batch: usize,
    /// Worker threads for the forward passes (0: one per core).
    pub threads: usize,
    /// Binding beyond loopback must be asked for.
    pub allow_remote: bool,
    /// On SIGINT/SIGTERM: how long running streams may take to finish.
    pub drain: Duration,
    /// Open connections at most; past it a new one is closed at once.
    pub max_connections: usize,
    /// Time to send a request's headers (and to sit idle between
    /// requests), and to send its body.
    pub read_timeout: Duration,
    /// Parse control-token strings in message content (see
    /// `ChatTemplate::encode`).
    pub content_specials: bool,
    /// Reuse cached prompt prefixes across requests (off: every prompt is
    /// prefilled whole).
    pub prefix_cache: bool,
    /// The name `/v1/models` gives the embedding model, if one is served.
    pub embedding_model_id: Option<String>,
    /// The name `/v1/models` gives the reranking model, if one is served.
    pub rerank_model_id: Option<String>,
    /// How chat replies' thinking blocks are returned unless a request
    /// says (`reasoning_format`).
    pub reasoning_format: tern_core::ReasoningFormat,
    /// Template variables every chat request gets under its own
    /// `chat_template_kwargs` (llama-server's `--chat-template-kwargs`;
    /// `--reasoning-budget 0` adds `enable_thinking: false`).
    pub chat_template_kwargs: Option<tern_core::TemplateKwargs>,
    /// Speculate on every request, these settings under each request's
    /// own `speculative.*` (None: only requests that ask, with n-gram
    /// drafts or the draft model).
    pub speculative: Option<tern_core::Speculative>,
    /// The draft model (`--model-draft`), checked against the target.
    pub draft: Option<crate::Draft>,
}

/// Limits on the server's sizes (each far past what one machine serves).
const MAX_PARALLEL: usize = 4096;
/// The stack of the server's tokio threads (its blocking pool compiles
/// grammars).
const GRAMMAR_STACK: usize = 16 << 20;
const MAX_BATCH: usize = 1 << 16;
const MAX_QUEUE: usize = 1 << 16;

/// Most of the memory the default KV budget takes beyond what the slots
/// need: room for the prefix cache (llama-server's `--cache-ram` default).
const DEFAULT_CACHE_BYTES: u64 = 8 << 30;

/// KV blocks the server may hold: `--kv-memory` of them (at least one
/// sequence of `--ctx` positions must fit, and the memory must be there);
/// by default what every slot filled to `--ctx` holds (and a block to
/// copy), or, if more, half the memory the weights leave free, at most
/// `DEFAULT_CACHE_BYTES`. Blocks are allocated as they are used. A draft
/// model's sessions (one a slot, whole `--ctx` each) come out of the
/// budget first.
fn kv_budget(lm: &Loaded, o: &ServeOptions) -> Result<usize> {
    let block = lm.model.kv_block_bytes(o.ctx, o.n_batch, o.kv_type) as u64;
    if block == 0 {
        return Ok(usize::MAX); // every layer keeps a ring
    }
    let blocks = |bytes: u64| usize::try_from(bytes / block).unwrap_or(usize::MAX);
    let per_seq = o.ctx.div_ceil(tern_core::backend::KV_BLOCK) + 1;
    let available = crate::limits::available_memory();
    let drafts = o.draft.as_ref().map_or(0, |d| draft_sessions_bytes(d, o));
    let Some(total) = o.kv_memory else {
        let mapped = crate::limits::mapped_bytes(lm) + o.draft.as_ref().map_or(0, |d| d.mapped_bytes());
        let free = available.saturating_sub(mapped).saturating_sub(drafts);
        return Ok(o.parallel.saturating_mul(per_seq).max(blocks((free / 2).min(DEFAULT_CACHE_BYTES))));
    };
    let mb = |n: u64| n as f64 / 1e6;
    let bytes = total.saturating_sub(drafts);
    if blocks(bytes) < per_seq {
        let drafts = if drafts > 0 {
            format!(" after the draft model's sessions ({} of --ctx {}: {:.1} MB)", o.parallel, o.ctx, mb(drafts))
        } else {
            String::new()
        };
        return Err(Error::Serve {
            detail: format!(
                "--kv-memory {:.1} MB holds {} KV blocks of {:.2} MB{drafts}; one sequence of --ctx {} needs \
                 {per_seq} ({:.1} MB)",
                mb(total),
                blocks(bytes),
                mb(block),
                o.ctx,
                mb(per_seq as u64 * block)
            ),
        });
    }
    if total > available {
        return Err(Error::Serve {
            detail: format!("--kv-memory {:.1} MB: only {:.1} MB of memory is available", mb(total), mb(available)),
        });
    }
    Ok(blocks(bytes))
}

/// Bytes the draft model's sessions take at most: one a slot, of `--ctx`
/// positions (as the scheduler makes them).
fn draft_sessions_bytes(d: &crate::Draft, o: &ServeOptions) -> u64 {
    let (n_batch, kv) = crate::Draft::session_shape(o.ctx);
    d.sessions_bytes(o.parallel, o.ctx, n_batch, kv).unwrap_or(u64::MAX)
}

/// Serve `lm` (and `embedder`'s `/v1/embeddings`, `reranker`'s `/v1/rerank`, if given) until SIGINT or SIGTERM; then stop admitting, let running
/// streams finish (cancelling them after `drain`), and return.
pub fn serve(
    lm: Loaded,
    embedder: Option<crate::Embedder>,
    reranker: Option<crate::Embedder>,
    o: ServeOptions,
) -> Result<()> {
    serve_on(None, lm, embedder, reranker, o)
}

/// The port bound before the model loads, answering 503 meanwhile; give
/// it to [`serve_on`] once loaded.
pub use loading::Loading;

/// Bind `host:port` at once (the loopback rule checked first) and answer
/// every request 503 `Loading model` until the server takes over.
pub fn bind_loading(host: IpAddr, port: u16, allow_remote: bool) -> Result<Loading> {
    check_host(host, allow_remote)?;
    Loading::bind(SocketAddr::new(host, port))
}

fn check_host(host: IpAddr, allow_remote: bool) -> Result<()> {
    match host.is_loopback() || allow_remote {
        true => Ok(()),
        false => Err(Error::Serve {
            detail: format!("{host} is not a loopback address: pass --allow-remote to serve beyond this machine"),
        }),
    }
}

/// [`serve`] on a port already bound (`bind_loading`), if given.
pub fn serve_on(
    loading: Option<Loading>,
    lm: Loaded,
    embedder: Option<crate::Embedder>,
    reranker: Option<crate::Embedder>,
    o: ServeOptions,
) -> Result<()> {
    check_host(o.host, o.allow_remote)?;
    if !o.host.is_loopback() {
        eprintln!(
            "tern serve: WARNING: listening on {} — reachable from other machines{}",
            o.host,
            if o.api_key.is_none() { ", with no --api-key" } else { "" }
        );
    }
    if o.parallel == 0 || o.ctx == 0 || o.n_batch == 0 {
        return Err(Error::Serve { detail: "--parallel, --ctx and --batch must be at least 1".into() });
    }
    if o.max_connections == 0 || o.read_timeout.is_zero() {
        return Err(Error::Serve { detail: "--max-connections and --read-timeout must be at least 1".into() });
    }
    if o.parallel > MAX_PARALLEL || o.n_batch > MAX_BATCH || o.queue > MAX_QUEUE {
        return Err(Error::Serve {
            detail: format!(
                "--parallel at most {MAX_PARALLEL}, --batch at most {MAX_BATCH}, --queue at most {MAX_QUEUE}"
            ),
        });
    }
    crate::limits::check_threads(o.threads)?;
    let kernels = crate::kernels::select()?;
    // the slots' sessions as the scheduler makes them (a cache of --ctx
    // and scratch for --batch each), before "listening"
    // (with --kv-memory, the budget is checked instead of every slot's
    // full context: one sequence of --ctx must fit)
    let seqs = if o.kv_memory.is_some() { 1 } else { o.parallel };
    crate::limits::check_sessions(&lm, seqs, o.ctx, o.n_batch, o.kv_type)?;
    let kv_blocks = kv_budget(&lm, &o)?;
    let lm = Arc::new(lm);
    let metrics = Arc::new(metrics::Metrics::new(kv_blocks as u64));
    let (tx, rx) = std::sync::mpsc::channel();
    let limits = scheduler::Limits {
        slots: o.parallel,
        n_ctx: o.ctx,
        n_batch: o.n_batch,
        chunk: o.n_batch.min(256),
        prefix_cache: o.prefix_cache,
        kv_blocks,
        kv_type: o.kv_type,
    };
    let engine = {
        let (lm, metrics, threads, draft) = (lm.clone(), metrics.clone(), Threads::new(o.threads), o.draft.clone());
        std::thread::Builder::new()
            .name("tern-engine".into())
            .spawn(move || {
                let engine = Engine { kernels, par: &threads, exact: false };
                scheduler::run(lm, engine, limits, metrics, rx, draft)
            })
            .map_err(|e| Error::Serve { detail: format!("starting the engine thread: {e}") })?
    };
    // (the blocking pool compiles grammars: their depth is bounded to use
    // at most ~0.5 MB of stack; 16 MB of address space, touched only as
    // used, leaves any recursion the bound missed room to end in an error)
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(GRAMMAR_STACK)
        .enable_all()
        .build()
        .map_err(|e| Error::Serve { detail: format!("starting tokio: {e}") })?;
    let addr = SocketAddr::new(o.host, o.port);
    let app =
        http::App::new(lm, embedder.map(Arc::new), reranker.map(Arc::new), scheduler::Handle(tx.clone()), metrics, &o);
    let engine_done = rt.spawn_blocking(move || {
        let _ = engine.join();
    });
    let listener = loading.map(Loading::ready);
    rt.block_on(routes::run(app, addr, listener, tx, engine_done))?;
    rt.shutdown_timeout(Duration::from_secs(1));
    eprintln!("tern serve: stopped");
    Ok(())
}
