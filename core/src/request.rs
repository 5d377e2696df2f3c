//! One generation request, whichever front end it came from — the CLI's
//! flags, `tern::Model`'s options, the server's OpenAI JSON, the npm
//! package's options — with one validation and one JSON form, and the one
//! path that turns it into a generation ([`Bundle::prepare`]): the prompt
//! rendered and tokenized, the context checked, the grammar compiled from
//! the bundle's cache, the sampler set over the model's defaults, end
//! tokens banned for `ignore_eos`, a model without a tokenizer run on ids.
//!
//! ```
//! use tern_core::{Prompt, Request};
//! let r = Request::from_json(br#"{"prompt": "Hello", "max_tokens": 8, "sampling": {"temperature": 0}}"#).unwrap();
//! assert_eq!(r.prompt, Prompt::Text("Hello".into()));
//! let e = Request::from_json(br#"{"prompt": "Hello", "sampling": {"top_p": "high"}}"#).unwrap_err();
//! assert!(matches!(e, tern_core::Error::InvalidField { field, .. } if field == "sampling.top_p"));
//! ```

use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::bundle::Bundle;
use crate::chat::{Message, TemplateKwargs, Turn};
use crate::error::{Error, Result};
use crate::generate::{Clock, Constraint, GenerateConfig, Generation, MAX_TOP_LOGPROBS};
use crate::grammar::Grammar;
use crate::hf::GenerationDefaults;
use crate::infill::Infill;
use crate::model::AdapterSet;
use crate::reasoning::{Reasoning, ReasoningFormat};
pub use crate::sampler::Sampling;
use crate::speculative::{Drafter, Ngram, SpecConfig, Speculation, Speculative};
use crate::tools::{ToolChoice, ToolFormat, ToolRequest};

/// The most stop strings a request may give (OpenAI's limit).
pub const MAX_STOPS: usize = 4;

/// What to continue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Prompt {
    /// Text, tokenized with the model's BOS.
    Text(String),
    /// Token ids, as they are.
    Ids(Vec<u32>),
    /// Chat messages, rendered with the model's chat template and a
    /// generation prompt.
    Messages(Vec<Message>),
    /// The gap between a prefix and a suffix, filled in with the model's
    /// FIM tokens.
    Infill(Infill),
}

/// One generation request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// What to continue.
    pub prompt: Prompt,
    /// Sampler settings over the model's defaults.
    #[serde(default)]
    pub sampling: Sampling,
    /// At most this many new tokens (None: as many as the context holds).
    #[serde(default)]
    pub max_tokens: Option<usize>,
    /// Stop before any of these strings (at most [`MAX_STOPS`]).
    #[serde(default)]
    pub stop: Vec<String>,
    /// Stop at any of these token ids too.
    #[serde(default)]
    pub stop_tokens: Vec<u32>,
    /// Do not stop at the model's end tokens: they are banned.
    #[serde(default)]
    pub ignore_eos: bool,
    /// Generate at least this many tokens (the end and stop tokens are
    /// held back until then; vLLM's `min_tokens`).
    #[serde(default)]
    pub min_tokens: usize,
    /// End at a newline once this many milliseconds have passed since the
    /// first token (llama-server's `t_max_predict_ms`).
    #[serde(default)]
    pub t_max_predict_ms: Option<u64>,
    /// What the output must match.
    #[serde(default)]
    pub grammar: Option<Grammar>,
    /// Functions the model may call (OpenAI's `tools` list): rendered
    /// with chat messages (a prompt of text or ids was rendered by the
    /// caller); a forced call's grammar comes from them.
    #[serde(default)]
    pub tools: Option<Value>,
    /// OpenAI's `tool_choice` (needs `tools`).
    #[serde(default)]
    pub tool_choice: Option<Value>,
    /// OpenAI's `parallel_tool_calls` (default true).
    #[serde(default)]
    pub parallel_tool_calls: Option<bool>,
    /// Each token's log-probability with this many alternatives (at most
    /// [`MAX_TOP_LOGPROBS`]).
    #[serde(default)]
    pub logprobs: Option<usize>,
    /// Control-token strings in messages are control tokens (else text).
    #[serde(default)]
    pub content_specials: bool,
    /// More variables for the chat template (`enable_thinking`, …).
    #[serde(default)]
    pub chat_template_kwargs: Option<TemplateKwargs>,
    /// OpenAI's `reasoning_effort`, given to templates that read it.
    #[serde(default)]
    pub reasoning_effort: Option<String>,
    /// How a chat reply's thinking block is returned.
    #[serde(default)]
    pub reasoning_format: ReasoningFormat,
    /// Decode speculatively: drafts (the host's draft model, else n-gram
    /// lookup) verified several tokens a forward pass.
    #[serde(default)]
    pub speculative: Option<Speculative>,
    /// The LoRA adapters to run with, by id (the bundle's, in the order
    /// they were loaded) and scale, as llama-server takes them; None: the
    /// bundle's adapters at their own scales.
    #[serde(default)]
    pub lora: Option<Vec<LoraScale>>,
}

