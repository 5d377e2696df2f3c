//! Gemma 3n (text): Gemma 3's attention (Q/K norms, every fifth layer
//! global, the others windowed with their own RoPE) scored at scale 1 with
//! V normalised too, its norms stored as they scale (w, not w − 1), and
//! the block of `crate::model::gemma3n`: AltUp's streams, LAuReL,
//! per-layer inputs, K/V shared by the last layers, per-layer widths and
//! the Gaussian top-k of the first layers; logits softcapped at 30. A
//! multimodal checkpoint's vision and audio towers are not loaded.

use alloc::string::ToString;
use alloc::vec::Vec;

use super::{every_nth_global, gemma, Attention, Block, Dims, Family, SpmFlavor};
use crate::error::{Error, Result};
use crate::gguf::keys::GgufKeys;
#[cfg(feature = "std")]
use crate::hf::fields::{bad, Fields, FILE};
#[cfg(feature = "std")]
use crate::model::gemma3n::std_multiplier;
use crate::model::gemma3n::{kv_sources, Gemma3n};
#[cfg(feature = "std")]
use crate::model::parts::RopeSpec;
use crate::model::parts::{inv_freq, RopeStyle, Window};
#[cfg(feature = "std")]
use serde_json::Value;

pub(crate) static FAMILY: Family = Family {
    title: "Gemma 3n",
    gguf_name: "gemma3n",
    hf_names: &["Gemma3nForCausalLM", "gemma3n_text", "Gemma3nForConditionalGeneration", "gemma3n"],
    hf_defaults: Some(HF_DEFAULTS),
    block: Block { qk_norm: true, norm_plus_one: false, altup: true, ..gemma::BLOCK },
    gguf_rope: RopeStyle::Neox,
    hf_tensors: HF_TENSORS,
    router: None,
    chat_template: Some(gemma::CHAT_TEMPLATE),
    spm: SpmFlavor::Gemma,
    gguf,
    #[cfg(feature = "std")]
    hf,
};

/// transformers' names of Gemma 3n's tensors (a layer's after
/// `layers.N.`; the model's own, `*` an AltUp stream).
const HF_TENSORS: &[(&str, &str)] = &[
    ("ffn_norm.weight", "pre_feedforward_layernorm.weight"),
    ("altup_router.weight", "altup.modality_router.weight"),
    ("altup_router_norm.weight", "altup.router_norm.weight"),
    ("altup_predict_coef.weight", "altup.prediction_coefs.weight"),
    ("altup_correct_coef.weight", "altup.correction_coefs.weight"),
    ("altup_correct_scale.weight", "altup.correct_output_scale"),
    ("laurel_l.weight", "laurel.linear_left.weight"),
    ("laurel_r.weight", "laurel.linear_right.weight"),
    ("laurel_post_norm.weight", "laurel.post_laurel_norm.weight"),
    ("inp_gate.weight", "per_layer_input_gate.weight"),
    ("proj.weight", "per_layer_projection.weight"),
    ("post_norm.weight", "post_per_layer_input_norm.weight"),
    ("per_layer_token_embd.weight", "embed_tokens_per_layer.weight"),
    ("per_layer_model_proj.weight", "per_layer_model_projection.weight"),
    ("per_layer_proj_norm.weight", "per_layer_projection_norm.weight"),
    ("altup_proj.*.weight", "altup_projections.*.weight"),
    ("altup_unembd_proj.*.weight", "altup_unembed_projections.*.weight"),
];

/// `Gemma3nTextConfig`'s defaults (E4B's shape).
const HF_DEFAULTS: &str = r#"{"vocab_size": 262400, "vocab_size_per_layer_input": 262144, "hidden_size": 2048,
    "intermediate_size": 16384, "num_hidden_layers": 35, "num_attention_heads": 8, "num_key_value_heads": 2,
    "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-6, "tie_word_embeddings": true, "sliding_window": 512, "sliding_window_pattern": 5,
    "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "final_logit_softcapping": 30.0,
    "hidden_size_per_layer_input": 256, "altup_active_idx": 0, "altup_correct_scale": true,
    "altup_num_inputs": 4, "num_kv_shared_layers": 15, "laurel_rank": 64, "eos_token_id": 1}"#;

