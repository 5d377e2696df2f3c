//! The OpenAI request fields tern maps (chat and text completions), parsed
//! with errors naming the field, and the response objects and stream
//! chunks in OpenAI's shapes.

use serde_json::{json, Map, Value};
use tern_core::GenerationDefaults;
use tern_core::Grammar;
use tern_core::Message;
use tern_core::Tokenizer;
use tern_core::{runtime::calls_json, runtime::message_tool_calls, ToolCall, ToolFormat};
use tern_core::{FinishReason, GenerationResult, TokenLogprob, MAX_TOP_LOGPROBS};
use tern_core::{LoraScale, MAX_ADAPTERS};
use tern_core::{Prompt, Reasoning, ReasoningFormat, Request as CoreRequest};

pub use super::api_error::ApiError;

/// A completion request, its fields checked: core's one [`CoreRequest`]
/// and what only the HTTP answer needs.
pub struct Request {
    /// The generation asked for.
    pub core: CoreRequest,
    /// Answer as server-sent events.
    pub stream: bool,
    /// `stream_options.include_usage`: a last chunk with the usage.
    pub include_usage: bool,
    /// The field that asked for a grammar (`response_format`; llama.cpp's
    /// `json_schema` and `grammar`), for naming it in errors.
    pub grammar_field: Option<&'static str>,
    /// Tools the reply may call (its calls are parsed out).
    pub tools_on: bool,
    /// `reasoning_format`, if the request gave one (else the server's).
    pub reasoning_format: Option<ReasoningFormat>,
}

fn top_count(v: &Value, k: &str) -> Result<usize, ApiError> {
    match v.as_u64() {
        Some(n) if n as usize <= MAX_TOP_LOGPROBS => Ok(n as usize),
        _ => Err(ApiError::invalid(k, format!("{k} must be an integer in [0, {MAX_TOP_LOGPROBS}], got {v}"))),
    }
}

fn num(v: &Value, k: &str, lo: f64, hi: f64) -> Result<f32, ApiError> {
    match v.as_f64() {
        Some(x) if (lo..=hi).contains(&x) => Ok(x as f32),
        _ => Err(ApiError::invalid(k, format!("{k} must be a number in [{lo}, {hi}], got {v}"))),
    }
}

/// A number, its range left to the one rule (`SamplerConfig::validate`).
fn float(v: &Value, k: &str) -> Result<f32, ApiError> {
    v.as_f64().map(|x| x as f32).ok_or_else(|| ApiError::invalid(k, format!("{k} must be a number, got {v}")))
}

fn count(v: &Value, k: &str) -> Result<usize, ApiError> {
    v.as_u64()
        .map(|n| n as usize)
        .ok_or_else(|| ApiError::invalid(k, format!("{k} must be a non-negative integer, got {v}")))
}

fn content(v: &Value, i: usize) -> Result<String, ApiError> {
    let k = format!("messages[{i}].content");
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match (p.get("type").and_then(Value::as_str), p.get("text").and_then(Value::as_str)) {
                (Some("text"), Some(t)) => Ok(t),
                _ => Err(ApiError::invalid(&k, "only text content parts are supported")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|t| t.concat()),
        _ => Err(ApiError::invalid(&k, "content must be a string or a list of text parts")),
    }
}

/// Text given as a string or as a list of parts `{type, text}` whose type
/// is one of `kinds` (concatenated): Anthropic's blocks, Responses' parts.
pub(super) fn text_parts(v: &Value, field: &str, kinds: &[&str]) -> Result<String, ApiError> {
    let only = || ApiError::invalid(field, format!("a string or a list of {} parts", kinds.join(" / ")));
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Array(parts) => parts
            .iter()
            .map(|p| match (p.get("type").and_then(Value::as_str), p.get("text").and_then(Value::as_str)) {
                (Some(k), Some(t)) if kinds.contains(&k) => Ok(t),
                _ => Err(only()),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|t| t.concat()),
        _ => Err(only()),
    }
}

