//! tern: native inference. Loads GGUF files and HF directories by mmap, runs them with the
//! kernels of `tern-llm-core` on a thread pool, and backs the `tern` CLI.
//!
//! The front door is [`Model`]: load, then generate, stream or chat.
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let path = std::env::var_os("TERN_MODELS").map(std::path::PathBuf::from)
//! #     .unwrap_or_else(|| std::path::PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/tern/models"))
//! #     .join("smollm2-135m-instruct-q4_1.gguf");
//! use tern::{Event, Model, Options};
//!
//! let model = Model::load(&path)?; // a GGUF file or an HF directory
//! let out = model.generate("The capital of France is", &Options::greedy().max_tokens(4))?;
//! assert_eq!(out.text, " Paris.\n\n");
//!
//! for event in model.stream("Once upon a time", &Options::default().max_tokens(8))? {
//!     match event? {
//!         Event::Token { text, .. } => print!("{text}"),
//!         Event::Done(r) => println!(" [{} tokens]", r.usage.completion_tokens),
//!     }
//! }
//!
//! let mut chat = model.chat(Some("You are terse."))?; // each turn prefills only new tokens
//! for event in chat.send("Hi")? {
//!     event?;
//! }
//! assert_eq!(chat.messages().len(), 3); // system, user, assistant
//! # Ok(())
//! # }
//! ```
//!
//! Underneath, for servers and bindings that schedule work themselves:
//! [`load()`] gives the model, tokenizer and chat template ([`Loaded`]);
//! [`runtime`]'s `Session`, `Generator` and `Engine` run it.
#![warn(missing_docs)]

mod adapter;
mod draft;
mod embed;
pub mod error;
pub mod fetch;
pub mod kernels;
pub mod limits;
pub mod load;
mod model;
#[cfg(feature = "serve")]
pub mod serve;

use std::time::Instant;

pub use adapter::load_adapter;
pub use draft::Draft;
pub use embed::Embedder;
pub use error::{Error, Result};
pub use load::{load, load_with, Buffer, LoadOptions, Loaded};
pub use model::{Chat, Model, Options, Reply, Stream};
use tern_core::Engine;
pub use tern_core::Grammar;
pub use tern_core::Message;
pub use tern_core::SamplerConfig;
pub use tern_core::Speculative;
pub use tern_core::Tokenizer;
pub use tern_core::{Adapter, AdapterSet};
pub use tern_core::{CancelFlag, Event, FinishReason, GenerationResult, Timings, TokenLogprob, Usage};
pub use tern_core::{Infill, Parts, Reasoning, ReasoningFormat, ReasoningSplit, TemplateKwargs};
pub use tern_core::{Tool, ToolCall, ToolChoice, ToolFormat};
pub use tern_threads::Threads;

/// What runs underneath [`Model`], for servers and bindings that schedule
/// work themselves (tern-llm-core's, re-exported): a [`Loaded`] bundle's
/// model opens sessions (`Model::session`), an `Engine` (from
/// [`engine()`]) runs their forward passes, a `Generator` turns one into
/// events, `Conversation` keeps a chat's turns in a session's cache, and a
/// kernel backend implements `Kernels` (checked by `conformance`).
pub mod runtime {
    pub use tern_core::backend::{conformance, Kernels};
    pub use tern_core::Conversation;
    pub use tern_core::{runtime::BundleVocab, Bundle};
    pub use tern_core::{runtime::PrefixCache, Engine, KvType, Logits, Model, Session};
    pub use tern_core::{Constraint, GenerateConfig, Generator, Vocab};
}

/// Where models are kept: `$TERN_MODELS`, else `~/.cache/tern/models`
/// (where [`fetch::Fetcher`] puts them).
pub fn models_dir() -> std::path::PathBuf {
    if let Some(d) = std::env::var_os("TERN_MODELS") {
        return d.into();
    }
    let home = std::env::var_os("HOME").map_or_else(|| std::path::PathBuf::from("."), std::path::PathBuf::from);
    home.join(".cache/tern/models")
}

/// Nanoseconds since the first call: the clock given to generators.
pub fn clock() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// A seed for when none is given: the clock's nanoseconds.
pub fn clock_seed() -> u64 {
    std::time::UNIX_EPOCH.elapsed().map_or(0, |d| d.as_nanos() as u64)
}

/// An engine over the given thread pool, on the kernels `kernels::select`
/// chooses (an error if `TERN_KERNELS` names a backend this CPU lacks).
pub fn engine(par: &Threads, exact: bool) -> Result<Engine<'_>> {
    Ok(Engine { kernels: kernels::select()?, par, exact })
}

/// The README's examples, compiled as doc-tests (its program is
/// `examples/generate.rs`, which the tests run).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
