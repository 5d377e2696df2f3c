//! The door for servers and bindings that schedule work themselves: one
//! sequence's sampling and stops while the host runs the forward passes
//! (`Sequence`), the prefill helpers, the prefix cache, a generation
//! stepped with its parts lent (`Generation`), the format readers (GGUF,
//! safetensors shards, config.json), the encoders' batches, the
//! tool-call and chat helpers of the OpenAI shapes. A program that only
//! generates needs none of it.

#[cfg(feature = "std")]
pub use crate::bundle::BundleVocab;
#[cfg(feature = "std")]
pub use crate::chat::{messages_from_json, ROLES};
#[cfg(feature = "std")]
pub use crate::encoder::{check_count, l2_normalize, Body, Decoder, EncoderConfig, Pair, Progress, Seq};
pub use crate::generate::{
    allows, prefill_start, reusable_prefix, verify, Allowed, Generation, Parts, Sampled, Sequence, Verified,
};
#[cfg(feature = "testing")]
pub use crate::gguf::{tiny, write};
pub use crate::gguf::{Array, Gguf, TensorInfo, Value};
#[cfg(feature = "std")]
pub use crate::grammar::{GrammarCompiler, Thinking, Trigger};
#[cfg(feature = "std")]
pub use crate::hf::{load as load_hf, load_dir, HfConfig, HfModel, Index, Shards, INDEX};
pub use crate::model::{BlockCounts, LayerWeights, PrefixCache, Scratch, TensorRef, Weights};
pub use crate::perplexity::nll;
#[cfg(feature = "std")]
pub use crate::perplexity::tokenize;
pub use crate::sampler::{argmax, Rng, Sampler};
#[cfg(feature = "std")]
pub use crate::tools::{calls_json, message_tool_calls};
pub use crate::utf8::Utf8Stream;
