//! The front door: a model loaded with everything it needs to generate
//! (the fastest kernels this CPU has, a thread pool over all cores, a
//! context of min(trained, 4096), timings measured), and text in, text out.
//!
//! ```
//! # fn main() -> tern::Result<()> {
//! # let path = std::env::var_os("TERN_MODELS").map(std::path::PathBuf::from)
//! #     .unwrap_or_else(|| std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/tern/models"))
//! #     .join("smollm2-135m-instruct-q4_1.gguf");
//! let model = tern::Model::load(&path)?; // or an HF directory
//! let out = model.generate("The capital of France is", &tern::Options::default().max_tokens(32))?;
//! println!("{}", out.text);
//! # Ok(())
//! # }
//! ```
//!
//! The layers under it (`tern_core`'s `Session`, `Generation`, `Engine`)
//! stay available for servers and bindings that schedule work themselves.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tern_core::backend::Kernels;
use tern_core::Conversation;
use tern_core::Grammar;
use tern_core::SamplerConfig;
use tern_core::Tokenizer;
use tern_core::{
    generate_batch_constrained, runtime::Generation, runtime::Parts, BatchItem, CancelFlag, Event, GenerationResult,
};
use tern_core::{Engine, Session};
use tern_core::{Prompt, Request, Sampling};

use crate::{limits, Loaded, Result, Threads};

/// Context positions a session gets when the model was trained on more.
const DEFAULT_CTX: usize = 4096;
/// Tokens per forward pass while prefilling.
const BATCH: usize = 512;

/// A loaded model, ready to generate; share it across threads (`Arc`).
pub struct Model {
    loaded: Loaded,
    threads: Threads,
    kernels: &'static dyn Kernels,
    n_ctx: usize,
    draft: Option<crate::Draft>,
}

/// What to generate: sampling (llama.cpp's defaults, then the model's
/// generation_config.json, then what is set here), stops and length, set
/// builder-style: a [`Request`] without its prompt.
#[derive(Debug, Clone)]
pub struct Options {
    req: Request,
}

impl Default for Options {
    fn default() -> Options {
        Options { req: Request { max_tokens: Some(256), ..Request::new(Prompt::Ids(Vec::new())) } }
    }
}

impl Options {
    /// Greedy decoding: the most likely token every step.
    pub fn greedy() -> Options {
        Options::default().sampler(SamplerConfig::greedy())
    }
    /// At most `n` new tokens.
    pub fn max_tokens(mut self, n: usize) -> Options {
        self.req.max_tokens = Some(n);
        self
    }
    /// The whole sampler chain (see `tern_core::SamplerConfig`),
    /// over the model's defaults.
    pub fn sampler(mut self, s: SamplerConfig) -> Options {
        self.req.sampling = Sampling::all(&s);
        self
    }
    /// Temperature (0: greedy); the other settings stay the model's.
    pub fn temperature(mut self, t: f32) -> Options {
        self.req.sampling.temperature = Some(t);
        self
    }
    /// Seed of the sampler's RNG: the same seed gives the same tokens.
    pub fn seed(mut self, seed: u64) -> Options {
        self.req.sampling.seed = Some(seed);
        self
    }
    /// Stop before this string (never part of the output); at most
    /// four (`tern_core::MAX_STOPS`).
    pub fn stop(mut self, s: &str) -> Options {
        self.req.stop.push(s.into());
        self
    }
    /// Keep going past end-of-generation tokens (they are banned, as
    /// llama.cpp's `--ignore-eos` does): exactly `max_tokens` tokens.
    pub fn ignore_eos(mut self) -> Options {
        self.req.ignore_eos = true;
        self
    }

    /// Output that matches `g`: a JSON Schema, any JSON object, a regex or
    /// a grammar (see `tern_core::grammar`).
    ///
    /// ```
    /// # fn main() -> tern::Result<()> {
    /// # let path = std::env::var_os("TERN_MODELS").map(std::path::PathBuf::from)
    /// #     .unwrap_or_else(|| std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/tern/models"))
    /// #     .join("smollm2-135m-instruct-q4_1.gguf");
    /// use tern::{Grammar, Model, Options};
    /// let model = Model::load(&path)?;
    /// let schema = r#"{"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}"#;
    /// let o = Options::default().max_tokens(64).grammar(Grammar::json_schema(schema)?);
    /// let out = model.generate("The capital of France, as JSON:", &o)?;
    /// assert!(out.text.starts_with(r#"{"city": ""#));
    /// # Ok(())
    /// # }
    /// ```
    pub fn grammar(mut self, g: Grammar) -> Options {
        self.req.grammar = Some(g);
        self
    }
    /// Report each token's log-probability and its `top` most likely
    /// alternatives (at most 20), in the events and the result.
    pub fn logprobs(mut self, top: usize) -> Options {
        self.req.logprobs = Some(top);
        self
    }