/// A loaded adapter by id, at a scale (llama-server's `lora` entries).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoraScale {
    /// The adapter's id: its index among the bundle's.
    pub id: usize,
    /// Its scale (0: not applied).
    pub scale: f32,
}

/// The values `reasoning_effort` takes (OpenAI's).
pub const REASONING_EFFORTS: [&str; 5] = ["none", "minimal", "low", "medium", "high"];

impl Request {
    /// A request to continue `prompt`, everything else the default.
    pub fn new(prompt: Prompt) -> Request {
        Request {
            prompt,
            sampling: Sampling::default(),
            max_tokens: None,
            stop: Vec::new(),
            stop_tokens: Vec::new(),
            ignore_eos: false,
            min_tokens: 0,
            t_max_predict_ms: None,
            grammar: None,
            tools: None,
            tool_choice: None,
            parallel_tool_calls: None,
            logprobs: None,
            content_specials: false,
            chat_template_kwargs: None,
            reasoning_effort: None,
            reasoning_format: ReasoningFormat::Auto,
            speculative: None,
            lora: None,
        }
    }

    /// The template's variables: `chat_template_kwargs`, and
    /// `reasoning_effort` when given.
    pub fn template_kwargs(&self) -> Option<TemplateKwargs> {
        let mut k = self.chat_template_kwargs.clone();
        if let Some(e) = &self.reasoning_effort {
            k.get_or_insert_with(Default::default).entry("reasoning_effort").or_insert(e.as_str().into());
        }
        k
    }

