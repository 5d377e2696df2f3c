//! Gemma 2: Gemma's block, every other layer windowed, attention scores
//! and logits softcapped.

use super::{every_nth_global, gemma, Attention, Dims, Family, SpmFlavor};
use crate::error::Result;
use crate::gguf::keys::GgufKeys;
#[cfg(feature = "std")]
use crate::hf::{fields::Fields, rope::rope, window::layer_types};
#[cfg(feature = "std")]
use crate::model::parts::RopeSpec;
use crate::model::parts::{RopeStyle, Window};

pub(crate) static FAMILY: Family = Family {
    title: "Gemma 2",
    gguf_name: "gemma2",
    hf_names: &["Gemma2ForCausalLM", "gemma2"],
    hf_defaults: Some(HF_DEFAULTS),
    block: gemma::BLOCK,
    gguf_rope: RopeStyle::Neox,
    hf_tensors: gemma::HF_TENSORS,
    router: None,
    chat_template: Some(gemma::CHAT_TEMPLATE),
    spm: SpmFlavor::Gemma,
    gguf,
    #[cfg(feature = "std")]
    hf,
};

/// `Gemma2Config`'s defaults.
const HF_DEFAULTS: &str = r#"{"vocab_size": 256000, "hidden_size": 2304, "intermediate_size": 9216,
    "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 8192, "rms_norm_eps": 1e-6,
    "tie_word_embeddings": true, "rope_theta": 10000.0, "query_pre_attn_scalar": 256, "sliding_window": 4096,
    "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0, "eos_token_id": 1}"#;

/// llama.cpp's: every other layer windowed, softcaps 50 (scores) and 30
/// (logits) unless the file says.
fn gguf(k: &GgufKeys, d: &Dims) -> Result<Attention> {
    let softcap = |key: &str, default: f32| -> Result<Option<f32>> { Ok(Some(k.f32(key)?.unwrap_or(default))) };
    Ok(Attention {
        window: Some(Window {
            size: k.usize("attention.sliding_window")?,
            layers: every_nth_global(d.n_layer, 2),
            rope_inv_freq: None,
        }),
        scale: gemma::gguf_scale(d, 46),
        softcap: softcap("attn_logit_softcapping", 50.0)?,
        final_softcap: softcap("final_logit_softcapping", 30.0)?,
    })
}

/// Every other layer windowed (or as `layer_types` says), one RoPE, the
/// score scale, the softcaps (null: none).
#[cfg(feature = "std")]
fn hf(f: &Fields, d: &Dims) -> Result<(RopeSpec, Attention)> {
    gemma::causal(f)?;
    let layers = layer_types(f, d.n_layer)?.unwrap_or_else(|| every_nth_global(d.n_layer, 2));
    let softcap = |k: &str| -> Result<Option<f32>> { Ok(f.opt_f64(k)?.map(|c| c as f32)) };
    let attention = Attention {
        window: Some(Window { size: f.usize("sliding_window")?, layers, rope_inv_freq: None }),
        scale: gemma::pre_attn_scale(f)?,
        softcap: softcap("attn_logit_softcapping")?,
        final_softcap: softcap("final_logit_softcapping")?,
    };
    // Gemma rotates whole heads
    Ok((rope(f, false, d.head_dim, d.n_ctx_train)?, attention))
}
