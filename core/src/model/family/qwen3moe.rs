//! Qwen3-MoE (Qwen3-30B-A3B, Qwen3-235B-A22B): Qwen3's block with a
//! mixture of experts in place of the MLP.

use super::{Block, Family, SpmFlavor};
use crate::model::moe::Router;
use crate::model::parts::RopeStyle;

pub(crate) static FAMILY: Family = Family {
    title: "Qwen3-MoE",
    gguf_name: "qwen3moe",
    hf_names: &["Qwen3MoeForCausalLM", "qwen3_moe"],
    hf_defaults: None,
    block: Block { qk_norm: true, ..Block::LLAMA },
    gguf_rope: RopeStyle::Neox,
    hf_tensors: &[],
    // llama.cpp always renormalises qwen3moe (the released configs say
    // `norm_topk_prob: true`; transformers' default is false)
    router: Some(Router {
        gguf_norm: true,
        hf_norm: Some(("norm_topk_prob", false)),
        shared_expert: false,
        dense_too: false,
    }),
    chat_template: None,
    spm: SpmFlavor::Llama,
    gguf: super::qwen2::gguf,
    #[cfg(feature = "std")]
    hf: super::llama::hf,
};
