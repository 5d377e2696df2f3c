//! The routes and the accept loop: each endpoint's handler by path,
//! connections bounded and timed, SIGINT/SIGTERM draining.

use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::{get, post};
use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::Semaphore;

use super::http::{completions, embeddings, generate, metrics, models, rerank, App, Endpoint};
use super::scheduler::Msg;
use super::{anthropic, lora, responses, utility};
use crate::error::{Error, Result};
use tern_core::backend::KV_BLOCK;

/// Serve until SIGINT/SIGTERM; then answer new requests 503 while the
/// engine finishes what runs (cancelling it after `--drain`), and return
/// once it has stopped (`engine_done`).
pub async fn run(
    app: App,
    addr: SocketAddr,
    bound: Option<std::net::TcpListener>,
    engine: std::sync::mpsc::Sender<Msg>,
    engine_done: tokio::task::JoinHandle<()>,
) -> Result<()> {
    let app = Arc::new(app);
    let router = Router::new()
        .route(
            "/v1/chat/completions",
            post(|State(a): State<Arc<App>>, h: HeaderMap, b: Body| completions(a, h, b, true)),
        )
        .route("/v1/completions", post(|State(a): State<Arc<App>>, h: HeaderMap, b: Body| completions(a, h, b, false)))
        .route("/infill", post(|State(a): State<Arc<App>>, h: HeaderMap, b: Body| generate(a, h, b, Endpoint::Infill)))
        .route("/v1/messages", post(anthropic::messages))
        .route("/v1/responses", post(responses::create))
        .route("/v1/messages/count_tokens", post(anthropic::count_tokens))
        .route("/v1/embeddings", post(embeddings))
        .route("/v1/rerank", post(rerank))
        .route("/v1/models", get(models))
        .route("/v1/models/{id}", get(utility::model))
        .route("/health", get(utility::health))
        .route("/tokenize", post(utility::tokenize))
        .route("/detokenize", post(utility::detokenize))
        .route("/apply-template", post(utility::apply_template))
        .route("/props", get(utility::props))
        .route("/lora-adapters", get(lora::list).post(lora::set))
        .route("/metrics", get(metrics))
        .with_state(app.clone());
    let listener = match bound {
        Some(l) => l
            .set_nonblocking(true)
            .and_then(|()| tokio::net::TcpListener::from_std(l))
            .map_err(|e| Error::Serve { detail: format!("the bound socket: {e}") })?,
        None => tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| Error::Serve { detail: format!("binding {addr}: {e}") })?,
    };
    let bound = listener.local_addr().map_err(|e| Error::Serve { detail: e.to_string() })?;
    eprintln!(
        "tern serve: {} on http://{bound} ({} parallel, queue {}, ctx {} per sequence, KV {} blocks of {KV_BLOCK} positions)",
        app.model_id,
        app.parallel,
        app.capacity - app.parallel,
        app.ctx,
        app.metrics.kv_blocks.load(Relaxed)
    );
    {
        let app = app.clone();
        tokio::spawn(async move {
            shutdown_signal().await;
            eprintln!("tern serve: shutting down: finishing running requests");
            app.draining.store(true, Relaxed);
            let _ = engine.send(Msg::Drain(app.drain));
        });
    }
    let conns = Arc::new(Semaphore::new(app.max_connections));
    let mut engine_done = std::pin::pin!(engine_done);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = &mut engine_done => break,
        };
        let Ok((stream, _)) = accepted else { continue };
        // past the cap a connection is closed at once, so a flood of idle
        // or half-open ones cannot starve the file table
        let Ok(permit) = conns.clone().try_acquire_owned() else {
            app.metrics.rejected.fetch_add(1, Relaxed);
            continue;
        };
        let svc = hyper_util::service::TowerToHyperService::new(router.clone());
        let timeout = app.read_timeout;
        tokio::spawn(async move {
            let _permit = permit;
            let mut http = hyper::server::conn::http1::Builder::new();
            http.timer(TokioTimer::new()).header_read_timeout(timeout);
            let _ = http.serve_connection(TokioIo::new(stream), svc).await;
        });
    }
    // the engine has stopped: give the last answers a moment to go out
    let all = u32::try_from(app.max_connections).unwrap_or(u32::MAX);
    let _ = tokio::time::timeout(Duration::from_secs(2), conns.acquire_many(all)).await;
    Ok(())
}

/// Ctrl-C everywhere; SIGTERM too where there is one (Unix).
async fn shutdown_signal() {
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate() => {}
    }
}

#[cfg(unix)]
async fn terminate() {
    match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
        Ok(mut t) => {
            t.recv().await;
        }
        Err(_) => std::future::pending::<()>().await,
    }
}

#[cfg(not(unix))]
async fn terminate() {
    std::future::pending::<()>().await
}
