//! Chat templates: the model's own Jinja template rendered with minijinja,
//! with what HF templates rely on (`raise_exception`, `tojson`,
//! `strftime_now`, loop controls, Python string methods). The template
//! alone decides BOS/EOS and role markers.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use minijinja::value::Serde;
use minijinja::{context, Environment, ErrorKind};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::tokenizer::Tokenizer;
use crate::tools::ToolFormat;

/// A chat message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// system, user, assistant or tool
    pub role: String,
    /// Its text (`null` reads as empty: an assistant message that only
    /// calls tools).
    #[serde(deserialize_with = "null_as_empty")]
    pub content: String,
    /// An assistant message's tool calls, as chat templates read them
    /// (transformers' convention): `[{"type": "function", "function":
    /// {"name": ..., "arguments": {...}}}]`, arguments an object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<serde_json::Value>,
    /// A tool message's answer to this call id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> core::result::Result<String, D::Error> {
    Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
}

impl Message {
    /// A message of `role` (system, user, assistant, tool) with `content`.
    pub fn new(role: &str, content: &str) -> Message {
        Message { role: role.to_string(), content: content.to_string(), tool_calls: None, tool_call_id: None }
    }
}

/// Variables a request adds to a template's (`chat_template_kwargs`).
pub type TemplateKwargs = serde_json::Map<String, serde_json::Value>;

/// The variables the rendering sets itself, which kwargs may not.
pub const RESERVED: [&str; 5] = ["messages", "add_generation_prompt", "bos_token", "eos_token", "tools"];

/// The most bytes a request's template variables may take (as JSON).
pub const MAX_KWARGS_BYTES: usize = 64 << 10;

/// Template variables a stranger sent, bounded: no reserved name, at most
/// [`MAX_KWARGS_BYTES`].
pub(crate) fn check_kwargs(k: &TemplateKwargs) -> Result<()> {
    let bad = |what: String| Error::InvalidField { field: "chat_template_kwargs".into(), what };
    if let Some(r) = RESERVED.iter().find(|r| k.contains_key(**r)) {
        return Err(bad(alloc::format!("{r} is set by the request itself, not by chat_template_kwargs")));
    }
    let n = serde_json::to_string(k).map_or(usize::MAX, |s| s.len());
    if n > MAX_KWARGS_BYTES {
        return Err(bad(alloc::format!("{n} bytes of template variables (at most {MAX_KWARGS_BYTES})")));
    }
    Ok(())
}

/// How one turn is rendered and tokenized ([`ChatTemplate::encode_turn`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Turn<'a> {
    /// Open the assistant's turn.
    pub add_generation_prompt: bool,
    /// Control-token strings in content are control tokens.
    pub content_specials: bool,
    /// OpenAI's tool definitions for the template to render.
    pub tools: Option<&'a serde_json::Value>,
    /// More template variables.
    pub kwargs: Option<&'a TemplateKwargs>,
}

/// Instructions a rendering may run: a long conversation takes ~100 a
/// message; a template looping 10^10 times stops here (~0.3 s).
const MAX_FUEL: u64 = 10_000_000;
/// Bytes a rendering may write beyond twice its messages' own.
const MAX_OUTPUT: usize = 1 << 20;

/// The rendering, refusing to grow past `max` bytes.
struct Capped {
    out: Vec<u8>,
    max: usize,
}

