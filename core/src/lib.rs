//! tern-core: everything an inference needs that is not I/O or a specific
//! CPU: GGUF parsing, quant blocks, the kernel trait with its scalar
//! reference, the model forward, KV cache, sampler and tokenizer.
#![no_std]
#![forbid(unsafe_code)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

#[cfg(feature = "std")]
pub mod bundle;
#[cfg(feature = "std")]
pub mod chat;
#[cfg(feature = "std")]
pub mod conversation;
pub mod error;
pub mod generate;
pub mod gguf;
#[cfg(feature = "std")]
pub mod hf;
pub mod backend;
pub mod model;
pub mod parallel;
pub mod perplexity;
pub mod quant;
pub mod sampler;
pub mod tensors;
#[cfg(feature = "std")]
pub mod tokenizer;
pub mod utf8;

pub use error::{Error, Result};
pub use model::{Engine, KvType, Logits, Model, Session};
