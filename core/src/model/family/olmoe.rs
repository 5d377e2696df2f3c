//! OLMoE: Llama's block with Q and K each normalised across all heads
//! at once, and a mixture of experts in place of the MLP.

use super::{Block, Family, SpmFlavor};
use crate::model::moe::Router;
use crate::model::parts::RopeStyle;

pub(crate) static FAMILY: Family = Family {
    title: "OLMoE",
    gguf_name: "olmoe",
    hf_names: &["OlmoeForCausalLM", "olmoe"],
    hf_defaults: None,
    block: Block { qk_norm: true, qk_norm_whole: true, ..Block::LLAMA },
    gguf_rope: RopeStyle::Neox,
    hf_tensors: &[],
    // neither llama.cpp nor transformers' default renormalises
    router: Some(Router {
        gguf_norm: false,
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
