//! Generation options from the JS side (a JSON object, camelCase names as
//! in the package's types) into core's `GenerateConfig`. Unknown names and
//! wrong types are errors naming the field; absent fields keep the CLI's
//! defaults (llama.cpp's, then the model's generation_config.json).

use serde_json::{Map, Value};
use tern_core::generate::GenerateConfig;
use tern_core::grammar::Grammar;
use tern_core::hf::GenerationDefaults;
use tern_core::sampler::SamplerConfig;
use tern_core::tools::{ToolChoice, ToolRequest};

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

/// Stop strings at most, as the server takes (OpenAI's limit).
const MAX_STOPS: usize = 4;

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
    /// Sampling, limits, stops, logprobs.
    pub cfg: GenerateConfig,
    /// What the output must match (`responseFormat`, `grammar`, `regex`,
    /// or a forced tool call), if anything.
    pub grammar: Option<Grammar>,
    /// Whether the reply may call tools (its calls are parsed out).
    pub tools: bool,
}

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

/// `json`: the options object; `eog`: the model's end-of-generation ids
/// (banned by `ignoreEos`, as llama.cpp does); `n_vocab` bounds token ids;
/// `defaults`: the model's own sampling defaults.
pub fn parse(json: &str, eog: &[u32], n_vocab: usize, defaults: &GenerationDefaults) -> Result<Options, JsValue> {
    let obj = object(json)?;
    let mut c = GenerateConfig::default();
    let mut grammar = None;
    let mut s = SamplerConfig::default();
    defaults.apply(&mut s);
    for (k, v) in &obj {
        if v.is_null() {
            continue;
        }
        match k.as_str() {
            "maxTokens" => c.max_tokens = count(v, k)?,
            "temperature" => s.temperature = num(v, k)? as f32,
            "topK" => s.top_k = count(v, k)?,
            "topP" => s.top_p = num(v, k)? as f32,
            "minP" => s.min_p = num(v, k)? as f32,
            "typicalP" => s.typical_p = num(v, k)? as f32,
            "repeatPenalty" => s.repeat_penalty = num(v, k)? as f32,
            "presencePenalty" => s.presence_penalty = num(v, k)? as f32,
            "frequencyPenalty" => s.frequency_penalty = num(v, k)? as f32,
            "repeatLastN" => s.repeat_last_n = count(v, k)?,
            "seed" => s.seed = Some(v.as_u64().ok_or_else(|| bad(k, "a non-negative integer"))?),
            "stop" => {
                let arr = v.as_array().filter(|a| a.len() <= MAX_STOPS);
                let arr = arr.ok_or_else(|| bad(k, &format!("an array of up to {MAX_STOPS} strings")))?;
                c.stop = arr
                    .iter()
                    .map(|x| x.as_str().map(String::from).ok_or_else(|| bad(k, "an array of strings")))
                    .collect::<Result<_, _>>()?;
            }
            "stopTokens" => {
                let arr = v.as_array().ok_or_else(|| bad(k, "an array of token ids"))?;
                c.stop_tokens = arr.iter().map(|x| token_id(x, k, n_vocab)).collect::<Result<_, _>>()?;
            }
            "ignoreEos" => c.ignore_eos = v.as_bool().ok_or_else(|| bad(k, "a boolean"))?,
            "logprobs" => c.logprobs = Some(count(v, k)?),
            "responseFormat" => {
                grammar = Grammar::response_format(v).map_err(|e| match e {
                    tern_core::Error::InvalidField { what, .. } => {
                        js_error("invalid_argument", &format!("option {k}: {what}"))
                    }
                    e => js_error("invalid_argument", &e.to_string()),
                })?
            }
            "grammar" => {
                let src = v.as_str().ok_or_else(|| bad(k, "a GBNF or Lark grammar (a string)"))?;
                grammar = Some(Grammar::gbnf_or_lark(src).map_err(|e| grammar_err(k, e))?);
            }
            "regex" => {
                let src = v.as_str().ok_or_else(|| bad(k, "a regular expression (a string)"))?;
                grammar = Some(Grammar::regex(src).map_err(|e| grammar_err(k, e))?);
            }
            "tools" | "toolChoice" | "parallelToolCalls" => {}
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
    if c.ignore_eos {
        s.logit_bias.extend(eog.iter().map(|&t| (t, f32::NEG_INFINITY)));
    }
    c.sampler = s;
    c.validate().map_err(option_error)?;
    let tools = tools_of(&obj)?;
    let forced = tools.as_ref().map(ToolRequest::grammar).transpose().map_err(crate::errors::from_core)?.flatten();
    if let Some(g) = forced {
        if grammar.is_some() {
            return Err(bad("toolChoice", "a forced tool call excludes responseFormat, grammar and regex"));
        }
        grammar = Some(g);
    }
    Ok(Options { cfg: c, grammar, tools: tools.is_some() })
}