/// A `lora` list: `[{id, scale}]`, every id one the server loaded.
pub(super) fn lora_list(v: &Value, field: &str, loaded: usize) -> Result<Vec<LoraScale>, ApiError> {
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

/// Set the request's grammar from `field`: a 400 if another field set one
/// already (`response_format`, `json_schema` and `grammar` exclude each
/// other; none is silently picked).
fn one_grammar(r: &mut Request, g: Grammar, field: &'static str) -> Result<(), ApiError> {
    if let Some(other) = r.grammar_field {
        return Err(ApiError::invalid(field, format!("{field} and {other} exclude each other: send one")));
    }
    (r.core.grammar, r.grammar_field) = (Some(g), Some(field));
    Ok(())
}

fn messages(v: &Value) -> Result<Vec<Message>, ApiError> {
    let list = v
        .as_array()
        .filter(|l| !l.is_empty())
        .ok_or_else(|| ApiError::invalid("messages", "messages must be a non-empty list"))?;
    list.iter()
        .enumerate()
        .map(|(i, m)| {
            let role = m
                .get("role")
                .and_then(Value::as_str)
                .ok_or_else(|| ApiError::invalid(&format!("messages[{i}].role"), "each message needs a role"))?;
            if !tern_core::runtime::ROLES.contains(&role) {
                return Err(ApiError::invalid(&format!("messages[{i}].role"), format!("unknown role {role:?}")));
            }
            let role = if role == "developer" { "system" } else { role };
            let mut msg = Message::new(role, &content(m.get("content").unwrap_or(&Value::Null), i)?);
            match m.get("tool_calls") {
                Some(c) if role == "assistant" && !c.is_null() => {
                    msg.tool_calls = Some(message_tool_calls(c, i).map_err(|e| ApiError::core("messages", e))?)
                }
                _ => {}
            }
            if role == "tool" {
                msg.tool_call_id = m.get("tool_call_id").and_then(Value::as_str).map(String::from);
            }
            Ok(msg)
        })
        .collect()
}

fn prompt(v: &Value, n_vocab: usize) -> Result<Prompt, ApiError> {
    let bad = || ApiError::invalid("prompt", "prompt must be a string, one string in a list, or a list of token ids");
    match v {
        Value::String(s) => Ok(Prompt::Text(s.clone())),
        Value::Array(a) if a.len() == 1 && a[0].is_string() => Ok(Prompt::Text(a[0].as_str().unwrap_or("").into())),
        Value::Array(a) if !a.is_empty() => a
            .iter()
            .map(|x| x.as_u64().filter(|&id| (id as usize) < n_vocab).map(|id| id as u32).ok_or_else(bad))
            .collect::<Result<_, _>>()
            .map(Prompt::Ids),
        _ => Err(bad()),
    }
}

/// llama-server's `/infill` fields, taken out of `m`: the gap to fill.
fn infill_fields(m: &mut Map<String, Value>) -> Result<tern_core::Infill, ApiError> {
    let text = |m: &mut Map<String, Value>, k: &str| match m.remove(k) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s),
        Some(v) => Err(ApiError::invalid(k, format!("{k} must be a string, got {v}"))),
    };
    let (prefix, suffix, middle) = (text(m, "input_prefix")?, text(m, "input_suffix")?, text(m, "prompt")?);
    let extra = match m.remove("input_extra") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(files)) if files.len() <= tern_core::MAX_EXTRA_FILES => files
            .into_iter()
            .map(|f| serde_json::from_value::<tern_core::ExtraFile>(f))
            .collect::<Result<_, _>>()
            .map_err(|e| ApiError::invalid("input_extra", format!("each file is {{filename, text}}: {e}")))?,
        Some(_) => {
            let n = tern_core::MAX_EXTRA_FILES;
            return Err(ApiError::invalid("input_extra", format!("input_extra must be a list of up to {n} files")));
        }
    };
    Ok(tern_core::Infill { prefix, suffix, extra, middle })
}

