//! Phi-3: Llama's block with Q/K/V stored as one matrix and gate/up as
//! another; partial rotary dims; LongRoPE for the long-context models.

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
    title: "Phi-3",
    gguf_name: "phi3",
    hf_names: &["Phi3ForCausalLM", "phi3"],
    hf_defaults: None,
    block: Block { fused: true, ..Block::LLAMA },
    gguf_rope: RopeStyle::Neox,
    hf_tensors: &[("attn_qkv.weight", "self_attn.qkv_proj.weight"), ("ffn_up.weight", "mlp.gate_up_proj.weight")],
    router: None,
    chat_template: None,
    spm: SpmFlavor::Phi3,
    // a sliding window, when the file has one, over every layer
    gguf: super::llama::gguf,
    #[cfg(feature = "std")]
    hf,
};

/// Every layer windowed when `sliding_window` is set; `su` and `yarn`
/// RoPE types are LongRoPE (as `Phi3Config` reads them).
#[cfg(feature = "std")]
fn hf(f: &Fields, d: &Dims) -> Result<(RopeSpec, Attention)> {
    super::llama::hf_attention(f, d, true, None, true)
}
