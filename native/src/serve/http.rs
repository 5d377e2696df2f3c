//! The HTTP side: connections (at most `--max-connections`, each closed if
//! its headers or body do not arrive within `--read-timeout`), routes,
//! bearer auth, bounded admission (429 at once past `--parallel` +
//! `--queue`, before the body is read), body limit, rendering and
//! tokenizing on a bounded blocking pool (never on the async workers),
//! request → job, and the answer (one JSON object, or SSE chunks ending in
//! `data: [DONE]`). A client that goes away drops its job's channel; the
//! engine then cancels it.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::{to_bytes, Body};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot, Semaphore};
use tokio_stream::wrappers::ReceiverStream;

use super::embeddings::EmbedRequest;
use super::encode::{EncodeJob, Inputs, Rows};
use super::metrics::Metrics;
use super::openai::{ApiError, Envelope, Request};
use super::rerank::RerankRequest;
use super::scheduler::{Handle, Job, Msg, Update};
use super::ServeOptions;
use crate::Loaded;
use tern_core::Prepared;

pub struct App {
    pub(super) lm: Arc<Loaded>,
    /// The model `/v1/embeddings` runs, if one is served, and its name.
    pub(super) embedder: Encoder,
    /// The cross-encoder `/v1/rerank` runs, if one is served, and its name.
    pub(super) reranker: Encoder,
    pub(super) engine: Handle,
    pub(super) metrics: Arc<Metrics>,
    pub(super) model_id: String,
    pub(super) api_key: Option<String>,
    pub(super) max_body: usize,
    pub(super) ctx: usize,
    pub(super) parallel: usize,
    pub(super) capacity: usize,
    pub(super) inflight: AtomicUsize,
    pub(super) draining: AtomicBool,
    pub(super) drain: Duration,
    /// Renderings and tokenizations running at once (one per core).
    pub(super) prep: Semaphore,
    pub(super) content_specials: bool,
    pub(super) reasoning_format: tern_core::ReasoningFormat,
    pub(super) template_kwargs: Option<tern_core::TemplateKwargs>,
    /// The server's speculation settings, under each request's.
    pub(super) speculative: Option<tern_core::Speculative>,
    pub(super) max_connections: usize,
    pub(super) read_timeout: Duration,
    pub(super) next_id: AtomicU64,
    pub(super) started: u64,
    /// Conversations of past responses, for `previous_response_id`.
    pub(super) responses: super::response_store::Shared,
    /// The scales of the loaded LoRA adapters (by id) for requests that
    /// list none (`POST /lora-adapters` sets them).
    pub(super) lora: std::sync::Mutex<Vec<f32>>,
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl App {
    pub fn new(
        lm: Arc<Loaded>,
        embedder: Option<Arc<crate::Embedder>>,
        reranker: Option<Arc<crate::Embedder>>,
        engine: Handle,
        metrics: Arc<Metrics>,
        o: &ServeOptions,
    ) -> App {
        App {
            embedder: embedder.map(|e| (e, o.embedding_model_id.clone().unwrap_or_else(|| "embedding".into()))),
            reranker: reranker.map(|e| (e, o.rerank_model_id.clone().unwrap_or_else(|| "rerank".into()))),
            engine,
            metrics,
            model_id: o.model_id.clone(),
            api_key: o.api_key.clone(),
            max_body: o.max_body,
            ctx: o.ctx,
            parallel: o.parallel,
            capacity: o.parallel + o.queue,
            inflight: AtomicUsize::new(0),
            draining: AtomicBool::new(false),
            drain: o.drain,
            prep: Semaphore::new(std::thread::available_parallelism().map_or(1, |n| n.get())),
            content_specials: o.content_specials,
            reasoning_format: o.reasoning_format,
            template_kwargs: o.chat_template_kwargs.clone(),
            speculative: o.speculative,
            max_connections: o.max_connections,
            read_timeout: o.read_timeout,
            next_id: AtomicU64::new(1),
            started: unix_now(),
            responses: Default::default(),
            lora: std::sync::Mutex::new(lm.adapters.iter().map(|a| a.scale).collect()),
            lm,
        }
    }
}

impl App {
    /// The scales requests that list no adapters run with.
    pub(super) fn lora_defaults(&self) -> Vec<tern_core::LoraScale> {
        let scales = self.lora.lock().unwrap_or_else(|e| e.into_inner());
        scales
            .iter()
            .enumerate()
            .filter(|(_, &s)| s != 0.0)
            .map(|(id, &scale)| tern_core::LoraScale { id, scale })
            .collect()
    }
}

/// Seconds a client is told to wait before asking a loading or draining
/// server again.
pub(super) const RETRY_AFTER_S: u64 = 5;

/// `r` with a `Retry-After` (a 503 of a draining server).
pub(super) fn retry_later(mut r: Response) -> Response {
    r.headers_mut().insert(header::RETRY_AFTER, RETRY_AFTER_S.into());
    r
}

pub(super) fn error(e: ApiError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
    (status, Json(e.body())).into_response()
}

pub(super) fn authorized(app: &App, headers: &HeaderMap) -> bool {
    // (Anthropic's clients send the key as `x-api-key`)
    if let (Some(key), Some(sent)) = (&app.api_key, headers.get("x-api-key").and_then(|v| v.to_str().ok())) {
        if same_bytes(key.as_bytes(), sent.as_bytes()) {
            return true;
        }
    }
    let Some(key) = &app.api_key else { return true };
    let got = headers.get(header::AUTHORIZATION).map(|v| v.as_bytes());
    got.and_then(|v| v.strip_prefix(b"Bearer ")).is_some_and(|got| same_bytes(got, key.as_bytes()))
}

/// `a == b` in a time that depends on the lengths only, not on where the
/// first difference is (an API key is not guessed byte by byte).
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len().max(b.len());
    let diff = (0..n)
        .fold(a.len() ^ b.len(), |d, i| d | (a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0)) as usize);
    std::hint::black_box(diff) == 0
}