    /// The JSON form (the field names above): an [`Error::InvalidField`]
    /// names the field that is wrong (`sampling.top_p`, `prompt`, …).
    pub fn from_json(bytes: &[u8]) -> Result<Request> {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        let r: Request = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." { "(request)".to_string() } else { path };
            Error::InvalidField { field, what: e.into_inner().to_string() }
        })?;
        de.end().map_err(|e| Error::InvalidField { field: "(request)".into(), what: e.to_string() })?;
        Ok(r)
    }

    /// The tools asked for, parsed (None: none, or `tool_choice: "none"`).
    pub fn tool_request(&self) -> Result<Option<ToolRequest>> {
        let Some(tools) = &self.tools else {
            return match &self.tool_choice {
                Some(c) if !c.is_null() => Err(field("tool_choice", "tool_choice needs tools")),
                _ => Ok(None),
            };
        };
        let parallel = self.parallel_tool_calls.map(Value::Bool);
        let r = ToolRequest::parse(tools, self.tool_choice.as_ref(), parallel.as_ref())?;
        Ok(Some(r).filter(|r| r.choice != ToolChoice::None))
    }

    /// Every field in range for a model of `n_vocab` tokens whose defaults
    /// are `defaults`: the sampler (`SamplerConfig::validate`), token ids,
    /// stops, logprobs, tools and the grammar beside a forced call.
    pub fn validate(&self, n_vocab: usize, defaults: &GenerationDefaults) -> Result<()> {
        self.check(n_vocab, defaults).map(drop)
    }

    /// [`Request::validate`], returning the tools asked for, parsed (None:
    /// none, or `tool_choice: "none"`).
    pub fn check(&self, n_vocab: usize, defaults: &GenerationDefaults) -> Result<Option<ToolRequest>> {
        self.sampling.over(&defaults.sampling).validate()?;
        let in_vocab = |k: &str, id: u32| match (id as usize) < n_vocab {
            true => Ok(()),
            false => Err(field(k, alloc::format!("token id {id} is outside the vocabulary of {n_vocab}"))),
        };
        match &self.prompt {
            Prompt::Ids(ids) => ids.iter().try_for_each(|&id| in_vocab("prompt", id))?,
            Prompt::Messages(m) if m.is_empty() => return Err(field("messages", "messages must be a non-empty list")),
            _ => {}
        }
        self.stop_tokens.iter().try_for_each(|&id| in_vocab("stop_tokens", id))?;
        self.sampling.logit_bias.iter().try_for_each(|&(id, _)| in_vocab("logit_bias", id))?;
        if self.stop.len() > MAX_STOPS {
            return Err(field("stop", alloc::format!("{} stop strings (at most {MAX_STOPS})", self.stop.len())));
        }
        if let Some(k) = &self.chat_template_kwargs {
            crate::chat::check_kwargs(k)?;
        }
        if let Some(e) = self.reasoning_effort.as_deref().filter(|e| !REASONING_EFFORTS.contains(e)) {
            let what = alloc::format!("{e:?} is not one of {}", REASONING_EFFORTS.join(", "));
            return Err(field("reasoning_effort", what));
        }
        if let Some(n) = self.logprobs.filter(|&n| n > MAX_TOP_LOGPROBS) {
            return Err(field("logprobs", alloc::format!("{n} top logprobs (at most {MAX_TOP_LOGPROBS})")));
        }
        if let Some(s) = &self.speculative {
            s.over(SpecConfig::default())?;
        }
        if let Some(l) = &self.lora {
            if l.len() > crate::model::MAX_ADAPTERS {
                let what = alloc::format!("{} adapters (at most {})", l.len(), crate::model::MAX_ADAPTERS);
                return Err(field("lora", what));
            }
            if let Some(d) = l.iter().enumerate().find(|(i, x)| l[..*i].iter().any(|y| y.id == x.id)) {
                return Err(field("lora", alloc::format!("adapter id {} is listed twice", d.1.id)));
            }
        }
        let tools = self.tool_request()?;
        if tools.as_ref().is_some_and(|t| t.forced().is_some()) && self.grammar.is_some() {
            return Err(field("tool_choice", "a forced tool call and a grammar exclude each other"));
        }
        Ok(tools)
    }
}

fn field(k: &str, what: impl Into<String>) -> Error {
    Error::InvalidField { field: k.into(), what: what.into() }
}

/// A request made ready: its prompt's ids, its generation settings, its
/// compiled grammar and its tools.
pub struct Prepared {
    /// The prompt's token ids.
    pub prompt: Vec<u32>,
    /// Length, sampler, stops, logprobs.
    pub cfg: GenerateConfig,
    /// The grammar (a forced tool call's, else the request's), compiled.
    pub constraint: Option<Box<dyn Constraint>>,
    /// The tools the model may call (its calls are to be parsed out).
    pub tools: Option<ToolRequest>,
    /// Where a chat reply's thinking block is (None: the template has
    /// none, the prompt is not chat, or `reasoning_format` is `none`).
    pub reasoning: Option<Reasoning>,
    /// How to speculate, if asked to.
    pub spec: Option<SpecConfig>,
}

impl Prepared {
    /// The generation, timed by `clock` (speculating with n-gram drafts
    /// if asked to).
    pub fn generation(self, clock: Clock) -> Generation {
        self.generation_drafted(clock, None)
    }

    /// The generation, timed by `clock`, speculating with `drafter` (None:
    /// n-gram lookup) if the request asked to.
    pub fn generation_drafted(self, clock: Clock, drafter: Option<Box<dyn Drafter>>) -> Generation {
        let mut g = Generation::new(&self.prompt, self.cfg).with_clock(clock);
        if let Some(c) = self.constraint {
            g = g.with_constraint(c);
        }
        if let Some(spec) = self.spec {
            g = g.with_speculation(Speculation::new(spec, drafter.unwrap_or_else(|| Box::new(Ngram))));
        }
        g
    }
}