impl std::io::Write for Capped {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.out.len() + b.len() > self.max {
            self.out.resize(self.max, 0);
            return Err(std::io::Error::other("over budget"));
        }
        self.out.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A model's chat template (Jinja, run by minijinja with a fuel and output budget) and the BOS/EOS
/// strings it may print.
pub struct ChatTemplate {
    env: Environment<'static>,
    /// Whether the template reads `tools` (renders tool definitions).
    pub takes_tools: bool,
    source: String,
    /// The BOS token's text.
    pub bos_token: String,
    /// The EOS token's text.
    pub eos_token: String,
}

fn template_err(e: minijinja::Error) -> Error {
    let mut detail = e.to_string();
    let mut src = std::error::Error::source(&e);
    while let Some(s) = src {
        detail += &alloc::format!(": {s}");
        src = s.source();
    }
    Error::Template { detail }
}

impl ChatTemplate {
    /// Compile `source`. `bos_token`/`eos_token` are the strings templates
    /// may print (empty if the model has none).
    pub fn new(source: &str, bos_token: &str, eos_token: &str) -> Result<ChatTemplate> {
        let mut env = Environment::new();
        // what Jinja2 has that minijinja's builtins lack, as transformers'
        // templates may use it (not contrib's pluralize, filesizeformat,
        // striptags: no chat template does, and each costs wasm bytes)
        env.add_filter("truncate", minijinja_contrib::filters::truncate);
        env.add_function("cycler", minijinja_contrib::globals::cycler);
        env.add_function("joiner", minijinja_contrib::globals::joiner);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", |msg: String| -> core::result::Result<String, minijinja::Error> {
            Err(minijinja::Error::new(ErrorKind::InvalidOperation, msg))
        });
        env.add_function("strftime_now", |fmt: String| strftime(&fmt, unix_now()));
        env.set_fuel(Some(MAX_FUEL));
        env.add_template_owned("chat", source.to_string()).map_err(template_err)?;
        let takes_tools = source.contains("tools");
        Ok(ChatTemplate {
            env,
            takes_tools,
            source: source.to_string(),
            bos_token: bos_token.to_string(),
            eos_token: eos_token.to_string(),
        })
    }

    /// Whether the template's source contains `text` (a format's marker).
    pub fn source_has(&self, text: &str) -> bool {
        self.source.contains(text)
    }

    /// The format the template asks tool calls in ([`ToolFormat::Json`]
    /// for a template without one of its own).
    pub fn tool_format(&self) -> ToolFormat {
        ToolFormat::of_template(&self.source)
    }

    /// Render a conversation; `add_generation_prompt` opens the assistant's
    /// turn. `tools`: JSON tool definitions, if any.
    pub fn render(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
        tools: Option<&serde_json::Value>,
    ) -> Result<String> {
        self.render_with(messages, add_generation_prompt, tools, None)
    }

    /// [`ChatTemplate::render`] with more variables for the template
    /// (`chat_template_kwargs`: `enable_thinking`, `reasoning_effort`, …);
    /// the names the rendering sets itself (`messages`, `add_generation_prompt`, `bos_token`, `eos_token`, `tools`) are refused.
    pub fn render_with(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
        tools: Option<&serde_json::Value>,
        kwargs: Option<&TemplateKwargs>,
    ) -> Result<String> {
        let Some(text) = tools.and_then(|t| self.tool_format().instructions(t)) else {
            return self.render_raw(messages, add_generation_prompt, tools, kwargs);
        };
        // the tools described in the system message (the template may not
        // render them); a template that refuses one gets them in the first
        // user message
        let tools = tools.filter(|_| self.takes_tools);
        let system = instructed(messages, &text, "system");
        match self.render_raw(&system, add_generation_prompt, tools, kwargs) {
            Err(Error::Template { .. }) if messages.first().is_none_or(|m| m.role != "system") => {
                self.render_raw(&instructed(messages, &text, "user"), add_generation_prompt, tools, kwargs)
            }
            r => r,
        }
    }

    fn render_raw(
        &self,
        messages: &[Message],
        add_generation_prompt: bool,
        tools: Option<&serde_json::Value>,
        kwargs: Option<&TemplateKwargs>,
    ) -> Result<String> {
        let t = self.env.get_template("chat").map_err(template_err)?;
        let tools = tools.map(|t| minijinja::Value::from(Serde(t)));
        let extra = match kwargs {
            Some(k) => {
                check_kwargs(k)?;
                minijinja::Value::from(Serde(k))
            }
            None => minijinja::Value::from(()),
        };
        let ctx = context! {
            messages => Serde(messages),
            add_generation_prompt => add_generation_prompt,
            bos_token => self.bos_token.as_str(),
            eos_token => self.eos_token.as_str(),
            tools => tools,
            ..extra
        };
        let kwargs_bytes = kwargs.map_or(0, |k| serde_json::to_string(k).map_or(0, |s| s.len()));
        let content: usize = messages.iter().map(|m| m.content.len() + m.role.len()).sum::<usize>() + kwargs_bytes;
        let mut out = Capped { out: Vec::new(), max: MAX_OUTPUT.max(content.saturating_mul(2)) };
        match t.render_captured_to(ctx, &mut out) {
            Ok(_) => {}
            Err(_) if out.out.len() >= out.max => {
                return Err(Error::Template {
                    detail: alloc::format!("the rendering passed {} bytes (its budget)", out.max),
                })
            }
            Err(e) if e.kind() == ErrorKind::OutOfFuel => {
                return Err(Error::Template {
                    detail: alloc::format!("the template ran past its budget of {MAX_FUEL} instructions"),
                })
            }
            Err(e) => return Err(template_err(e)),
        }
        String::from_utf8(out.out).map_err(|_| Error::Template { detail: "the rendering is not UTF-8".into() })
    }

    /// The tokenizer's template, printing its BOS/EOS strings.
    pub fn of(tok: &Tokenizer) -> Result<ChatTemplate> {
        let src = tok
            .chat_template
            .as_deref()
            .ok_or_else(|| Error::Template { detail: "the model has no chat template".into() })?;
        ChatTemplate::with_source(tok, src)
    }

    /// `source` as a template for this tokenizer's model, printing its
    /// BOS/EOS strings.
    pub fn with_source(tok: &Tokenizer, source: &str) -> Result<ChatTemplate> {
        let name = |id: Option<u32>| id.and_then(|i| tok.token_str(i)).unwrap_or_default();
        ChatTemplate::new(source, &name(tok.bos), &name(tok.eos))
    }

    /// Its Jinja source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Token ids of the rendered conversation (BOS as the model asks).
    /// Message content is text: a control token's string typed into it
    /// is tokenized as the characters it is, so only the template makes
    /// control tokens — unless `content_specials`, which parses them in
    /// content too (the old, forgeable behaviour, for trusted callers).
    pub fn encode(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        add_generation_prompt: bool,
        content_specials: bool,
    ) -> Result<Vec<u32>> {
        self.encode_with_tools(tok, messages, add_generation_prompt, content_specials, None)
    }

    /// [`ChatTemplate::encode`] with tool definitions (OpenAI's `tools`
    /// list) for the template to render — or, for a template without a
    /// tool format of its own, described in the system message
    /// ([`ToolFormat::instructions`]).
    pub fn encode_with_tools(
        &self,
        tok: &Tokenizer,
        messages: &[Message],
        add_generation_prompt: bool,
        content_specials: bool,
        tools: Option<&serde_json::Value>,
    ) -> Result<Vec<u32>> {
        let turn = Turn { add_generation_prompt, content_specials, tools, kwargs: None };
        self.encode_turn(tok, messages, &turn).map(|(ids, _)| ids)
    }

    /// Token ids of the rendered conversation, and the rendering (its
    /// control tokens as the template wrote them), as `turn` asks.
    pub fn encode_turn(&self, tok: &Tokenizer, messages: &[Message], turn: &Turn) -> Result<(Vec<u32>, String)> {
        let Turn { add_generation_prompt, content_specials, tools, kwargs } = *turn;
        if content_specials {
            let text = self.render_with(messages, add_generation_prompt, tools, kwargs)?;
            return Ok((tok.encode(self.once_bos(tok, &text), true)?, text));
        }
        let mut esc = tok.escaper();
        let escaped: Vec<Message> =
            messages.iter().map(|m| Message { content: esc.escape(&m.content), ..m.clone() }).collect();
        let text = self.render_with(&escaped, add_generation_prompt, tools, kwargs)?;
        Ok((esc.encode(self.once_bos(tok, &text), true)?, text))
    }

    /// The rendering without the template's own BOS when the tokenizer adds
    /// one (as llama.cpp's chat code does), so the prompt has one BOS.
    fn once_bos<'r>(&self, tok: &Tokenizer, rendered: &'r str) -> &'r str {
        match (tok.add_bos && tok.bos.is_some() && !self.bos_token.is_empty(), rendered.strip_prefix(&*self.bos_token))
        {
            (true, Some(rest)) => rest,
            _ => rendered,
        }
    }
}

