//! A loaded model in wasm memory with its tokenizer and one live session.
//! Generation is stepped: `begin` sets it up, each `step` returns the next
//! event as JSON, `cancel` ends it. A new generation reuses whatever prefix
//! of its prompt the session's cache already holds (a chat's earlier turns).

use serde_json::json;
use std::sync::Arc;

use tern_core::Adapter;
use tern_core::Widened;
use tern_core::{runtime::calls_json, ToolFormat};
use tern_core::{runtime::messages_from_json, ChatTemplate, Message};
use tern_core::{runtime::Generation, runtime::Parts, Event, GenerationResult, TokenLogprob, Vocab};
use tern_core::{Bundle, Source};
use tern_core::{Engine, KvType, Session};
use tern_core::{Prompt, Reasoning, ReasoningSplit, Turn};
use wasm_bindgen::prelude::*;

use crate::errors::{from_core, js_error};
use crate::{kernels, options, WASM32_MEMORY_LIMIT};

#[wasm_bindgen]
extern "C" {
    /// Milliseconds from the host's monotonic clock (window, worker, Node).
    #[wasm_bindgen(js_namespace = performance, js_name = now)]
    fn performance_now() -> f64;
}

fn clock() -> u64 {
    (performance_now() * 1e6) as u64
}

/// Context size when the caller gives none: the trained one, at most this.
const DEFAULT_CTX: usize = 4096;
/// Prompt tokens per forward pass during prefill.
const N_BATCH: usize = 512;
/// Largest model (bytes, after the copies) whose Q5_0 matrices are widened:
/// half of wasm32 memory, the rest left for the cache and scratch.
const WIDEN_LIMIT: usize = (WASM32_MEMORY_LIMIT / 2) as usize;

/// A model in wasm memory, its tokenizer, and one live session that generations step through.
#[wasm_bindgen]
pub struct TernModel {
    /// The model, tokenizer (a model without one is refused), chat
    /// template, generation defaults and grammar compiler.
    b: Bundle<Vec<u8>>,
    session: Option<Session>,
    exact: bool,
    gen: Option<Generation>,
    /// Bytes of the file(s), and what widening added: Q5_0 matrices
    /// rewritten, and bytes of widened scales.
    file_bytes: usize,
    widened: Option<(Widened, usize)>,
    /// The format of the tool calls the running generation's reply may
    /// hold; generations begun so far (numbering their calls' ids).
    tools: Option<ToolFormat>,
    n_begun: u64,
    /// The last chat prompt encoded and where a reply to it thinks (a
    /// generation begun on those ids splits its thinking block apart).
    last_chat: Option<(Vec<u32>, Reasoning)>,
    /// The running generation's thinking-block splitter, and its block.
    split: Option<(ReasoningSplit, Reasoning)>,
}

impl TernModel {
    /// Keep `a` (read for this model: `ModelLoader::into_adapter`) beside
    /// it at default scale `scale`; its id.
    pub(crate) fn add_adapter(
        &mut self,
        a: impl FnOnce(&tern_core::Model<Vec<u8>>) -> tern_core::Result<Adapter>,
        scale: f32,
    ) -> Result<usize, JsValue> {
        let a = a(&self.b.model).map_err(from_core)?;
        self.b.add_adapter(Arc::new(a), scale).map_err(from_core)
    }

    fn chat_input(&self, messages_json: &str) -> Result<(&ChatTemplate, Vec<Message>), JsValue> {
        let t = self.b.template().map_err(|e| js_error("unsupported", &e.to_string()))?;
        let v: serde_json::Value =
            serde_json::from_str(messages_json).map_err(|e| js_error("invalid_argument", &format!("messages: {e}")))?;
        Ok((t, messages_from_json(&v).map_err(from_core)?))
    }

    pub(crate) fn from_bytes(bytes: Vec<u8>, widen: bool) -> Result<TernModel, JsValue> {
        Self::new(Bundle::gguf(bytes).map_err(from_core)?, widen)
    }

    /// An HF directory given as (file name, bytes).
    pub(crate) fn from_files(mut files: Vec<(String, Vec<u8>)>, widen: bool) -> Result<TernModel, JsValue> {
        let present: Vec<String> = files.iter().map(|f| f.0.clone()).collect();
        let mut take = |name: &str| -> tern_core::Result<Option<Vec<u8>>> {
            Ok(files.iter().position(|f| f.0 == name).map(|i| files.swap_remove(i).1))
        };
        Self::new(Bundle::hf_dir(&mut take, &present).map_err(from_core)?, widen)
    }

