//! Anthropic's Messages API: `POST /v1/messages` and
//! `/v1/messages/count_tokens`. A body is read as the chat it is —
//! `system`, `messages` of text / `tool_use` / `tool_result` blocks,
//! `tools`, `tool_choice`, `max_tokens` (required), `stop_sequences`,
//! `temperature`/`top_p`/`top_k`, `thinking` — into the OpenAI chat form
//! and so into core's one request; the answer is a `message` with
//! `thinking`, `text` and `tool_use` blocks, whole or as Anthropic's event
//! stream; errors in Anthropic's shape.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};
use tern_core::{FinishReason, GenerationDefaults, GenerationResult, ToolCall};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::http::{self, authorized, blocking, read_body, App, Endpoint, Started};
use super::openai::{self, ApiError, Envelope, Request};
use super::scheduler::Update;

/// Anthropic's error object for `e`.
pub(super) fn error(e: ApiError) -> Response {
    let kind = match e.status {
        401 => "authentication_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        503 => "overloaded_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    };
    let message = match &e.param {
        Some(p) if !e.message.contains(p.as_str()) => format!("{p}: {}", e.message),
        _ => e.message.clone(),
    };
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
    (status, Json(json!({ "type": "error", "error": { "type": kind, "message": message } }))).into_response()
}

fn bad(field: &str, what: impl Into<String>) -> ApiError {
    ApiError::invalid(field, what)
}

fn text_of(v: &Value, field: &str) -> Result<String, ApiError> {
    super::openai::text_parts(v, field, &["text"])
}

/// One Anthropic message as OpenAI chat messages: a user's `tool_result`
/// blocks become `tool` messages, an assistant's `tool_use` blocks its
/// `tool_calls`; `thinking` blocks of earlier replies are dropped.
fn message(m: &Value, i: usize, out: &mut Vec<Value>) -> Result<(), ApiError> {
    let field = |k: &str| format!("messages[{i}].{k}");
    let role = m.get("role").and_then(Value::as_str).ok_or_else(|| bad(&field("role"), "user or assistant"))?;
    if role != "user" && role != "assistant" {
        return Err(bad(&field("role"), format!("{role:?}: user or assistant")));
    }
    let content = m.get("content").ok_or_else(|| bad(&field("content"), "content is required"))?;
    let blocks = match content {
        Value::String(s) => {
            out.push(json!({ "role": role, "content": s }));
            return Ok(());
        }
        Value::Array(b) => b,
        _ => return Err(bad(&field("content"), "a string or a list of blocks")),
    };
    let (mut text, mut calls) = (String::new(), Vec::new());
    for (j, b) in blocks.iter().enumerate() {
        let bf = |k: &str| format!("messages[{i}].content[{j}].{k}");
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                text.push_str(b.get("text").and_then(Value::as_str).ok_or_else(|| bad(&bf("text"), "a string"))?)
            }
            Some("tool_use") if role == "assistant" => {
                let id = b.get("id").and_then(Value::as_str).ok_or_else(|| bad(&bf("id"), "a string"))?;
                let name = b.get("name").and_then(Value::as_str).ok_or_else(|| bad(&bf("name"), "a string"))?;
                let input = b.get("input").cloned().unwrap_or(json!({}));
                calls.push(json!({ "id": id, "type": "function",
                                   "function": { "name": name, "arguments": input.to_string() } }));
            }
            Some("tool_result") if role == "user" => {
                let id =
                    b.get("tool_use_id").and_then(Value::as_str).ok_or_else(|| bad(&bf("tool_use_id"), "a string"))?;
                let content = match b.get("content") {
                    None | Some(Value::Null) => String::new(),
                    Some(c) => text_of(c, &bf("content"))?,
                };
                out.push(json!({ "role": "tool", "tool_call_id": id, "content": content }));
            }
            Some("thinking" | "redacted_thinking") if role == "assistant" => {}
            Some(t) => {
                return Err(bad(&bf("type"), format!("{t:?} blocks are not supported (text, tool_use, tool_result)")))
            }
            None => return Err(bad(&bf("type"), "each block needs a type")),
        }
    }
    if !calls.is_empty() {
        out.push(json!({ "role": "assistant", "content": text, "tool_calls": calls }));
    } else if !text.is_empty() || role == "assistant" {
        out.push(json!({ "role": role, "content": text }));
    }
    Ok(())
}