impl<B: AsRef<[u8]>> Bundle<B> {
    /// The one path from a request to a generation: validate it, render
    /// and tokenize its prompt, check it fits a context of `n_ctx`
    /// positions (None: the caller sizes the session to fit; then
    /// `max_tokens` must be given), compile its grammar with this model's
    /// cached compiler, and set the sampler over the model's defaults.
    /// A prompt with `max_tokens` new tokens fits when
    /// `prompt + max_tokens − 1 ≤ n_ctx` (the last token is never fed back);
    /// `max_tokens` None is all the context has room for.
    pub fn prepare(&self, req: &Request, n_ctx: Option<usize>) -> Result<Prepared> {
        let tools = req.check(self.model.config.n_vocab, &self.defaults)?;
        let (mut reasoning, mut think) = (None, None);
        let prompt = match &req.prompt {
            Prompt::Ids(ids) => ids.clone(),
            Prompt::Text(t) => self.tokenizer().map_err(|e| field("prompt", e.to_string()))?.encode(t, true)?,
            Prompt::Infill(i) => {
                let tok = self.tokenizer().map_err(|e| field("prompt", e.to_string()))?;
                i.ids(tok).map_err(|e| match e {
                    e @ Error::InvalidField { .. } => e,
                    e => field("suffix", e.to_string()),
                })?
            }
            Prompt::Messages(msgs) => {
                let tok = self.tokenizer().map_err(|e| field("messages", e.to_string()))?;
                let t = self.template().map_err(|e| field("messages", e.to_string()))?;
                let defs = tools.as_ref().map(|t| &t.defs);
                let kwargs = req.template_kwargs();
                let turn = Turn {
                    add_generation_prompt: true,
                    content_specials: req.content_specials,
                    tools: defs,
                    kwargs: kwargs.as_ref(),
                };
                let k = if defs.is_some() { "tools" } else { "messages" };
                let (ids, rendered) = t.encode_turn(tok, msgs, &turn).map_err(|e| match e {
                    e @ Error::InvalidField { .. } => e,
                    e => field(k, e.to_string()),
                })?;
                reasoning = self.reasoning(req.reasoning_format, &rendered);
                think = self.thinking(Some(&rendered));
                ids
            }
        };
        let mut p = self.finish(req, prompt, tools, n_ctx, think)?;
        p.reasoning = reasoning;
        Ok(p)
    }

    /// Where a reply to a prompt rendered as `rendered` thinks, for a
    /// request asking `format`.
    pub fn reasoning(&self, format: ReasoningFormat, rendered: &str) -> Option<Reasoning> {
        crate::reasoning::of_template(self.template().ok()?, format, rendered)
    }

    /// [`Bundle::prepare`] for a prompt the caller rendered itself (a
    /// conversation's next turn, `crate::conversation`): `req`'s prompt
    /// is not used (give empty ids).
    pub fn prepare_ids(&self, req: &Request, prompt: Vec<u32>, n_ctx: Option<usize>) -> Result<Prepared> {
        let tools = req.check(self.model.config.n_vocab, &self.defaults)?;
        if let Some(&id) = prompt.iter().find(|&&id| id as usize >= self.model.config.n_vocab) {
            return Err(Error::TokenOutOfRange { id, n_vocab: self.model.config.n_vocab });
        }
        let think = self.thinking(None);
        self.finish(req, prompt, tools, n_ctx, think)
    }

    /// The template's thinking block, for a lazy tool grammar to leave
    /// alone; open at the reply's start if the prompt `rendered` opens it.
    fn thinking(&self, rendered: Option<&str>) -> Option<crate::grammar::Thinking> {
        let t = self.template().ok()?;
        let m = crate::reasoning::markers_in(|m| t.source_has(m))?;
        let inside = rendered.is_some_and(|r| r.trim_end().ends_with(m.open));
        Some(crate::grammar::Thinking { open: m.open.into(), close: m.close.into(), inside })
    }