pub(super) fn unauthorized() -> Response {
    error(ApiError::new(401, "authentication_error", "missing or wrong API key (Authorization: Bearer …)"))
}

/// A slot in the admission count, given back when the request ends.
pub(super) struct Admitted(Arc<App>);

impl Drop for Admitted {
    fn drop(&mut self) {
        self.0.inflight.fetch_sub(1, Relaxed);
    }
}

fn admit(app: &Arc<App>) -> Option<Admitted> {
    let n = app.inflight.fetch_add(1, Relaxed);
    if n >= app.capacity {
        app.inflight.fetch_sub(1, Relaxed);
        return None;
    }
    Some(Admitted(app.clone()))
}

pub(super) async fn completions(app: Arc<App>, headers: HeaderMap, body: Body, chat: bool) -> Response {
    generate(app, headers, body, if chat { Endpoint::Chat } else { Endpoint::Completions }).await
}

/// The endpoints that generate.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Endpoint {
    Chat,
    Completions,
    /// llama-server's `/infill`.
    Infill,
    /// Anthropic's `/v1/messages`.
    Messages,
    /// OpenAI's `/v1/responses`.
    Responses,
}

pub(super) async fn generate(app: Arc<App>, headers: HeaderMap, body: Body, endpoint: Endpoint) -> Response {
    let parse = |bytes: &[u8], n_vocab, defaults: &tern_core::GenerationDefaults| {
        let r = match endpoint {
            Endpoint::Infill => Request::parse_infill(bytes, n_vocab, defaults),
            _ => Request::parse(bytes, endpoint == Endpoint::Chat, n_vocab, defaults),
        };
        r.map(|r| (r, ()))
    };
    match start(&app, &headers, body, endpoint, error, parse).await {
        Err(e) => e,
        Ok((s, ())) if s.stream => stream(app.clone(), s.admitted, s.rx, s.reply, s.include_usage),
        Ok((s, ())) => whole(app.clone(), s.admitted, s.rx, s.reply).await,
    }
}

/// A generation the engine has begun: its events, and how to answer.
pub(super) struct Started {
    pub(super) admitted: Admitted,
    pub(super) rx: mpsc::UnboundedReceiver<Update>,
    pub(super) reply: Reply,
    pub(super) stream: bool,
    pub(super) include_usage: bool,
}