    /// Variables for the chat template (`enable_thinking: false` for
    /// Qwen3); a chat's turns are rendered with them.
    pub fn template_kwargs(mut self, k: tern_core::TemplateKwargs) -> Options {
        self.req.chat_template_kwargs = Some(k);
        self
    }
    /// How a chat reply's thinking block is split off (`Reply::reasoning`).
    pub fn reasoning_format(mut self, f: tern_core::ReasoningFormat) -> Options {
        self.req.reasoning_format = f;
        self
    }
    /// Decode speculatively, with these draft settings (`Default`: llama.cpp's
    /// names and tern's defaults): the model's draft ([`Model::with_draft`]) if it
    /// has one, else n-gram (prompt lookup) drafts. Greedy output is plain
    /// decoding's; the counts are in `usage`.
    pub fn speculative(mut self, s: tern_core::Speculative) -> Options {
        self.req.speculative = Some(s);
        self
    }

    /// Run LoRA adapter `id` ([`Model::load_adapter`]'s) at `scale`; once
    /// any is named, only the adapters named run (not the model's default
    /// scales). Repeat for several: their deltas add up in this order.
    pub fn lora(mut self, id: usize, scale: f32) -> Options {
        self.req.lora.get_or_insert_default().push(tern_core::LoraScale { id, scale });
        self
    }

    /// The request of `prompt` with these options (a seed drawn from the
    /// clock if none is set).
    fn request(&self, prompt: Prompt) -> Request {
        let mut r = Request { prompt, ..self.req.clone() };
        r.sampling.seed = r.sampling.seed.or_else(|| Some(crate::clock_seed()));
        r
    }
}

impl Model {
    /// Load a GGUF file or an HF model directory, or fetch one first: a
    /// path that does not exist is taken as a reference
    /// ([`crate::fetch`]: an http(s) URL, `owner/repo:QUANT`,
    /// `owner/repo/file.gguf`, `owner/repo`, a built-in name), fetched
    /// into the cache by [`Fetcher::new`](crate::fetch::Fetcher::new)
    /// (progress on a terminal). Kernels: the fastest this CPU runs
    /// (`TERN_KERNELS` naming one it cannot is an error); threads: one per
    /// core.
    pub fn load(model: impl AsRef<Path>) -> Result<Model> {
        let kernels = crate::kernels::select()?;
        let p = model.as_ref();
        let path = match p.to_str() {
            Some(reference) if !p.exists() => crate::fetch::Fetcher::new().get(reference)?,
            _ => p.to_path_buf(),
        };
        let loaded = crate::load(&path)?;
        let n_ctx = loaded.model.config.n_ctx_train.min(DEFAULT_CTX);
        Ok(Model { loaded, threads: Threads::new(0), kernels, n_ctx, draft: None })
    }

    /// Draft with the model at `path` (a smaller one with this one's
    /// vocabulary: an error names the first token that differs) when
    /// options ask to speculate.
    pub fn with_draft(mut self, path: impl AsRef<Path>) -> Result<Model> {
        self.draft = Some(crate::Draft::load(path.as_ref(), &self.loaded)?);
        Ok(self)
    }

    /// Load a LoRA adapter for this model — a PEFT directory
    /// (`adapter_config.json`, `adapter_model.safetensors`) or a llama.cpp
    /// GGUF LoRA file — checked against it (every mismatch, and what tern
    /// cannot apply, an error naming it); its id, from 0 in loading order.
    /// Generations whose options name no adapter run it at `scale` (0:
    /// only when named, [`Options::lora`]). The base's weights are not
    /// touched.
    pub fn load_adapter(&mut self, path: impl AsRef<Path>, scale: f32) -> Result<usize> {
        let adapter = crate::load_adapter(path.as_ref(), &self.loaded.model)?;
        Ok(self.loaded.bundle.add_adapter(adapter, scale)?)
    }

    /// The generation of `p`, drafting with the model's draft if it has one.
    fn generation(&self, p: tern_core::Prepared) -> Generation {
        let p_min = p.spec.map_or(0.0, |s| s.p_min);
        let drafter = self.draft.as_ref().filter(|_| p.spec.is_some()).map(|d| d.drafter(self.n_ctx, p_min));
        p.generation_drafted(crate::clock, drafter)
    }