/// Anthropic's body as the OpenAI chat body it means.
fn to_chat(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| bad("body", format!("invalid JSON: {e}")))?;
    let Value::Object(m) = v else { return Err(bad("body", "the body must be a JSON object")) };
    let mut chat = Map::new();
    let mut msgs = Vec::new();
    if let Some(s) = m.get("system").filter(|s| !s.is_null()) {
        msgs.push(json!({ "role": "system", "content": text_of(s, "system")? }));
    }
    let list = m.get("messages").and_then(Value::as_array).ok_or_else(|| bad("messages", "a list of messages"))?;
    for (i, msg) in list.iter().enumerate() {
        message(msg, i, &mut msgs)?;
    }
    chat.insert("messages".into(), msgs.into());
    for (k, v) in &m {
        match k.as_str() {
            // (the service's hints: nothing to do here)
            "system" | "messages" | "model" | "metadata" | "service_tier" | "container" | "cache_control"
            | "inference_geo" | "speed" | "workspace_id" | "user_profile_id" | "diagnostics" => {}
            "max_tokens" => {
                chat.insert("max_tokens".into(), v.clone());
            }
            "stop_sequences" => {
                chat.insert("stop".into(), v.clone());
            }
            "temperature" | "top_p" | "top_k" | "stream" => {
                chat.insert(k.clone(), v.clone());
            }
            "tools" => {
                let tools = v.as_array().ok_or_else(|| bad(k, "a list of tools"))?;
                let fns = tools
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        let name = t.get("name").and_then(Value::as_str).ok_or_else(|| bad(&format!("tools[{i}].name"), "a string"))?;
                        let schema = t.get("input_schema").cloned().unwrap_or(json!({ "type": "object" }));
                        let desc = t.get("description").cloned().unwrap_or(Value::Null);
                        Ok(json!({ "type": "function", "function": { "name": name, "description": desc, "parameters": schema } }))
                    })
                    .collect::<Result<Vec<_>, ApiError>>()?;
                chat.insert("tools".into(), fns.into());
            }
            "tool_choice" => {
                let choice = match v.get("type").and_then(Value::as_str) {
                    Some("auto") => json!("auto"),
                    Some("any") => json!("required"),
                    Some("none") => json!("none"),
                    Some("tool") => {
                        let name =
                            v.get("name").and_then(Value::as_str).ok_or_else(|| bad("tool_choice.name", "a string"))?;
                        json!({ "type": "function", "function": { "name": name } })
                    }
                    _ => return Err(bad(k, "type auto, any, tool or none")),
                };
                if v.get("disable_parallel_tool_use") == Some(&Value::Bool(true)) {
                    chat.insert("parallel_tool_calls".into(), false.into());
                }
                chat.insert("tool_choice".into(), choice);
            }
            "thinking" => {
                let on = match v.get("type").and_then(Value::as_str) {
                    Some("enabled") => true,
                    Some("disabled") => false,
                    _ => return Err(bad(k, "type enabled or disabled")),
                };
                chat.insert("chat_template_kwargs".into(), json!({ "enable_thinking": on }));
            }
            _ => return Err(bad(k, format!("unknown field {k}"))),
        }
    }
    if !m.contains_key("max_tokens") {
        return Err(bad("max_tokens", "max_tokens is required"));
    }
    Ok(chat)
}

/// Anthropic's body as core's request (through the chat endpoint's one
/// parser, so every field has its one rule).
pub(super) fn parse(body: &[u8], n_vocab: usize, defaults: &GenerationDefaults) -> Result<Request, ApiError> {
    let chat = to_chat(body)?;
    let bytes = serde_json::to_vec(&Value::Object(chat)).unwrap_or_default();
    Request::parse(&bytes, true, n_vocab, defaults)
}

/// Anthropic's `stop_reason` (and the stop sequence met, if one was).
fn stop_reason(r: &GenerationResult, calls: &[ToolCall]) -> (&'static str, Value) {
    if !calls.is_empty() {
        return ("tool_use", Value::Null);
    }
    match (r.finish_reason, &r.stop_string) {
        (FinishReason::Stop, Some(s)) => ("stop_sequence", Value::String(s.clone())),
        (FinishReason::Stop, None) => ("end_turn", Value::Null),
        _ => ("max_tokens", Value::Null),
    }
}

