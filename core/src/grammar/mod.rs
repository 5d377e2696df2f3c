//! Constrained decoding: output that must match a JSON Schema, be any JSON
//! object, match a regular expression, or derive from a grammar (Lark
//! syntax, or llama.cpp's GBNF, translated to it). llguidance compiles each
//! into a token mask per step: a [`Constraint`] for
//! [`Generation::with_constraint`](crate::generate::Generation::with_constraint).
//!
//! ```
//! use tern_core::grammar::Grammar;
//! let g = Grammar::json_schema(r#"{"type": "object", "properties": {"n": {"type": "integer"}}}"#);
//! assert!(g.is_ok());
//! assert!(Grammar::json_schema("{not json").is_err());
//! ```
//!
//! Bounds: a grammar's source is at most [`MAX_GRAMMAR_BYTES`]; its
//! compilation, each step's mask and the lexer's states are limited by
//! llguidance's fuel and size limits (set by [`GrammarCompiler::new`]), so a schema
//! that would blow up is refused or runs in bounded time and memory.

mod compiler;
mod gbnf;
mod matcher;
mod vocab;

use alloc::string::{String, ToString};

pub use compiler::GrammarCompiler;
pub use gbnf::gbnf_to_lark;

use crate::error::{Error, Result};
pub use crate::generate::Constraint;

/// The longest grammar, schema or regex source accepted (1 MiB).
pub const MAX_GRAMMAR_BYTES: usize = 1 << 20;

/// What the output must match.
#[derive(Debug, Clone, PartialEq)]
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