/// Authorize, admit, read, parse (`Chat`, `Completions`, `Infill`: the
/// body as that endpoint's; `Messages`: Anthropic's, as a chat), prepare
/// and hand the job to the engine; else the error answer, shaped by
/// `error_of`.
pub(super) async fn start<T>(
    app: &Arc<App>,
    headers: &HeaderMap,
    body: Body,
    endpoint: Endpoint,
    fail: fn(ApiError) -> Response,
    parse: impl FnOnce(&[u8], usize, &tern_core::GenerationDefaults) -> std::result::Result<(Request, T), ApiError>,
) -> std::result::Result<(Started, T), Response> {
    if !authorized(app, headers) {
        return Err(fail(ApiError::new(401, "invalid_request_error", "a valid API key is required")));
    }
    if app.draining.load(Relaxed) {
        return Err(retry_later(fail(ApiError::new(503, "server_error", "the server is shutting down"))));
    }
    // admission first: past capacity nothing is read, parsed or tokenized
    let Some(admitted) = admit(app) else {
        app.metrics.rejected.fetch_add(1, Relaxed);
        return Err(fail(ApiError::new(
            429,
            "rate_limit_exceeded",
            "the server is busy (parallel + queue full); retry later",
        )));
    };
    let bytes = read_body(app, headers, body).await.map_err(fail)?;
    let n_vocab = app.lm.model.config.n_vocab;
    let chat = matches!(endpoint, Endpoint::Chat | Endpoint::Messages | Endpoint::Responses);
    let (req, extra) = parse(&bytes, n_vocab, &app.lm.defaults).map_err(fail)?;
    drop(bytes);
    let (stream_on, include_usage) = (req.stream, req.include_usage);
    let Prepared { prompt, cfg, constraint, reasoning, tools, spec } =
        prepare(app.clone(), req, chat).await.map_err(fail)?;
    let tools = tools.map(|t| t.format).filter(|_| chat);
    app.metrics.requests.fetch_add(1, Relaxed);
    let (tx, rx) = mpsc::unbounded_channel();
    let job = Job { prompt, cfg, constraint, spec, events: tx, arrived: Instant::now() };
    if app.engine.0.send(Msg::Job(job)).is_err() {
        return Err(fail(ApiError::new(503, "server_error", "the engine has stopped")));
    }
    let n = app.next_id.fetch_add(1, Relaxed);
    let prefix = match endpoint {
        Endpoint::Chat => "chatcmpl",
        Endpoint::Messages => "msg",
        Endpoint::Responses => "resp",
        _ => "cmpl",
    };
    let reply = Reply { id: format!("{prefix}-{n}"), chat, tools, reasoning, infill: endpoint == Endpoint::Infill };
    Ok((Started { admitted, rx, reply, stream: stream_on, include_usage }, extra))
}

/// An encoder model and the name it is served under.
type Encoder = Option<(Arc<crate::Embedder>, String)>;

/// A request's answer from its encoder rows.
type Answer = Box<dyn FnOnce(Rows) -> Value + Send>;

/// A request body, parsed and tokenized for a model served under a name.
type Prepare = fn(&[u8], &crate::Embedder, String) -> std::result::Result<(Inputs, Answer), ApiError>;

