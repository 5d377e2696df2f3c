//! What Gemma 2 and Gemma 3 share: the block (GELU-tanh, norms after
//! attention and the MLP, scaled embeddings, norm weights stored as
//! w − 1), the tensor names, the turn template, and the score scale.

use super::{head_dim_scale, Block, Dims};
#[cfg(feature = "std")]
use crate::error::{Error, Result};
#[cfg(feature = "std")]
use crate::hf::fields::{Fields, FILE};
use crate::model::parts::Act;

/// Gemma's block.
pub(crate) const BLOCK: Block =
    Block { act: Act::GeluTanh, post_norms: true, embd_scale: true, norm_plus_one: true, ..Block::LLAMA };

/// transformers' names of Gemma's norms.
pub(crate) const HF_TENSORS: &[(&str, &str)] = &[("ffn_norm.weight", "pre_feedforward_layernorm.weight")];

/// Gemma's chat format, for a Gemma file that carries no template (the
/// 270M base model's), as Google's own: `<start_of_turn>user\n…<end_of_turn>\n`,
/// the assistant's role named `model`, a system message folded into the
/// first user turn.
pub(crate) const CHAT_TEMPLATE: &str = include_str!("gemma.jinja");

/// The score scale llama.cpp gives a Gemma GGUF, which does not say it:
/// the 27B (`big_layers` layers) scales by (n_embd/n_head)^-½, the others
/// by head_dim^-½.
pub(crate) fn gguf_scale(d: &Dims, big_layers: usize) -> f32 {
    match d.n_layer == big_layers {
        true => head_dim_scale(d.n_embd / d.n_head),
        false => head_dim_scale(d.head_dim),
    }
}

/// Refuse a Gemma made bidirectional (an encoder, as EmbeddingGemma).
#[cfg(feature = "std")]
pub(crate) fn causal(f: &Fields) -> Result<()> {
    if f.opt_bool("use_bidirectional_attention")? == Some(true) {
        return Err(Error::Unsupported { what: alloc::format!("{FILE}: use_bidirectional_attention true") });
    }
    Ok(())
}

/// `query_pre_attn_scalar`^−½.
#[cfg(feature = "std")]
pub(crate) fn pre_attn_scale(f: &Fields) -> Result<f32> {
    Ok((1.0 / (f.usize("query_pre_attn_scalar")? as f64).sqrt()) as f32)
}
