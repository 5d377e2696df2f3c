//! Qwen2 / Qwen2.5: Llama's block with Q/K/V biases.

use super::{Attention, Block, Dims, Family, SpmFlavor};
use crate::error::Result;
use crate::gguf::keys::GgufKeys;
use crate::model::parts::RopeStyle;

pub(crate) static FAMILY: Family = Family {
    title: "Qwen2",
    gguf_name: "qwen2",
    hf_names: &["Qwen2ForCausalLM", "qwen2"],
    hf_defaults: None,
    block: Block { qkv_bias: true, ..Block::LLAMA },
    gguf_rope: RopeStyle::Neox,
    hf_tensors: &[],
    router: None,
    chat_template: None,
    spm: SpmFlavor::Llama,
    gguf,
    #[cfg(feature = "std")]
    hf: super::llama::hf,
};

/// No window: llama.cpp runs Qwen2 with full attention on every layer
/// (the released models do not use `use_sliding_window`).
pub(crate) fn gguf(_: &GgufKeys, d: &Dims) -> Result<Attention> {
    Ok(Attention::plain(d))
}