/// The encoder endpoints (`/v1/embeddings`, `/v1/rerank`): admitted and
/// read as the completions are; parsed and tokenized on the blocking pool
/// (`prepare`); run by the engine thread between generation steps; the
/// answer written on the blocking pool. `missing`: the 400 when no model
/// serves the endpoint.
async fn encoder_call(
    app: Arc<App>,
    headers: HeaderMap,
    body: Body,
    model: Encoder,
    missing: &'static str,
    prepare: Prepare,
) -> Response {
    if !authorized(&app, &headers) {
        return unauthorized();
    }
    if app.draining.load(Relaxed) {
        return retry_later(error(ApiError::new(503, "server_error", "the server is shutting down")));
    }
    let Some((model, id)) = model else {
        return error(ApiError::invalid("model", missing));
    };
    let Some(_admitted) = admit(&app) else {
        app.metrics.rejected.fetch_add(1, Relaxed);
        return error(ApiError::new(429, "rate_limit_exceeded", "the server is busy; retry later"));
    };
    let bytes = match read_body(&app, &headers, body).await {
        Ok(b) => b,
        Err(e) => return error(e),
    };
    let m = model.clone();
    let (inputs, answer) = match blocking(&app, move || prepare(&bytes, &m, id)).await {
        Ok(p) => p,
        Err(e) => return error(e),
    };
    let (reply, rows) = oneshot::channel();
    if app.engine.0.send(Msg::Encode(EncodeJob { model, inputs, reply })).is_err() {
        return error(ApiError::new(503, "server_error", "the engine has stopped"));
    }
    let rows = match rows.await {
        Ok(Ok(rows)) => rows,
        Ok(Err(e)) => return error(ApiError::new(503, "server_error", e)),
        Err(_) => return error(ApiError::new(503, "server_error", "the engine has stopped")),
    };
    match blocking(&app, move || {
        serde_json::to_vec(&answer(rows)).map_err(|e| ApiError::new(500, "server_error", e.to_string()))
    })
    .await
    {
        Ok(json) => ([(header::CONTENT_TYPE, "application/json")], json).into_response(),
        Err(e) => error(e),
    }
}

/// Run `f` on the blocking pool, at most one per core at a time.
pub(super) async fn blocking<T: Send + 'static>(
    app: &App,
    f: impl FnOnce() -> std::result::Result<T, ApiError> + Send + 'static,
) -> std::result::Result<T, ApiError> {
    let _permit = app.prep.acquire().await.map_err(|_| ApiError::new(503, "server_error", "shutting down"))?;
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(ApiError::new(500, "server_error", format!("the request's work failed: {e}"))))
}

/// `POST /v1/embeddings`.
pub(super) async fn embeddings(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let missing = "this server has no embedding model (tern serve --embedding-model DIR)";
    let model = app.embedder.clone();
    encoder_call(app, headers, body, model, missing, |bytes, m, id| {
        let mut req = EmbedRequest::parse(bytes, m.core().n_vocab(), m.dim())?;
        let ids = req.ids(m.core())?;
        Ok((Inputs::Texts(ids), Box::new(move |rows| req.answer(rows, &id))))
    })
    .await
}

/// `POST /v1/rerank`.
pub(super) async fn rerank(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let missing = "this server has no reranking model (tern serve --rerank-model DIR)";
    let model = app.reranker.clone();
    encoder_call(app, headers, body, model, missing, |bytes, m, id| {
        let mut req = RerankRequest::parse(bytes)?;
        let pairs = req.pairs(m.core())?;
        Ok((Inputs::Pairs(pairs), Box::new(move |rows| req.answer(rows, &id))))
    })
    .await
}

/// The body, at most `--max-body` bytes (413), within `--read-timeout`
/// (408); a body that ends early or breaks off is 400.
pub(super) async fn read_body(
    app: &App,
    headers: &HeaderMap,
    body: Body,
) -> std::result::Result<axum::body::Bytes, ApiError> {
    let too_large = || ApiError::new(413, "invalid_request_error", format!("request body over {} bytes", app.max_body));
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > app.max_body as u64) {
        return Err(too_large());
    }
    match tokio::time::timeout(app.read_timeout, to_bytes(body, app.max_body)).await {
        Err(_) => Err(ApiError::new(
            408,
            "invalid_request_error",
            format!("the request body did not arrive within {} s", app.read_timeout.as_secs()),
        )),
        Ok(Ok(b)) => Ok(b),
        Ok(Err(e)) => {
            let mut src: Option<&(dyn std::error::Error + 'static)> = Some(&e);
            while let Some(s) = src {
                if s.is::<http_body_util::LengthLimitError>() {
                    return Err(too_large());
                }
                src = s.source();
            }
            Err(ApiError::invalid("body", format!("the request body could not be read: {e}")))
        }
    }
}

