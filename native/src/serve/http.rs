//! The HTTP side: routes, bearer auth, body limit, bounded admission (429
//! at once past `--parallel` + `--queue`), request → job, and the answer
//! (one JSON object, or SSE chunks ending in `data: [DONE]`). A client that
//! goes away drops its job's channel; the engine then cancels it.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::{to_bytes, Body};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tern_core::chat::ChatTemplate;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::metrics::Metrics;
use super::openai::{ApiError, Envelope, Prompt, Request};
use super::scheduler::{Handle, Job, Msg, Update};
use super::ServeOptions;
use crate::error::{Error, Result};
use crate::Loaded;

pub struct App {
    lm: Arc<Loaded>,
    engine: Handle,
    metrics: Arc<Metrics>,
    template: Option<ChatTemplate>,
    model_id: String,
    api_key: Option<String>,
    max_body: usize,
    ctx: usize,
    parallel: usize,
    capacity: usize,
    inflight: AtomicUsize,
    draining: AtomicBool,
    next_id: AtomicU64,
    started: u64,
}

fn unix_now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl App {
    pub fn new(lm: Arc<Loaded>, engine: Handle, metrics: Arc<Metrics>, o: &ServeOptions) -> App {
        let template = lm.tokenizer.as_ref().and_then(|t| ChatTemplate::of(t).ok());
        App {
            lm,
            engine,
            metrics,
            template,
            model_id: o.model_id.clone(),
            api_key: o.api_key.clone(),
            max_body: o.max_body,
            ctx: o.ctx,
            parallel: o.parallel,
            capacity: o.parallel + o.queue,
            inflight: AtomicUsize::new(0),
            draining: AtomicBool::new(false),
            next_id: AtomicU64::new(1),
            started: unix_now(),
        }
    }
}

fn error(e: ApiError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
    (status, Json(e.body())).into_response()
}

fn authorized(app: &App, headers: &HeaderMap) -> bool {
    let Some(key) = &app.api_key else { return true };
    let got = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    got.and_then(|v| v.strip_prefix("Bearer ")) == Some(key.as_str())
}

fn unauthorized() -> Response {
    error(ApiError::new(401, "authentication_error", "missing or wrong API key (Authorization: Bearer …)"))
}

/// A slot in the admission count, given back when the request ends.
struct Admitted(Arc<App>);

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

async fn completions(app: Arc<App>, headers: HeaderMap, body: Body, chat: bool) -> Response {
    if !authorized(&app, &headers) {
        return unauthorized();
    }
    if app.draining.load(Relaxed) {
        return error(ApiError::new(503, "server_error", "the server is shutting down"));
    }
    let bytes = match to_bytes(body, app.max_body).await {
        Ok(b) => b,
        Err(_) => {
            return error(ApiError::new(
                413,
                "invalid_request_error",
                format!("request body over {} bytes", app.max_body),
            ))
        }
    };
    let n_vocab = app.lm.model.config.n_vocab;
    let req = match Request::parse(&bytes, chat, n_vocab, &app.lm.defaults) {
        Ok(r) => r,
        Err(e) => return error(e),
    };
    let prompt = match tokenize(&app, &req.prompt) {
        Ok(p) => p,
        Err(e) => return error(e),
    };
    let param = if chat { "messages" } else { "prompt" };
    if prompt.is_empty() {
        return error(ApiError::invalid(param, "the prompt is empty"));
    }
    let room = app.ctx.saturating_sub(prompt.len());
    if room == 0 || req.max_tokens.is_some_and(|m| m > room) {
        let msg = format!(
            "{} prompt tokens + {} to generate exceed the context of {} (--ctx)",
            prompt.len(),
            req.max_tokens.unwrap_or(1),
            app.ctx
        );
        return error(ApiError::invalid(if room == 0 { param } else { "max_tokens" }, msg));
    }
    let Some(admitted) = admit(&app) else {
        app.metrics.rejected.fetch_add(1, Relaxed);
        return error(ApiError::new(
            429,
            "rate_limit_exceeded",
            "the server is busy (parallel + queue full); retry later",
        ));
    };
    app.metrics.requests.fetch_add(1, Relaxed);
    let (tx, rx) = mpsc::unbounded_channel();
    let cfg = req.config(req.max_tokens.unwrap_or(room));
    let job = Job { prompt, cfg, events: tx, arrived: Instant::now() };
    if app.engine.0.send(Msg::Job(job)).is_err() {
        return error(ApiError::new(503, "server_error", "the engine has stopped"));
    }
    let n = app.next_id.fetch_add(1, Relaxed);
    let id = format!("{}-{n}", if chat { "chatcmpl" } else { "cmpl" });
    if req.stream {
        stream(app.clone(), admitted, rx, id, chat, req.include_usage)
    } else {
        whole(app.clone(), admitted, rx, id, chat).await
    }
}

