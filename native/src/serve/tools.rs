//! OpenAI's tool calling over the chat endpoint: `tools`, `tool_choice`,
//! `parallel_tool_calls` parsed with errors naming the field; assistant
//! `tool_calls` and `tool` messages taken back into the conversation; the
//! reply's calls as `message.tool_calls` (or one `delta.tool_calls` chunk
//! when streamed). The model's syntax is core's (`tern_core::tools`).

use serde_json::{json, Value};
pub use tern_core::tools::ToolChoice as Choice;
use tern_core::tools::{Tool, ToolCall, CALL_OPEN};

use super::api_error::ApiError;

/// The most tools a request may define.
const MAX_TOOLS: usize = 128;

/// What the request asks of tools.
pub struct ToolRequest {
    /// The `tools` list, as the chat template renders it.
    pub defs: Value,
    /// Each function's name and argument schema.
    pub tools: Vec<Tool>,
    /// `tool_choice`.
    pub choice: Choice,
    /// `parallel_tool_calls` (default true).
    pub parallel: bool,
}

impl ToolRequest {
    /// From `tools` and the optional `tool_choice` and `parallel_tool_calls`.
    pub fn parse(tools: &Value, choice: Option<&Value>, parallel: Option<&Value>) -> Result<ToolRequest, ApiError> {
        let list = tools.as_array().ok_or_else(|| ApiError::invalid("tools", "tools must be a list"))?;
        if list.len() > MAX_TOOLS {
            return Err(ApiError::invalid("tools", format!("{} tools (at most {MAX_TOOLS})", list.len())));
        }
        let mut parsed = Vec::with_capacity(list.len());
        for (i, t) in list.iter().enumerate() {
            let k = format!("tools[{i}]");
            if t.get("type").and_then(Value::as_str) != Some("function") {
                return Err(ApiError::invalid(&k, "each tool must be of type \"function\""));
            }
            let f = t.get("function").ok_or_else(|| ApiError::invalid(&k, "a tool needs a function"))?;
            let name = f.get("name").and_then(Value::as_str).unwrap_or_default();
            let ok = !name.is_empty() && name.len() <= 64;
            if !ok || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
                return Err(ApiError::invalid(&k, format!("function name {name:?}: 1-64 of a-z, A-Z, 0-9, _ and -")));
            }
            let parameters = f.get("parameters").cloned().unwrap_or_else(|| json!({"type": "object"}));
            if !parameters.is_object() {
                return Err(ApiError::invalid(&k, "parameters must be a JSON Schema object"));
            }
            let description = f.get("description").and_then(Value::as_str).unwrap_or_default().to_string();
            parsed.push(Tool { name: name.to_string(), description, parameters });
        }
        let choice = match choice {
            None | Some(Value::Null) => Choice::Auto,
            Some(Value::String(s)) => match s.as_str() {
                "none" => Choice::None,
                "auto" => Choice::Auto,
                "required" => Choice::Required,
                _ => return Err(ApiError::invalid("tool_choice", format!("unknown tool_choice {s:?}"))),
            },
            Some(v) => {
                let name = v.pointer("/function/name").and_then(Value::as_str).unwrap_or_default();
                if !parsed.iter().any(|t| t.name == name) {
                    return Err(ApiError::invalid("tool_choice", format!("no tool is named {name:?}")));
                }
                Choice::Named(name.to_string())
            }
        };
        let parallel = match parallel {
            None | Some(Value::Null) => true,
            Some(v) => v.as_bool().ok_or_else(|| ApiError::invalid("parallel_tool_calls", "must be true or false"))?,
        };
        Ok(ToolRequest { defs: tools.clone(), tools: parsed, choice, parallel })
    }

    /// The tools a forced call may use (None: nothing is forced).
    pub fn forced(&self) -> Option<Vec<Tool>> {
        self.choice.forced(&self.tools)
    }
}

/// An assistant message's OpenAI `tool_calls` (arguments a JSON string)
/// as templates read them (arguments an object).
pub fn message_tool_calls(v: &Value, i: usize) -> Result<Value, ApiError> {
    let k = format!("messages[{i}].tool_calls");
    let list = v.as_array().ok_or_else(|| ApiError::invalid(&k, "tool_calls must be a list"))?;
    let calls = list
        .iter()
        .map(|c| {
            let name = c.pointer("/function/name").and_then(Value::as_str);
            let name = name.ok_or_else(|| ApiError::invalid(&k, "each call needs function.name"))?;
            let args = match c.pointer("/function/arguments") {
                Some(Value::String(s)) => serde_json::from_str(s)
                    .map_err(|e| ApiError::invalid(&k, format!("the arguments of {name} are not JSON: {e}")))?,
                Some(v) => v.clone(),
                None => json!({}),
            };
            Ok(json!({ "id": c.get("id"), "type": "function", "function": { "name": name, "arguments": args } }))
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    Ok(Value::Array(calls))
}

/// OpenAI's `tool_calls` list for the reply's calls (ids from `id`).
pub fn calls_json(calls: &[ToolCall], id: &str) -> Value {
    calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({
                "index": i,
                "id": format!("call_{id}_{i}"),
                "type": "function",
                "function": { "name": c.name, "arguments": c.arguments.to_string() },
            })
        })
        .collect()
}

/// The length of the text that may be streamed now: all of it before the
/// first call's opening tag, less a tail that could begin one.
pub fn streamable(text: &str) -> usize {
    if let Some(i) = text.find(CALL_OPEN) {
        return i;
    }
    let held = (1..CALL_OPEN.len()).rev().find(|&k| text.len() >= k && text.ends_with(&CALL_OPEN[..k])).unwrap_or(0);
    text.len() - held
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse_or_name_the_field() {
        let tools =
            json!([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]);
        let r = ToolRequest::parse(&tools, Some(&json!("required")), None).unwrap();
        assert_eq!((r.choice.clone(), r.parallel), (Choice::Required, true));
        let named = json!({"type": "function", "function": {"name": "get_weather"}});
        assert_eq!(ToolRequest::parse(&tools, Some(&named), None).unwrap().choice, Choice::Named("get_weather".into()));
        let bad = |t: Value, c: Option<Value>| ToolRequest::parse(&t, c.as_ref(), None).err().unwrap().param.unwrap();
        assert_eq!(bad(json!({}), None), "tools");
        assert_eq!(bad(json!([{"type": "function", "function": {"name": "a b"}}]), None), "tools[0]");
        assert_eq!(bad(tools.clone(), Some(json!({"function": {"name": "other"}}))), "tool_choice");
        assert_eq!(bad(tools, Some(json!("sometimes"))), "tool_choice");
    }

    #[test]
    fn text_is_held_back_from_a_possible_tag() {
        assert_eq!(streamable("Hello"), 5);
        assert_eq!(streamable("Hello <tool"), 6);
        assert_eq!(streamable("Hi <tool_call>\n{"), 3);
        assert_eq!(streamable("a < b"), 5);
    }
}