/// llama.cpp's: `attention.sliding_window_pattern` (else every fifth layer
/// global), the windowed layers' RoPE base 10 000 (unless
/// `rope.freq_base_swa` says), scale 1, logits softcapped at 30 unless
/// the file says.
fn gguf(k: &GgufKeys, d: &Dims) -> Result<Attention> {
    let key = k.key("attention.sliding_window_pattern");
    let layers = match k.g.get_array(&key)? {
        Some(a) if a.len() == d.n_layer => {
            let flags: Option<Vec<bool>> = a.iter().map(|v| v.as_bool()).collect();
            flags.ok_or(Error::KeyType { key, expected: "an array of bools" })?
        }
        Some(a) => {
            let why = alloc::format!("{} flags for {} layers", a.len(), d.n_layer);
            return Err(Error::Hyperparameter { key, value: a.len().to_string(), why });
        }
        None => every_nth_global(d.n_layer, 5),
    };
    let base = k.f32("rope.freq_base_swa")?.unwrap_or(10000.0);
    Ok(Attention {
        window: Some(Window {
            size: k.usize("attention.sliding_window")?,
            layers,
            rope_inv_freq: Some(inv_freq(base, d.n_rot)),
        }),
        scale: 1.0,
        softcap: None,
        final_softcap: Some(k.f32("final_logit_softcapping")?.unwrap_or(30.0)),
    })
}

/// Gemma 3's windows and RoPE, scale 1, the final softcap (null: none).
#[cfg(feature = "std")]
fn hf(f: &Fields, d: &Dims) -> Result<(RopeSpec, Attention)> {
    if f.get("attn_logit_softcapping").is_some() {
        return Err(Error::Unsupported { what: alloc::format!("{FILE}: attn_logit_softcapping in a Gemma 3n config") });
    }
    let (global, window) = super::gemma3::rope_window(f, d)?;
    let final_softcap = f.opt_f64("final_logit_softcapping")?.map(|c| c as f32);
    Ok((global, Attention { window: Some(window), scale: 1.0, softcap: None, final_softcap }))
}

/// The block's configuration from GGUF keys (`altup.*`,
/// `embedding_length_per_layer_input`, `attention.shared_kv_layers` — an
/// integer or, as llama.cpp's converter writes it, a float —,
/// `activation_sparsity_scale`, `feed_forward_length` one or per layer)
/// and tensor shapes (LAuReL's rank, the per-layer vocabulary).
pub(crate) fn from_gguf(k: &GgufKeys, n_layer: usize, windowed: &[bool]) -> Result<Gemma3n> {
    let ff_key = k.key("feed_forward_length");
    let n_ff = match k.g.get_array(&ff_key)? {
        Some(a) => a.iter().map(|v| v.as_u64().map(|x| x as usize)).collect::<Option<Vec<usize>>>(),
        None => Some(alloc::vec![k.usize("feed_forward_length")?; n_layer]),
    };
    let n_ff = n_ff.ok_or(Error::KeyType { key: ff_key, expected: "sizes" })?;
    let shared_key = k.key("attention.shared_kv_layers");
    let shared = match k.g.get(&shared_key) {
        None => 0,
        Some(v) => match (v.as_u64(), v.as_f32()) {
            (Some(n), _) => n as usize,
            (None, Some(x)) if (0.0..1024.0).contains(&x) && x == (x as usize) as f32 => x as usize,
            _ => return Err(Error::KeyType { key: shared_key, expected: "a whole number of layers" }),
        },
    };
    // the multipliers themselves; a dense layer's is −inf (Φ⁻¹(0)) or absent
    let sparse_key = k.key("activation_sparsity_scale");
    let sparsity = match k.g.get_array(&sparse_key)? {
        Some(a) => a
            .iter()
            .map(|v| match v.as_f32() {
                Some(x) if x == f32::NEG_INFINITY => Some(None),
                Some(x) if x.is_finite() => Some(Some(x)),
                _ => None,
            })
            .collect(),
        None => Some(alloc::vec![None; n_layer]),
    };
    let expected = "an array of finite floats (−inf for a dense layer)";
    let sparsity = sparsity.ok_or(Error::KeyType { key: sparse_key, expected })?;
    let dims = |name: &str, i: usize| -> Result<usize> {
        let t = k.g.tensor(name).ok_or_else(|| Error::MissingTensor { name: name.into() })?;
        Ok(t.dims.get(i).copied().unwrap_or(0).min(1 << 31) as usize)
    };
    Ok(Gemma3n {
        n_altup: k.usize("altup.num_inputs")?,
        active: k.g.get_u64(&k.key("altup.active_idx"))?.unwrap_or(0).min(1 << 31) as usize,
        correct_scale: true,
        n_embd_per_layer: k.usize("embedding_length_per_layer_input")?,
        n_vocab_per_layer: dims("per_layer_token_embd.weight", 1)?,
        laurel_rank: dims("blk.0.laurel_l.weight", 1)?,
        n_ff,
        sparsity,
        kv_source: kv_sources(false, shared, windowed)?,
    })
}