impl Request {
    /// llama-server's `POST /infill`: `input_prefix`, `input_suffix`,
    /// `input_extra`, `prompt` (the middle's start), and the completion
    /// fields beside them.
    pub fn parse_infill(body: &[u8], n_vocab: usize, defaults: &GenerationDefaults) -> Result<Request, ApiError> {
        let v: Value =
            serde_json::from_slice(body).map_err(|e| ApiError::invalid("body", format!("invalid JSON: {e}")))?;
        let Value::Object(mut m) = v else { return Err(ApiError::invalid("body", "the body must be a JSON object")) };
        let infill = infill_fields(&mut m)?;
        // llama-server's names for what OpenAI's fields say
        if let Some(n) = m.remove("n_probs") {
            m.insert("logprobs".into(), n);
        }
        m.insert("prompt".into(), "".into());
        let rest = serde_json::to_vec(&Value::Object(m)).unwrap_or_default();
        let mut r = Request::parse(&rest, false, n_vocab, defaults)?;
        r.core.prompt = Prompt::Infill(infill);
        Ok(r)
    }

    /// `chat`: /v1/chat/completions (else /v1/completions).
    pub fn parse(body: &[u8], chat: bool, n_vocab: usize, defaults: &GenerationDefaults) -> Result<Request, ApiError> {
        let v: Value =
            serde_json::from_slice(body).map_err(|e| ApiError::invalid("body", format!("invalid JSON: {e}")))?;
        let Value::Object(m) = v else { return Err(ApiError::invalid("body", "the body must be a JSON object")) };
        let main = if chat { "messages" } else { "prompt" };
        let p = m.get(main).ok_or_else(|| ApiError::invalid(main, format!("{main} is required")))?;
        let prompt = if chat { Prompt::Messages(messages(p)?) } else { prompt(p, n_vocab)? };
        let mut r = Request {
            core: CoreRequest::new(prompt),
            stream: false,
            include_usage: false,
            grammar_field: None,
            tools_on: false,
            reasoning_format: None,
        };
        let mut want_logprobs = false;
        let mut top = None;
        for (k, v) in &m {
            if v.is_null() {
                continue;
            }
            let s = &mut r.core.sampling;
            match k.as_str() {
                "messages" | "prompt" | "model" | "user" | "metadata" | "store" | "service_tier" => {}
                "tools" | "tool_choice" | "parallel_tool_calls" if chat => {}
                "max_tokens" | "max_completion_tokens" | "n_predict" => r.core.max_tokens = Some(count(v, k)?),
                "temperature" => s.temperature = Some(float(v, k)?),
                "top_p" => s.top_p = Some(float(v, k)?),
                "top_k" => s.top_k = Some(count(v, k)?),
                "min_p" => s.min_p = Some(float(v, k)?),
                "presence_penalty" => s.presence_penalty = Some(float(v, k)?),
                "frequency_penalty" => s.frequency_penalty = Some(float(v, k)?),
                "repeat_penalty" => s.repeat_penalty = Some(float(v, k)?),
                // llama-server's names
                "typical_p" => s.typical_p = Some(float(v, k)?),
                "repeat_last_n" => s.repeat_last_n = Some(count(v, k)?),
                "ignore_eos" => {
                    r.core.ignore_eos =
                        v.as_bool().ok_or_else(|| ApiError::invalid(k, "ignore_eos must be true or false"))?
                }
                "n_probs" => r.core.logprobs = Some(top_count(v, k)?),
                "min_tokens" => r.core.min_tokens = count(v, k)?,
                "t_max_predict_ms" => {
                    let ms = v.as_i64().ok_or_else(|| ApiError::invalid(k, "t_max_predict_ms must be an integer"))?;
                    r.core.t_max_predict_ms = u64::try_from(ms).ok().filter(|&ms| ms > 0);
                }
                // every sequence shares one prefix cache: no slot holds a
                // request's cache, so there is none to pick (-1: any)
                "id_slot" if v.as_i64().is_some_and(|i| i >= -1) => {}
                "id_slot" => return Err(ApiError::invalid(k, "id_slot must be an integer, -1 for any")),
                "dry_multiplier" => s.dry_multiplier = Some(float(v, k)?),
                "dry_base" => s.dry_base = Some(float(v, k)?),
                "dry_allowed_length" => s.dry_allowed_length = Some(count(v, k)?),
                "dry_penalty_last_n" => {
                    let n = v.as_i64().filter(|&n| n >= -1);
                    s.dry_penalty_last_n =
                        Some(n.ok_or_else(|| {
                            ApiError::invalid(k, "dry_penalty_last_n must be an integer, -1 for all")
                        })?);
                }
                "dry_sequence_breakers" => {
                    let list = v.as_array().filter(|a| !a.is_empty());
                    let list = list.ok_or_else(|| ApiError::invalid(k, "a non-empty list of strings"))?;
                    let strings = list.iter().map(|x| x.as_str().map(String::from));
                    let strings = strings.collect::<Option<Vec<_>>>();
                    s.dry_sequence_breakers = Some(strings.ok_or_else(|| ApiError::invalid(k, "a list of strings"))?);
                }
                "xtc_probability" => s.xtc_probability = Some(float(v, k)?),
                "xtc_threshold" => s.xtc_threshold = Some(float(v, k)?),
                "samplers" => {
                    let order = match v {
                        Value::String(letters) => tern_core::Stage::order_of_letters(letters),
                        Value::Array(a) if a.len() <= 32 => {
                            let names: Option<Vec<&str>> = a.iter().map(Value::as_str).collect();
                            let names = names.ok_or_else(|| ApiError::invalid(k, "samplers must be names"))?;
                            tern_core::Stage::order(&names)
                        }
                        _ => return Err(ApiError::invalid(k, "samplers: a list of names, or a string of letters")),
                    };
                    s.samplers = Some(order.map_err(|e| ApiError::core(k, e))?);
                }
                // the prefix cache serves every request (--no-prefix-cache: none)
                "cache_prompt" if v.as_bool() == Some(true) => {}
                "cache_prompt" => {
                    let what = "cache_prompt false: tern reuses cached prefixes for every request (serve --no-prefix-cache turns that off)";
                    return Err(ApiError::invalid(k, what));
                }
                "seed" => {
                    s.seed = Some(v.as_i64().ok_or_else(|| ApiError::invalid(k, "seed must be an integer"))? as u64)
                }
                "n" if v.as_u64() == Some(1) => {}
                "n" => return Err(ApiError::invalid(k, "only n = 1 is supported")),
                "stream" => {
                    r.stream = v.as_bool().ok_or_else(|| ApiError::invalid(k, "stream must be true or false"))?
                }
                "stream_options" => {
                    let u = v.get("include_usage").unwrap_or(&Value::Bool(false));
                    r.include_usage = u
                        .as_bool()
                        .ok_or_else(|| ApiError::invalid("stream_options.include_usage", "must be true or false"))?;
                }
                "stop" => {
                    r.core.stop = match v {
                        Value::String(s) => vec![s.clone()],
                        Value::Array(a) if a.len() <= 4 => a
                            .iter()
                            .map(|x| {
                                x.as_str().map(String::from).ok_or_else(|| ApiError::invalid(k, "stop must be strings"))
                            })
                            .collect::<Result<_, _>>()?,
                        _ => return Err(ApiError::invalid(k, "stop must be a string or up to 4 strings")),
                    }
                }
                "logit_bias" => {
                    let o =
                        v.as_object().ok_or_else(|| ApiError::invalid(k, "logit_bias must map token ids to biases"))?;
                    for (key, b) in o {
                        let id = key.parse::<u32>().ok().filter(|&i| (i as usize) < n_vocab);
                        let id = id.ok_or_else(|| {
                            ApiError::invalid(k, format!("token id {key:?} is outside the vocabulary of {n_vocab}"))
                        })?;
                        let b = num(b, k, -100.0, 100.0)?;
                        s.logit_bias.push((id, if b <= -100.0 { f32::NEG_INFINITY } else { b }));
                    }
                }
                // llama-server's per-request draft settings (flat keys), or one object
                "speculative.n_max" => r.core.speculative.get_or_insert_default().n_max = Some(count(v, k)?),
                "speculative.n_min" => r.core.speculative.get_or_insert_default().n_min = Some(count(v, k)?),
                "speculative.p_min" => r.core.speculative.get_or_insert_default().p_min = Some(num(v, k, 0.0, 1.0)?),
                "speculative" => {
                    let mine: tern_core::Speculative = serde_json::from_value(v.clone())
                        .map_err(|e| ApiError::invalid(k, format!("speculative: {{n_max, n_min, p_min}}: {e}")))?;
                    r.core.speculative = Some(mine);
                }
                // llama-server's per-request adapters (ids checked where
                // the loaded adapters are known: `Bundle::prepare`)
                "lora" => r.core.lora = Some(lora_list(v, k, usize::MAX)?),
                "logprobs" if chat => {
                    want_logprobs = v.as_bool().ok_or_else(|| ApiError::invalid(k, "logprobs must be true or false"))?
                }
                "logprobs" => r.core.logprobs = Some(top_count(v, k)?),
                "top_logprobs" => top = Some(top_count(v, k)?),
                "response_format" => {
                    if let Some(g) = Grammar::response_format(v).map_err(|e| ApiError::core(k, e))? {
                        one_grammar(&mut r, g, "response_format")?;
                    }
                }
                "json_schema" if !v.is_null() => one_grammar(&mut r, Grammar::JsonSchema(v.clone()), "json_schema")?,
                "grammar" if !v.is_null() => {
                    let src = v.as_str().ok_or_else(|| ApiError::invalid(k, "grammar must be a GBNF string"))?;
                    let g = Grammar::gbnf_or_lark(src).map_err(|e| ApiError::invalid(k, e.to_string()))?;
                    one_grammar(&mut r, g, "grammar")?;
                }
                "json_schema" | "grammar" => {}
                "chat_template_kwargs" if chat => {
                    let o =
                        v.as_object().ok_or_else(|| ApiError::invalid(k, "chat_template_kwargs must be an object"))?;
                    r.core.chat_template_kwargs = Some(o.clone());
                }
                "reasoning_effort" => {
                    let e = v.as_str().ok_or_else(|| ApiError::invalid(k, "reasoning_effort must be a string"))?;
                    r.core.reasoning_effort = Some(e.into());
                }
                "reasoning_format" => {
                    let f = v.as_str().and_then(ReasoningFormat::parse).ok_or_else(|| {
                        ApiError::invalid(k, format!("reasoning_format must be one of {}", ReasoningFormat::NAMES))
                    })?;
                    r.reasoning_format = Some(f);
                }
                "suffix" if !chat => {}
                "tools" | "tool_choice" | "functions" | "echo" | "best_of" | "suffix" => {
                    return Err(ApiError::invalid(k, format!("{k} is not supported")))
                }
                _ => return Err(ApiError::invalid(k, format!("unknown field {k}"))),
            }
        }
        // a suffix: fill in between the prompt and it
        if let Some(s) = m.get("suffix").filter(|s| !chat && !s.is_null()) {
            let suffix = s.as_str().ok_or_else(|| ApiError::invalid("suffix", "suffix must be a string"))?;
            let Prompt::Text(prefix) = &r.core.prompt else {
                return Err(ApiError::invalid("suffix", "suffix needs a text prompt"));
            };
            let infill = tern_core::Infill { prefix: prefix.clone(), suffix: suffix.into(), ..Default::default() };
            r.core.prompt = Prompt::Infill(infill);
        }
        // tools go to core's request as sent; its one check parses them
        if let Some(t) = m.get("tools").filter(|t| chat && !t.is_null()) {
            r.core.tools = Some(t.clone());
            r.core.tool_choice = m.get("tool_choice").filter(|c| !c.is_null()).cloned();
            r.core.parallel_tool_calls = match m.get("parallel_tool_calls") {
                None | Some(Value::Null) => None,
                Some(Value::Bool(b)) => Some(*b),
                Some(v) => {
                    return Err(ApiError::invalid("parallel_tool_calls", format!("must be true or false, got {v}")))
                }
            };
        } else if m.get("tool_choice").is_some_and(|c| !c.is_null()) {
            return Err(ApiError::invalid("tool_choice", "tool_choice needs tools"));
        }
        match (want_logprobs, top) {
            (true, t) => r.core.logprobs = Some(t.unwrap_or(0)),
            (false, Some(t)) if t > 0 => {
                return Err(ApiError::invalid("top_logprobs", "top_logprobs needs logprobs: true"));
            }
            _ => {}
        }
        // core's one rule for every field (the sampler's ranges, ids, stops,
        // tools, a forced call beside a grammar)
        let tools = r.core.check(n_vocab, defaults).map_err(|e| ApiError::core("body", e))?;
        r.tools_on = tools.is_some();
        Ok(r)
    }
}

