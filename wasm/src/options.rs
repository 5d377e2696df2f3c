//! Generation options from the JS side (a JSON object, camelCase names as
//! in the package's types) into core's `GenerateConfig`. Unknown names and
//! wrong types are errors naming the field; absent fields keep the CLI's
//! defaults (llama.cpp's, then the model's generation_config.json).

use serde_json::{Map, Value};
use tern_core::Grammar;
use tern_core::{Prompt, ReasoningFormat, Request, MAX_STOPS};
use tern_core::{ToolChoice, ToolRequest};

use crate::errors::js_error;
use wasm_bindgen::JsValue;

fn bad(field: &str, want: &str) -> JsValue {
    js_error("invalid_argument", &format!("option {field}: expected {want}"))
}

fn num(v: &Value, field: &str) -> Result<f64, JsValue> {
    v.as_f64().filter(|x| x.is_finite()).ok_or_else(|| bad(field, "a finite number"))
}

/// A count: a non-negative integer that fits (no wrap to 32 bits:
/// `2**32 + 3` is not 3).
fn count(v: &Value, field: &str) -> Result<usize, JsValue> {
    let n = v.as_u64().ok_or_else(|| bad(field, "a non-negative integer"))?;
    usize::try_from(n).map_err(|_| bad(field, &format!("a non-negative integer below 2^{}", usize::BITS)))
}

fn token_id(v: &Value, field: &str, n_vocab: usize) -> Result<u32, JsValue> {
    match v.as_u64() {
        Some(id) if (id as usize) < n_vocab => Ok(id as u32),
        _ => Err(bad(field, &format!("token ids below {n_vocab}"))),
    }
}

fn grammar_err(field: &str, e: tern_core::Error) -> JsValue {
    js_error("grammar", &format!("option {field}: {e}"))
}

/// The options a generation runs with.
pub struct Options {
    /// The request: sampling, limits, stops, logprobs, grammar, tools.
    pub req: Request,
}

/// New tokens when `maxTokens` is not given (as the CLI's `-n`).
const DEFAULT_MAX_TOKENS: usize = 256;

/// The options object (JSON) as a map; `null` is empty.
fn object(json: &str) -> Result<Map<String, Value>, JsValue> {
    match serde_json::from_str(json).map_err(|e| js_error("invalid_argument", &format!("options: {e}")))? {
        Value::Object(m) => Ok(m),
        Value::Null => Ok(Map::new()),
        _ => Err(bad("options", "an object")),
    }
}

/// `tools`, `toolChoice` and `parallelToolCalls` of the options (JSON), in
/// OpenAI's shapes; None without tools or with `toolChoice: "none"`.
pub fn tools(json: &str) -> Result<Option<ToolRequest>, JsValue> {
    tools_of(&object(json)?)
}

fn tools_of(obj: &Map<String, Value>) -> Result<Option<ToolRequest>, JsValue> {
    let Some(t) = obj.get("tools").filter(|t| !t.is_null()) else {
        return match obj.get("toolChoice").is_some_and(|c| !c.is_null()) {
            true => Err(bad("toolChoice", "tools beside it")),
            false => Ok(None),
        };
    };
    let r = ToolRequest::parse(t, obj.get("toolChoice"), obj.get("parallelToolCalls")).map_err(option_error)?;
    Ok(Some(r).filter(|r| r.choice != ToolChoice::None))
}

/// Core's error about an option, the option named as JavaScript spells it
/// (`top_p` → `topP`).
fn option_error(e: tern_core::Error) -> JsValue {
    match e {
        tern_core::Error::InvalidField { field, what } => {
            let field = camel_case(&field);
            js_error("invalid_argument", &format!("option {field}: {what}"))
        }
        e => js_error("invalid_argument", &e.to_string()),
    }
}

/// `top_p` → `topP`.
fn camel_case(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut up = false;
    for c in snake.chars() {
        match c {
            '_' => up = true,
            c if up => {
                out.push(c.to_ascii_uppercase());
                up = false;
            }
            c => out.push(c),
        }
    }
    out
}

