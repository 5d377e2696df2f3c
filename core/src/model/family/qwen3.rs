//! Qwen3: Llama's block with Q and K normalised per head.

use super::{Arch, Block, Family};
use crate::model::config::RopeStyle;

pub(crate) static FAMILY: Family = Family {
    arch: Arch::Qwen3,
    gguf_name: "qwen3",
    hf_names: &["Qwen3ForCausalLM", "qwen3"],
    hf_defaults: None,
    block: Block { qk_norm: true, ..Block::LLAMA },
    gguf_rope: RopeStyle::Neox,
    hf_tensors: &[],
    chat_template: None,
    gguf: super::qwen2::gguf,
    #[cfg(feature = "std")]
    hf: super::llama::hf,
};
