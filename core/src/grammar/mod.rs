//! Constrained decoding: output that must match a JSON Schema, be any JSON
//! object, match a regular expression, or derive from a grammar (Lark
//! syntax, or llama.cpp's GBNF, translated to it). llguidance compiles each
//! into a token mask per step: a [`Constraint`] for
//! [`Generation::with_constraint`](crate::generate::Generation::with_constraint).
//!
//! ```
//! use tern_core::Grammar;
//! let g = Grammar::json_schema(r#"{"type": "object", "properties": {"n": {"type": "integer"}}}"#);
//! assert!(g.is_ok());
//! assert!(Grammar::json_schema("{not json").is_err());
//! ```
//!
//! Bounds: a grammar's source is at most [`MAX_GRAMMAR_BYTES`] and nests
//! at most [`MAX_GRAMMAR_DEPTH`] levels (references followed); its
//! compilation, each step's mask and the lexer's states are limited by
//! llguidance's fuel and size limits (set by [`GrammarCompiler::new`]), so a schema
//! that would blow up is refused or runs in bounded time and memory.

mod compiler;
mod gbnf;
mod lazy;
mod matcher;
mod shape;
mod vocab;

use alloc::string::{String, ToString};

pub use compiler::GrammarCompiler;
pub(crate) use compiler::LazyCompiler;
pub(crate) use gbnf::gbnf_to_lark;
pub use lazy::{Thinking, Trigger};
pub use shape::MAX_GRAMMAR_DEPTH;

use crate::error::{Error, Result};

/// The longest grammar, schema or regex source accepted (1 MiB).
pub const MAX_GRAMMAR_BYTES: usize = 1 << 20;

/// What the output must match. Its JSON form: `"json_object"`,
/// `{"json_schema": {...}}`, `{"regex": "..."}`, `{"lark": "..."}`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Grammar {
    /// Any JSON object (OpenAI's `response_format: {"type": "json_object"}`).
    JsonObject,
    /// JSON valid against this JSON Schema.
    JsonSchema(serde_json::Value),
    /// A regular expression (the whole output matches it).
    Regex(String),
    /// A grammar in llguidance's Lark syntax (`start` is the top rule).
    Lark(String),
}

impl Grammar {
    /// A JSON Schema from its source text (an error if it is not JSON).
    pub fn json_schema(source: &str) -> Result<Grammar> {
        check_size("JSON Schema", source)?;
        let v = serde_json::from_str(source)
            .map_err(|e| grammar_err(alloc::format!("the JSON Schema is not JSON: {e}")))?;
        Ok(Grammar::JsonSchema(v))
    }

    /// A regular expression.
    pub fn regex(source: &str) -> Result<Grammar> {
        check_size("regex", source)?;
        Ok(Grammar::Regex(source.to_string()))
    }

    /// A grammar in llama.cpp's GBNF (`root ::= ...`), translated to Lark.
    pub fn gbnf(source: &str) -> Result<Grammar> {
        check_size("grammar", source)?;
        Ok(Grammar::Lark(gbnf_to_lark(source)?))
    }

    /// A grammar in Lark syntax.
    pub fn lark(source: &str) -> Result<Grammar> {
        check_size("grammar", source)?;
        Ok(Grammar::Lark(source.to_string()))
    }

    /// This JSON Schema with the keywords llguidance cannot enforce
    /// (`uniqueItems`, `not`, `if`/`then`, unknown formats, overlapping
    /// `oneOf` as `anyOf`, ...) ignored instead of refused: OpenAI's
    /// `strict: false`. Outputs follow the rest of the schema and may break
    /// the ignored part. Other grammars are returned unchanged.
    pub fn lenient(self) -> Grammar {
        match self {
            Grammar::JsonSchema(mut v) => {
                if let Some(o) = v.as_object_mut() {
                    let x = o.entry("x-guidance").or_insert_with(|| serde_json::json!({}));
                    if let Some(x) = x.as_object_mut() {
                        x.insert("lenient".into(), true.into());
                    }
                }
                Grammar::JsonSchema(v)
            }
            g => g,
        }
    }

