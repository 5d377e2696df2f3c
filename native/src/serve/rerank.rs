//! `POST /v1/rerank` in the Jina/Cohere shape llama-server answers:
//! `query`, `documents` (strings, or objects with a `text`), `top_n`,
//! `return_documents`; results best first, each with its `index` and
//! `relevance_score` (the cross-encoder's logit); `usage` counts the
//! tokens scored. Parsing and tokenizing are here; the scores come from
//! the engine thread (`encode`).

use serde_json::{json, Value};
use tern_core::{runtime::check_count, runtime::Pair, Embedder};

use super::api_error::ApiError;
use super::encode::Rows;

/// What a request asks for.
pub struct RerankRequest {
    query: String,
    documents: Vec<String>,
    top_n: Option<usize>,
    return_documents: bool,
    /// Tokens of the pairs, once tokenized.
    tokens: usize,
}

impl RerankRequest {
    /// Parse a body. Unknown fields are errors.
    pub fn parse(bytes: &[u8]) -> Result<RerankRequest, ApiError> {
        let v: Value =
            serde_json::from_slice(bytes).map_err(|e| ApiError::invalid("body", format!("not JSON: {e}")))?;
        let m = v.as_object().ok_or_else(|| ApiError::invalid("body", "expected a JSON object"))?;
        let mut r = RerankRequest {
            query: String::new(),
            documents: Vec::new(),
            top_n: None,
            return_documents: false,
            tokens: 0,
        };
        for (k, v) in m {
            match k.as_str() {
                "model" | "user" => {}
                "query" => r.query = v.as_str().ok_or_else(|| ApiError::invalid(k, "a string"))?.to_string(),
                "documents" => {
                    let list = v.as_array().ok_or_else(|| ApiError::invalid(k, "a list of strings"))?;
                    check_count(list.len()).map_err(|e| ApiError::core(k, e))?;
                    r.documents = (list.iter().enumerate())
                        .map(|(i, d)| match d {
                            Value::String(s) => Ok(s.clone()),
                            Value::Object(o) => match o.get("text").and_then(Value::as_str) {
                                Some(s) => Ok(s.to_string()),
                                None => Err(ApiError::invalid(&format!("documents[{i}]"), "an object without a text")),
                            },
                            _ => Err(ApiError::invalid(&format!("documents[{i}]"), "a string or {\"text\": ...}")),
                        })
                        .collect::<Result<_, _>>()?;
                }
                "top_n" => match v.as_u64() {
                    Some(n) if n >= 1 => r.top_n = Some(n as usize),
                    _ => return Err(ApiError::invalid(k, "a positive integer")),
                },
                "return_documents" | "return_text" => {
                    r.return_documents = v.as_bool().ok_or_else(|| ApiError::invalid(k, "true or false"))?
                }
                _ => return Err(ApiError::invalid(k, format!("unknown field {k}"))),
            }
        }
        for field in ["query", "documents"] {
            if !m.contains_key(field) {
                return Err(ApiError::invalid(field, format!("{field} is required")));
            }
        }
        Ok(r)
    }

    /// Each (query, document) pair as the model's input.
    pub fn pairs(&mut self, model: &Embedder<crate::Buffer>) -> Result<Vec<Pair>, ApiError> {
        let docs: Vec<&str> = self.documents.iter().map(String::as_str).collect();
        let pairs = model.pairs(&self.query, &docs).map_err(|e| ApiError::core("documents", e))?;
        self.tokens = pairs.iter().map(|p| p.0.len()).sum();
        Ok(pairs)
    }

    /// The answer, best first, from the scores (a row each) of [`RerankRequest::pairs`].
    pub fn answer(self, scores: Rows, model_id: &str) -> Value {
        let scores: Vec<f32> = scores.iter().map(|r| r[0]).collect();
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|&i, &j| scores[j].total_cmp(&scores[i]));
        order.truncate(self.top_n.unwrap_or(order.len()));
        let results: Vec<Value> = (order.iter())
            .map(|&i| match self.return_documents {
                true => json!({ "index": i, "relevance_score": scores[i], "document": { "text": self.documents[i] } }),
                false => json!({ "index": i, "relevance_score": scores[i] }),
            })
            .collect();
        json!({
            "object": "list",
            "model": model_id,
            "results": results,
            "usage": { "prompt_tokens": self.tokens, "total_tokens": self.tokens },
        })
    }
}
