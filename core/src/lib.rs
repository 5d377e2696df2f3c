//! tern-llm-core: everything an inference needs that is not I/O or a specific
//! CPU, `no_std` (with `alloc`; the `std` feature adds tokenizers, chat
//! templates and HF directories).
//!
//! Three labelled doors:
//!
//! - the user API, at the root: a model and its state — [`Model`]
//!   (immutable weights and configuration, from a GGUF file or an HF
//!   directory, or a whole [`Bundle`] with tokenizer and template) and
//!   [`Session`] (KV cache, tokens, RNG), run by an [`Engine`]; one
//!   generation [`Request`] whatever the front end, turned into a
//!   generation by [`Bundle::prepare`]; [`Generator`] and its [`Event`]s;
//!   text ([`Tokenizer`], [`ChatTemplate`], [`Conversation`]); sampling
//!   ([`SamplerConfig`]); constrained output ([`Grammar`]); tools;
//!   embeddings ([`Embedder`]); [`perplexity`];
//! - [`runtime`], for servers and bindings that schedule work themselves
//!   (one sequence's sampling as the host runs the forward passes, prefix
//!   caches, file readers, encoder batches);
//! - [`backend`], for kernel authors (the `Kernels` trait, the scalar
//!   reference, the conformance suite, the block layouts, the thread-pool
//!   trait).
#![no_std]
#![warn(missing_docs)]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod backend;
#[cfg(feature = "std")]
mod bundle;
#[cfg(feature = "std")]
mod chat;
#[cfg(feature = "std")]
mod conversation;
#[cfg(feature = "std")]
mod encoder;
mod error;
mod generate;
mod gguf;
#[cfg(feature = "std")]
mod grammar;
mod hash;
#[cfg(feature = "std")]
mod hf;
#[cfg(feature = "std")]
mod infill;
mod lora;
mod model;
mod parallel;
mod perplexity;
#[cfg(feature = "std")]
mod reasoning;
#[cfg(feature = "std")]
mod request;
pub mod runtime;
mod sampler;
mod speculative;
mod tensors;
#[cfg(feature = "std")]
mod tokenizer;
#[cfg(feature = "std")]
mod tools;
mod utf8;

// The user API: a model, its session and engine; the request and what a
// generation gives; text in and out; sampling; constrained output; tools;
// embeddings; perplexity.
pub use backend::quant::GgmlType;
#[cfg(feature = "std")]
pub use bundle::{Bundle, Source};
#[cfg(feature = "std")]
pub use chat::{ChatTemplate, Message, TemplateKwargs, Turn};
#[cfg(feature = "std")]
pub use conversation::{Conversation, Overflow};
#[cfg(feature = "std")]
pub use encoder::{Embedder, Encoder, Pooling, PoolingMode};
pub use error::{Error, Result};
pub use generate::{
    generate_batch, generate_batch_constrained, BatchItem, CancelFlag, Clock, Constraint, Event, FinishReason,
    GenerateConfig, GenerationResult, Generator, Timings, TokenLogprob, Usage, Vocab, MAX_TOP_LOGPROBS,
};
#[cfg(feature = "std")]
pub use grammar::{Grammar, MAX_GRAMMAR_BYTES, MAX_GRAMMAR_DEPTH};
#[cfg(feature = "std")]
pub use hf::{CheckpointInfo, GenerationDefaults};
#[cfg(feature = "std")]
pub use infill::{ExtraFile, FimTokens, Infill, MAX_EXTRA_FILES};
pub use lora::MAX_RANK;
pub use model::{
    Act, Adapter, AdapterSet, Applied, Arch, Config, Engine, Experts, Ffn, Footprint, Gemma3n, Gemma3nLayer,
    Gemma3nWeights, KvType, Logits, LongRope, Mlp, Model, Moe, Proj, Requantized, RopeStyle, Session, SharedExpert,
    Widened, Window, MAX_ADAPTERS, MAX_CTX, MAX_SCALE,
};
pub use perplexity::{perplexity, Perplexity};
#[cfg(feature = "std")]
pub use reasoning::{Parts, Reasoning, ReasoningFormat, ReasoningSplit, ThinkMarkers, THINK_MARKERS};
#[cfg(feature = "std")]
pub use request::{LoraScale, Prepared, Prompt, Request, MAX_STOPS};
pub use sampler::{SamplerConfig, Sampling, Stage};
pub use speculative::{DraftModel, Drafter, Evidence, Ngram, SpecConfig, Speculation, Speculative, MAX_DRAFT};
#[cfg(feature = "std")]
pub use tokenizer::Tokenizer;
#[cfg(feature = "std")]
pub use tools::{Tool, ToolCall, ToolChoice, ToolFormat, ToolRequest};

/// The README's examples, run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
