//! llama-server's utility endpoints, which clients and tools call beside
//! the OpenAI ones: `/tokenize` (with pieces), `/detokenize`,
//! `/apply-template`, `/props`; OpenAI's `/v1/models/{id}`; `/health`,
//! which says 503 (with `Retry-After`) while the server drains.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use super::http::{authorized, blocking, error, read_body, unauthorized, App, RETRY_AFTER_S};
use super::openai::ApiError;

/// The JSON object of a request body (read within the body limit).
async fn body_object(app: &App, headers: &HeaderMap, body: Body) -> Result<Map<String, Value>, ApiError> {
    let bytes = read_body(app, headers, body).await?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::invalid("body", "the body must be a JSON object")),
        Err(e) => Err(ApiError::invalid("body", format!("invalid JSON: {e}"))),
    }
}

fn flag(m: &Map<String, Value>, k: &str) -> Result<bool, ApiError> {
    match m.get(k) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(ApiError::invalid(k, format!("{k} must be true or false, got {v}"))),
    }
}

/// Checked and authorized, then `f` on the blocking pool; its answer as JSON.
async fn call(
    app: Arc<App>,
    headers: HeaderMap,
    body: Body,
    f: impl FnOnce(&App, Map<String, Value>) -> Result<Value, ApiError> + Send + 'static,
) -> Response {
    if !authorized(&app, &headers) {
        return unauthorized();
    }
    let m = match body_object(&app, &headers, body).await {
        Ok(m) => m,
        Err(e) => return error(e),
    };
    let work = app.clone();
    match blocking(&app, move || f(&work, m)).await {
        Ok(v) => Json(v).into_response(),
        Err(e) => error(e),
    }
}

/// `POST /tokenize` `{content, add_special?, with_pieces?}` → `{tokens}`:
/// ids, or `{id, piece}` with pieces (a piece that is not UTF-8 by itself
/// as its bytes), as llama-server.
pub async fn tokenize(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    call(app, headers, body, |app, m| {
        let text = m
            .get("content")
            .and_then(Value::as_str)
            .ok_or_else(|| ApiError::invalid("content", "content must be a string"))?;
        let (add_special, with_pieces) = (flag(&m, "add_special")?, flag(&m, "with_pieces")?);
        let tok = app.lm.tokenizer().map_err(|e| ApiError::invalid("content", e.to_string()))?;
        let ids = tok.encode(text, add_special).map_err(|e| ApiError::core("content", e))?;
        let tokens: Vec<Value> = match with_pieces {
            false => ids.iter().map(|&id| id.into()).collect(),
            true => ids
                .iter()
                .map(|&id| {
                    let b = tok.token_bytes(id);
                    let piece = std::str::from_utf8(b).map_or_else(|_| json!(b), |s| json!(s));
                    json!({ "id": id, "piece": piece })
                })
                .collect(),
        };
        Ok(json!({ "tokens": tokens }))
    })
    .await
}

/// `POST /detokenize` `{tokens}` → `{content}`.
pub async fn detokenize(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    call(app, headers, body, |app, m| {
        let n_vocab = app.lm.model.config.n_vocab;
        let bad = || ApiError::invalid("tokens", format!("tokens must be a list of token ids below {n_vocab}"));
        let list = m.get("tokens").and_then(Value::as_array).ok_or_else(bad)?;
        let ids: Vec<u32> = list
            .iter()
            .map(|v| v.as_u64().filter(|&id| (id as usize) < n_vocab).map(|id| id as u32).ok_or_else(bad))
            .collect::<Result<_, _>>()?;
        let tok = app.lm.tokenizer().map_err(|e| ApiError::invalid("tokens", e.to_string()))?;
        Ok(json!({ "content": tok.decode(&ids) }))
    })
    .await
}

/// `POST /apply-template` `{messages, tools?, chat_template_kwargs?}` →
/// `{prompt}`: the conversation as the chat endpoint would render it.
pub async fn apply_template(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    call(app, headers, body, |app, m| {
        let msgs = m.get("messages").ok_or_else(|| ApiError::invalid("messages", "messages is required"))?;
        let msgs = tern_core::runtime::messages_from_json(msgs).map_err(|e| ApiError::core("messages", e))?;
        let t = app.lm.template().map_err(|e| ApiError::invalid("messages", e.to_string()))?;
        let mut kwargs = app.template_kwargs.clone();
        match m.get("chat_template_kwargs") {
            None | Some(Value::Null) => {}
            Some(Value::Object(k)) => kwargs.get_or_insert_with(Default::default).extend(k.clone()),
            Some(_) => return Err(ApiError::invalid("chat_template_kwargs", "chat_template_kwargs must be an object")),
        }
        let tools = m.get("tools").filter(|t| !t.is_null());
        let prompt = t.render_with(&msgs, true, tools, kwargs.as_ref()).map_err(|e| ApiError::core("messages", e))?;
        Ok(json!({ "prompt": prompt }))
    })
    .await
}

/// `GET /props`: the chat template, context, slots, model and build, as
/// llama-server's fields.
pub async fn props(State(app): State<Arc<App>>, headers: HeaderMap) -> Response {
    if !authorized(&app, &headers) {
        return unauthorized();
    }
    let c = &app.lm.model.config;
    let (template, bos, eos) = match app.lm.template() {
        Ok(t) => (Value::from(t.source()), Value::from(t.bos_token.as_str()), Value::from(t.eos_token.as_str())),
        Err(_) => (Value::Null, Value::Null, Value::Null),
    };
    Json(json!({
        "default_generation_settings": { "n_ctx": app.ctx, "params": { "n_predict": -1 } },
        "total_slots": app.parallel,
        "model_alias": app.model_id,
        "model_path": app.model_id,
        "chat_template": template,
        "bos_token": bos,
        "eos_token": eos,
        "modalities": { "vision": false, "audio": false },
        "build_info": format!("tern {}", env!("CARGO_PKG_VERSION")),
        "n_ctx_train": c.n_ctx_train,
        "n_vocab": c.n_vocab,
        "arch": c.arch.name(),
        "is_sleeping": false,
    }))
    .into_response()
}

/// `GET /v1/models/{id}`: one model of `/v1/models`, or a 404.
pub async fn model(State(app): State<Arc<App>>, headers: HeaderMap, Path(id): Path<String>) -> Response {
    if !authorized(&app, &headers) {
        return unauthorized();
    }
    match super::http::model_entries(&app).into_iter().find(|m| m["id"] == json!(id)) {
        Some(m) => Json(m).into_response(),
        None => error(ApiError::new(404, "invalid_request_error", format!("the model {id:?} does not exist"))),
    }
}

/// `GET /health`: 200 `{"status": "ok"}`; 503 with `Retry-After` while the
/// server drains (it answers new requests 503 then).
pub async fn health(State(app): State<Arc<App>>) -> Response {
    if app.draining.load(Relaxed) {
        let body = json!({ "status": "draining",
                           "error": { "code": 503, "message": "the server is shutting down", "type": "unavailable_error" } });
        return (StatusCode::SERVICE_UNAVAILABLE, [(header::RETRY_AFTER, RETRY_AFTER_S.to_string())], Json(body))
            .into_response();
    }
    Json(json!({ "status": "ok" })).into_response()
}