fn tokenize(app: &App, p: &Prompt) -> std::result::Result<Vec<u32>, ApiError> {
    let tok = || {
        app.lm
            .tokenizer
            .as_ref()
            .ok_or_else(|| ApiError::invalid("prompt", "this model has no tokenizer: send token ids"))
    };
    let enc = |text: &str| tok()?.encode(text, true).map_err(|e| ApiError::invalid("prompt", e.to_string()));
    match p {
        Prompt::Ids(ids) => Ok(ids.clone()),
        Prompt::Text(t) => enc(t),
        Prompt::Chat(msgs) => {
            let t =
                app.template.as_ref().ok_or_else(|| ApiError::invalid("messages", "the model has no chat template"))?;
            let text = t.render(msgs, true, None).map_err(|e| ApiError::invalid("messages", e.to_string()))?;
            enc(&text)
        }
    }
}

async fn whole(
    app: Arc<App>,
    _admitted: Admitted,
    mut rx: mpsc::UnboundedReceiver<Update>,
    id: String,
    chat: bool,
) -> Response {
    while let Some(u) = rx.recv().await {
        match u {
            Update::Token { .. } => {}
            Update::Done(r) => {
                let env = Envelope { id: &id, created: unix_now(), model: &app.model_id, chat };
                return Json(env.response(&r)).into_response();
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
    id: String,
    chat: bool,
    usage: bool,
) -> Response {
    let (tx, out) = mpsc::channel::<std::result::Result<Event, Infallible>>(64);
    tokio::spawn(async move {
        let _admitted = admitted;
        let env = Envelope { id: &id, created: unix_now(), model: &app.model_id, chat };
        let send = |v: Value| tx.send(Ok(Event::default().data(v.to_string())));
        if chat && send(env.chunk(None, None)).await.is_err() {
            return;
        }
        while let Some(u) = rx.recv().await {
            let ok = match u {
                Update::Token { text } => send(env.chunk(Some(&text), None)).await.is_ok(),
                Update::Done(r) => {
                    let _ = send(env.chunk(None, Some(&r))).await;
                    if usage {
                        let _ = send(env.usage_chunk(&r)).await;
                    }
                    let _ = tx.send(Ok(Event::default().data("[DONE]"))).await;
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

async fn models(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if !authorized(&app, &headers) {
        return unauthorized();
    }
    let c = &app.lm.model.config;
    Json(json!({
        "object": "list",
        "data": [{ "id": app.model_id, "object": "model", "created": app.started, "owned_by": "tern",
                   "meta": { "arch": c.arch.name(), "n_ctx_train": c.n_ctx_train, "n_ctx": app.ctx, "n_vocab": c.n_vocab } }],
    }))
    .into_response()
}

async fn metrics(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if !authorized(&app, &headers) {
        return unauthorized();
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], app.metrics.render()).into_response()
}

/// Serve until SIGINT/SIGTERM; then refuse new requests (503), let the
/// engine finish what runs (cancelling after `drain`) and return.
pub async fn run(app: App, addr: SocketAddr, engine: std::sync::mpsc::Sender<Msg>, drain: Duration) -> Result<()> {
    let app = Arc::new(app);
    let router = Router::new()
        .route(
            "/v1/chat/completions",
            post(|State(a): State<Arc<App>>, h: HeaderMap, b: Body| completions(a, h, b, true)),
        )
        .route("/v1/completions", post(|State(a): State<Arc<App>>, h: HeaderMap, b: Body| completions(a, h, b, false)))
        .route("/v1/models", get(models))
        .route("/health", get(|| async { Json(json!({ "status": "ok" })) }))
        .route("/metrics", get(metrics))
        .with_state(app.clone());
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Serve { detail: format!("binding {addr}: {e}") })?;
    let bound = listener.local_addr().map_err(|e| Error::Serve { detail: e.to_string() })?;
    eprintln!(
        "tern serve: {} on http://{bound} ({} parallel, queue {}, ctx {})",
        app.model_id,
        app.parallel,
        app.capacity - app.parallel,
        app.ctx
    );
    let stop = {
        let app = app.clone();
        async move {
            shutdown_signal().await;
            eprintln!("tern serve: shutting down: finishing running requests");
            app.draining.store(true, Relaxed);
            let _ = engine.send(Msg::Drain(drain));
        }
    };
    axum::serve(listener, router).with_graceful_shutdown(stop).await.map_err(|e| Error::Serve { detail: e.to_string() })
}

async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
    }
}
