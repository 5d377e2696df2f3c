//! LoRA adapters over HTTP, as llama-server serves them: `GET
//! /lora-adapters` lists the adapters loaded at start (`--lora`,
//! `--lora-scaled`) with their ids and scales; `POST /lora-adapters`
//! `[{id, scale}]` sets the scales requests run with when they list none
//! (an adapter left out: 0); a completion's own `lora: [{id, scale}]`
//! applies those adapters alone, to that request.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};
use tern_core::{LoraScale, MAX_ADAPTERS};

use super::http::{authorized, error, read_body, unauthorized, App};
use super::openai::ApiError;

/// A `lora` list: `[{id, scale}]`, every id one the server loaded.
pub(super) fn parse(v: &Value, field: &str, loaded: usize) -> Result<Vec<LoraScale>, ApiError> {
    let list: Vec<LoraScale> = serde_json::from_value(v.clone())
        .map_err(|e| ApiError::invalid(field, format!("{field} must be a list of {{id, scale}}: {e}")))?;
    if list.len() > MAX_ADAPTERS.max(loaded) {
        return Err(ApiError::invalid(field, format!("{} entries (at most {})", list.len(), MAX_ADAPTERS.max(loaded))));
    }
    if let Some(l) = list.iter().find(|l| l.id >= loaded) {
        let have = if loaded == 0 { "no adapter is loaded (serve --lora)".into() } else { format!("ids 0..{loaded}") };
        return Err(ApiError::invalid(field, format!("no adapter with id {}: {have}", l.id)));
    }
    if let Some(l) = list.iter().find(|l| !l.scale.is_finite() || l.scale.abs() > tern_core::MAX_SCALE) {
        return Err(ApiError::invalid(
            field,
            format!("adapter {}: scale {} (finite, within ±{})", l.id, l.scale, tern_core::MAX_SCALE),
        ));
    }
    Ok(list)
}

/// The scales requests that list no adapters run with.
pub(super) fn defaults(app: &App) -> Vec<LoraScale> {
    let scales = app.lora.lock().unwrap_or_else(|e| e.into_inner());
    scales.iter().enumerate().filter(|(_, &s)| s != 0.0).map(|(id, &scale)| LoraScale { id, scale }).collect()
}

/// `GET /lora-adapters`: `[{id, path, scale}]`.
pub async fn list(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if !authorized(&app, &headers) {
        return unauthorized();
    }
    let scales = app.lora.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let list: Vec<Value> = app
        .lm
        .adapters
        .iter()
        .zip(scales)
        .enumerate()
        .map(|(id, (a, scale))| {
            let x = &a.adapter;
            json!({ "id": id, "path": x.name(), "scale": scale, "rank": x.rank(), "alpha": x.alpha() })
        })
        .collect();
    Json(Value::Array(list)).into_response()
}

/// `POST /lora-adapters` `[{id, scale}]`: the scales of requests that list
/// none (adapters left out: 0).
pub async fn set(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    if !authorized(&app, &headers) {
        return unauthorized();
    }
    let r = async {
        let bytes = read_body(&app, &headers, body).await?;
        let v: Value =
            serde_json::from_slice(&bytes).map_err(|e| ApiError::invalid("body", format!("invalid JSON: {e}")))?;
        let list = parse(&v, "body", app.lm.adapters.len())?;
        let mut scales = app.lora.lock().unwrap_or_else(|e| e.into_inner());
        scales.iter_mut().for_each(|s| *s = 0.0);
        for l in list {
            scales[l.id] = l.scale;
        }
        Ok::<_, ApiError>(())
    };
    match r.await {
        Ok(()) => Json(json!({ "success": true })).into_response(),
        Err(e) => error(e),
    }
}