fn tool_use(calls: &[ToolCall], id: &str) -> Vec<Value> {
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| json!({ "type": "tool_use", "id": format!("toolu_{id}_{i}"), "name": c.name, "input": c.arguments }))
        .collect()
}

/// Anthropic's usage, with the drafted tokens' counts (OpenAI's names) if
/// speculative decoding ran.
fn usage(r: &GenerationResult) -> Value {
    let mut u = json!({ "input_tokens": r.usage.prompt_tokens, "output_tokens": r.usage.completion_tokens,
                        "cache_read_input_tokens": r.usage.cached_tokens });
    if let Some(Value::Object(d)) = openai::prediction_details(r) {
        u.as_object_mut().expect("an object").extend(d);
    }
    u
}

/// The whole `message`.
fn message_object(env: &Envelope, r: &GenerationResult) -> Value {
    let parts = env.parts(r);
    let (text, calls) = env.calls_in(&parts.content);
    let mut content = Vec::new();
    if !parts.reasoning.is_empty() {
        content.push(json!({ "type": "thinking", "thinking": parts.reasoning, "signature": "" }));
    }
    if !text.is_empty() {
        content.push(json!({ "type": "text", "text": text }));
    }
    content.extend(tool_use(&calls, env.id));
    let (reason, sequence) = stop_reason(r, &calls);
    json!({ "id": env.id, "type": "message", "role": "assistant", "model": env.model, "content": content,
            "stop_reason": reason, "stop_sequence": sequence, "usage": usage(r) })
}

/// `POST /v1/messages`.
pub async fn messages(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let parse = |b: &[u8], n, d: &GenerationDefaults| parse(b, n, d).map(|r| (r, ()));
    let (Started { admitted, mut rx, reply, stream, .. }, ()) =
        match http::start(&app, &headers, body, Endpoint::Messages, error, parse).await {
            Ok(s) => s,
            Err(resp) => return resp,
        };
    if stream {
        return events(app, admitted, rx, reply);
    }
    let _admitted = admitted;
    while let Some(u) = rx.recv().await {
        match u {
            Update::Token { .. } => {}
            Update::Done(r) => return Json(message_object(&http::envelope(&app, &reply), &r)).into_response(),
            Update::Error(e) => return error(ApiError::new(500, "server_error", e)),
        }
    }
    error(ApiError::new(500, "server_error", "the engine stopped"))
}

/// The block being streamed.
#[derive(PartialEq, Eq, Clone, Copy)]
enum Block {
    Thinking,
    Text,
}