/// OpenAI's values only: a generation the server cut short (its drain
/// deadline) ended for a limit, as `length` says.
fn finish_reason(r: &GenerationResult) -> &'static str {
    match r.finish_reason {
        FinishReason::Cancelled => "length",
        f => f.as_str(),
    }
}

/// OpenAI's usage object; drafted tokens, if speculative decoding ran,
/// as its predicted outputs' counts (accepted and rejected).
pub fn usage(r: &GenerationResult) -> Value {
    let u = r.usage;
    let mut j = json!({
        "prompt_tokens": u.prompt_tokens,
        "completion_tokens": u.completion_tokens,
        "total_tokens": u.prompt_tokens + u.completion_tokens,
        "prompt_tokens_details": { "cached_tokens": u.cached_tokens },
    });
    if let Some(d) = prediction_details(r) {
        j["completion_tokens_details"] = d;
    }
    j
}

/// Drafted tokens, if speculative decoding ran, as OpenAI's predicted
/// outputs' counts (accepted and rejected): every API's usage carries them.
pub fn prediction_details(r: &GenerationResult) -> Option<Value> {
    let u = r.usage;
    (u.draft_tokens > 0).then(|| {
        json!({
            "accepted_prediction_tokens": u.accepted_draft_tokens,
            "rejected_prediction_tokens": u.draft_tokens - u.accepted_draft_tokens,
        })
    })
}