    /// OpenAI's `response_format`: `{"type": "text"}` (None),
    /// `{"type": "json_object"}`, or `{"type": "json_schema", "json_schema":
    /// {"name", "schema", "strict"}}` (the schema may also stand beside
    /// `type`). `strict: false` ignores the keywords llguidance cannot
    /// enforce ([`Grammar::lenient`]); absent or true, they are refused.
    /// An [`Error::InvalidField`] names `response_format` if the shape is wrong.
    pub fn response_format(v: &serde_json::Value) -> Result<Option<Grammar>> {
        let bad = |what: &str| Error::InvalidField { field: "response_format".into(), what: what.into() };
        match v.get("type").and_then(serde_json::Value::as_str) {
            Some("text") => Ok(None),
            Some("json_object") => Ok(Some(Grammar::JsonObject)),
            Some("json_schema") => {
                let schema = v.pointer("/json_schema/schema").or_else(|| v.get("schema"));
                let schema = schema
                    .filter(|s| s.is_object() || s.is_boolean())
                    .ok_or_else(|| bad("json_schema needs a JSON Schema object in json_schema.schema"))?;
                let g = Grammar::JsonSchema(schema.clone());
                match v.pointer("/json_schema/strict") {
                    None | Some(serde_json::Value::Null) | Some(serde_json::Value::Bool(true)) => Ok(Some(g)),
                    Some(serde_json::Value::Bool(false)) => Ok(Some(g.lenient())),
                    Some(_) => Err(bad("json_schema.strict must be true or false")),
                }
            }
            Some(_) | None => Err(bad("type must be \"text\", \"json_object\" or \"json_schema\"")),
        }
    }

    /// A grammar file's text: GBNF if it defines rules with `::=`, else Lark.
    pub fn gbnf_or_lark(source: &str) -> Result<Grammar> {
        if source.contains("::=") {
            Grammar::gbnf(source)
        } else {
            Grammar::lark(source)
        }
    }
}

fn check_size(what: &str, source: &str) -> Result<()> {
    if source.len() > MAX_GRAMMAR_BYTES {
        return Err(grammar_err(alloc::format!(
            "the {what} is {} bytes, more than the {MAX_GRAMMAR_BYTES} accepted",
            source.len()
        )));
    }
    Ok(())
}

pub(crate) fn grammar_err(detail: impl ToString) -> Error {
    Error::Grammar { detail: detail.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn response_formats_parse_or_name_the_field() {
        assert_eq!(Grammar::response_format(&json!({"type": "text"})).unwrap(), None);
        assert_eq!(Grammar::response_format(&json!({"type": "json_object"})).unwrap(), Some(Grammar::JsonObject));
        let schema = json!({"type": "object"});
        let rf = |strict: serde_json::Value| {
            Grammar::response_format(
                &json!({"type": "json_schema", "json_schema": {"schema": schema, "strict": strict}}),
            )
        };
        assert_eq!(rf(json!(true)).unwrap(), Some(Grammar::JsonSchema(schema.clone())));
        assert_eq!(rf(serde_json::Value::Null).unwrap(), Some(Grammar::JsonSchema(schema.clone())));
        let lenient = json!({"type": "object", "x-guidance": {"lenient": true}});
        assert_eq!(rf(json!(false)).unwrap(), Some(Grammar::JsonSchema(lenient)));
        for bad in [json!({"type": "xml"}), json!({}), json!({"type": "json_schema"})] {
            assert!(
                matches!(Grammar::response_format(&bad), Err(Error::InvalidField { field, .. }) if field == "response_format")
            );
        }
        assert!(rf(json!("no")).is_err());
        assert_eq!(Grammar::JsonObject.lenient(), Grammar::JsonObject);
    }
}
