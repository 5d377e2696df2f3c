//! Mistral: Llama's block with every layer windowed. llama.cpp converts
//! it as `llama` (whose GGUF reading it shares); transformers' config
//! defaults the window to 4096.

use super::{Block, Family, SpmFlavor};
#[cfg(feature = "std")]
use crate::model::parts::RopeSpec;
use crate::model::parts::RopeStyle;
#[cfg(feature = "std")]
use {
    super::{Attention, Dims},
    crate::error::Result,
    crate::hf::fields::Fields,
};

pub(crate) static FAMILY: Family = Family {
    title: "Mistral",
    gguf_name: "llama",
    hf_names: &["MistralForCausalLM", "mistral"],
    hf_defaults: None,
    block: Block::LLAMA,
    gguf_rope: RopeStyle::Adjacent,
    hf_tensors: &[],
    router: None,
    chat_template: None,
    spm: SpmFlavor::Llama,
    gguf: super::llama::gguf,
    #[cfg(feature = "std")]
    hf,
};

/// Every layer windowed: `sliding_window`, 4096 when the key is absent
/// (`MistralConfig`'s default), none when it is null.
#[cfg(feature = "std")]
fn hf(f: &Fields, d: &Dims) -> Result<(RopeSpec, Attention)> {
    super::llama::hf_attention(f, d, true, Some(4096), false)
}
