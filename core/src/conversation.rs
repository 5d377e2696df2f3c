//! A multi-turn chat over one live session: messages rendered with the
//! model's template, the cache reused across turns (a new turn prefills
//! only what the cache lacks), save/load, and a context-overflow policy.

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use crate::chat::{ChatTemplate, Message, TemplateKwargs, Turn, ROLES};
use crate::error::{Error, Result};
use crate::generate::{Clock, GenerateConfig, GenerationResult, Generator};
use crate::model::{Engine, Model, Session};
use crate::reasoning::{Reasoning, ReasoningFormat};
use crate::tokenizer::Tokenizer;

/// What to do when a conversation no longer fits the context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Overflow {
    /// Fail with `Error::ContextFull` (the default).
    #[default]
    Error,
    /// Drop the oldest turns (never the system message, never the newest
    /// message; a turn is a user message and the replies after it) until the prompt
    /// and the reply's `max_tokens` fit; the cache is re-filled from there.
    DropOldest,
}

/// A chat in one live session: the messages, rendered by the model's template, with the KV cache
/// holding their tokens so each turn prefills only what is new.
pub struct Conversation {
    template: ChatTemplate,
    /// The messages so far (the system message first, if any).
    pub messages: Vec<Message>,
    /// The session whose cache holds the rendered conversation.
    pub session: Session,
    /// What to do when the conversation outgrows the context.
    pub overflow: Overflow,
    /// Parse control-token strings typed into messages as control tokens
    /// (off: they are text; see `ChatTemplate::encode`).
    pub content_specials: bool,
    /// Tool definitions (OpenAI's `tools` list) the template renders for
    /// the model; with them, replies are parsed for calls
    /// ([`crate::ToolRequest`]).
    pub tools: Option<serde_json::Value>,
    /// More variables for the template (`enable_thinking`, …).
    pub template_kwargs: Option<TemplateKwargs>,
    /// The last rendering (where the reply to it starts: in a thinking
    /// block or not).
    rendered: String,
}

impl Conversation {
    /// A conversation of `n_ctx` positions with an optional system message
    /// (an [`Error::ContextFull`] if it leaves no room for a turn).
    pub fn new<B: AsRef<[u8]>>(model: &Model<B>, tok: &Tokenizer, n_ctx: usize, system: Option<&str>) -> Result<Self> {
        let template = ChatTemplate::of(tok)?;
        let messages = system.map(|s| alloc::vec![Message::new("system", s)]).unwrap_or_default();
        if !messages.is_empty() {
            // the system message, a turn's opener and one token of reply
            let needed = template.encode(tok, &messages, true, false)?.len() + 1;
            if needed > n_ctx {
                return Err(Error::ContextFull { n_ctx, needed });
            }
        }
        Ok(Conversation {
            template,
            messages,
            session: model.session(n_ctx, 512),
            overflow: Overflow::Error,
            content_specials: false,
            tools: None,
            template_kwargs: None,
            rendered: String::new(),
        })
    }

    /// Offer `tools` to the model from now on (None: none): the template
    /// renders them, or the system message describes them
    /// ([`ChatTemplate::tool_format`]).
    pub fn set_tools(&mut self, tools: Option<&[crate::tools::Tool]>) {
        self.tools = tools.map(|t| t.iter().map(crate::tools::Tool::to_json).collect());
    }

    /// The format the model writes tool calls in (its template's).
    pub fn tool_format(&self) -> crate::tools::ToolFormat {
        self.template.tool_format()
    }

    /// The rendered conversation, opening the assistant's turn.
    pub fn render(&self) -> Result<String> {
        self.template.render_with(&self.messages, true, self.tools.as_ref(), self.template_kwargs.as_ref())
    }

    /// Render with `source` as the template from now on, instead of the
    /// model's own.
    pub fn set_template(&mut self, tok: &Tokenizer, source: &str) -> Result<()> {
        self.template = ChatTemplate::with_source(tok, source)?;
        Ok(())
    }

    /// Where the reply to the last opened turn thinks, for `format` (None:
    /// the template has no thinking block, or `format` is `none`).
    pub fn reasoning(&self, format: ReasoningFormat) -> Option<Reasoning> {
        crate::reasoning::of_template(&self.template, format, &self.rendered)
    }

    /// Token ids of the whole conversation so far plus the assistant opener,
    /// after applying the overflow policy for a reply of `reserve` tokens.
    pub fn prompt(&mut self, tok: &Tokenizer, reserve: usize) -> Result<Vec<u32>> {
        loop {
            let turn = Turn {
                add_generation_prompt: true,
                content_specials: self.content_specials,
                tools: self.tools.as_ref(),
                kwargs: self.template_kwargs.as_ref(),
            };
            let (ids, rendered) = self.template.encode_turn(tok, &self.messages, &turn)?;
            self.rendered = rendered;
            let needed = ids.len() + reserve;
            if needed <= self.session.n_ctx() {
                return Ok(ids);
            }
            let first = self.messages.iter().position(|m| m.role != "system");
            match (self.overflow, first) {
                // keep at least the newest message
                (Overflow::DropOldest, Some(i)) if i + 1 < self.messages.len() => {
                    // a whole turn: the oldest message and what follows up
                    // to the next user message
                    self.messages.remove(i);
                    while i + 1 < self.messages.len() && self.messages[i].role != "user" {
                        self.messages.remove(i);
                    }
                }
                _ => return Err(Error::ContextFull { n_ctx: self.session.n_ctx(), needed }),
            }
        }
    }