/// `json`: the options object, as a [`Request`] for `prompt` (core's one
/// request, validated and run by `Bundle::prepare`); `n_vocab` bounds
/// token ids.
pub fn parse(json: &str, prompt: Prompt, n_vocab: usize) -> Result<Options, JsValue> {
    let obj = object(json)?;
    let mut r = Request { max_tokens: Some(DEFAULT_MAX_TOKENS), ..Request::new(prompt) };
    let s = &mut r.sampling;
    let f32_of = |v: &Value, k: &str| num(v, k).map(|x| Some(x as f32));
    for (k, v) in &obj {
        if v.is_null() {
            continue;
        }
        match k.as_str() {
            "maxTokens" => r.max_tokens = Some(count(v, k)?),
            "temperature" => s.temperature = f32_of(v, k)?,
            "topK" => s.top_k = Some(count(v, k)?),
            "topP" => s.top_p = f32_of(v, k)?,
            "minP" => s.min_p = f32_of(v, k)?,
            "typicalP" => s.typical_p = f32_of(v, k)?,
            "repeatPenalty" => s.repeat_penalty = f32_of(v, k)?,
            "presencePenalty" => s.presence_penalty = f32_of(v, k)?,
            "frequencyPenalty" => s.frequency_penalty = f32_of(v, k)?,
            "repeatLastN" => s.repeat_last_n = Some(count(v, k)?),
            "dryMultiplier" => s.dry_multiplier = f32_of(v, k)?,
            "dryBase" => s.dry_base = f32_of(v, k)?,
            "dryAllowedLength" => s.dry_allowed_length = Some(count(v, k)?),
            "dryPenaltyLastN" => {
                let n = v.as_i64().filter(|&n| n >= -1);
                s.dry_penalty_last_n = Some(n.ok_or_else(|| bad(k, "an integer, -1 for the whole context"))?);
            }
            "drySequenceBreakers" => {
                let arr = v.as_array().ok_or_else(|| bad(k, "an array of strings"))?;
                let strings: Option<Vec<String>> = arr.iter().map(|x| x.as_str().map(String::from)).collect();
                s.dry_sequence_breakers = Some(strings.ok_or_else(|| bad(k, "an array of strings"))?);
            }
            "xtcProbability" => s.xtc_probability = f32_of(v, k)?,
            "xtcThreshold" => s.xtc_threshold = f32_of(v, k)?,
            "samplers" => {
                let arr = v.as_array().ok_or_else(|| bad(k, "an array of sampler names"))?;
                let names: Option<Vec<&str>> = arr.iter().map(Value::as_str).collect();
                let names = names.ok_or_else(|| bad(k, "an array of sampler names"))?;
                let order = tern_core::Stage::order(&names).map_err(|e| bad(k, &e.to_string()))?;
                s.samplers = Some(order);
            }
            "minTokens" => r.min_tokens = count(v, k)?,
            // the model's adapters by id (`loadAdapter`'s), each at a scale
            "adapters" => {
                let list: Vec<tern_core::LoraScale> =
                    serde_json::from_value(v.clone()).map_err(|_| bad(k, "an array of { id, scale }"))?;
                r.lora = Some(list);
            }
            "spec" if v.as_str() == Some("ngram") => {
                r.speculative.get_or_insert_default();
            }
            "spec" => return Err(bad(k, "\"ngram\" (prompt-lookup drafts; draft models are native only)")),
            "draftMax" => {
                let n = count(v, k)?;
                if !(1..=tern_core::MAX_DRAFT).contains(&n) {
                    return Err(bad(k, &format!("1 to {} drafted tokens", tern_core::MAX_DRAFT)));
                }
                r.speculative.get_or_insert_default().n_max = Some(n);
            }
            "draftMin" => r.speculative.get_or_insert_default().n_min = Some(count(v, k)?),
            "seed" => s.seed = Some(v.as_u64().ok_or_else(|| bad(k, "a non-negative integer"))?),
            "stop" => {
                let arr = v.as_array().filter(|a| a.len() <= MAX_STOPS);
                let arr = arr.ok_or_else(|| bad(k, &format!("an array of up to {MAX_STOPS} strings")))?;
                r.stop = arr
                    .iter()
                    .map(|x| x.as_str().map(String::from).ok_or_else(|| bad(k, "an array of strings")))
                    .collect::<Result<_, _>>()?;
            }
            "stopTokens" => {
                let arr = v.as_array().ok_or_else(|| bad(k, "an array of token ids"))?;
                r.stop_tokens = arr.iter().map(|x| token_id(x, k, n_vocab)).collect::<Result<_, _>>()?;
            }
            "ignoreEos" => r.ignore_eos = v.as_bool().ok_or_else(|| bad(k, "a boolean"))?,
            "logprobs" => r.logprobs = Some(count(v, k)?),
            "responseFormat" => {
                r.grammar = Grammar::response_format(v).map_err(|e| match e {
                    tern_core::Error::InvalidField { what, .. } => {
                        js_error("invalid_argument", &format!("option {k}: {what}"))
                    }
                    e => js_error("invalid_argument", &e.to_string()),
                })?
            }
            "grammar" => {
                let src = v.as_str().ok_or_else(|| bad(k, "a GBNF or Lark grammar (a string)"))?;
                r.grammar = Some(Grammar::gbnf_or_lark(src).map_err(|e| grammar_err(k, e))?);
            }
            "regex" => {
                let src = v.as_str().ok_or_else(|| bad(k, "a regular expression (a string)"))?;
                r.grammar = Some(Grammar::regex(src).map_err(|e| grammar_err(k, e))?);
            }
            "tools" | "toolChoice" | "parallelToolCalls" => {}
            // (chat options: read where the messages are rendered, `chat`)
            "chatTemplateKwargs" | "reasoningEffort" | "reasoningFormat" => {}
            "logitBias" => {
                let m = v.as_object().ok_or_else(|| bad(k, "an object of token id → bias"))?;
                for (id, b) in m {
                    let id = id.parse::<u64>().map(Value::from).unwrap_or(Value::Null);
                    let bias = match b {
                        Value::String(s) if s == "-Infinity" => f32::NEG_INFINITY,
                        _ => num(b, k)? as f32,
                    };
                    s.logit_bias.push((token_id(&id, k, n_vocab)?, bias));
                }
            }
            _ => return Err(js_error("invalid_argument", &format!("unknown option {k}"))),
        }
    }
    if r.speculative.is_some() && obj.get("spec").is_none_or(Value::is_null) {
        return Err(bad("draftMax", "spec: \"ngram\" beside draftMax and draftMin"));
    }
    if let (Some(sp), Some(max)) = (&r.speculative, r.speculative.and_then(|s| s.n_max)) {
        if sp.n_min.is_some_and(|n| n > max) {
            return Err(bad("draftMin", "at most draftMax"));
        }
    }
    let tools = tools_of(&obj)?;
    if tools.as_ref().is_some_and(|t| t.forced().is_some()) && r.grammar.is_some() {
        return Err(bad("toolChoice", "a forced tool call excludes responseFormat, grammar and regex"));
    }
    if let Some(t) = &tools {
        r.tools = Some(t.defs.clone());
        r.tool_choice = obj.get("toolChoice").cloned();
        r.parallel_tool_calls = Some(t.parallel);
    }
    Ok(Options { req: r })
}