/// llama-server's `timings` object.
pub fn timings(r: &GenerationResult) -> Value {
    let (t, u) = (&r.timings, &r.usage);
    json!({ "prompt_n": u.prompt_tokens, "prompt_ms": t.prefill_ms,
            "predicted_n": u.completion_tokens, "predicted_ms": t.total_ms - t.prefill_ms,
            "predicted_per_second": t.tokens_per_s, "prompt_per_second": t.prompt_tokens_per_s,
            "draft_n": u.draft_tokens, "draft_n_accepted": u.accepted_draft_tokens })
}

/// The shape both endpoints share: id, object, created, model.
pub(crate) struct Envelope<'a> {
    pub(crate) id: &'a str,
    pub(crate) created: u64,
    pub(crate) model: &'a str,
    pub(crate) chat: bool,
    /// The tokens' bytes, for logprobs (none without a tokenizer).
    pub(crate) tok: Option<&'a Tokenizer>,
    /// The format of the tool calls a chat reply may hold (tools given,
    /// not `none`).
    pub(crate) tools: Option<ToolFormat>,
    /// Where a chat reply's thinking block is, to return it apart.
    pub(crate) reasoning: Option<Reasoning>,
    /// llama-server's `/infill`: its `/completion` shapes.
    pub(crate) infill: bool,
}

