//! Gemma 3 (text): Gemma's block with Q/K norms; every sixth layer
//! global, the others windowed with their own RoPE.

#[cfg(feature = "std")]
use crate::model::parts::RopeSpec;
#[cfg(feature = "std")]
use alloc::string::String;

use super::{every_nth_global, gemma, Attention, Block, Dims, Family, SpmFlavor};
#[cfg(feature = "std")]
use crate::error::Error;
use crate::error::Result;
use crate::gguf::keys::GgufKeys;
#[cfg(feature = "std")]
use crate::hf::{
    fields::{bad, Fields, FILE},
    rope::rope_params,
    window::layer_types,
};
use crate::model::parts::{inv_freq, RopeStyle, Window};
#[cfg(feature = "std")]
use serde_json::{Map, Value};

pub(crate) static FAMILY: Family = Family {
    title: "Gemma 3",
    gguf_name: "gemma3",
    hf_names: &["Gemma3ForCausalLM", "gemma3_text", "Gemma3ForConditionalGeneration", "gemma3"],
    hf_defaults: Some(HF_DEFAULTS),
    block: Block { qk_norm: true, ..gemma::BLOCK },
    gguf_rope: RopeStyle::Neox,
    hf_tensors: gemma::HF_TENSORS,
    router: None,
    chat_template: Some(gemma::CHAT_TEMPLATE),
    spm: SpmFlavor::Gemma,
    gguf,
    #[cfg(feature = "std")]
    hf,
};

/// `Gemma3TextConfig`'s defaults.
const HF_DEFAULTS: &str = r#"{"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
    "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 131072, "rms_norm_eps": 1e-6,
    "tie_word_embeddings": true, "query_pre_attn_scalar": 256, "sliding_window": 4096,
    "sliding_window_pattern": 6, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "eos_token_id": 1}"#;

/// llama.cpp's (`LLAMA_SWA_TYPE_STANDARD`, period 6): every sixth layer
/// global, the others windowed with RoPE base 10 000 and no scaling.
fn gguf(k: &GgufKeys, d: &Dims) -> Result<Attention> {
    Ok(Attention {
        window: Some(Window {
            size: k.usize("attention.sliding_window")?,
            layers: every_nth_global(d.n_layer, 6),
            rope_inv_freq: Some(inv_freq(10000.0, d.n_rot)),
        }),
        scale: gemma::gguf_scale(d, 62),
        softcap: None,
        final_softcap: None,
    })
}

/// The windowed layers, their RoPE and the global layers', the score
/// scale; no softcaps.
#[cfg(feature = "std")]
fn hf(f: &Fields, d: &Dims) -> Result<(RopeSpec, Attention)> {
    for k in ["attn_logit_softcapping", "final_logit_softcapping"] {
        if f.get(k).is_some_and(|v| !v.is_null()) {
            return Err(Error::Unsupported { what: alloc::format!("{FILE}: {k} in a Gemma 3 config") });
        }
    }
    gemma::causal(f)?;
    let (global, window) = rope_window(f, d)?;
    Ok((
        global,
        Attention { window: Some(window), scale: gemma::pre_attn_scale(f)?, softcap: None, final_softcap: None },
    ))
}

/// The windowed layers (`layer_types`, else every
/// `sliding_window_pattern`-th layer global) and their RoPE, and the global
/// layers' RoPE (which alone takes `rope_scaling`): Gemma 3's and 3n's.
#[cfg(feature = "std")]
pub(super) fn rope_window(f: &Fields, d: &Dims) -> Result<(RopeSpec, Window)> {
    let layers = match layer_types(f, d.n_layer)? {
        Some(l) => l,
        None => every_nth_global(d.n_layer, f.usize("sliding_window_pattern")?),
    };
    let no_params = Map::new();
    let (global, local) = match f.get("rope_parameters") {
        Some(Value::Object(p)) if p.contains_key("full_attention") => {
            let part = |k: &str| match p.get(k) {
                Some(Value::Object(m)) => Ok(m),
                None => Ok(&no_params),
                Some(v) => Err(bad("rope_parameters", alloc::format!("{k}: {v} is not an object"))),
            };
            (part("full_attention")?, part("sliding_attention")?)
        }
        Some(Value::Object(p)) => (p, &no_params),
        Some(v) => return Err(bad("rope_parameters", alloc::format!("{v} is not an object"))),
        None => match f.get("rope_scaling") {
            Some(Value::Object(p)) => (p, &no_params),
            Some(v) => return Err(bad("rope_scaling", alloc::format!("{v} is not an object"))),
            None => (&no_params, &no_params),
        },
    };
    // a part's own rope_theta, else the older top-level key
    let theta = |p: &Map<String, Value>, key: &str| -> Result<f32> {
        let t = Fields(p).opt_f64("rope_theta")?.or(f.opt_f64(key)?);
        Ok(t.ok_or_else(|| bad(key, "missing"))? as f32)
    };
    let (n_rot, n_ctx) = (d.head_dim, d.n_ctx_train);
    let global = rope_params(&Fields(global), "rope_parameters", theta(global, "rope_theta")?, n_rot, n_ctx)?;
    let local = rope_params(&Fields(local), "rope_parameters", theta(local, "rope_local_base_freq")?, n_rot, n_ctx)?;
    if local.pos_scale != 1.0 || local.attn_factor != 1.0 {
        return Err(Error::Unsupported {
            what: alloc::format!("{FILE}: position scaling of the sliding layers' RoPE"),
        });
    }
    Ok((global, Window { size: f.usize("sliding_window")?, layers, rope_inv_freq: Some(local.inv_freq) }))
}