/// The block's configuration from config.json: `intermediate_size` one or
/// per layer, `activation_sparsity_pattern` (else the first 10 layers of a
/// deeper model at 0.95), `num_kv_shared_layers`, AltUp's and LAuReL's
/// sizes.
#[cfg(feature = "std")]
pub(crate) fn from_hf(f: &Fields, n_layer: usize, windowed: &[bool]) -> Result<Gemma3n> {
    let n_ff = match f.get("intermediate_size") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_u64().filter(|&n| n > 0 && n < 1 << 31).map(|n| n as usize))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| bad("intermediate_size", "is not a list of positive sizes"))?,
        _ => alloc::vec![f.usize("intermediate_size")?; n_layer],
    };
    let sparsity = match f.get("activation_sparsity_pattern") {
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| match v.as_f64() {
                Some(0.0) => Ok(None),
                Some(p) => std_multiplier(p)
                    .map(Some)
                    .ok_or_else(|| bad("activation_sparsity_pattern", alloc::format!("{p} is not in [0, 1)"))),
                None => Err(bad("activation_sparsity_pattern", alloc::format!("{v} is not a number"))),
            })
            .collect::<Result<Vec<_>>>()?,
        Some(v) => return Err(bad("activation_sparsity_pattern", alloc::format!("{v} is not a list"))),
        None => {
            let sparse = if n_layer > 10 { 10 } else { 0 };
            (0..n_layer).map(|l| (l < sparse).then(|| std_multiplier(0.95)).flatten()).collect()
        }
    };
    let shared = match f.get("num_kv_shared_layers") {
        Some(v) if v.as_u64() == Some(0) => 0,
        _ => f.opt_usize("num_kv_shared_layers")?.unwrap_or(0),
    };
    let active = match f.get("altup_active_idx") {
        Some(v) if v.as_u64() == Some(0) => 0,
        _ => f.opt_usize("altup_active_idx")?.unwrap_or(0),
    };
    Ok(Gemma3n {
        n_altup: f.usize("altup_num_inputs")?,
        active,
        correct_scale: f.opt_bool("altup_correct_scale")?.unwrap_or(true),
        n_embd_per_layer: f.usize("hidden_size_per_layer_input")?,
        n_vocab_per_layer: f.usize("vocab_size_per_layer_input")?,
        laurel_rank: f.usize("laurel_rank")?,
        n_ff,
        sparsity,
        kv_source: kv_sources(true, shared, windowed)?,
    })
}