/// `messages` with `text` at the start of the first message of `role`
/// (a paragraph before its content), or in a new first message of it.
fn instructed(messages: &[Message], text: &str, role: &str) -> Vec<Message> {
    let mut out = messages.to_vec();
    match out.iter_mut().find(|m| m.role == role) {
        Some(m) => m.content = alloc::format!("{text}\n\n{}", m.content),
        None => out.insert(0, Message::new(role, text)),
    }
    out
}

fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

/// `strftime` for the codes chat templates use: %Y %m %d %e %H %M %S %B %b
/// %A %a %j %%; other codes are kept as written.
pub(crate) fn strftime(fmt: &str, unix: i64) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    const DAYS: [&str; 7] = ["Thursday", "Friday", "Saturday", "Sunday", "Monday", "Tuesday", "Wednesday"];
    let days = unix.div_euclid(86400);
    let secs = unix.rem_euclid(86400);
    // civil date from days since 1970-01-01 (H. Hinnant's algorithm)
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let cum = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    let yday = cum[(m - 1) as usize] + d + (leap && m > 2) as i64;
    let weekday = DAYS[days.rem_euclid(7) as usize];
    let mut out = String::new();
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let s = match chars.next() {
            Some('Y') => alloc::format!("{y}"),
            Some('m') => alloc::format!("{m:02}"),
            Some('d') => alloc::format!("{d:02}"),
            Some('e') => alloc::format!("{d:2}"),
            Some('H') => alloc::format!("{:02}", secs / 3600),
            Some('M') => alloc::format!("{:02}", secs / 60 % 60),
            Some('S') => alloc::format!("{:02}", secs % 60),
            Some('B') => MONTHS[(m - 1) as usize].to_string(),
            Some('b') => MONTHS[(m - 1) as usize][..3].to_string(),
            Some('A') => weekday.to_string(),
            Some('a') => weekday[..3].to_string(),
            Some('j') => alloc::format!("{yday:03}"),
            Some('%') => "%".to_string(),
            Some(o) => alloc::format!("%{o}"),
            None => "%".to_string(),
        };
        out.push_str(&s);
    }
    out
}