    /// `widen`: weights rewritten at load for SIMD128, at a cost in memory,
    /// with the same numbers (so the same logits, bit for bit) — Q5_0
    /// matrices as Q8_0 (34 bytes a block instead of 22, gone through ~1.8×
    /// faster than five-bit quants are unpacked), then the f16 scales of
    /// every 32-element block format widened to f32 beside the blocks (no
    /// per-block conversion) — unless the model would pass `WIDEN_LIMIT`
    /// or the memory cannot be had.
    fn new(b: Bundle<Vec<u8>>, widen: bool) -> Result<TernModel, JsValue> {
        let missing = match b.source {
            Source::Hf(_) => "the model directory has no tokenizer.json",
            Source::Gguf { .. } => "the GGUF file has no tokenizer (tokenizer.ggml.* keys)",
        };
        if b.tokenizer.is_none() {
            return Err(js_error("unsupported", missing));
        }
        let file_bytes = b.model.n_bytes();
        let (b, widened) = if widen {
            let (b, w) = b
                .map_model(|m| {
                    let (m, q5) = m.widen_q5_0(WIDEN_LIMIT, |v| v)?;
                    let (m, scale_bytes) = m.widen_scales(WIDEN_LIMIT);
                    Ok((m, (q5, scale_bytes)))
                })
                .map_err(from_core)?;
            (b, Some(w))
        } else {
            (b, None)
        };
        Ok(TernModel {
            b,
            session: None,
            exact: false,
            gen: None,
            file_bytes,
            widened,
            tools: None,
            n_begun: 0,
            last_chat: None,
            split: None,
        })
    }

    fn engine(&self) -> Engine<'static> {
        Engine { kernels: kernels::backend(), par: crate::pool(), exact: self.exact }
    }
}

#[wasm_bindgen]
impl TernModel {
    /// Make the session: `n_ctx` positions (0: the trained context, at most
    /// 4096), `exact`: the f32 path with an f32 cache (oracle parity).
    /// Fails, naming the sizes, if the cache would not fit in wasm32 memory.
    pub fn configure(&mut self, n_ctx: usize, exact: bool) -> Result<(), JsValue> {
        let c = &self.b.model.config;
        let n_ctx = if n_ctx == 0 { c.n_ctx_train.clamp(1, DEFAULT_CTX) } else { n_ctx };
        // f16 values kept widened: SIMD128 has no f16 conversion, and
        // widening every cached row at every step cost more than half of
        // attention (bench/NOTES.md, W24); the same logits as f16
        let kv = if exact { KvType::F32 } else { KvType::F16Wide };
        let kv_bytes = (n_ctx as u64) * (c.n_layer as u64) * 2 * kv.bytes(c.kv_dim()) as u64;
        let have = self.b.model.n_bytes() as u64;
        if have + kv_bytes > WASM32_MEMORY_LIMIT {
            return Err(js_error(
                "too_large",
                &format!(
                    "a {n_ctx}-token KV cache needs {} MiB beside the {} MiB model; wasm32 memory is at most {} MiB",
                    kv_bytes >> 20,
                    have >> 20,
                    WASM32_MEMORY_LIMIT >> 20
                ),
            ));
        }
        self.gen = None;
        self.session = None;
        self.session = Some(self.b.model.session_kv(n_ctx, N_BATCH, kv));
        self.exact = exact;
        Ok(())
    }

    /// What the model is, as JSON.
    pub fn info(&self) -> String {
        let c = &self.b.model.config;
        let w = &self.b.model.weights;
        let tok = self.b.tokenizer.as_ref();
        json!({
            "name": c.name,
            "arch": c.arch.name(),
            "nVocab": c.n_vocab,
            "nEmbd": c.n_embd,
            "nLayer": c.n_layer,
            "nHead": c.n_head,
            "nHeadKv": c.n_head_kv,
            "headDim": c.head_dim,
            "nFf": c.n_ff,
            "nCtxTrain": c.n_ctx_train,
            "nCtx": self.session.as_ref().map(Session::n_ctx),
            "tiedOutput": w.tied_output,
            "fileBytes": self.file_bytes,
            "widened": self.widened.map(|(q5, scales)| json!({
                "q5_0Matrices": q5.matrices,
                "q5_0Bytes": q5.bytes,
                "scaleBytes": scales,
            })),
            "bos": tok.map(|t| t.bos),
            "eos": tok.map(|t| t.eos),
            "eog": tok.map(|t| &t.eog),
            "addBos": tok.map(|t| t.add_bos),
            "chatTemplate": tok.map(|t| &t.chat_template),
            "backend": kernels::backend().name(),
            "exact": self.exact,
        })
        .to_string()
    }

