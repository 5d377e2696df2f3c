//! tern-llm-core: everything an inference needs that is not I/O or a specific
//! CPU, `no_std` (with `alloc`; the `std` feature adds tokenizers, chat
//! templates and HF directories).
//!
//! - a model and its state: [`Model`] (immutable weights and
//!   configuration, from [`gguf`] or [`hf`], or a whole [`bundle`] with
//!   tokenizer and template) and [`Session`] (KV cache, tokens, RNG),
//!   run by an [`Engine`] (kernels, threads, exact or quantized path);
//! - text: [`tokenizer`], [`chat`] templates, [`conversation`];
//! - generation: [`sampler`], [`generate`] (events, stops, batches),
//!   [`grammar`] (constrained decoding), [`perplexity`];
//! - for backend authors: [`backend`] (the `Kernels` trait, the scalar
//!   reference and the conformance suite, `backend::quant`'s block
//!   layouts), [`parallel`];
//! - one generation request, whatever the front end: [`request`].
#![no_std]
#![warn(missing_docs)]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod backend;
#[cfg(feature = "std")]
pub mod bundle;
#[cfg(feature = "std")]
pub mod chat;
#[cfg(feature = "std")]
pub mod conversation;
#[cfg(feature = "std")]
pub mod encoder;
pub mod error;
pub mod generate;
pub mod gguf;
#[cfg(feature = "std")]
pub mod grammar;
#[cfg(feature = "std")]
pub mod hf;
pub mod model;
pub mod parallel;
pub mod perplexity;
#[cfg(feature = "std")]
pub mod request;
pub mod sampler;
pub(crate) mod tensors;
#[cfg(feature = "std")]
pub mod tokenizer;
#[cfg(feature = "std")]
pub mod tools;
pub mod utf8;

pub use backend::quant::GgmlType;
pub use error::{Error, Result};
pub use model::{BlockCounts, Engine, KvType, Logits, Model, PrefixCache, Session};

/// The README's examples, run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
