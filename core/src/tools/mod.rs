//! Tool calls: OpenAI's request shapes (`tools`, `tool_choice`,
//! `parallel_tool_calls`, an assistant message's `tool_calls`) read with
//! errors naming the field, and the formats models write calls in
//! ([`ToolFormat`], one module each: its parser, grammar and triggers).
//! A forced call (`tool_choice: required` or a named function) follows
//! the format's grammar from the reply's first token; with `auto`, the
//! same grammar engages at the format's opening marker.

mod calls;
mod format;
mod hermes;
mod json;
mod llama3;
mod mistral;

pub use format::ToolFormat;

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::grammar::{Grammar, Trigger};
use crate::tokenizer::Tokenizer;

/// A function call the model made.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The function's name.
    pub name: String,
    /// Its arguments (a JSON object, as the model wrote it).
    pub arguments: Value,
    /// The call's id, where the format has the model write one (Mistral's).
    pub id: Option<String>,
}

/// Whether and which tools the model must call (OpenAI's `tool_choice`).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolChoice {
    /// The model does not call tools (they are not rendered).
    None,
    /// The model may call tools (the default).
    Auto,
    /// The model must call one or more tools.
    Required,
    /// The model must call this function.
    Named(String),
}

impl ToolChoice {
    /// The tools a forced call may use, of `tools` (None: nothing is forced).
    pub fn forced(&self, tools: &[Tool]) -> Option<Vec<Tool>> {
        match self {
            ToolChoice::Required => Some(tools.to_vec()),
            ToolChoice::Named(n) => Some(tools.iter().filter(|t| &t.name == n).cloned().collect()),
            ToolChoice::None | ToolChoice::Auto => None,
        }
    }
}

/// A function the model may call: its name and the JSON Schema of its
/// arguments (OpenAI's `tools[].function`).
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// The function's name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON Schema of its arguments (`{"type": "object"}` if none given).
    pub parameters: Value,
}

impl Tool {
    /// OpenAI's shape, `{"type": "function", "function": {...}}`, as chat
    /// templates render tools.
    pub fn to_json(&self) -> Value {
        json!({ "type": "function", "function": {
            "name": self.name, "description": self.description, "parameters": self.parameters } })
    }
}

/// The most tools a request may define.
pub(crate) const MAX_TOOLS: usize = 128;

fn field(field: &str, what: impl Into<String>) -> Error {
    Error::InvalidField { field: field.into(), what: what.into() }
}

/// What a request asks of tools (OpenAI's shapes).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolRequest {
    /// The `tools` list, as the chat template renders it.
    pub defs: Value,
    /// Each function's name and argument schema.
    pub tools: Vec<Tool>,
    /// `tool_choice`.
    pub choice: ToolChoice,
    /// `parallel_tool_calls` (default true).
    pub parallel: bool,
    /// The format the model writes calls in (set from its chat template
    /// when the request is prepared; Hermes until then).
    pub format: ToolFormat,
}

impl ToolRequest {
    /// From `tools` and the optional `tool_choice` and `parallel_tool_calls`;
    /// an [`Error::InvalidField`] names the field that is wrong.
    pub fn parse(tools: &Value, choice: Option<&Value>, parallel: Option<&Value>) -> Result<ToolRequest> {
        let list = tools.as_array().ok_or_else(|| field("tools", "tools must be a list"))?;
        if list.len() > MAX_TOOLS {
            return Err(field("tools", format!("{} tools (at most {MAX_TOOLS})", list.len())));
        }
        let mut parsed = Vec::with_capacity(list.len());
        for (i, t) in list.iter().enumerate() {
            let k = format!("tools[{i}]");
            if t.get("type").and_then(Value::as_str) != Some("function") {
                return Err(field(&k, "each tool must be of type \"function\""));
            }
            let f = t.get("function").ok_or_else(|| field(&k, "a tool needs a function"))?;
            let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
            let ok = !name.is_empty() && name.len() <= 64;
            if !ok || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                return Err(field(&k, format!("function name {name:?}: 1-64 of a-z, A-Z, 0-9, _ and -")));
            }
            let parameters = f.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"}));
            if !parameters.is_object() {
                return Err(field(&k, "parameters must be a JSON Schema object"));
            }
            let description = f.get("description").and_then(Value::as_str).unwrap_or_default().to_string();
            parsed.push(Tool { name: name.to_string(), description, parameters });
        }
        let choice = match choice {
            None | Some(Value::Null) => ToolChoice::Auto,
            Some(Value::String(s)) => match s.as_str() {
                "none" => ToolChoice::None,
                "auto" => ToolChoice::Auto,
                "required" => ToolChoice::Required,
                _ => return Err(field("tool_choice", format!("unknown tool_choice {s:?}"))),
            },
            Some(v) => {
                let name = v.pointer("/function/name").and_then(Value::as_str).unwrap_or_default();
                if !parsed.iter().any(|t| t.name == name) {
                    return Err(field("tool_choice", format!("no tool is named {name:?}")));
                }
                ToolChoice::Named(name.to_string())
            }
        };
        let parallel = match parallel {
            None | Some(Value::Null) => true,
            Some(v) => v.as_bool().ok_or_else(|| field("parallel_tool_calls", "must be true or false"))?,
        };
        Ok(ToolRequest { defs: tools.clone(), tools: parsed, choice, parallel, format: ToolFormat::default() })
    }

    /// The tools a forced call may use (None: nothing is forced).
    pub fn forced(&self) -> Option<Vec<Tool>> {
        self.choice.forced(&self.tools)
    }

    /// The grammar of this format's calls of the tools a reply may call
    /// (control-token markers by their ids in `tok`).
    pub fn grammar(&self, tok: Option<&Tokenizer>) -> Result<Grammar> {
        let tools = self.forced().unwrap_or_else(|| self.tools.clone());
        self.format.grammar(&tools, self.parallel, tok)
    }

    /// Where [`ToolRequest::grammar`] engages: None from the reply's first
    /// token (a forced call), else at the format's triggers (`auto`).
    pub fn triggers(&self) -> Option<Vec<Trigger>> {
        self.forced().is_none().then(|| self.format.triggers())
    }

    /// A reply's text outside its calls, and the calls ([`ToolFormat::parse`]).
    pub fn calls(&self, text: &str) -> (String, Vec<ToolCall>) {
        self.format.parse(text)
    }
}

