//! What the tool-call formats share: a call's JSON Schema, the Lark atoms
//! of markers, and calls read out of JSON values.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde_json::{json, Value};

use super::{Tool, ToolCall};
use crate::tokenizer::Tokenizer;

/// The JSON Schema of one call of `tool`: its name and its arguments under
/// `args` (`arguments` or `parameters`), and with `id`, a nine-character
/// call id (Mistral's).
pub(super) fn call_schema(tool: &Tool, args: &str, id: bool) -> Value {
    let mut properties = serde_json::Map::new();
    properties.insert("name".into(), json!({ "const": tool.name }));
    properties.insert(args.into(), tool.parameters.clone());
    let mut required = Vec::from([json!("name"), json!(args)]);
    if id {
        properties.insert("id".into(), json!({"type": "string", "pattern": "^[a-zA-Z0-9]{9}$"}));
        required.push(json!("id"));
    }
    json!({ "type": "object", "properties": properties, "required": required, "additionalProperties": false })
}

/// A schema (`anyOf` the calls of `tools`, as [`call_schema`]) written as
/// models write JSON: `", "` and `": "` between items, nothing else.
pub(super) fn any_call(tools: &[Tool], args: &str, id: bool) -> Value {
    let one: Vec<Value> = tools.iter().map(|t| call_schema(t, args, id)).collect();
    json!({
        "anyOf": one,
        "x-guidance": {"whitespace_flexible": false, "item_separator": ", ", "key_separator": ": "},
    })
}

/// A Lark string literal of `s`.
pub(super) fn literal(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

/// The Lark atom for `marker`: the control token by id where `tok` has it
/// as one (text cannot spell a control token), else the literal text.
pub(super) fn marker(marker: &str, tok: Option<&Tokenizer>) -> String {
    match tok.and_then(|t| t.token_id(marker).filter(|&id| t.is_control(id))) {
        Some(id) => format!("<[{id}]>"),
        None => literal(marker),
    }
}

/// A call out of a JSON object with `name` and its arguments under one of
/// `args` (an object, or a string holding one); its `id` if it has one.
pub(super) fn call_of(v: &Value, args: &[&str]) -> Option<ToolCall> {
    let o = v.as_object()?;
    let name = o.get("name")?.as_str()?.to_string();
    let arguments = match args.iter().find_map(|k| o.get(*k)) {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::String(s.clone())),
        Some(v) => v.clone(),
        None => json!({}),
    };
    let id = o.get("id").and_then(Value::as_str).map(String::from);
    Some(ToolCall { name, arguments, id })
}

/// The JSON values `text` is made of, back to back (whitespace, and
/// `sep` if given, between them), or None if anything else is there.
pub(super) fn json_values(text: &str, sep: Option<char>) -> Option<Vec<Value>> {
    let mut out = Vec::new();
    let mut rest = text.trim_start();
    while !rest.is_empty() {
        let mut it = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        let v = it.next()?.ok()?;
        out.push(v);
        rest = rest[it.byte_offset()..].trim_start();
        if let Some(s) = sep {
            rest = rest.strip_prefix(s).unwrap_or(rest).trim_start();
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_values_read_back_to_back() {
        assert_eq!(json_values(" {\"a\": 1}\n{\"b\": 2} ", None).unwrap().len(), 2);
        assert_eq!(json_values("{\"a\": 1}; {\"b\": 2}", Some(';')).unwrap().len(), 2);
        assert!(json_values("{\"a\": 1} and text", None).is_none());
    }
}