/// Anthropic's event stream: `message_start`, each block's
/// `content_block_start` / `_delta` / `_stop` (thinking, text, then the
/// tool calls, whose input is sent whole as one `input_json_delta`),
/// `message_delta` with the stop reason and usage, `message_stop`.
fn events(
    app: Arc<App>,
    admitted: http::Admitted,
    mut rx: mpsc::UnboundedReceiver<Update>,
    reply: http::Reply,
) -> Response {
    let (tx, out) = mpsc::channel::<Result<Event, Infallible>>(64);
    tokio::spawn(async move {
        let _admitted = admitted;
        let env = http::envelope(&app, &reply);
        let send = |name: &'static str, v: Value| tx.send(Ok(Event::default().event(name).data(v.to_string())));
        let start = json!({ "type": "message_start", "message": { "id": env.id, "type": "message", "role": "assistant",
            "model": env.model, "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": { "input_tokens": 0, "output_tokens": 0 } } });
        if send("message_start", start).await.is_err() {
            return;
        }
        let mut split = env.reasoning.map(|r| r.splitter());
        // (content is held back from where a tool call could begin)
        let (mut all, mut sent, mut index, mut open): (String, usize, usize, Option<Block>) =
            (String::new(), 0, 0, None);
        macro_rules! block {
            ($kind:expr, $text:expr) => {{
                let (kind, text): (Block, &str) = ($kind, $text);
                if !text.is_empty() {
                    if open != Some(kind) {
                        if open.is_some() {
                            let _ = send("content_block_stop", json!({ "type": "content_block_stop", "index": index })).await;
                            index += 1;
                        }
                        let cb = match kind {
                            Block::Thinking => json!({ "type": "thinking", "thinking": "", "signature": "" }),
                            Block::Text => json!({ "type": "text", "text": "" }),
                        };
                        let _ = send("content_block_start", json!({ "type": "content_block_start", "index": index, "content_block": cb })).await;
                        open = Some(kind);
                    }
                    let delta = match kind {
                        Block::Thinking => json!({ "type": "thinking_delta", "thinking": text }),
                        Block::Text => json!({ "type": "text_delta", "text": text }),
                    };
                    send("content_block_delta", json!({ "type": "content_block_delta", "index": index, "delta": delta })).await.is_ok()
                } else {
                    true
                }
            }};
        }
        while let Some(u) = rx.recv().await {
            match u {
                Update::Token { text, .. } => {
                    let parts = match &mut split {
                        Some(s) => s.push(&text),
                        None => tern_core::Parts { reasoning: String::new(), content: text },
                    };
                    all.push_str(&parts.content);
                    let upto = env.streamable(&all).max(sent);
                    let delta = all[sent..upto].to_string();
                    sent = upto;
                    if !block!(Block::Thinking, &parts.reasoning) || !block!(Block::Text, &delta) {
                        return;
                    }
                }
                Update::Done(r) => {
                    if let Some(parts) = split.as_mut().map(|s| s.finish()) {
                        block!(Block::Thinking, &parts.reasoning);
                        all.push_str(&parts.content);
                    }
                    let (_, calls) = env.calls_in(&all);
                    if calls.is_empty() {
                        let rest = all[sent..].to_string();
                        block!(Block::Text, &rest);
                    }
                    if open.is_some() {
                        let _ =
                            send("content_block_stop", json!({ "type": "content_block_stop", "index": index })).await;
                        index += 1;
                    }
                    for call in tool_use(&calls, env.id) {
                        let input = call["input"].to_string();
                        let mut cb = call.clone();
                        cb["input"] = json!({});
                        let _ = send(
                            "content_block_start",
                            json!({ "type": "content_block_start", "index": index, "content_block": cb }),
                        )
                        .await;
                        let delta = json!({ "type": "input_json_delta", "partial_json": input });
                        let _ = send(
                            "content_block_delta",
                            json!({ "type": "content_block_delta", "index": index, "delta": delta }),
                        )
                        .await;
                        let _ =
                            send("content_block_stop", json!({ "type": "content_block_stop", "index": index })).await;
                        index += 1;
                    }
                    let (reason, sequence) = stop_reason(&r, &calls);
                    let _ = send(
                        "message_delta",
                        json!({ "type": "message_delta",
                        "delta": { "stop_reason": reason, "stop_sequence": sequence }, "usage": usage(&r) }),
                    )
                    .await;
                    let _ = send("message_stop", json!({ "type": "message_stop" })).await;
                    return;
                }
                Update::Error(e) => {
                    let _ =
                        send("error", json!({ "type": "error", "error": { "type": "api_error", "message": e } })).await;
                    return;
                }
            }
        }
    });
    Sse::new(ReceiverStream::new(out)).keep_alive(KeepAlive::default()).into_response()
}

/// `POST /v1/messages/count_tokens`: the prompt's tokens as the chat
/// template renders it (`max_tokens` not needed).
pub async fn count_tokens(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    if !authorized(&app, &headers) {
        return error(ApiError::new(401, "invalid_request_error", "a valid API key is required"));
    }
    let bytes = match read_body(&app, &headers, body).await {
        Ok(b) => b,
        Err(e) => return error(e),
    };
    let work = app.clone();
    let counted = blocking(&app, move || {
        let mut v: Value = serde_json::from_slice(&bytes).map_err(|e| bad("body", format!("invalid JSON: {e}")))?;
        if let Some(m) = v.as_object_mut() {
            m.entry("max_tokens").or_insert(1.into());
        }
        let body = serde_json::to_vec(&v).unwrap_or_default();
        let mut req = parse(&body, work.lm.model.config.n_vocab, &work.lm.defaults)?;
        req.core.max_tokens = Some(1);
        let p = work.lm.prepare(&req.core, None).map_err(|e| ApiError::core("messages", e))?;
        Ok(json!({ "input_tokens": p.prompt.len() }))
    })
    .await;
    match counted {
        Ok(v) => Json(v).into_response(),
        Err(e) => error(e),
    }
}