    /// Token ids of `text` (with BOS if the model adds one and `add_special`).
    pub fn encode(&self, text: &str, add_special: bool) -> Result<Vec<u32>, JsValue> {
        self.b.tokenizer().map_err(from_core)?.encode(text, add_special).map_err(from_core)
    }

    /// Text of `ids` (invalid UTF-8 replaced).
    pub fn decode(&self, ids: &[u32]) -> Result<String, JsValue> {
        let tok = self.b.tokenizer().map_err(from_core)?;
        if let Some(&id) = ids.iter().find(|&&i| i as usize >= tok.n_vocab()) {
            return Err(from_core(tern_core::Error::TokenOutOfRange { id, n_vocab: tok.n_vocab() }));
        }
        Ok(tok.decode(ids))
    }

    /// The chat template applied to a JSON array of `{role, content}`,
    /// with the tools of `options_json` (`tools`, `toolChoice`).
    pub fn render_chat(
        &self,
        messages_json: &str,
        add_generation_prompt: bool,
        options_json: &str,
    ) -> Result<String, JsValue> {
        let (t, msgs) = self.chat_input(messages_json)?;
        let tools = options::tools(options_json)?;
        let (kwargs, _) = options::chat(options_json)?;
        t.render_with(&msgs, add_generation_prompt, tools.as_ref().map(|t| &t.defs), kwargs.as_ref()).map_err(from_core)
    }

    /// Token ids of the rendered conversation; control-token strings in
    /// the messages are text unless `content_specials`. The tools of
    /// `options_json` (`tools`, `toolChoice`) are rendered by the template.
    pub fn encode_chat(
        &mut self,
        messages_json: &str,
        add_generation_prompt: bool,
        content_specials: bool,
        options_json: &str,
    ) -> Result<Vec<u32>, JsValue> {
        let (t, msgs) = self.chat_input(messages_json)?;
        let tools = options::tools(options_json)?;
        let (kwargs, format) = options::chat(options_json)?;
        let tok = self.b.tokenizer().map_err(from_core)?;
        let turn = Turn {
            add_generation_prompt,
            content_specials,
            tools: tools.as_ref().map(|t| &t.defs),
            kwargs: kwargs.as_ref(),
        };
        let (ids, rendered) = t.encode_turn(tok, &msgs, &turn).map_err(from_core)?;
        self.last_chat = self.b.reasoning(format, &rendered).map(|r| (ids.clone(), r));
        Ok(ids)
    }

    /// The prompt ids that fill the gap between `prefix` and `suffix` with
    /// the model's FIM tokens.
    pub fn encode_infill(&self, prefix: &str, suffix: &str) -> Result<Vec<u32>, JsValue> {
        let tok = self.b.tokenizer().map_err(from_core)?;
        let infill = tern_core::Infill { prefix: prefix.into(), suffix: suffix.into(), ..Default::default() };
        infill.ids(tok).map_err(from_core)
    }

    /// Start generating after `prompt` (the whole sequence: the cached
    /// prefix of it is reused) with the options (JSON, see `options`).
    pub fn begin(&mut self, prompt: Vec<u32>, options_json: &str) -> Result<(), JsValue> {
        if self.session.is_none() {
            self.configure(0, false)?;
        }
        let n_vocab = self.b.model.config.n_vocab;
        if let Some(&id) = prompt.iter().find(|&&i| i as usize >= n_vocab) {
            return Err(from_core(tern_core::Error::TokenOutOfRange { id, n_vocab }));
        }
        let options::Options { req } = options::parse(options_json, Prompt::Ids(prompt), n_vocab)?;
        let n_ctx = self.session.as_ref().map_or(0, Session::n_ctx);
        let prepared = self.b.prepare(&req, Some(n_ctx)).map_err(options::prepare_error)?;
        // a chat prompt just encoded: its reply's thinking block apart
        self.split = match self.last_chat.take() {
            Some((ids, r)) if ids == prepared.prompt => Some((r.splitter(), r)),
            _ => None,
        };
        self.tools = prepared.tools.as_ref().map(|t| t.format);
        self.gen = Some(prepared.generation(clock));
        self.n_begun += 1;
        Ok(())
    }

