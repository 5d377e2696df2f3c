//! Mixtral: Llama's block with a mixture of experts in place of the MLP
//! (softmax over the experts, the top k renormalised). llama.cpp converts
//! it as `llama` with `expert_count`, whose GGUF reading it shares.

use super::{Block, Family, SpmFlavor};
use crate::model::moe::Router;
use crate::model::parts::RopeStyle;

pub(crate) static FAMILY: Family = Family {
    title: "Mixtral",
    gguf_name: "llama",
    hf_names: &["MixtralForCausalLM", "mixtral"],
    hf_defaults: None,
    block: Block::LLAMA,
    gguf_rope: RopeStyle::Adjacent,
    // transformers' `MixtralTopKRouter`: always renormalised
    hf_tensors: &[
        ("ffn_gate_inp.weight", "block_sparse_moe.gate.weight"),
        ("ffn_gate.*", "block_sparse_moe.experts.*.w1.weight"),
        ("ffn_up.*", "block_sparse_moe.experts.*.w3.weight"),
        ("ffn_down.*", "block_sparse_moe.experts.*.w2.weight"),
    ],
    router: Some(Router { gguf_norm: true, hf_norm: None, shared_expert: false, dense_too: false }),
    chat_template: None,
    spm: SpmFlavor::Llama,
    gguf: super::llama::gguf,
    #[cfg(feature = "std")]
    hf: super::llama::hf,
};