/// Render and tokenize, check the context and compile the grammar — core's
/// one request path (`Bundle::prepare`) — on the blocking pool, at most
/// one per core at a time: a 4 MB prompt or a large schema never holds an
/// async worker. Errors name the request's field.
async fn prepare(app: Arc<App>, mut req: Request, chat: bool) -> std::result::Result<Prepared, ApiError> {
    let work = app.clone();
    req.core.content_specials = app.content_specials;
    req.core.reasoning_format = req.reasoning_format.unwrap_or(app.reasoning_format);
    if req.core.lora.is_none() {
        req.core.lora = Some(app.lora_defaults());
    }
    if let Some(server) = &app.template_kwargs {
        // the request's variables over the server's
        let mine = req.core.chat_template_kwargs.take().unwrap_or_default();
        let mut k = server.clone();
        k.extend(mine);
        req.core.chat_template_kwargs = Some(k);
    }
    if let Some(base) = app.speculative {
        // the request's draft settings over the server's
        let mine = req.core.speculative.unwrap_or_default();
        req.core.speculative = Some(tern_core::Speculative {
            n_max: mine.n_max.or(base.n_max),
            n_min: mine.n_min.or(base.n_min),
            p_min: mine.p_min.or(base.p_min),
        });
    }
    blocking(&app, move || {
        work.lm.prepare(&req.core, Some(work.ctx)).map_err(|e| match e {
            tern_core::Error::ContextFull { n_ctx, needed } => {
                let param = match (req.core.max_tokens, chat) {
                    (Some(_), _) => "max_tokens",
                    (None, true) => "messages",
                    (None, false) => "prompt",
                };
                let msg =
                    format!("{needed} positions (the prompt and max_tokens − 1) exceed the context of {n_ctx} (--ctx)");
                ApiError::invalid(param, msg)
            }
            e @ tern_core::Error::InvalidField { .. } => ApiError::core("body", e),
            // a grammar's errors: the field that asked for it
            e => {
                let param = if req.tools_on { "tools" } else { req.grammar_field.unwrap_or("body") };
                ApiError::invalid(param, e.to_string())
            }
        })
    })
    .await
}

/// What shapes one answer: its id, endpoint, tools and thinking block.
pub(super) struct Reply {
    pub(super) id: String,
    chat: bool,
    /// The format of the tool calls a chat reply may hold.
    tools: Option<tern_core::ToolFormat>,
    reasoning: Option<tern_core::Reasoning>,
    infill: bool,
}

/// The answer's envelope.
pub(super) fn envelope<'a>(app: &'a App, reply: &'a Reply) -> Envelope<'a> {
    Envelope {
        id: &reply.id,
        created: unix_now(),
        model: &app.model_id,
        chat: reply.chat,
        tok: app.lm.tokenizer.as_ref(),
        tools: reply.tools,
        reasoning: reply.reasoning.filter(|_| reply.chat),
        infill: reply.infill,
    }
}

async fn whole(app: Arc<App>, _admitted: Admitted, mut rx: mpsc::UnboundedReceiver<Update>, reply: Reply) -> Response {
    while let Some(u) = rx.recv().await {
        match u {
            Update::Token { .. } => {}
            Update::Done(r) => {
                return Json(envelope(&app, &reply).response(&r)).into_response();
            }
            Update::Error(e) => return error(ApiError::new(500, "server_error", e)),
        }
    }
    error(ApiError::new(500, "server_error", "the engine stopped"))
}