    /// Add a user message and return a generator for the reply. When it is
    /// done, call `push_reply` with the result's text.
    pub fn generator<'a, B: AsRef<[u8]>>(
        &'a mut self,
        model: &'a Model<B>,
        engine: Engine<'a>,
        tok: &'a Tokenizer,
        user: &str,
        cfg: GenerateConfig,
    ) -> Result<Generator<'a, B>> {
        let ids = self.open_turn(tok, user, cfg.max_tokens)?;
        Ok(Generator::new(model, engine, tok, &mut self.session, &ids, cfg))
    }

    /// Add a user message and return the prompt for the reply (room left
    /// for `reserve` tokens); on an error the message is taken back.
    pub fn open_turn(&mut self, tok: &Tokenizer, user: &str, reserve: usize) -> Result<Vec<u32>> {
        self.open_with(tok, alloc::vec![Message::new("user", user)], reserve)
    }

    /// Add `new` messages (a user turn, tool results) and return the
    /// prompt for the reply; on an error they are taken back.
    pub fn open_with(&mut self, tok: &Tokenizer, new: Vec<Message>, reserve: usize) -> Result<Vec<u32>> {
        let n = self.messages.len();
        self.messages.extend(new);
        let ids = self.prompt(tok, reserve);
        if ids.is_err() {
            self.messages.truncate(n);
        }
        ids
    }

    /// Record the assistant's reply (after its generation); with tools,
    /// its calls as the message's `tool_calls` (ids the model's own, else
    /// `call_N`, counted over the conversation).
    pub fn push_reply(&mut self, text: &str) {
        let (content, calls) = match self.tools {
            Some(_) => self.tool_format().parse(text),
            None => (text.into(), Vec::new()),
        };
        let mut m = Message::new("assistant", if calls.is_empty() { text } else { &content });
        if !calls.is_empty() {
            let before =
                self.messages.iter().filter_map(|m| m.tool_calls.as_ref()?.as_array().map(Vec::len)).sum::<usize>();
            let list = calls.iter().enumerate().map(|(i, c)| {
                let id = c.id.clone().unwrap_or_else(|| alloc::format!("call_{}", before + i));
                serde_json::json!({ "id": id, "type": "function",
                                    "function": { "name": c.name, "arguments": c.arguments } })
            });
            m.tool_calls = Some(list.collect());
        }
        self.messages.push(m);
    }

    /// A whole turn: the user message in, the reply generated (timings by
    /// `clock`) and recorded. To stream the reply, step `generator`
    /// instead and `push_reply` its text.
    pub fn reply<B: AsRef<[u8]>>(
        &mut self,
        model: &Model<B>,
        engine: Engine,
        tok: &Tokenizer,
        user: &str,
        cfg: GenerateConfig,
        clock: Clock,
    ) -> Result<GenerationResult> {
        let r = self.generator(model, engine, tok, user, cfg)?.with_clock(clock).run(|_, _| {})?;
        self.push_reply(&r.text);
        Ok(r)
    }

    /// Back to the system message alone, cache emptied.
    pub fn reset(&mut self) {
        self.messages.retain(|m| m.role == "system");
        self.session.truncate(0);
    }

    /// Messages and session (cache, RNG) as bytes: a JSON line, then the
    /// session state.
    pub fn save<B: AsRef<[u8]>>(&self, model: &Model<B>) -> Vec<u8> {
        let mut out = serde_json::to_vec(&self.messages).unwrap_or_default();
        out.push(b'\n');
        out.extend_from_slice(&self.session.save(&model.config));
        out
    }

    /// Restore what `save` wrote (for this model): messages, cache and RNG.
    pub fn load<B: AsRef<[u8]>>(&mut self, model: &Model<B>, bytes: &[u8]) -> Result<()> {
        let nl = bytes.iter().position(|&b| b == b'\n').ok_or_else(|| Error::InvalidValue {
            field: "conversation file",
            offset: 0,
            detail: "no message header".to_string(),
        })?;
        let bad = |detail: String| Error::InvalidValue { field: "conversation messages", offset: 0, detail };
        let messages: Vec<Message> = serde_json::from_slice(&bytes[..nl]).map_err(|e| bad(e.to_string()))?;
        // validated as a request's messages are: each takes at least one
        // position, and has a role the templates know
        if messages.len() > self.session.n_ctx() {
            return Err(bad(alloc::format!(
                "{} messages, more than a context of {} positions holds",
                messages.len(),
                self.session.n_ctx()
            )));
        }
        if let Some((i, m)) = messages.iter().enumerate().find(|(_, m)| !ROLES.contains(&m.role.as_str())) {
            return Err(bad(alloc::format!("message {i}: unknown role {:?} (one of {ROLES:?})", m.role)));
        }
        self.session.restore(&model.config, &bytes[nl + 1..])?;
        self.messages = messages;
        Ok(())
    }
}
