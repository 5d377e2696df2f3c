//! Llama 3.1–3.3's format: the whole reply one JSON object
//! `{"name": ..., "parameters": {...}}` (the templates' own words), or
//! `<|python_tag|>` and then such an object, or a built-in tool's
//! `name.call(key="value", ...)`. One call per reply: the templates
//! refuse more when the calls come back in the conversation.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::{Map, Value};

use super::calls::{any_call, call_of, json_values, marker};
use super::{Tool, ToolCall};
use crate::tokenizer::Tokenizer;

/// What opens a built-in (or any) call in Llama 3.1's format.
pub const PYTHON_TAG: &str = "<|python_tag|>";

/// The text outside the calls (trimmed) and the calls: the reply (or what
/// follows `<|python_tag|>`) read as JSON calls separated by `;` or
/// whitespace, or as `name.call(...)`; anything else stays text.
pub(super) fn parse(text: &str) -> (String, Vec<ToolCall>) {
    let (before, body) = match text.find(PYTHON_TAG) {
        Some(i) => (&text[..i], &text[i + PYTHON_TAG.len()..]),
        None => ("", text),
    };
    let calls = match json_values(body, Some(';')) {
        Some(vals) if !vals.is_empty() => vals.iter().map(|v| call_of(v, &["parameters", "arguments"])).collect(),
        _ if !before.is_empty() || text.starts_with(PYTHON_TAG) => builtin_call(body.trim()).map(|c| Vec::from([c])),
        _ => None,
    };
    match calls {
        Some(c) => (before.trim().to_string(), c),
        None => (text.trim().to_string(), Vec::new()),
    }
}

/// `name.call(key="value", n=1)`: arguments whose values are JSON literals.
fn builtin_call(s: &str) -> Option<ToolCall> {
    let (name, args) = s.split_once(".call(")?;
    let args = args.strip_suffix(')')?;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let mut arguments = Map::new();
    let mut rest = args.trim();
    while !rest.is_empty() {
        let (key, after) = rest.split_once('=')?;
        let mut it = serde_json::Deserializer::from_str(after.trim_start()).into_iter::<Value>();
        let v = it.next()?.ok()?;
        let used = after.len() - after.trim_start().len() + it.byte_offset();
        arguments.insert(key.trim().to_string(), v);
        rest = after[used..].trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest).trim_start();
    }
    Some(ToolCall { name: name.to_string(), arguments: Value::Object(arguments), id: None })
}

/// One call of `tools`, `<|python_tag|>` before it or not.
pub(super) fn lark(tools: &[Tool], tok: Option<&Tokenizer>) -> String {
    let call = any_call(tools, "parameters", false);
    format!("start: tag call | call\ntag: {}\ncall: %json {call}\n", marker(PYTHON_TAG, tok))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn calls_are_read_as_the_templates_ask() {
        let (rest, calls) = parse("{\"name\": \"weather\", \"parameters\": {\"city\": \"Paris\"}}");
        assert_eq!((rest.as_str(), calls.len()), ("", 1));
        assert_eq!(calls[0].arguments, json!({"city": "Paris"}));
        let (rest, calls) = parse(
            "Checking.<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", \"parameters\": {}}",
        );
        assert_eq!((rest.as_str(), calls.len()), ("Checking.", 2));
        let (_, calls) = parse("<|python_tag|>brave_search.call(query=\"weather in Paris\", n=3)");
        assert_eq!(calls[0].name, "brave_search");
        assert_eq!(calls[0].arguments, json!({"query": "weather in Paris", "n": 3}));
        let (rest, calls) = parse("The answer is {\"x\": 1}");
        assert!(calls.is_empty());
        assert_eq!(rest, "The answer is {\"x\": 1}");
        assert!(parse("{\"not\": \"a call\"}").1.is_empty());
    }

    #[test]
    fn the_grammar_takes_the_tag_or_not() {
        let t = Tool { name: "f".into(), description: String::new(), parameters: json!({"type": "object"}) };
        assert!(lark(&[t], None).starts_with("start: tag call | call\ntag: \"<|python_tag|>\"\ncall: %json {"));
    }
}
