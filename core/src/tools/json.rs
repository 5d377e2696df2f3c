//! The plain-JSON format, for templates without one of their own: the
//! system message lists the tools and asks for a reply of JSON objects
//! `{"name": ..., "arguments": {...}}`, one per line, to call them. A
//! reply of them in a ```` ```json ```` fence is calls too (small models
//! write that).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::Value;

use super::calls::{any_call, call_of, json_values};
use super::{Tool, ToolCall};

/// The calls, if the whole reply is calls (objects with `name`, one per
/// line, or a list of them, or `{"tool_calls": [...]}`); else the reply
/// is text.
pub(super) fn parse(text: &str) -> (String, Vec<ToolCall>) {
    let t = text.trim();
    let inner = t.strip_prefix(FENCE).and_then(|r| r.strip_suffix("```")).unwrap_or(t);
    let calls = json_values(inner, None).filter(|v| !v.is_empty()).and_then(|vals| {
        let mut calls = Vec::new();
        for v in vals {
            let items = match v {
                Value::Array(a) => a,
                Value::Object(mut o) if !o.contains_key("name") && o.contains_key("tool_calls") => {
                    o.remove("tool_calls")?.as_array()?.clone()
                }
                v => Vec::from([v]),
            };
            for item in &items {
                let item = item.get("function").filter(|f| f.get("name").is_some()).unwrap_or(item);
                calls.push(call_of(item, &["arguments", "parameters"])?);
            }
        }
        Some(calls)
    });
    match calls {
        Some(c) if !c.is_empty() => (String::new(), c),
        _ => (text.trim().to_string(), Vec::new()),
    }
}

/// What opens a fenced reply of calls.
pub(super) const FENCE: &str = "```json";

/// One call (or with `parallel`, one or more a line apart) of `tools`.
pub(super) fn lark(tools: &[Tool], parallel: bool) -> String {
    format!("start: bare\n{}", bare(&any_call(tools, "arguments", false), parallel))
}

/// The rules `bare` (calls, one per line, fenced or not) and `obj` (one
/// call of the JSON Schema `call`).
pub(super) fn bare(call: &Value, parallel: bool) -> String {
    let objs = if parallel { "obj (\"\\n\" obj)*" } else { "obj" };
    format!("bare: {objs} | \"{FENCE}\\n\" {objs} \"\\n```\"\nobj: %json {call}\n")
}

/// The system message's words about `tools` (OpenAI's `tools` list).
pub(super) fn instructions(tools: &Value) -> String {
    let list: Vec<String> = tools
        .as_array()
        .map(|a| a.iter().map(|t| t.get("function").unwrap_or(t).to_string()).collect())
        .unwrap_or_default();
    format!(
        "You can call these functions:\n{}\n\nTo call functions, reply with only JSON objects, one per line: \
         {{\"name\": <the function's name>, \"arguments\": <an object of its arguments>}}. \
         Otherwise, answer as usual.",
        list.join("\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_reply_of_calls_is_calls_and_anything_else_text() {
        let (rest, calls) = parse("{\"name\": \"a\", \"arguments\": {\"x\": 1}}\n{\"name\": \"b\", \"arguments\": {}}");
        assert_eq!((rest.as_str(), calls.len()), ("", 2));
        assert_eq!(calls[0].arguments, json!({"x": 1}));
        let (_, calls) = parse("{\"tool_calls\": [{\"name\": \"a\", \"arguments\": {}}]}");
        assert_eq!(calls[0].name, "a");
        let (_, calls) = parse("[{\"type\": \"function\", \"function\": {\"name\": \"a\", \"arguments\": \"{}\"}}]");
        assert_eq!(calls[0].name, "a");
        let (_, calls) = parse("```json\n{\"name\": \"a\", \"arguments\": {}}\n```");
        assert_eq!(calls[0].name, "a", "fenced");
        for text in ["Paris is sunny.", "{\"city\": \"Paris\"}", "{\"name\": \"a\"} and more"] {
            let (rest, calls) = parse(text);
            assert!(calls.is_empty(), "{text}");
            assert_eq!(rest, text);
        }
    }

    #[test]
    fn the_instructions_list_each_function() {
        let tools = json!([{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]);
        let s = instructions(&tools);
        assert!(s.contains("{\"name\":\"get_weather\",\"parameters\":{}}"), "{s}");
    }
}