    /// The next event as JSON (`{"type":"token",...}` or `{"type":"done",...}`);
    /// `undefined` when the generation has ended or none was begun.
    pub fn step(&mut self) -> Result<Option<String>, JsValue> {
        let engine = self.engine();
        let (Some(gen), Some(session)) = (self.gen.as_mut(), self.session.as_mut()) else { return Ok(None) };
        let vocab = self.b.vocab();
        let parts = Parts { model: &self.b.model, engine: &engine, vocab: &vocab, session };
        match gen.next(parts) {
            None => {
                self.gen = None;
                Ok(None)
            }
            Some(Err(e)) => {
                self.gen = None;
                Err(from_core(e))
            }
            Some(Ok(ev)) => Ok(Some(self.event_json(&ev))),
        }
    }

    /// End the current generation with `cancelled`: its final event, or
    /// `undefined` if none is running.
    pub fn cancel(&mut self) -> Option<String> {
        let ev = self.gen.as_mut()?.cancel();
        self.gen = None;
        ev.as_ref().map(|e| self.event_json(e))
    }

    /// Forget the cached tokens (the next generation prefills everything).
    pub fn reset(&mut self) {
        self.gen = None;
        if let Some(s) = self.session.as_mut() {
            s.truncate(0);
        }
    }
}

impl TernModel {
    fn event_json(&mut self, ev: &Event) -> String {
        match ev {
            Event::Token { id, text, logprob } => {
                let mut e = json!({ "type": "token", "id": id, "text": text });
                if let Some(lp) = logprob {
                    e["logprob"] = logprob_json(lp, &self.b.vocab());
                }
                // a thinking block's settled text apart from the answer's
                if let Some((s, _)) = self.split.as_mut() {
                    let p = s.push(text);
                    (e["reasoning"], e["content"]) = (p.reasoning.into(), p.content.into());
                }
                e.to_string()
            }
            Event::Done(r) => {
                let mut e = done_json(r, &self.b.vocab());
                let mut content = r.text.clone();
                if let Some((_, reasoning)) = self.split.take() {
                    let p = reasoning.split(&r.text);
                    (e["reasoning"], content) = (p.reasoning.into(), p.content);
                    e["content"] = content.clone().into();
                }
                // with tools: the text outside the calls, and the calls
                if let Some(format) = self.tools {
                    let (content, calls) = format.parse(&content);
                    if !calls.is_empty() {
                        e["finishReason"] = "tool_calls".into();
                    }
                    e["content"] = content.into();
                    e["toolCalls"] = calls_json(&calls, &self.n_begun.to_string());
                }
                e.to_string()
            }
        }
    }
}

/// `{id, text, logprob, top: [{id, text, logprob}]}`.
fn logprob_json(lp: &TokenLogprob, tok: &dyn Vocab) -> serde_json::Value {
    let entry =
        |id: u32, p: f32| json!({ "id": id, "text": String::from_utf8_lossy(tok.token_bytes(id)), "logprob": p });
    let mut e = entry(lp.id, lp.logprob);
    e["top"] = lp.top.iter().map(|&(id, p)| entry(id, p)).collect();
    e
}

fn done_json(r: &GenerationResult, tok: &dyn Vocab) -> serde_json::Value {
    let t = &r.timings;
    json!({
        "type": "done",
        "logprobs": r.logprobs.iter().map(|lp| logprob_json(lp, tok)).collect::<Vec<_>>(),
        "tokens": r.tokens,
        "text": r.text,
        "finishReason": r.finish_reason.as_str(),
        "usage": {
            "promptTokens": r.usage.prompt_tokens,
            "cachedTokens": r.usage.cached_tokens,
            "completionTokens": r.usage.completion_tokens,
            "draftTokens": r.usage.draft_tokens,
            "acceptedDraftTokens": r.usage.accepted_draft_tokens,
        },
        "timings": {
            "prefillMs": t.prefill_ms,
            "firstTokenMs": t.first_token_ms,
            "perTokenP50Ms": t.per_token_p50_ms,
            "perTokenP90Ms": t.per_token_p90_ms,
            "perTokenP99Ms": t.per_token_p99_ms,
            "totalMs": t.total_ms,
            "promptTokensPerS": t.prompt_tokens_per_s,
            "tokensPerS": t.tokens_per_s,
        },
    })
}