    /// Context positions each generation or chat gets (default
    /// min(trained, 4096)); checked against available memory.
    pub fn with_context(mut self, n_ctx: usize) -> Result<Model> {
        limits::check_sessions(&self.loaded, 1, n_ctx, BATCH.min(n_ctx.max(1)), tern_core::KvType::F16)?;
        self.n_ctx = n_ctx;
        Ok(self)
    }

    /// What was loaded: weights, tokenizer, format, defaults.
    pub fn loaded(&self) -> &Loaded {
        &self.loaded
    }

    /// The tokenizer (an error if the files have none).
    pub fn tokenizer(&self) -> Result<&Tokenizer> {
        Ok(self.loaded.tokenizer()?)
    }

    fn engine(&self) -> Engine<'_> {
        Engine { kernels: self.kernels, par: &self.threads, exact: false }
    }

    fn session(&self) -> Session {
        self.loaded.model.session(self.n_ctx, BATCH)
    }

    /// One event of `g` over `session`: what `Stream` and `Reply` iterate.
    fn step(&self, g: &mut Generation, session: &mut Session) -> Option<Result<Event>> {
        let engine = self.engine();
        let vocab = self.loaded.vocab();
        let parts = Parts { model: &self.loaded.model, engine: &engine, vocab: &vocab, session };
        g.next(parts).map(|r| r.map_err(Into::into))
    }

    /// Generate after `prompt` and return the whole result (text, tokens,
    /// finish reason, usage, timings).
    pub fn generate(&self, prompt: &str, o: &Options) -> Result<GenerationResult> {
        for ev in self.stream(prompt, o)? {
            if let Event::Done(r) = ev? {
                return Ok(r);
            }
        }
        Err(tern_core::Error::InvalidArgument { what: "the generation ended without a result".into() }.into())
    }

    /// Generate after `prompt`, one event at a time: `Event::Token`s, then
    /// `Event::Done` with the result. `Stream::cancel_flag` stops it from
    /// another thread.
    pub fn stream(&self, prompt: &str, o: &Options) -> Result<Stream<'_>> {
        let prepared = self.loaded.prepare(&o.request(Prompt::Text(prompt.into())), Some(self.n_ctx))?;
        Ok(Stream::new(self, self.session(), self.generation(prepared)))
    }

    /// Fill in the gap between `prefix` and `suffix` with a code model's
    /// FIM tokens (`tern_core::Infill`): the middle, one event at a time.
    /// A model without FIM tokens is an error naming the ones it lacks.
    ///
    /// ```
    /// # fn main() -> tern::Result<()> {
    /// # let path = std::env::var_os("TERN_MODELS").map(std::path::PathBuf::from)
    /// #     .unwrap_or_else(|| std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/tern/models"))
    /// #     .join("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");
    /// let model = tern::Model::load(&path)?;
    /// let o = tern::Options::greedy().max_tokens(16);
    /// let mut middle = String::new();
    /// for ev in model.infill("def add(a, b):\n    ", "\n\nprint(add(1, 2))\n", &o)? {
    ///     if let tern::Event::Token { text, .. } = ev? {
    ///         middle.push_str(&text);
    ///     }
    /// }
    /// assert!(middle.contains("a + b"), "{middle}");
    /// # Ok(())
    /// # }
    /// ```
    pub fn infill(&self, prefix: &str, suffix: &str, o: &Options) -> Result<Stream<'_>> {
        let infill = tern_core::Infill { prefix: prefix.into(), suffix: suffix.into(), ..Default::default() };
        let prepared = self.loaded.prepare(&o.request(Prompt::Infill(infill)), Some(self.n_ctx))?;
        Ok(Stream::new(self, self.session(), self.generation(prepared)))
    }

    /// Generate after each prompt with its options, the sequences decoded
    /// together (one forward pass a step for all that are still going).
    /// Each result equals what `generate` gives for that prompt alone.
    ///
    /// ```
    /// # fn main() -> tern::Result<()> {
    /// # let path = std::env::var_os("TERN_MODELS").map(std::path::PathBuf::from)
    /// #     .unwrap_or_else(|| std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/tern/models"))
    /// #     .join("smollm2-135m-instruct-q4_1.gguf");
    /// use tern::{Model, Options};
    /// let model = Model::load(&path)?;
    /// let o = Options::greedy().max_tokens(8);
    /// let results = model.generate_batch(&[("Once upon a time", o.clone()), ("The capital of France is", o.clone())])?;
    /// assert_eq!(results[1].tokens, model.generate("The capital of France is", &o)?.tokens);
    /// # Ok(())
    /// # }
    /// ```
    pub fn generate_batch(&self, jobs: &[(&str, Options)]) -> Result<Vec<GenerationResult>> {
        let mut items = Vec::with_capacity(jobs.len());
        let mut constraints = Vec::with_capacity(jobs.len());
        for (prompt, o) in jobs {
            let p = self.loaded.prepare(&o.request(Prompt::Text(prompt.to_string())), Some(self.n_ctx))?;
            items.push(BatchItem { prompt: p.prompt, cfg: p.cfg });
            constraints.push(p.constraint);
        }
        let mut sessions = Vec::with_capacity(items.len());
        for it in &items {
            let n_ctx = (it.prompt.len() + it.cfg.max_tokens).min(self.n_ctx);
            sessions.push(self.loaded.model.session(n_ctx, BATCH));
        }
        let engine = self.engine();
        let model = &self.loaded.model;
        let vocab = self.loaded.vocab();
        Ok(generate_batch_constrained(model, &engine, &vocab, &mut sessions, &items, constraints, crate::clock)?)
    }

    /// A conversation in one live session (each turn prefills only what
    /// the cache lacks), with an optional system message.
    pub fn chat(&self, system: Option<&str>) -> Result<Chat<'_>> {
        let tok = self.tokenizer()?;
        let conv = Conversation::new(&self.loaded.model, tok, self.n_ctx, system)?;
        Ok(Chat { model: self, tok, conv, options: Options::default(), choice: None })
    }
}