fn stream(
    app: Arc<App>,
    admitted: Admitted,
    mut rx: mpsc::UnboundedReceiver<Update>,
    reply: Reply,
    usage: bool,
) -> Response {
    let (tx, out) = mpsc::channel::<std::result::Result<Event, Infallible>>(64);
    tokio::spawn(async move {
        let _admitted = admitted;
        let env = envelope(&app, &reply);
        // the thinking block apart; with tools, content is held back from
        // where a call could begin
        let mut split = env.reasoning.map(|r| r.splitter());
        let (mut all, mut sent) = (String::new(), 0);
        let send = |v: Value| tx.send(Ok(Event::default().data(v.to_string())));
        if reply.chat && send(env.chunk(None, None)).await.is_err() {
            return;
        }
        while let Some(u) = rx.recv().await {
            let ok = match u {
                Update::Token { text, logprob } => {
                    let parts = match &mut split {
                        Some(s) => s.push(&text),
                        None => tern_core::Parts { reasoning: String::new(), content: text },
                    };
                    all.push_str(&parts.content);
                    let upto = env.streamable(&all).max(sent);
                    let delta = &all[sent..upto];
                    sent = upto;
                    let mut ok = true;
                    let mut lp = logprob.as_ref();
                    if !parts.reasoning.is_empty() {
                        ok = send(env.reasoning_chunk(&parts.reasoning, lp.take())).await.is_ok();
                    }
                    if ok && (!delta.is_empty() || lp.is_some()) {
                        ok = send(env.chunk(Some(delta), lp)).await.is_ok();
                    }
                    ok
                }
                Update::Done(r) => {
                    if let Some(parts) = split.as_mut().map(|s| s.finish()) {
                        if !parts.reasoning.is_empty() {
                            let _ = send(env.reasoning_chunk(&parts.reasoning, None)).await;
                        }
                        all.push_str(&parts.content);
                    }
                    let calls = env.calls_in(&all).1;
                    let rest = if calls.is_empty() { &all[sent..] } else { "" };
                    if !rest.is_empty() {
                        let _ = send(env.chunk(Some(rest), None)).await;
                    }
                    if !calls.is_empty() {
                        let _ = send(env.tool_calls_chunk(&calls)).await;
                    }
                    let _ = send(env.end_chunk(&r, &calls)).await;
                    if usage {
                        let _ = send(env.usage_chunk(&r)).await;
                    }
                    if !reply.infill {
                        let _ = tx.send(Ok(Event::default().data("[DONE]"))).await;
                    }
                    return;
                }
                Update::Error(e) => {
                    let _ = send(ApiError::new(500, "server_error", e).body()).await;
                    return;
                }
            };
            // the client went away: dropping `rx` makes the engine cancel
            if !ok {
                return;
            }
        }
    });
    Sse::new(ReceiverStream::new(out)).keep_alive(KeepAlive::default()).into_response()
}

pub(super) async fn models(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if !authorized(&app, &headers) {
        return unauthorized();
    }
    Json(json!({ "object": "list", "data": model_entries(&app) })).into_response()
}

/// The models served: the generation model, and the encoders.
pub(super) fn model_entries(app: &App) -> Vec<Value> {
    let c = &app.lm.model.config;
    let mut data = vec![json!({ "id": app.model_id, "object": "model", "created": app.started, "owned_by": "tern",
               "meta": { "arch": c.arch.name(), "n_ctx_train": c.n_ctx_train, "n_ctx": app.ctx, "n_vocab": c.n_vocab } })];
    // (a model serving several endpoints — the chat model's file as the
    // embedding model too — is one entry, its encoder's facts under
    // `meta.encoder`: ids stay unique)
    for (emb, id) in app.embedder.iter().chain(&app.reranker) {
        let meta = json!({ "arch": emb.core().arch(), "dim": emb.dim(), "max_input_tokens": emb.core().max_len });
        match data.iter_mut().find(|m| m["id"] == json!(id)) {
            Some(m) => m["meta"]["encoder"] = meta,
            None => data.push(json!({ "id": id, "object": "model", "created": app.started, "owned_by": "tern",
                                       "meta": meta })),
        }
    }
    data
}

pub(super) async fn metrics(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if !authorized(&app, &headers) {
        return unauthorized();
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], app.metrics.render()).into_response()
}

#[cfg(test)]
mod tests {
    use super::same_bytes;

    #[test]
    fn key_comparison() {
        assert!(same_bytes(b"secret", b"secret"));
        assert!(same_bytes(b"", b""));
        for other in [&b"secreT"[..], b"secret!", b"secre", b"", b"\0secret"] {
            assert!(!same_bytes(b"secret", other), "{other:?}");
        }
    }
}