/// The roles a message may have: OpenAI's (`developer` is read as
/// `system`).
pub const ROLES: [&str; 5] = ["system", "developer", "user", "assistant", "tool"];

/// Messages from a JSON array of `{role, content}` objects (an assistant's
/// `tool_calls` and a tool's `tool_call_id` too, OpenAI's shapes: the
/// calls' arguments may be JSON strings), each of a role in [`ROLES`].
pub fn messages_from_json(v: &serde_json::Value) -> Result<Vec<Message>> {
    let mut msgs: Vec<Message> = serde_json::from_value(v.clone())
        .map_err(|e| Error::InvalidArgument { what: alloc::format!("messages: {e}") })?;
    for (i, m) in msgs.iter_mut().enumerate() {
        if !ROLES.contains(&m.role.as_str()) {
            return Err(Error::InvalidArgument {
                what: alloc::format!("messages[{i}].role: unknown role {:?} (one of {ROLES:?})", m.role),
            });
        }
        if m.role == "developer" {
            m.role = "system".into();
        }
        if let Some(c) = m.tool_calls.take().filter(|c| !c.is_null()) {
            m.tool_calls = Some(crate::tools::message_tool_calls(&c, i)?);
        }
    }
    Ok(msgs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strftime_known_dates() {
        assert_eq!(strftime("%d %b %Y", 0), "01 Jan 1970");
        // 2024-02-29 12:34:56 UTC, a Thursday, day 60
        assert_eq!(
            strftime("%Y-%m-%d %H:%M:%S %A %j %B %%", 1709210096),
            "2024-02-29 12:34:56 Thursday 060 February %"
        );
    }

    #[test]
    fn hf_template_features() {
        let src = "{%- for m in messages %}{% if m.role == 'bad' %}{{ raise_exception('no ' + m.role) }}{% endif %}\
            {% if loop.index > 2 %}{% break %}{% endif %}<{{ m.role }}>{{ m.content.strip() | tojson }}{% endfor %}\
            {% if add_generation_prompt %}{{ bos_token }}go{% endif %}";
        let t = ChatTemplate::new(src, "<s>", "</s>").unwrap();
        let msgs = [Message::new("user", " hi "), Message::new("assistant", "yo"), Message::new("user", "x")];
        assert_eq!(t.render(&msgs, true, None).unwrap(), "<user>\"hi\"<assistant>\"yo\"<s>go");
        let err = t.render(&[Message::new("bad", "")], false, None).unwrap_err();
        assert!(err.to_string().contains("no bad"), "{err}");
        assert!(matches!(ChatTemplate::new("{% if %}", "", ""), Err(Error::Template { .. })));
    }

    /// A template that loops 10^10 times, or prints gigabytes, stops with
    /// an error naming its budget, in well under a second.
    #[test]
    fn renders_under_a_budget() {
        let msgs = [Message::new("user", "hi")];
        for (src, what) in [
            ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "instructions"),
            ("{% for i in range(100000) %}{{ 'x' * 10000000 }}{% endfor %}", "bytes"),
            (
                "{% for i in range(100000) %}{% for m in messages %}{{ m.content * 1000 }}{% endfor %}{% endfor %}",
                "bytes",
            ),
            ("{{ [1] * 1000000000000000 }}", "too large"),
        ] {
            let t = ChatTemplate::new(src, "", "").unwrap();
            let start = std::time::Instant::now();
            let e = t.render(&msgs, true, None).unwrap_err();
            assert!(e.to_string().contains(what), "{src}: {e}");
            // generous: the aarch64 tests run under emulation, ~8x slower
            // (tests/hostile.rs holds the native build to 1 s)
            assert!(start.elapsed().as_secs_f64() < 10.0, "{src}: {:?}", start.elapsed());
        }
        // found by the chat_template fuzz target: minijinja 2 iterated an
        // empty list repeated 10^16 times inside one instruction (no fuel)
        let t = ChatTemplate::new("[j{{[]*1*15555555555555555*160*1}}[Z", "", "").unwrap();
        let start = std::time::Instant::now();
        assert_eq!(t.render(&msgs, true, None).unwrap(), "[j[][Z");
        assert!(start.elapsed().as_secs_f64() < 1.0, "{:?}", start.elapsed());
        // a long but honest conversation renders
        let long: Vec<Message> = (0..2000).map(|i| Message::new("user", &alloc::format!("message {i}"))).collect();
        let t = ChatTemplate::new("{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}\n{% endfor %}", "", "")
            .unwrap();
        assert_eq!(t.render(&long, false, None).unwrap().lines().count(), 2000);
    }
}
