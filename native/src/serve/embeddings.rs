//! `POST /v1/embeddings` in OpenAI's shape: `input` a string, a list of
//! strings, a list of token ids or a list of such lists; `encoding_format`
//! `float` or `base64` (little-endian f32, what the `openai` client asks
//! for by default); `dimensions` keeps the first N values, renormalised;
//! `usage` counts the tokens embedded. Parsing and tokenizing are here;
//! the vectors come from the engine thread (`encode`).

use base64::Engine as _;
use serde_json::{json, Value};
use tern_core::{runtime::check_count, runtime::l2_normalize, Embedder};

use super::api_error::ApiError;
use super::encode::Rows;

/// One input: text, or the model's token ids.
pub enum Input {
    Text(String),
    Ids(Vec<u32>),
}

/// What a request asks for.
pub struct EmbedRequest {
    inputs: Vec<Input>,
    base64: bool,
    dimensions: Option<usize>,
    /// Tokens of the inputs, once tokenized.
    tokens: usize,
}

fn ids(v: &Value, k: &str, n_vocab: usize) -> Result<Vec<u32>, ApiError> {
    let list = v.as_array().ok_or_else(|| ApiError::invalid(k, "expected a list of token ids"))?;
    list.iter()
        .map(|x| match x.as_u64() {
            Some(id) if (id as usize) < n_vocab => Ok(id as u32),
            _ => Err(ApiError::invalid(k, format!("{x} is not a token id below {n_vocab}"))),
        })
        .collect()
}

impl EmbedRequest {
    /// Parse a body; `n_vocab` bounds token ids. Unknown fields are errors.
    pub fn parse(bytes: &[u8], n_vocab: usize, dim: usize) -> Result<EmbedRequest, ApiError> {
        let v: Value =
            serde_json::from_slice(bytes).map_err(|e| ApiError::invalid("body", format!("not JSON: {e}")))?;
        let m = v.as_object().ok_or_else(|| ApiError::invalid("body", "expected a JSON object"))?;
        let mut r = EmbedRequest { inputs: Vec::new(), base64: false, dimensions: None, tokens: 0 };
        for (k, v) in m {
            match k.as_str() {
                "model" | "user" => {}
                "input" => {
                    r.inputs = match v {
                        Value::String(s) => vec![Input::Text(s.clone())],
                        Value::Array(a) if a.first().is_some_and(Value::is_number) => {
                            vec![Input::Ids(ids(v, k, n_vocab)?)]
                        }
                        Value::Array(a) => a
                            .iter()
                            .enumerate()
                            .map(|(i, x)| match x {
                                Value::String(s) => Ok(Input::Text(s.clone())),
                                Value::Array(_) => Ok(Input::Ids(ids(x, &format!("input[{i}]"), n_vocab)?)),
                                _ => Err(ApiError::invalid(&format!("input[{i}]"), "a string or a list of token ids")),
                            })
                            .collect::<Result<_, _>>()?,
                        _ => return Err(ApiError::invalid(k, "a string, a list of strings, or token ids")),
                    };
                }
                "encoding_format" => {
                    r.base64 = match v.as_str() {
                        Some("float") => false,
                        Some("base64") => true,
                        _ => return Err(ApiError::invalid(k, "\"float\" or \"base64\"")),
                    }
                }
                "dimensions" => match v.as_u64() {
                    Some(d) if d >= 1 && d as usize <= dim => r.dimensions = Some(d as usize),
                    _ => return Err(ApiError::invalid(k, format!("dimensions must be 1..={dim} (the model's width)"))),
                },
                _ => return Err(ApiError::invalid(k, format!("unknown field {k}"))),
            }
        }
        if !m.contains_key("input") {
            return Err(ApiError::invalid("input", "input is required"));
        }
        check_count(r.inputs.len()).map_err(|e| ApiError::core("input", e))?;
        Ok(r)
    }

    /// Every input as the model's ids, each checked (a 400 naming it).
    pub fn ids(&mut self, emb: &Embedder<crate::Buffer>) -> Result<Vec<Vec<u32>>, ApiError> {
        let ids = (std::mem::take(&mut self.inputs).into_iter().enumerate())
            .map(|(i, input)| {
                let ids = match input {
                    Input::Text(t) => emb.input(&t),
                    Input::Ids(ids) => Ok(ids),
                };
                let ids = ids.and_then(|ids| emb.check_ids(&ids).map(|()| ids));
                ids.map_err(|e| ApiError::core(&format!("input[{i}]"), e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.tokens = ids.iter().map(Vec::len).sum();
        Ok(ids)
    }

    /// The answer in OpenAI's shape, from the vectors of [`EmbedRequest::ids`].
    pub fn answer(self, vectors: Rows, model_id: &str) -> Value {
        let mut data = Vec::with_capacity(vectors.len());
        for (i, mut v) in vectors.into_iter().enumerate() {
            if let Some(d) = self.dimensions {
                v.truncate(d);
                l2_normalize(&mut v);
            }
            let embedding = match self.base64 {
                false => json!(v),
                true => {
                    let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                    json!(base64::engine::general_purpose::STANDARD.encode(bytes))
                }
            };
            data.push(json!({ "object": "embedding", "index": i, "embedding": embedding }));
        }
        json!({
            "object": "list",
            "data": data,
            "model": model_id,
            "usage": { "prompt_tokens": self.tokens, "total_tokens": self.tokens },
        })
    }
}