/// Events of one generation (see `Model::stream`).
pub struct Stream<'m> {
    model: &'m Model,
    session: Session,
    generation: Generation,
    cancel: CancelFlag,
}

impl<'m> Stream<'m> {
    fn new(model: &'m Model, session: Session, generation: Generation) -> Stream<'m> {
        let cancel: CancelFlag = Arc::new(AtomicBool::new(false));
        let generation = generation.with_cancel(cancel.clone());
        Stream { model, session, generation, cancel }
    }

    /// Set it (from any thread) to end the generation after the current
    /// token, with finish reason `cancelled`.
    pub fn cancel_flag(&self) -> CancelFlag {
        self.cancel.clone()
    }
}

impl Iterator for Stream<'_> {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Result<Event>> {
        self.model.step(&mut self.generation, &mut self.session)
    }
}

/// A conversation (see `Model::chat`).
pub struct Chat<'m> {
    model: &'m Model,
    tok: &'m Tokenizer,
    conv: Conversation,
    options: Options,
    /// `tool_choice` for `send` (OpenAI's JSON form), with tools.
    choice: Option<serde_json::Value>,
}

impl<'m> Chat<'m> {
    /// The options every reply uses.
    pub fn options(&mut self, o: Options) -> &mut Self {
        self.options = o;
        self
    }

    /// Offer `tools` to the model from now on; `choice` says whether a
    /// reply to `send` must call one (`Required`, `Named`: its arguments
    /// then valid against the function's schema) or may (`Auto`); `None`
    /// takes the tools away. The model writes calls in its template's
    /// format ([`Chat::tool_format`]); a reply's calls: [`Chat::tool_calls`]
    /// of its text (they are also recorded as the message's `tool_calls`).
    ///
    /// ```
    /// # fn main() -> tern::Result<()> {
    /// # let path = std::env::var_os("TERN_MODELS").map(std::path::PathBuf::from)
    /// #     .unwrap_or_else(|| std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/tern/models"))
    /// #     .join("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");
    /// use tern::{Tool, ToolChoice};
    /// let model = tern::Model::load(&path)?;
    /// let weather = Tool {
    ///     name: "get_weather".into(),
    ///     description: "The weather in a city".into(),
    ///     parameters: serde_json::json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    /// };
    /// let mut chat = model.chat(None)?;
    /// chat.options(tern::Options::default().max_tokens(64)).tools(&[weather], ToolChoice::Required)?;
    /// let r = chat.send("What is the weather in Paris?")?.last().unwrap()?;
    /// let tern::Event::Done(r) = r else { unreachable!() };
    /// let (_, calls) = chat.tool_calls(&r.text);
    /// assert_eq!(calls[0].name, "get_weather");
    /// let answer = chat.send_tool_results(&[("call_0", r#"{"temperature": 21}"#)])?;
    /// # for _ in answer {}
    /// # Ok(())
    /// # }
    /// ```
    pub fn tools(&mut self, tools: &[tern_core::Tool], choice: tern_core::ToolChoice) -> Result<&mut Self> {
        if let tern_core::ToolChoice::Named(n) = &choice {
            if !tools.iter().any(|t| &t.name == n) {
                return Err(tern_core::Error::InvalidArgument { what: format!("no tool is named {n:?}") }.into());
            }
        }
        self.choice = match &choice {
            tern_core::ToolChoice::None => None,
            tern_core::ToolChoice::Auto => Some("auto".into()),
            tern_core::ToolChoice::Required => Some("required".into()),
            tern_core::ToolChoice::Named(n) => Some(serde_json::json!({"type": "function", "function": {"name": n}})),
        };
        self.conv.set_tools(self.choice.as_ref().map(|_| tools));
        Ok(self)
    }

