//! The formats models write tool calls in, told apart by their chat
//! template: each format's parser, grammar and triggers live in its own
//! module (what they share in `calls`); this one picks the format.

use alloc::string::String;
use alloc::vec::Vec;

use serde_json::Value;

use super::{hermes, json as plain, llama3, mistral, Tool, ToolCall};
use crate::error::{Error, Result};
use crate::grammar::{Grammar, Trigger};
use crate::tokenizer::Tokenizer;

/// How a model writes its tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ToolFormat {
    /// Qwen2.5, Qwen3, Hermes: `<tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>`
    /// (or the bare object as the whole reply).
    #[default]
    Hermes,
    /// Llama 3.1–3.3: a JSON object `{"name": ..., "parameters": {...}}`
    /// as the whole reply, or after `<|python_tag|>`.
    Llama3,
    /// Mistral: `[TOOL_CALLS][{"name": ..., "arguments": {...}, "id": "abcdef123"}]`.
    Mistral,
    /// Templates without a format of their own: the tools are described in
    /// the system message and a call is a reply of JSON objects
    /// `{"name": ..., "arguments": {...}}`, one per line.
    Json,
}

impl ToolFormat {
    /// The format `template` (a chat template's source) asks for.
    pub fn of_template(template: &str) -> ToolFormat {
        if template.contains(hermes::OPEN) {
            ToolFormat::Hermes
        } else if template.contains(mistral::OPEN) {
            ToolFormat::Mistral
        } else if template.contains(llama3::PYTHON_TAG)
            || (template.contains("<|start_header_id|>") && template.contains("\"parameters\""))
        {
            ToolFormat::Llama3
        } else {
            ToolFormat::Json
        }
    }

    /// The format's name.
    pub fn name(self) -> &'static str {
        match self {
            ToolFormat::Hermes => "hermes",
            ToolFormat::Llama3 => "llama3",
            ToolFormat::Mistral => "mistral",
            ToolFormat::Json => "json",
        }
    }

    /// A reply's text outside its calls (trimmed), and the calls, in
    /// order. Text that does not parse as calls stays text.
    pub fn parse(self, text: &str) -> (String, Vec<ToolCall>) {
        match self {
            ToolFormat::Hermes => hermes::parse(text),
            ToolFormat::Llama3 => llama3::parse(text),
            ToolFormat::Mistral => mistral::parse(text),
            ToolFormat::Json => plain::parse(text),
        }
    }

    /// A grammar whose every output is a call (with `parallel`, one or
    /// more where the format has room for them) of one of `tools`, its
    /// arguments valid against that function's schema, spelled from the
    /// format's opening marker (a control token by its id in `tok`'s
    /// vocabulary).
    pub fn grammar(self, tools: &[Tool], parallel: bool, tok: Option<&Tokenizer>) -> Result<Grammar> {
        if tools.is_empty() {
            return Err(Error::InvalidArgument { what: "a forced tool call needs at least one tool".into() });
        }
        let lark = match self {
            ToolFormat::Hermes => hermes::lark(tools, parallel),
            ToolFormat::Llama3 => llama3::lark(tools, tok),
            ToolFormat::Mistral => mistral::lark(tools, parallel, tok),
            ToolFormat::Json => plain::lark(tools, parallel),
        };
        Grammar::lark(&lark)
    }

    /// Where a call begins in a reply: with `tool_choice: auto` the
    /// format's grammar holds the output from there.
    pub fn triggers(self) -> Vec<Trigger> {
        match self {
            ToolFormat::Hermes => Vec::from([
                Trigger::Word(hermes::OPEN.into()),
                Trigger::Start("{".into()),
                Trigger::Start(plain::FENCE.into()),
            ]),
            ToolFormat::Llama3 => Vec::from([Trigger::Start("{".into()), Trigger::Word(llama3::PYTHON_TAG.into())]),
            ToolFormat::Mistral => Vec::from([Trigger::Word(mistral::OPEN.into())]),
            ToolFormat::Json => Vec::from([Trigger::Start("{".into()), Trigger::Start(plain::FENCE.into())]),
        }
    }

    /// The length of `text` (a reply so far) that may be streamed as
    /// content now: all of it before a call could begin.
    pub fn streamable(self, text: &str) -> usize {
        self.triggers().iter().map(|t| streamable(t, text)).min().unwrap_or(text.len())
    }

    /// What the system message must say for the model to know the tools
    /// and how to call them (None: the template says it itself).
    pub fn instructions(self, tools: &Value) -> Option<String> {
        match self {
            ToolFormat::Json => Some(plain::instructions(tools)),
            _ => None,
        }
    }
}

/// [`ToolFormat::streamable`] for one trigger.
fn streamable(t: &Trigger, text: &str) -> usize {
    match t {
        Trigger::Word(w) => {
            if let Some(i) = text.find(w.as_str()) {
                return i;
            }
            let held = (1..w.len()).rev().find(|&k| w.is_char_boundary(k) && text.ends_with(&w[..k]));
            text.len() - held.unwrap_or(0)
        }
        Trigger::Start(w) => {
            let rest = text.trim_start();
            if rest.is_empty() || rest.starts_with(w.as_str()) || w.starts_with(rest) {
                0
            } else {
                text.len()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_are_told_apart_by_the_template() {
        assert_eq!(ToolFormat::of_template("{{ '<tool_call>' }}"), ToolFormat::Hermes);
        assert_eq!(ToolFormat::of_template("{{ '[TOOL_CALLS][' }}"), ToolFormat::Mistral);
        let llama = "<|start_header_id|>user<|end_header_id|> 'Respond in the format {\"name\": function name, \"parameters\": dictionary'";
        assert_eq!(ToolFormat::of_template(llama), ToolFormat::Llama3);
        assert_eq!(ToolFormat::of_template("{{ messages }}"), ToolFormat::Json);
    }

    #[test]
    fn text_is_held_back_from_a_possible_call() {
        let h = ToolFormat::Hermes;
        assert_eq!(h.streamable("Hello"), 5);
        assert_eq!(h.streamable("Hello <tool"), 6);
        assert_eq!(h.streamable("Hi <tool_call>\n{"), 3);
        assert_eq!(h.streamable("a < b"), 5);
        assert_eq!(h.streamable("{\"name"), 0, "a bare call is held too");
        let j = ToolFormat::Json;
        assert_eq!(j.streamable("  "), 0, "a reply that may still open with a call is held");
        assert_eq!(j.streamable(" {\"na"), 0);
        assert_eq!(j.streamable("Paris is {sunny}"), 16, "a call opens a reply, not its middle");
        let l = ToolFormat::Llama3;
        assert_eq!(l.streamable("It is <|python"), 6);
        assert_eq!(ToolFormat::Mistral.streamable("ok [TOOL_CALLS]["), 3);
    }
}
