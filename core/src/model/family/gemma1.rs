//! Gemma (the first: Gemma 2B/7B, CodeGemma): Llama's attention and
//! norm names with Gemma's feed-forward (GELU-tanh), scaled embeddings
//! and norm weights stored as w − 1; no norms after attention or the MLP,
//! no window, no softcaps.

use super::{gemma, Attention, Block, Dims, Family, SpmFlavor};
use crate::error::Result;
use crate::gguf::keys::GgufKeys;
#[cfg(feature = "std")]
use crate::hf::{fields::Fields, rope::rope};
#[cfg(feature = "std")]
use crate::model::parts::RopeSpec;
use crate::model::parts::{Act, RopeStyle};

pub(crate) static FAMILY: Family = Family {
    title: "Gemma",
    gguf_name: "gemma",
    hf_names: &["GemmaForCausalLM", "gemma"],
    hf_defaults: Some(HF_DEFAULTS),
    block: Block { act: Act::GeluTanh, embd_scale: true, norm_plus_one: true, ..Block::LLAMA },
    gguf_rope: RopeStyle::Neox,
    // one norm before attention, one before the MLP: Llama's names
    hf_tensors: &[],
    router: None,
    chat_template: Some(gemma::CHAT_TEMPLATE),
    spm: SpmFlavor::Gemma,
    gguf,
    #[cfg(feature = "std")]
    hf,
};

/// `GemmaConfig`'s defaults (a hub config that says `hidden_act: gelu`
/// beside `hidden_activation: gelu_pytorch_tanh` runs the latter, as
/// Google's and llama.cpp's Gemma do).
const HF_DEFAULTS: &str = r#"{"vocab_size": 256000, "hidden_size": 3072, "intermediate_size": 24576,
    "num_hidden_layers": 28, "num_attention_heads": 16, "num_key_value_heads": 16, "head_dim": 256,
    "hidden_act": "gelu_pytorch_tanh", "max_position_embeddings": 8192, "rms_norm_eps": 1e-6,
    "tie_word_embeddings": true, "rope_theta": 10000.0, "attention_bias": false, "eos_token_id": 1}"#;

/// llama.cpp's: every layer global, scores scaled by head_dim^-½.
fn gguf(_: &GgufKeys, d: &Dims) -> Result<Attention> {
    Ok(Attention::plain(d))
}

/// Causal, RoPE over whole heads, head_dim^-½.
#[cfg(feature = "std")]
fn hf(f: &Fields, d: &Dims) -> Result<(RopeSpec, Attention)> {
    gemma::causal(f)?;
    Ok((rope(f, false, d.head_dim, d.n_ctx_train)?, Attention::plain(d)))
}
