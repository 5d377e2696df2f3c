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

use super::http::{authorized, error, read_body, unauthorized, App};
use super::openai::{lora_list, ApiError};

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
        let list = lora_list(&v, "body", app.lm.adapters.len())?;
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