    /// The format this model writes tool calls in (its chat template's).
    pub fn tool_format(&self) -> tern_core::ToolFormat {
        self.conv.tool_format()
    }

    /// A reply's text outside its tool calls, and the calls.
    pub fn tool_calls(&self, text: &str) -> (String, Vec<tern_core::ToolCall>) {
        self.tool_format().parse(text)
    }

    /// Send a user message; the reply streams as events and is recorded
    /// in the conversation when its `Done` event has been read.
    pub fn send(&mut self, text: &str) -> Result<Reply<'_, 'm>> {
        let msg = tern_core::Message::new("user", text);
        self.reply(vec![msg], self.choice.clone())
    }

    /// Add `msgs` and start the reply: its settings from the one request
    /// path (the tools offered with `choice`); messages it refuses are
    /// taken back.
    fn reply(&mut self, msgs: Vec<tern_core::Message>, choice: Option<serde_json::Value>) -> Result<Reply<'_, 'm>> {
        let mut req = self.options.request(Prompt::Ids(Vec::new()));
        req.tools = self.conv.tools.clone().filter(|_| choice.is_some());
        req.tool_choice = choice;
        let n = self.conv.messages.len();
        self.conv.template_kwargs = req.template_kwargs();
        let prompt = self.conv.open_with(self.tok, msgs, req.max_tokens.unwrap_or(0))?;
        let prepared =
            self.model.loaded.prepare_ids(&req, prompt, None).inspect_err(|_| self.conv.messages.truncate(n))?;
        let reasoning = self.conv.reasoning(req.reasoning_format);
        let generation = self.model.generation(prepared);
        Ok(Reply { chat: self, generation, reasoning })
    }

    /// Answer the last reply's tool calls: (call id, result) each, as
    /// `tool` messages; the model's next reply streams as events (never
    /// forced to call a tool: it may call more, or answer).
    pub fn send_tool_results(&mut self, results: &[(&str, &str)]) -> Result<Reply<'_, 'm>> {
        let msgs = results
            .iter()
            .map(|&(id, content)| {
                let mut m = tern_core::Message::new("tool", content);
                m.tool_call_id = Some(id.to_string());
                m
            })
            .collect();
        self.reply(msgs, self.choice.as_ref().map(|_| "auto".into()))
    }

    /// The messages so far.
    pub fn messages(&self) -> &[tern_core::Message] {
        &self.conv.messages
    }

    /// The conversation as bytes: messages, KV cache and RNG.
    pub fn save(&self) -> Vec<u8> {
        self.conv.save(&self.model.loaded.model)
    }

    /// Continue a conversation `save` wrote (for this model).
    pub fn restore(&mut self, bytes: &[u8]) -> Result<()> {
        Ok(self.conv.load(&self.model.loaded.model, bytes)?)
    }

    /// Positions of the conversation in the cache.
    pub fn n_cached(&self) -> usize {
        self.conv.session.n_past()
    }
}

/// The events of one reply (see `Chat::send`).
pub struct Reply<'c, 'm> {
    chat: &'c mut Chat<'m>,
    generation: Generation,
    reasoning: Option<tern_core::Reasoning>,
}

impl Reply<'_, '_> {
    /// Where this reply's thinking block is, when the model's template has
    /// one: `reasoning().map(|r| r.split(&text))` parts a whole reply into
    /// reasoning and answer, `reasoning().map(|r| r.splitter())` as it
    /// streams.
    pub fn reasoning(&self) -> Option<tern_core::Reasoning> {
        self.reasoning
    }
}

impl Iterator for Reply<'_, '_> {
    type Item = Result<Event>;

    fn next(&mut self) -> Option<Result<Event>> {
        let chat = &mut *self.chat;
        let ev = chat.model.step(&mut self.generation, &mut chat.conv.session)?;
        if let Ok(Event::Done(r)) = &ev {
            self.chat.conv.push_reply(&r.text);
        }
        Some(ev.map_err(Into::into))
    }
}
