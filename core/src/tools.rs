//! Tool calls in the format Qwen2.5, Qwen3 and Hermes models are trained
//! on (their chat templates ask for it): each call a JSON object
//! `{"name": ..., "arguments": {...}}` between `<tool_call>` and
//! `</tool_call>` lines. Parsing a reply into its calls, and the grammar
//! that forces calls (`tool_choice: required` or a named function) with
//! arguments valid against each function's JSON Schema.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::grammar::Grammar;

/// What opens a call.
pub const CALL_OPEN: &str = "<tool_call>";
/// What closes a call.
pub const CALL_CLOSE: &str = "</tool_call>";

/// A function call the model made.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    /// The function's name.
    pub name: String,
    /// Its arguments (a JSON object, as the model wrote it).
    pub arguments: Value,
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

/// The reply's text outside its calls (trimmed), and the calls, in order.
/// A block whose JSON does not parse as a call stays in the text.
pub fn parse_tool_calls(text: &str) -> (String, Vec<ToolCall>) {
    let mut calls = Vec::new();
    let mut rest = String::new();
    let mut at = 0;
    while let Some(open) = text[at..].find(CALL_OPEN).map(|i| at + i) {
        let body_start = open + CALL_OPEN.len();
        let Some(close) = text[body_start..].find(CALL_CLOSE).map(|i| body_start + i) else { break };
        rest.push_str(&text[at..open]);
        match serde_json::from_str::<Value>(text[body_start..close].trim()) {
            Ok(Value::Object(mut o)) if o.get("name").is_some_and(Value::is_string) => {
                let name = o.remove("name").and_then(|n| n.as_str().map(String::from)).unwrap_or_default();
                let arguments = match o.remove("arguments") {
                    Some(Value::String(s)) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
                    Some(v) => v,
                    None => json!({}),
                };
                calls.push(ToolCall { name, arguments });
            }
            _ => rest.push_str(&text[open..close + CALL_CLOSE.len()]),
        }
        at = close + CALL_CLOSE.len();
    }
    rest.push_str(&text[at..]);
    (rest.trim().to_string(), calls)
}

/// A grammar whose every output is one call (or, with `parallel`, one or
/// more, a line apart) of one of `tools`, its arguments valid against that
/// function's schema.
pub fn tool_call_grammar(tools: &[Tool], parallel: bool) -> Result<Grammar> {
    if tools.is_empty() {
        return Err(Error::InvalidArgument { what: "a forced tool call needs at least one tool".into() });
    }
    let one: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({
                "type": "object",
                "properties": { "name": { "const": t.name }, "arguments": t.parameters },
                "required": ["name", "arguments"],
                "additionalProperties": false,
            })
        })
        .collect();
    let schema = json!({
        "anyOf": one,
        "x-guidance": {"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": "},
    });
    let open = serde_json::to_string(&alloc::format!("{CALL_OPEN}\n")).unwrap_or_default();
    let close = serde_json::to_string(&alloc::format!("\n{CALL_CLOSE}")).unwrap_or_default();
    let start = if parallel { "start: call (\"\\n\" call)*" } else { "start: call" };
    let lark = alloc::format!("{start}\ncall: {open} %json {schema} {close}\n");
    Grammar::lark(&lark)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_parsed_out_of_the_text() {
        let text = "Let me check.\n<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"time\", \"arguments\": \"{\\\"tz\\\": \\\"CET\\\"}\"}\n</tool_call>";
        let (rest, calls) = parse_tool_calls(text);
        assert_eq!(rest, "Let me check.");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0], ToolCall { name: "weather".into(), arguments: json!({"city": "Paris"}) });
        assert_eq!(calls[1].arguments, json!({"tz": "CET"}), "arguments given as a JSON string are parsed");
        // not a call: kept as text; an unclosed block too
        let (rest, calls) = parse_tool_calls("a <tool_call>not json</tool_call> b <tool_call>{");
        assert!(calls.is_empty());
        assert_eq!(rest, "a <tool_call>not json</tool_call> b <tool_call>{");
    }

    #[test]
    fn the_forcing_grammar_compiles_to_lark() {
        let t = Tool { name: "f".into(), description: String::new(), parameters: json!({"type": "object"}) };
        let Grammar::Lark(src) = tool_call_grammar(&[t], true).unwrap() else { panic!() };
        assert!(src.starts_with("start: call (\"\\n\" call)*\ncall: \"<tool_call>\\n\" %json {"), "{src}");
        assert!(tool_call_grammar(&[], false).is_err());
    }
}