    fn finish(
        &self,
        req: &Request,
        prompt: Vec<u32>,
        tools: Option<ToolRequest>,
        n_ctx: Option<usize>,
        think: Option<crate::grammar::Thinking>,
    ) -> Result<Prepared> {
        if prompt.is_empty() {
            let k = if matches!(req.prompt, Prompt::Messages(_)) { "messages" } else { "prompt" };
            return Err(field(k, "the prompt is empty"));
        }
        let max_tokens = match (req.max_tokens, n_ctx) {
            (Some(m), Some(n)) => {
                let needed = prompt.len().saturating_add(m.max(1) - 1);
                if needed > n {
                    return Err(Error::ContextFull { n_ctx: n, needed });
                }
                m
            }
            (None, Some(n)) if prompt.len() > n => return Err(Error::ContextFull { n_ctx: n, needed: prompt.len() }),
            (None, Some(n)) => n + 1 - prompt.len(),
            (Some(m), None) => m,
            (None, None) => return Err(field("max_tokens", "max_tokens is needed without a context size")),
        };
        // the tools' format is the template's; a forced call's grammar
        // holds the reply from its start, with `auto` from a call's opening
        let tools =
            tools.map(|t| ToolRequest { format: self.template().map_or(ToolFormat::Json, |t| t.tool_format()), ..t });
        let constraint = match (&tools, &req.grammar) {
            (_, Some(g)) => Some(self.grammar()?.compile(g)?),
            (Some(t), None) => {
                let g = t.grammar(self.tokenizer().ok())?;
                Some(match t.triggers() {
                    None => self.grammar()?.compile(&g)?,
                    Some(triggers) => self.grammar()?.compile_lazy(&g, triggers, think)?,
                })
            }
            (None, None) => None,
        };
        let mut sampler = req.sampling.over(&self.defaults.sampling);
        if req.ignore_eos {
            sampler.logit_bias.extend(self.eog().into_iter().map(|t| (t, f32::NEG_INFINITY)));
        }
        if sampler.dry_multiplier != 0.0 {
            // DRY's breakers as this vocabulary spells them
            let tok = self.tokenizer().map_err(|e| field("dry_sequence_breakers", e.to_string()))?;
            let breakers: Vec<&[u8]> = sampler.dry_sequence_breakers.iter().map(|b| b.as_bytes()).collect();
            let text = |id: u32| tok.token_bytes(id).to_vec();
            let tokenize = |s: &[u8]| tok.encode(&String::from_utf8_lossy(s), false).unwrap_or_default();
            sampler.dry_breakers = crate::sampler::breaker_tokens(&breakers, tok.n_vocab(), &text, &tokenize);
        }
        let mut end_ids = Vec::new();
        if req.min_tokens > 0 {
            end_ids.extend(self.eog());
            end_ids.extend_from_slice(&req.stop_tokens);
        }
        let cfg = GenerateConfig {
            max_tokens,
            sampler,
            stop: req.stop.clone(),
            stop_tokens: req.stop_tokens.clone(),
            ignore_eos: req.ignore_eos,
            logprobs: req.logprobs,
            min_tokens: req.min_tokens,
            end_ids,
            max_predict_ms: req.t_max_predict_ms.filter(|&ms| ms > 0),
            adapters: self.adapter_set(req.lora.as_deref())?,
        };
        let spec = match &req.speculative {
            Some(s) => s.over(SpecConfig::default())?,
            None => None,
        };
        Ok(Prepared { prompt, cfg, constraint, tools, reasoning: None, spec })
    }

    /// The adapters a request runs with: those it lists, by id, at its
    /// scales; else the bundle's at their own.
    pub fn adapter_set(&self, lora: Option<&[LoraScale]>) -> Result<AdapterSet> {
        let n = self.adapters.len();
        let Some(list) = lora else {
            return self.adapters.iter().try_fold(AdapterSet::new(), |s, a| s.with(a.adapter.clone(), a.scale));
        };
        list.iter().try_fold(AdapterSet::new(), |set, l| {
            let Some(a) = self.adapters.get(l.id) else {
                let loaded = if n == 0 { "none is loaded".into() } else { alloc::format!("ids 0..{n} are loaded") };
                return Err(field("lora", alloc::format!("no adapter with id {} ({loaded})", l.id)));
            };
            set.with(a.adapter.clone(), l.scale).map_err(|e| field("lora", e.to_string()))
        })
    }
}
