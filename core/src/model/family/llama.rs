//! Llama (SmolLM2, TinyLlama, Llama 2/3 and the Llama-shaped models):
//! the block every other family is told against.

use super::{every_layer, Attention, Block, Dims, Family, SpmFlavor};
use crate::error::Result;
use crate::gguf::keys::GgufKeys;
#[cfg(feature = "std")]
use crate::hf::{fields::Fields, rope::rope, window::window};
use crate::model::moe::Router;
#[cfg(feature = "std")]
use crate::model::parts::RopeSpec;
use crate::model::parts::RopeStyle;

pub(crate) static FAMILY: Family = Family {
    title: "Llama",
    gguf_name: "llama",
    hf_names: &["LlamaForCausalLM", "llama"],
    hf_defaults: None,
    block: Block::LLAMA,
    // llama.cpp's converter permutes Llama's Q/K rows to pair (2i, 2i+1)
    gguf_rope: RopeStyle::Adjacent,
    hf_tensors: &[],
    // a llama GGUF with `expert_count` is Mixtral, converted: llama.cpp's
    // rule for `llama` renormalises the top k
    router: Some(Router { gguf_norm: true, hf_norm: None, shared_expert: false, dense_too: true }),
    chat_template: None,
    spm: SpmFlavor::Llama,
    gguf,
    #[cfg(feature = "std")]
    hf,
};

/// A GGUF llama with a sliding window (Mistral's, converted) windows
/// every layer.
pub(crate) fn gguf(k: &GgufKeys, d: &Dims) -> Result<Attention> {
    Ok(Attention { window: every_layer(k.opt_usize("attention.sliding_window")?, d.n_layer), ..Attention::plain(d) })
}

/// RoPE as the config says; a window only as `layer_types` or Qwen2's
/// `use_sliding_window` say.
#[cfg(feature = "std")]
pub(crate) fn hf(f: &Fields, d: &Dims) -> Result<(RopeSpec, Attention)> {
    hf_attention(f, d, false, None, false)
}

/// A Llama-shaped attention from config.json: the window over every layer
/// (`every_layer`; `absent` its size when the key is missing) or as the
/// config's layer lists say (`hf::window::window`), head_dim^-½, and the
/// RoPE (`su_is_longrope`: Phi-3's names for LongRoPE).
#[cfg(feature = "std")]
pub(crate) fn hf_attention(
    f: &Fields,
    d: &Dims,
    every_layer: bool,
    absent: Option<usize>,
    su_is_longrope: bool,
) -> Result<(RopeSpec, Attention)> {
    let attention = Attention { window: window(f, d.n_layer, every_layer, absent)?, ..Attention::plain(d) };
    Ok((rope(f, su_is_longrope, d.n_rot, d.n_ctx_train)?, attention))
}