/// llama-server's `stop_type` of a result: an end token (`eos`), a stop
/// string (`word`), or the limit.
fn stop_type(r: &GenerationResult) -> &'static str {
    match (r.finish_reason, &r.stop_string) {
        (FinishReason::Stop, Some(_)) => "word",
        (FinishReason::Stop, None) => "eos",
        _ => "limit",
    }
}

fn token_bytes(tok: Option<&Tokenizer>, id: u32) -> &[u8] {
    tok.map_or(&[], |t| t.token_bytes(id))
}

/// A token's entry: its text, log-probability and bytes.
fn token_entry(tok: Option<&Tokenizer>, id: u32, logprob: f32) -> Value {
    let b = token_bytes(tok, id);
    json!({ "token": String::from_utf8_lossy(b), "logprob": logprob, "bytes": b })
}

impl Envelope<'_> {
    /// The content's text outside tool calls, and the calls (none unless
    /// tools were offered).
    pub fn calls_in(&self, content: &str) -> (String, Vec<ToolCall>) {
        match self.tools {
            Some(f) => f.parse(content),
            None => (content.to_string(), Vec::new()),
        }
    }

    /// The length of `content` (a reply so far) that may be streamed:
    /// with tools, all before where a call could begin.
    pub fn streamable(&self, content: &str) -> usize {
        self.tools.map_or(content.len(), |f| f.streamable(content))
    }

    /// A whole reply's reasoning (empty without a thinking block) and
    /// content.
    pub fn parts(&self, r: &GenerationResult) -> tern_core::Parts {
        match self.reasoning {
            Some(x) => x.split(&r.text),
            None => tern_core::Parts { reasoning: String::new(), content: r.text.clone() },
        }
    }

    /// `tool_calls` when the reply called tools (`calls`), else OpenAI's reason.
    fn reason(r: &GenerationResult, calls: &[ToolCall]) -> &'static str {
        match calls.is_empty() {
            true => finish_reason(r),
            false => "tool_calls",
        }
    }

    /// A stream chunk of the thinking block's text
    /// (`delta.reasoning_content`, as llama-server and DeepSeek's API).
    pub fn reasoning_chunk(&self, text: &str, lp: Option<&TokenLogprob>) -> Value {
        let lp = lp.map_or(Value::Null, |t| self.logprobs(core::slice::from_ref(t)));
        let choice =
            json!({ "index": 0, "delta": { "reasoning_content": text }, "finish_reason": null, "logprobs": lp });
        Value::Object(self.wrap("chat.completion.chunk", json!([choice])))
    }

    /// The last chunk: no delta, the finish reason (`tool_calls` when
    /// `calls` were made).
    pub fn end_chunk(&self, r: &GenerationResult, calls: &[ToolCall]) -> Value {
        if self.infill {
            return self.llama("", Some(r));
        }
        let reason = Self::reason(r, calls);
        let choice = match self.chat {
            true => json!({ "index": 0, "delta": {}, "finish_reason": reason, "logprobs": null }),
            false => json!({ "index": 0, "text": "", "finish_reason": reason, "logprobs": null }),
        };
        Value::Object(self.wrap(if self.chat { "chat.completion.chunk" } else { "text_completion" }, json!([choice])))
    }

    /// A stream chunk with the reply's tool calls, all in one delta.
    pub fn tool_calls_chunk(&self, calls: &[ToolCall]) -> Value {
        let choice = json!({ "index": 0, "delta": { "tool_calls": calls_json(calls, self.id) }, "finish_reason": null, "logprobs": null });
        Value::Object(self.wrap("chat.completion.chunk", json!([choice])))
    }

    /// OpenAI's logprobs object for these tokens (chat: `content`, a list of
    /// entries with `top_logprobs`; completions: the legacy parallel lists).
    pub fn logprobs(&self, lps: &[TokenLogprob]) -> Value {
        if self.chat {
            let content: Vec<Value> = lps
                .iter()
                .map(|t| {
                    let mut e = token_entry(self.tok, t.id, t.logprob);
                    e["top_logprobs"] = t.top.iter().map(|&(id, lp)| token_entry(self.tok, id, lp)).collect();
                    e
                })
                .collect();
            return json!({ "content": content, "refusal": null });
        }
        let text = |id: u32| String::from_utf8_lossy(token_bytes(self.tok, id)).into_owned();
        let mut offset = 0;
        let offsets: Vec<usize> = lps
            .iter()
            .map(|t| {
                let o = offset;
                offset += text(t.id).len();
                o
            })
            .collect();
        json!({
            "tokens": lps.iter().map(|t| text(t.id)).collect::<Vec<_>>(),
            "token_logprobs": lps.iter().map(|t| t.logprob).collect::<Vec<_>>(),
            "top_logprobs": lps.iter().map(|t| t.top.iter().map(|&(id, lp)| (text(id), json!(lp))).collect::<Map<_, _>>()).collect::<Vec<_>>(),
            "text_offset": offsets,
        })
    }

    fn wrap(&self, object: &str, choices: Value) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("id".into(), self.id.into());
        m.insert("object".into(), object.into());
        m.insert("created".into(), self.created.into());
        m.insert("model".into(), self.model.into());
        m.insert("choices".into(), choices);
        m
    }

    /// llama-server's `/completion` object: the text, whether and why it
    /// stopped, token counts, timings.
    fn llama(&self, content: &str, end: Option<&GenerationResult>) -> Value {
        let Some(r) = end else { return json!({ "content": content, "stop": false }) };
        json!({
            "content": content, "stop": true, "stop_type": stop_type(r), "stopping_word": r.stop_string.as_deref().unwrap_or(""), "model": self.model, "id_slot": 0,
            "tokens_predicted": r.usage.completion_tokens, "tokens_evaluated": r.usage.prompt_tokens,
            "tokens_cached": r.usage.cached_tokens, "truncated": false,
            "timings": timings(r),
        })
    }

    /// The whole answer, not streamed.
    pub fn response(&self, r: &GenerationResult) -> Value {
        if self.infill {
            return self.llama(&r.text, Some(r));
        }
        let lp = if r.logprobs.is_empty() { Value::Null } else { self.logprobs(&r.logprobs) };
        let choice = if self.chat {
            let parts = self.parts(r);
            let mut message = json!({ "role": "assistant", "content": parts.content });
            let (text, calls) = self.calls_in(&parts.content);
            if !calls.is_empty() {
                let content = if text.is_empty() { Value::Null } else { text.into() };
                message = json!({ "role": "assistant", "content": content, "tool_calls": calls_json(&calls, self.id) });
            }
            if !parts.reasoning.is_empty() {
                message["reasoning_content"] = parts.reasoning.into();
            }
            json!({ "index": 0, "message": message, "finish_reason": Self::reason(r, &calls), "logprobs": lp })
        } else {
            json!({ "index": 0, "text": r.text, "finish_reason": finish_reason(r), "logprobs": lp })
        };
        let mut m = self.wrap(if self.chat { "chat.completion" } else { "text_completion" }, json!([choice]));
        m.insert("usage".into(), usage(r));
        m.insert("timings".into(), timings(r));
        Value::Object(m)
    }

    /// One stream chunk: a text delta, or (`None`) the assistant's role
    /// first.
    pub fn chunk(&self, text: Option<&str>, lp: Option<&TokenLogprob>) -> Value {
        if self.infill {
            return self.llama(text.unwrap_or(""), None);
        }
        let lp = lp.map_or(Value::Null, |t| self.logprobs(core::slice::from_ref(t)));
        let choice = if self.chat {
            let delta = match text {
                Some(t) => json!({ "content": t }),
                None => json!({ "role": "assistant", "content": "" }),
            };
            json!({ "index": 0, "delta": delta, "finish_reason": null, "logprobs": lp })
        } else {
            json!({ "index": 0, "text": text.unwrap_or(""), "finish_reason": null, "logprobs": lp })
        };
        Value::Object(self.wrap(if self.chat { "chat.completion.chunk" } else { "text_completion" }, json!([choice])))
    }

    /// The last chunk with `stream_options.include_usage`: no choices, usage.
    pub fn usage_chunk(&self, r: &GenerationResult) -> Value {
        let mut m = self.wrap(if self.chat { "chat.completion.chunk" } else { "text_completion" }, json!([]));
        m.insert("usage".into(), usage(r));
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_grammars_in_one_request_are_a_400_naming_both() {
        let d = GenerationDefaults::default();
        let rf = r#""response_format":{"type":"json_object"}"#;
        for both in [
            format!(r#"{{"prompt":"x",{rf},"grammar":"root ::= \"a\""}}"#),
            format!(r#"{{"prompt":"x","grammar":"root ::= \"a\"",{rf}}}"#),
            format!(r#"{{"prompt":"x",{rf},"json_schema":{{"type":"object"}}}}"#),
        ] {
            let e = Request::parse(both.as_bytes(), false, 100, &d).err().expect(&both);
            let msg = serde_json::to_string(&e.body()).unwrap();
            assert!(e.status == 400 && msg.contains("exclude each other"), "{both}: {msg}");
        }
        // a text response format or a null grammar sets nothing
        let ok = format!(
            r#"{{"prompt":"x","response_format":{{"type":"text"}},"grammar":"root ::= \"a\"","json_schema":null}}"#
        );
        assert!(Request::parse(ok.as_bytes(), false, 100, &d).is_ok());
    }
}
