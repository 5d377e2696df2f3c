//! The chat template's flags shared by `run`, `chat` and `serve`, as
//! llama.cpp spells them: another template, variables for it, and how a
//! reasoning model's thinking block is handled.

use std::path::PathBuf;

use tern::Result;
use tern_core::{ReasoningFormat, TemplateKwargs};

/// The largest template file read.
const MAX_TEMPLATE_BYTES: u64 = 1 << 20;

#[derive(clap::Args, Clone, Default)]
pub struct TemplateArgs {
    /// Render chats with this Jinja chat template instead of the model's
    /// own (llama.cpp's --chat-template-file)
    #[arg(long, visible_alias = "chat-template-file", value_name = "FILE")]
    chat_template: Option<PathBuf>,
    /// Variables for the chat template, a JSON object (e.g.
    /// '{"enable_thinking": false}')
    #[arg(long, value_name = "JSON", value_parser = parse_kwargs)]
    chat_template_kwargs: Option<TemplateKwargs>,
    /// A reasoning model's thinking block: apart from the answer (auto,
    /// deepseek), apart and also inline (deepseek-legacy), or left in the
    /// text as written (none)
    #[arg(long, value_name = "FORMAT", value_parser = parse_format, default_value = "auto")]
    reasoning_format: ReasoningFormat,
    /// Thinking allowed: -1 unrestricted, 0 off (the template is told
    /// `enable_thinking: false`), as llama-server
    #[arg(long, value_name = "N", default_value = "-1", allow_negative_numbers = true, value_parser = parse_budget)]
    reasoning_budget: i64,
}

impl TemplateArgs {
    /// Put the template file, if one is given, in place of the model's.
    pub fn apply(&self, lm: &mut tern::Loaded) -> Result<()> {
        if let Some(source) = self.source()? {
            lm.set_chat_template(&source)?;
        }
        Ok(())
    }

    /// The template file's text, if one is given.
    pub fn source(&self) -> Result<Option<String>> {
        let read = |p: &PathBuf| super::files::read_text(p, MAX_TEMPLATE_BYTES, "the chat template", "");
        self.chat_template.as_ref().map(read).transpose()
    }

    /// The template variables: --chat-template-kwargs, and
    /// `enable_thinking: false` for --reasoning-budget 0.
    pub fn kwargs(&self) -> Option<TemplateKwargs> {
        let mut k = self.chat_template_kwargs.clone();
        if self.reasoning_budget == 0 {
            k.get_or_insert_with(Default::default).entry("enable_thinking").or_insert(false.into());
        }
        k
    }

    /// --reasoning-format.
    pub fn reasoning_format(&self) -> ReasoningFormat {
        self.reasoning_format
    }
}

/// How `run` and `chat` show a reply's thinking block.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Show {
    /// On stderr (dimmed on a terminal), the answer alone on stdout
    #[default]
    Show,
    /// Not at all
    Hide,
}

/// Prints a streamed reply: its thinking block as `show` says, the rest
/// on stdout.
pub struct Printer {
    split: Option<tern_core::ReasoningSplit>,
    show: Show,
    dim: bool,
    in_reasoning: bool,
}

impl Printer {
    /// For a reply whose thinking block is where `reasoning` says (None:
    /// everything is the answer).
    pub fn new(reasoning: Option<tern_core::Reasoning>, show: Show) -> Printer {
        use std::io::IsTerminal;
        let dim = std::io::stderr().is_terminal();
        Printer { split: reasoning.map(|r| r.splitter()), show, dim, in_reasoning: false }
    }

    /// Print the next piece of the reply.
    pub fn print(&mut self, text: &str) {
        let parts = match &mut self.split {
            Some(s) => s.push(text),
            None => tern_core::Parts { reasoning: String::new(), content: text.into() },
        };
        self.write(parts);
    }

    /// Print what is still held at the end.
    pub fn finish(&mut self) {
        if let Some(parts) = self.split.as_mut().map(|s| s.finish()) {
            self.write(parts);
        }
        self.end_reasoning();
    }

    fn write(&mut self, parts: tern_core::Parts) {
        use std::io::Write;
        if !parts.reasoning.is_empty() && self.show == Show::Show {
            let mut err = std::io::stderr().lock();
            if !self.in_reasoning && self.dim {
                let _ = err.write_all(b"\x1b[2m");
            }
            self.in_reasoning = true;
            let _ = err.write_all(parts.reasoning.as_bytes());
            let _ = err.flush();
        }
        if !parts.content.is_empty() {
            self.end_reasoning();
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(parts.content.as_bytes());
            let _ = out.flush();
        }
    }

    fn end_reasoning(&mut self) {
        if self.in_reasoning {
            eprintln!("{}", if self.dim { "\x1b[0m" } else { "" });
            self.in_reasoning = false;
        }
    }
}

fn parse_kwargs(s: &str) -> std::result::Result<TemplateKwargs, String> {
    match serde_json::from_str(s) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        Ok(_) => Err("a JSON object, e.g. '{\"enable_thinking\": false}'".into()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

fn parse_budget(s: &str) -> std::result::Result<i64, String> {
    match s.trim() {
        "-1" => Ok(-1),
        "0" => Ok(0),
        _ => Err("-1 (unrestricted) or 0 (off), as llama-server takes".into()),
    }
}

fn parse_format(s: &str) -> std::result::Result<ReasoningFormat, String> {
    ReasoningFormat::parse(s).ok_or_else(|| format!("one of {}", ReasoningFormat::NAMES))
}
