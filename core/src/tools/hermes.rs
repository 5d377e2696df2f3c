//! The Hermes format (Qwen2.5, Qwen3, Hermes 2/3): each call a JSON object
//! `{"name": ..., "arguments": {...}}` between `<tool_call>` and
//! `</tool_call>` lines — or, as small models often write it, the bare
//! objects as the whole reply (llama.cpp takes those too).

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::calls::{any_call, call_of, literal};
use super::json as plain;
use super::{Tool, ToolCall};

/// What opens a call.
pub const OPEN: &str = "<tool_call>";
/// What closes a call.
const CLOSE: &str = "</tool_call>";

/// The text outside the calls (trimmed) and the calls; a block whose JSON
/// is not a call stays in the text, as does an unclosed one. A reply
/// without tags that is all calls is calls.
pub(super) fn parse(text: &str) -> (String, Vec<ToolCall>) {
    if !text.contains(OPEN) {
        return plain::parse(text);
    }
    let mut calls = Vec::new();
    let mut rest = String::new();
    let mut at = 0;
    while let Some(open) = text[at..].find(OPEN).map(|i| at + i) {
        let body_start = open + OPEN.len();
        let Some(close) = text[body_start..].find(CLOSE).map(|i| body_start + i) else { break };
        rest.push_str(&text[at..open]);
        let call = serde_json::from_str(text[body_start..close].trim()).ok().and_then(|v| call_of(&v, &["arguments"]));
        match call {
            Some(c) => calls.push(c),
            None => rest.push_str(&text[open..close + CLOSE.len()]),
        }
        at = close + CLOSE.len();
    }
    rest.push_str(&text[at..]);
    (rest.trim().to_string(), calls)
}

/// One call (or with `parallel`, one or more a line apart) of `tools`,
/// tagged or bare.
pub(super) fn lark(tools: &[Tool], parallel: bool) -> String {
    let open = literal(&format!("{OPEN}\n"));
    let close = literal(&format!("\n{CLOSE}"));
    let more = |x: &str| if parallel { format!("{x} (\"\\n\" {x})*") } else { x.to_string() };
    format!(
        "start: {} | bare\ncall: {open} obj {close}\n{}",
        more("call"),
        plain::bare(&any_call(tools, "arguments", false), parallel)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn calls_are_parsed_out_of_the_text() {
        let text = "Let me check.\n<tool_call>\n{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"time\", \"arguments\": \"{\\\"tz\\\": \\\"CET\\\"}\"}\n</tool_call>";
        let (rest, calls) = parse(text);
        assert_eq!(rest, "Let me check.");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0], ToolCall { name: "weather".into(), arguments: json!({"city": "Paris"}), id: None });
        assert_eq!(calls[1].arguments, json!({"tz": "CET"}), "arguments given as a JSON string are parsed");
        // not a call: kept as text; an unclosed block too
        let (rest, calls) = parse("a <tool_call>not json</tool_call> b <tool_call>{");
        assert!(calls.is_empty());
        assert_eq!(rest, "a <tool_call>not json</tool_call> b <tool_call>{");
        // bare, as small models write them
        let (rest, calls) = parse("{\"name\": \"weather\", \"arguments\": {\"city\": \"Paris\"}}");
        assert_eq!((rest.as_str(), calls.len()), ("", 1));
    }

    #[test]
    fn the_grammar_spells_the_tags() {
        let t = Tool { name: "f".into(), description: String::new(), parameters: json!({"type": "object"}) };
        let src = lark(&[t], true);
        assert!(
            src.starts_with(
                "start: call (\"\\n\" call)* | bare\ncall: \"<tool_call>\\n\" obj \"\\n</tool_call>\"\nbare: "
            ),
            "{src}"
        );
    }
}