/// The chat options of `json`: the template's variables
/// (`chatTemplateKwargs`, `reasoningEffort`) and `reasoningFormat`.
pub fn chat(json: &str) -> Result<(Option<tern_core::TemplateKwargs>, ReasoningFormat), JsValue> {
    let obj = object(json)?;
    let mut r = Request::new(Prompt::Ids(Vec::new()));
    if let Some(v) = obj.get("chatTemplateKwargs").filter(|v| !v.is_null()) {
        r.chat_template_kwargs = Some(v.as_object().ok_or_else(|| bad("chatTemplateKwargs", "an object"))?.clone());
    }
    if let Some(v) = obj.get("reasoningEffort").filter(|v| !v.is_null()) {
        r.reasoning_effort = Some(v.as_str().ok_or_else(|| bad("reasoningEffort", "a string"))?.into());
    }
    let format = match obj.get("reasoningFormat").filter(|v| !v.is_null()) {
        None => ReasoningFormat::Auto,
        Some(v) => v
            .as_str()
            .and_then(ReasoningFormat::parse)
            .ok_or_else(|| bad("reasoningFormat", &format!("one of {}", ReasoningFormat::NAMES)))?,
    };
    r.validate(usize::MAX, &tern_core::GenerationDefaults::default()).map_err(option_error)?;
    Ok((r.template_kwargs(), format))
}

/// A core error from running the options: an option's is named as
/// JavaScript spells it; the others keep their kind.
pub fn prepare_error(e: tern_core::Error) -> JsValue {
    match e {
        e @ tern_core::Error::InvalidField { .. } => option_error(e),
        e => crate::errors::from_core(e),
    }
}
