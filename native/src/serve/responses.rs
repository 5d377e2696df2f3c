//! OpenAI's Responses API: `POST /v1/responses`. `input` (a string or
//! items: messages, `function_call`, `function_call_output`),
//! `instructions`, function `tools`, `tool_choice`, `text.format`,
//! `max_output_tokens`, sampling, `reasoning.effort` — read into the chat
//! form and so into core's one request; `previous_response_id` continues a
//! conversation held in a bounded store. The answer is a `response` with
//! `reasoning`, `message` and `function_call` output items, whole or as
//! the Responses event stream.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};
use tern_core::{FinishReason, GenerationDefaults, GenerationResult};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::http::{self, error, App, Endpoint, Started};
use super::openai::{self, ApiError, Envelope};
use super::scheduler::Update;

use super::response_store::{Shared, MAX_STORED};

fn bad(field: &str, what: impl Into<String>) -> ApiError {
    ApiError::invalid(field, what)
}

fn text_of(v: &Value, field: &str) -> Result<String, ApiError> {
    super::openai::text_parts(v, field, &["input_text", "output_text", "text"])
}

/// `input` as chat messages (after `history`).
fn messages(input: &Value, history: Vec<Value>) -> Result<Vec<Value>, ApiError> {
    let mut out = history;
    let items = match input {
        Value::String(s) => return Ok([out, vec![json!({ "role": "user", "content": s })]].concat()),
        Value::Array(items) => items,
        _ => return Err(bad("input", "a string or a list of items")),
    };
    for (i, it) in items.iter().enumerate() {
        let f = |k: &str| format!("input[{i}].{k}");
        match it.get("type").and_then(Value::as_str).unwrap_or("message") {
            "message" => {
                let role = it.get("role").and_then(Value::as_str).ok_or_else(|| bad(&f("role"), "a role"))?;
                let content = text_of(it.get("content").unwrap_or(&Value::Null), &f("content"))?;
                out.push(json!({ "role": role, "content": content }));
            }
            "function_call" => {
                let get = |k: &str| it.get(k).and_then(Value::as_str).ok_or_else(|| bad(&f(k), "a string"));
                let call = json!({ "id": get("call_id")?, "type": "function",
                                   "function": { "name": get("name")?, "arguments": get("arguments")? } });
                // calls of one reply go into one assistant message
                match out.last_mut() {
                    Some(m) if m["role"] == "assistant" && m.get("tool_calls").is_some() => {
                        m["tool_calls"].as_array_mut().map(|c| c.push(call));
                    }
                    _ => out.push(json!({ "role": "assistant", "content": "", "tool_calls": [call] })),
                }
            }
            "function_call_output" => {
                let id = it.get("call_id").and_then(Value::as_str).ok_or_else(|| bad(&f("call_id"), "a string"))?;
                let output = text_of(it.get("output").unwrap_or(&Value::Null), &f("output"))?;
                out.push(json!({ "role": "tool", "tool_call_id": id, "content": output }));
            }
            "reasoning" => {}
            t => {
                return Err(bad(
                    &f("type"),
                    format!("{t:?} items are not supported (message, function_call, function_call_output)"),
                ))
            }
        }
    }
    Ok(out)
}

