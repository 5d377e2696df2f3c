//! Qwen3: Llama's block with Q and K normalised per head.

use super::{Block, Family, SpmFlavor};
use crate::model::parts::RopeStyle;

pub(crate) static FAMILY: Family = Family {
    title: "Qwen3",
    gguf_name: "qwen3",
    hf_names: &["Qwen3ForCausalLM", "qwen3"],
    hf_defaults: None,
    block: Block { qk_norm: true, ..Block::LLAMA },
    gguf_rope: RopeStyle::Neox,
    hf_tensors: &[],
    router: None,
    chat_template: None,
    spm: SpmFlavor::Llama,
    gguf: super::qwen2::gguf,
    #[cfg(feature = "std")]
    hf: super::llama::hf,
};