/// An assistant message's OpenAI `tool_calls` (arguments a JSON string)
/// as templates read them (arguments an object); `i`: the message's index.
pub fn message_tool_calls(v: &Value, i: usize) -> Result<Value> {
    let k = format!("messages[{i}].tool_calls");
    let list = v.as_array().ok_or_else(|| field(&k, "tool_calls must be a list"))?;
    let calls = list
        .iter()
        .map(|c| {
            let name = c.pointer("/function/name").and_then(Value::as_str);
            let name = name.ok_or_else(|| field(&k, "each call needs function.name"))?;
            let args = match c.pointer("/function/arguments") {
                Some(Value::String(s)) => serde_json::from_str(s)
                    .map_err(|e| field(&k, format!("the arguments of {name} are not JSON: {e}")))?,
                Some(v) => v.clone(),
                None => json!({}),
            };
            Ok(json!({ "id": c.get("id"), "type": "function", "function": { "name": name, "arguments": args } }))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Value::Array(calls))
}

/// OpenAI's `tool_calls` list for a reply's calls (ids the model's own,
/// else `call_{id}_{i}`; arguments a JSON string).
pub fn calls_json(calls: &[ToolCall], id: &str) -> Value {
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({
                "index": i,
                "id": c.id.clone().unwrap_or_else(|| format!("call_{id}_{i}")),
                "type": "function",
                "function": { "name": c.name, "arguments": c.arguments.to_string() },
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_or_name_the_field() {
        let tools =
            json!([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]);
        let r = ToolRequest::parse(&tools, Some(&json!("required")), None).unwrap();
        assert_eq!((r.choice.clone(), r.parallel), (ToolChoice::Required, true));
        assert!(r.triggers().is_none(), "a forced call is held from the first token");
        assert!(r.grammar(None).is_ok());
        let named = json!({"type": "function", "function": {"name": "get_weather"}});
        let r = ToolRequest::parse(&tools, Some(&named), None).unwrap();
        assert_eq!(r.choice, ToolChoice::Named("get_weather".into()));
        assert!(ToolRequest::parse(&tools, None, None).unwrap().triggers().is_some(), "auto engages at a trigger");
        let bad = |t: Value, c: Option<Value>| match ToolRequest::parse(&t, c.as_ref(), None) {
            Err(Error::InvalidField { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        assert_eq!(bad(json!({}), None), "tools");
        assert_eq!(bad(json!([{"type": "function", "function": {"name": "a b"}}]), None), "tools[0]");
        assert_eq!(bad(tools.clone(), Some(json!({"function": {"name": "other"}}))), "tool_choice");
        assert_eq!(bad(tools, Some(json!("sometimes"))), "tool_choice");
        let calls = json!([{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]);
        assert_eq!(message_tool_calls(&calls, 3).unwrap()[0]["function"]["arguments"], json!({"a": 1}));
        let broken = json!([{"function": {"name": "f", "arguments": "{"}}]);
        assert!(
            matches!(message_tool_calls(&broken, 3), Err(Error::InvalidField { field, .. }) if field == "messages[3].tool_calls")
        );
    }
}
