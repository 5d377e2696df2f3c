//! Qwen2-MoE (Qwen1.5-MoE, Qwen2-57B-A14B): Qwen2's block with a mixture
//! of experts and a shared expert every token runs, gated by a sigmoid.

use super::{Block, Family, SpmFlavor};
use crate::model::moe::Router;
use crate::model::parts::RopeStyle;

pub(crate) static FAMILY: Family = Family {
    title: "Qwen2-MoE",
    gguf_name: "qwen2moe",
    hf_names: &["Qwen2MoeForCausalLM", "qwen2_moe"],
    hf_defaults: None,
    block: Block { qkv_bias: true, ..Block::LLAMA },
    gguf_rope: RopeStyle::Neox,
    hf_tensors: &[],
    // transformers' `norm_topk_prob` defaults to false; llama.cpp never
    // renormalises qwen2moe
    router: Some(Router {
        gguf_norm: false,
        hf_norm: Some(("norm_topk_prob", false)),
        shared_expert: true,
        dense_too: false,
    }),
    chat_template: None,
    spm: SpmFlavor::Llama,
    gguf: super::qwen2::gguf,
    #[cfg(feature = "std")]
    hf: super::llama::hf,
};