/// A Responses body as the chat body it means, and its conversation.
fn to_chat(body: &[u8], store: &Shared) -> Result<(Map<String, Value>, Vec<Value>), ApiError> {
    let v: Value = serde_json::from_slice(body).map_err(|e| bad("body", format!("invalid JSON: {e}")))?;
    let Value::Object(m) = v else { return Err(bad("body", "the body must be a JSON object")) };
    let history = match m.get("previous_response_id").and_then(Value::as_str) {
        None => Vec::new(),
        Some(id) => {
            store.lock().map_err(|_| bad("previous_response_id", "the store failed"))?.get(id).ok_or_else(|| {
                ApiError {
                    status: 404,
                    ..bad(
                        "previous_response_id",
                        format!("no response {id:?} (the server keeps the last {MAX_STORED})"),
                    )
                }
            })?
        }
    };
    let mut msgs = messages(m.get("input").ok_or_else(|| bad("input", "input is required"))?, history)?;
    if let Some(s) = m.get("instructions").and_then(Value::as_str) {
        // (instructions are this request's, not the stored conversation's)
        msgs.retain(|x| x["role"] != "system" && x["role"] != "developer");
        msgs.insert(0, json!({ "role": "system", "content": s }));
    }
    let mut chat = Map::new();
    chat.insert("messages".into(), msgs.clone().into());
    for (k, v) in &m {
        if v.is_null() {
            continue;
        }
        match k.as_str() {
            "input"
            | "instructions"
            | "previous_response_id"
            | "model"
            | "store"
            | "metadata"
            | "user"
            | "truncation"
            | "service_tier"
            | "include"
            | "background"
            | "prompt_cache_key"
            | "safety_identifier" => {}
            "max_output_tokens" => {
                chat.insert("max_tokens".into(), v.clone());
            }
            "temperature" | "top_p" | "stream" | "parallel_tool_calls" | "top_logprobs" => {
                chat.insert(k.clone(), v.clone());
            }
            "tools" => {
                let tools = v.as_array().ok_or_else(|| bad(k, "a list of tools"))?;
                let fns = tools
                    .iter()
                    .enumerate()
                    .map(|(i, t)| match t.get("type").and_then(Value::as_str) {
                        Some("function") => Ok(json!({ "type": "function", "function": {
                            "name": t.get("name"), "description": t.get("description"), "parameters": t.get("parameters") } })),
                        other => Err(bad(&format!("tools[{i}].type"), format!("{other:?}: only function tools run here"))),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                chat.insert("tools".into(), fns.into());
            }
            "tool_choice" => {
                let choice = match v {
                    Value::String(_) => v.clone(),
                    Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("function") => {
                        json!({ "type": "function", "function": { "name": o.get("name") } })
                    }
                    _ => return Err(bad(k, "auto, none, required or {type: function, name}")),
                };
                chat.insert("tool_choice".into(), choice);
            }
            "text" => {
                let format = v.get("format").cloned().unwrap_or(json!({ "type": "text" }));
                let rf = match format.get("type").and_then(Value::as_str) {
                    Some("json_schema") => json!({ "type": "json_schema", "json_schema": {
                        "name": format.get("name"), "schema": format.get("schema"), "strict": format.get("strict") } }),
                    _ => format,
                };
                chat.insert("response_format".into(), rf);
            }
            "reasoning" => {
                if let Some(e) = v.get("effort").filter(|e| !e.is_null()) {
                    chat.insert("reasoning_effort".into(), e.clone());
                }
            }
            _ => return Err(bad(k, format!("unknown field {k}"))),
        }
    }
    Ok((chat, msgs))
}

/// The `output` items of a result, and the assistant's message for the
/// stored conversation.
fn output(env: &Envelope, r: &GenerationResult) -> (Vec<Value>, Value) {
    let parts = env.parts(r);
    let (text, calls) = env.calls_in(&parts.content);
    let mut items = Vec::new();
    if !parts.reasoning.is_empty() {
        items.push(json!({ "type": "reasoning", "id": format!("rs_{}", env.id), "summary": [],
                           "content": [{ "type": "reasoning_text", "text": parts.reasoning }] }));
    }
    if !text.is_empty() || calls.is_empty() {
        items.push(
            json!({ "type": "message", "id": format!("msg_{}", env.id), "status": "completed", "role": "assistant",
                           "content": [{ "type": "output_text", "text": text, "annotations": [] }] }),
        );
    }
    let mut tool_calls = Vec::new();
    for (i, c) in calls.iter().enumerate() {
        let call_id = format!("call_{}_{i}", env.id);
        let args = c.arguments.to_string();
        items.push(json!({ "type": "function_call", "id": format!("fc_{}_{i}", env.id), "call_id": call_id,
                           "name": c.name, "arguments": args, "status": "completed" }));
        tool_calls
            .push(json!({ "id": call_id, "type": "function", "function": { "name": c.name, "arguments": args } }));
    }
    let mut assistant = json!({ "role": "assistant", "content": text });
    if !tool_calls.is_empty() {
        assistant["tool_calls"] = tool_calls.into();
    }
    (items, assistant)
}

fn response_object(env: &Envelope, r: Option<&GenerationResult>, out: Vec<Value>, previous: &Value) -> Value {
    let (status, incomplete) = match r.map(|r| r.finish_reason) {
        None => ("in_progress", Value::Null),
        Some(FinishReason::Length | FinishReason::Cancelled) => {
            ("incomplete", json!({ "reason": "max_output_tokens" }))
        }
        Some(_) => ("completed", Value::Null),
    };
    let usage = r.map_or(Value::Null, |r| {
        let mut u = json!({ "input_tokens": r.usage.prompt_tokens, "output_tokens": r.usage.completion_tokens,
                "total_tokens": r.usage.prompt_tokens + r.usage.completion_tokens,
                "input_tokens_details": { "cached_tokens": r.usage.cached_tokens },
                "output_tokens_details": { "reasoning_tokens": 0 } });
        if let Some(Value::Object(d)) = openai::prediction_details(r) {
            u["output_tokens_details"].as_object_mut().expect("an object").extend(d);
        }
        u
    });
    json!({ "id": env.id, "object": "response", "created_at": env.created, "status": status, "model": env.model,
            "output": out, "usage": usage, "incomplete_details": incomplete, "error": null,
            "previous_response_id": previous, "parallel_tool_calls": true, "tool_choice": "auto", "tools": [],
            "metadata": {} })
}

/// `POST /v1/responses`.
pub async fn create(State(app): State<Arc<App>>, headers: HeaderMap, body: Body) -> Response {
    let store = app.clone();
    let parse = move |bytes: &[u8], n_vocab, defaults: &GenerationDefaults| {
        let (chat, msgs) = to_chat(bytes, &store.responses)?;
        let previous = serde_json::from_slice::<Value>(bytes).ok().and_then(|v| v.get("previous_response_id").cloned());
        let chat = serde_json::to_vec(&Value::Object(chat)).unwrap_or_default();
        let r = super::openai::Request::parse(&chat, true, n_vocab, defaults)?;
        Ok((r, (msgs, previous.unwrap_or(Value::Null))))
    };
    let (Started { admitted, mut rx, reply, stream, .. }, (msgs, previous)) =
        match http::start(&app, &headers, body, Endpoint::Responses, error, parse).await {
            Ok(s) => s,
            Err(resp) => return resp,
        };
    if stream {
        return events(app, admitted, rx, reply, msgs, previous);
    }
    let _admitted = admitted;
    while let Some(u) = rx.recv().await {
        match u {
            Update::Token { .. } => {}
            Update::Done(r) => {
                let env = http::envelope(&app, &reply);
                let (out, assistant) = output(&env, &r);
                if let Ok(mut s) = app.responses.lock() {
                    s.put(reply.id.clone(), [msgs, vec![assistant]].concat());
                }
                return Json(response_object(&env, Some(&r), out, &previous)).into_response();
            }
            Update::Error(e) => return error(ApiError::new(500, "server_error", e)),
        }
    }
    error(ApiError::new(500, "server_error", "the engine stopped"))
}

/// The Responses event stream: `response.created`, the text as
/// `response.output_text.delta` in a message item, then each item's
/// `.done` (function calls whole, with their arguments' `.done`), and
/// `response.completed` with the whole response.
fn events(
    app: Arc<App>,
    admitted: http::Admitted,
    mut rx: mpsc::UnboundedReceiver<Update>,
    reply: http::Reply,
    msgs: Vec<Value>,
    previous: Value,
) -> Response {
    let (tx, out) = mpsc::channel::<Result<Event, Infallible>>(64);
    tokio::spawn(async move {
        let _admitted = admitted;
        let env = http::envelope(&app, &reply);
        let mut seq = 0u64;
        let mut send = |mut v: Value| {
            v["sequence_number"] = seq.into();
            seq += 1;
            let name = v["type"].as_str().unwrap_or("").to_string();
            tx.send(Ok(Event::default().event(name).data(v.to_string())))
        };
        let created = response_object(&env, None, Vec::new(), &previous);
        if send(json!({ "type": "response.created", "response": created })).await.is_err() {
            return;
        }
        let item_id = format!("msg_{}", env.id);
        let mut split = env.reasoning.map(|r| r.splitter());
        let (mut all, mut sent, mut opened) = (String::new(), 0usize, false);
        while let Some(u) = rx.recv().await {
            match u {
                Update::Token { text, .. } => {
                    let content = match &mut split {
                        Some(s) => s.push(&text).content,
                        None => text,
                    };
                    all.push_str(&content);
                    let upto = env.streamable(&all).max(sent);
                    let delta = all[sent..upto].to_string();
                    sent = upto;
                    if delta.is_empty() {
                        continue;
                    }
                    if !opened {
                        opened = true;
                        let item = json!({ "type": "message", "id": item_id, "status": "in_progress", "role": "assistant", "content": [] });
                        let _ = send(json!({ "type": "response.output_item.added", "output_index": 0, "item": item }))
                            .await;
                        let part = json!({ "type": "output_text", "text": "", "annotations": [] });
                        let _ = send(json!({ "type": "response.content_part.added", "item_id": item_id, "output_index": 0, "content_index": 0, "part": part })).await;
                    }
                    let d = json!({ "type": "response.output_text.delta", "item_id": item_id, "output_index": 0, "content_index": 0, "delta": delta });
                    if send(d).await.is_err() {
                        return;
                    }
                }
                Update::Done(r) => {
                    let (items, assistant) = output(&env, &r);
                    for (i, item) in items.iter().enumerate() {
                        if item["type"] == "message" && opened {
                            let text = item["content"][0]["text"].clone();
                            let _ = send(json!({ "type": "response.output_text.done", "item_id": item_id, "output_index": i, "content_index": 0, "text": text })).await;
                        } else if item["type"] == "function_call" {
                            let _ =
                                send(json!({ "type": "response.output_item.added", "output_index": i, "item": item }))
                                    .await;
                            let _ = send(json!({ "type": "response.function_call_arguments.done", "item_id": item["id"], "output_index": i, "arguments": item["arguments"] })).await;
                        }
                        let _ =
                            send(json!({ "type": "response.output_item.done", "output_index": i, "item": item })).await;
                    }
                    if let Ok(mut s) = app.responses.lock() {
                        s.put(env.id.to_string(), [msgs, vec![assistant]].concat());
                    }
                    let done = response_object(&env, Some(&r), items, &previous);
                    let _ = send(json!({ "type": "response.completed", "response": done })).await;
                    return;
                }
                Update::Error(e) => {
                    let _ = send(json!({ "type": "error", "message": e })).await;
                    return;
                }
            }
        }
    });
    Sse::new(ReceiverStream::new(out)).keep_alive(KeepAlive::default()).into_response()
}
