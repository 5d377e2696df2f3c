//! Mistral's format (Mistral 7B v0.3, Nemo, Small): `[TOOL_CALLS]` and a
//! JSON list of calls `{"name": ..., "arguments": {...}, "id": "..."}`,
//! each id nine letters and digits (the template refuses others when the
//! calls come back in the conversation).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::{json, Value};

use super::calls::{any_call, call_of, marker};
use super::{Tool, ToolCall};
use crate::tokenizer::Tokenizer;

/// What opens the calls.
pub const OPEN: &str = "[TOOL_CALLS]";

/// The text before `[TOOL_CALLS]` (trimmed) and the calls of the list
/// after it; a list that is not calls stays in the text. A call without
/// an id gets one (nine characters, from its place in the reply).
pub(super) fn parse(text: &str) -> (String, Vec<ToolCall>) {
    let Some(open) = text.find(OPEN) else { return (text.trim().to_string(), Vec::new()) };
    let body = text[open + OPEN.len()..].trim_start();
    let mut it = serde_json::Deserializer::from_str(body).into_iter::<Value>();
    let list = match it.next() {
        Some(Ok(Value::Array(a))) => a,
        Some(Ok(v @ Value::Object(_))) => Vec::from([v]),
        _ => return (text.trim().to_string(), Vec::new()),
    };
    let calls: Option<Vec<ToolCall>> = list.iter().map(|v| call_of(v, &["arguments", "parameters"])).collect();
    let Some(mut calls) = calls.filter(|c| !c.is_empty()) else { return (text.trim().to_string(), Vec::new()) };
    for (i, c) in calls.iter_mut().enumerate() {
        if c.id.as_ref().is_none_or(|id| id.len() != 9) {
            c.id = Some(format!("call{i:05}"));
        }
    }
    let mut rest = text[..open].to_string();
    rest.push_str(&body[it.byte_offset()..]);
    (rest.trim().to_string(), calls)
}

/// `[TOOL_CALLS]` (the control token where the vocabulary has it) and a
/// list of one call (or with `parallel`, one or more) of `tools`.
pub(super) fn lark(tools: &[Tool], parallel: bool, tok: Option<&Tokenizer>) -> String {
    let mut list = json!({ "type": "array", "items": any_call(tools, "arguments", true), "minItems": 1 });
    if !parallel {
        list["maxItems"] = json!(1);
    }
    list["x-guidance"] = json!({"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": "});
    format!("start: {} %json {list}\n", marker(OPEN, tok))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_read_after_the_marker() {
        let (rest, calls) = parse("[TOOL_CALLS][{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abcDEF123\"}, {\"name\": \"time\", \"arguments\": {}}]");
        assert_eq!(rest, "");
        assert_eq!(calls.len(), 2);
        assert_eq!((calls[0].name.as_str(), calls[0].id.as_deref()), ("weather", Some("abcDEF123")));
        assert_eq!(calls[0].arguments, json!({"city": "Paris"}));
        assert_eq!(calls[1].id.as_deref(), Some("call00001"), "an id is made where the model gave none");
        let (rest, calls) = parse("No call: [TOOL_CALLS] oops");
        assert!(calls.is_empty());
        assert_eq!(rest, "No call: [TOOL_CALLS] oops");
    }

    #[test]
    fn the_grammar_opens_with_the_marker() {
        let t = Tool { name: "f".into(), description: String::new(), parameters: json!({"type": "object"}) };
        assert!(lark(&[t], false, None).starts_with("start: \"[TOOL_CALLS]\" %json {"));
    }
}
