//! `config.json` (as transformers writes it) → the normalised [`Config`],
//! for `LlamaForCausalLM`, `Qwen2ForCausalLM` and `Qwen3ForCausalLM`.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::model::config::{
    check_heads, every_nth_global, gemma_embd_scale, head_dim_scale, inv_freq, inv_freq_divided, Act, Arch, Config,
    LongRope, RopeStyle, Window, Yarn,
};
use crate::model::weights::Expect;
use crate::quant::GgmlType;

const FILE: &str = "config.json";

pub(crate) fn bad(field: &str, detail: impl Into<String>) -> Error {
    Error::ModelFile { file: FILE.into(), field: field.into(), detail: detail.into() }
}

/// What config.json says beyond the dimensions.
#[derive(Debug, Clone)]
pub struct HfConfig {
    /// The model configuration.
    pub config: Config,
    /// What binding the checkpoint's tensors must find.
    pub(crate) expect: Expect,
    /// The dtype the weights were saved in (`dtype` / `torch_dtype`).
    pub dtype: Option<GgmlType>,
    /// The architecture as the file names it (`Qwen2ForCausalLM`…).
    pub architecture: String,
    /// End-of-sequence ids config.json names.
    pub eos_token_ids: Vec<u32>,
}

/// A config's fields, each read with an error naming it.
pub(crate) struct Fields<'a>(pub(crate) &'a Map<String, Value>);

impl Fields<'_> {
    pub(crate) fn get(&self, k: &str) -> Option<&Value> {
        self.0.get(k).filter(|v| !v.is_null())
    }
    pub(crate) fn opt_usize(&self, k: &str) -> Result<Option<usize>> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n > 0 && n < (1 << 31) => Ok(Some(n as usize)),
                _ => Err(bad(k, alloc::format!("{v} is not a positive integer below 2^31"))),
            },
        }
    }
    pub(crate) fn usize(&self, k: &str) -> Result<usize> {
        self.opt_usize(k)?.ok_or_else(|| bad(k, "missing"))
    }
    pub(crate) fn opt_f64(&self, k: &str) -> Result<Option<f64>> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|x| x.is_finite())
                .map(Some)
                .ok_or_else(|| bad(k, alloc::format!("{v} is not a number"))),
        }
    }
    pub(crate) fn opt_bool(&self, k: &str) -> Result<Option<bool>> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => v.as_bool().map(Some).ok_or_else(|| bad(k, alloc::format!("{v} is not true or false"))),
        }
    }
    pub(crate) fn opt_str(&self, k: &str) -> Result<Option<&str>> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => v.as_str().map(Some).ok_or_else(|| bad(k, alloc::format!("{v} is not a string"))),
        }
    }
}

/// Token ids given as one integer or a list of them.
pub(crate) fn ids(file: &str, field: &str, v: Option<&Value>) -> Result<Vec<u32>> {
    let one = |v: &Value| {
        v.as_u64().filter(|&n| n < u32::MAX as u64).map(|n| n as u32).ok_or_else(|| Error::ModelFile {
            file: file.into(),
            field: field.into(),
            detail: alloc::format!("{v} is not a token id"),
        })
    };
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a.iter().map(one).collect(),
        Some(v) => Ok(alloc::vec![one(v)?]),
    }
}

fn dtype(name: &str) -> Result<GgmlType> {
    match name {
        "float32" => Ok(GgmlType::F32),
        "float16" => Ok(GgmlType::F16),
        "bfloat16" => Ok(GgmlType::BF16),
        other => Err(bad("dtype", alloc::format!("{other:?} (tern reads float32, float16 and bfloat16)"))),
    }
}

fn arch(f: &Fields) -> Result<(Arch, String)> {
    let named = match f.get("architectures") {
        Some(Value::Array(a)) if a.len() == 1 => a[0].as_str().map(str::to_string),
        Some(v) => return Err(bad("architectures", alloc::format!("{v} is not a list of one name"))),
        None => None,
    };
    let name = match (named, f.opt_str("model_type")?) {
        (Some(n), _) => n,
        (None, Some(t)) => t.to_string(),
        (None, None) => return Err(bad("architectures", "missing, and no model_type either")),
    };
    let arch = match name.as_str() {
        "LlamaForCausalLM" | "llama" | "MistralForCausalLM" | "mistral" => Arch::Llama,
        "Qwen2ForCausalLM" | "qwen2" => Arch::Qwen2,
        "Qwen3ForCausalLM" | "qwen3" => Arch::Qwen3,
        "Gemma2ForCausalLM" | "gemma2" => Arch::Gemma2,
        "Gemma3ForCausalLM" | "gemma3_text" | "Gemma3ForConditionalGeneration" | "gemma3" => Arch::Gemma3,
        "Phi3ForCausalLM" | "phi3" => Arch::Phi3,
        _ => return Err(Error::UnsupportedArch { arch: name }),
    };
    Ok((arch, name))
}

/// `Gemma2Config`'s defaults.
const GEMMA2_DEFAULTS: &str = r#"{"vocab_size": 256000, "hidden_size": 2304, "intermediate_size": 9216,
    "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 8192, "rms_norm_eps": 1e-6,
    "tie_word_embeddings": true, "rope_theta": 10000.0, "query_pre_attn_scalar": 256, "sliding_window": 4096,
    "final_logit_softcapping": 30.0, "attn_logit_softcapping": 50.0, "eos_token_id": 1}"#;

/// `Gemma3TextConfig`'s defaults.
const GEMMA3_DEFAULTS: &str = r#"{"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
    "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
    "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 131072, "rms_norm_eps": 1e-6,
    "tie_word_embeddings": true, "query_pre_attn_scalar": 256, "sliding_window": 4096,
    "sliding_window_pattern": 6, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "eos_token_id": 1}"#;

/// Keys whose null means "none", not "the default" (Gemma 2's softcaps).
const NULL_MEANS_NONE: [&str; 2] = ["attn_logit_softcapping", "final_logit_softcapping"];

/// A Gemma's fields: its config class's defaults (hub configs leave most
/// out), under the file's own, which for `Gemma3ForConditionalGeneration`
/// are its `text_config` (the language model; the vision tower is not
/// run) and the top level's dtype and tying.
fn gemma_fields(arch: Arch, top: &Map<String, Value>) -> Result<Map<String, Value>> {
    let defaults = if arch == Arch::Gemma2 { GEMMA2_DEFAULTS } else { GEMMA3_DEFAULTS };
    let mut m: Map<String, Value> = serde_json::from_str(defaults).map_err(|e| bad("(defaults)", e.to_string()))?;
    let text = match top.get("text_config") {
        Some(Value::Object(t)) => t,
        Some(v) => return Err(bad("text_config", alloc::format!("{v} is not an object"))),
        None => top,
    };
    for k in ["dtype", "torch_dtype", "tie_word_embeddings", "eos_token_id", "_name_or_path"] {
        if let Some(v) = top.get(k).filter(|v| !v.is_null()) {
            m.insert(k.into(), v.clone());
        }
    }
    for (k, v) in text {
        if !v.is_null() || NULL_MEANS_NONE.contains(&k.as_str()) {
            m.insert(k.clone(), v.clone());
        }
    }
    Ok(m)
}

/// `layer_types`, if given: per layer, whether it is windowed.
fn layer_types(f: &Fields, n_layer: usize) -> Result<Option<Vec<bool>>> {
    match f.get("layer_types") {
        Some(Value::Array(kinds)) if kinds.len() == n_layer => kinds
            .iter()
            .map(|k| match k.as_str() {
                Some("sliding_attention") => Ok(true),
                Some("full_attention") => Ok(false),
                _ => Err(bad("layer_types", alloc::format!("{k} is not sliding_attention or full_attention"))),
            })
            .collect::<Result<Vec<bool>>>()
            .map(Some),
        Some(v) => Err(bad("layer_types", alloc::format!("{v} is not a list of {n_layer} layer types"))),
        None => Ok(None),
    }
}

/// The sliding window of a Llama-shaped config: Mistral's `sliding_window`
/// (every layer; 4096 when the file leaves it out, as `MistralConfig`),
/// Qwen2's `use_sliding_window` (layers from `max_window_layers` on), or
/// `layer_types` naming windowed layers.
fn llama_window(f: &Fields, architecture: &str, n_layer: usize) -> Result<Option<Window>> {
    // Mistral and Phi-3 window every layer (Phi-3 only when it says so)
    let mistral = matches!(architecture, "MistralForCausalLM" | "mistral");
    let every_layer = mistral || matches!(architecture, "Phi3ForCausalLM" | "phi3");
    let size = match f.get("sliding_window") {
        None if mistral && !f.0.contains_key("sliding_window") => Some(4096),
        None => None,
        Some(_) => Some(f.usize("sliding_window")?),
    };
    let Some(size) = size else { return Ok(None) };
    let layers = match layer_types(f, n_layer)? {
        Some(l) => l,
        None if every_layer => alloc::vec![true; n_layer],
        None if f.opt_bool("use_sliding_window")? == Some(true) => {
            let first = f.opt_usize("max_window_layers")?.unwrap_or(28);
            (0..n_layer).map(|i| i >= first).collect()
        }
        None => return Ok(None),
    };
    Ok(layers.contains(&true).then_some(Window { size, layers, rope_inv_freq: None }))
}

/// Gemma 2's attention: every other layer windowed (or as
/// `layer_types` says), one RoPE, the score scale, the softcaps.
fn gemma2_attention(f: &Fields, n_layer: usize, n_rot: usize, n_ctx: usize) -> Result<GemmaAttention> {
    causal(f)?;
    let layers = layer_types(f, n_layer)?.unwrap_or_else(|| every_nth_global(n_layer, 2));
    let softcap = |k: &str| -> Result<Option<f32>> { Ok(f.opt_f64(k)?.map(|c| c as f32)) };
    Ok(GemmaAttention {
        window: Window { size: f.usize("sliding_window")?, layers, rope_inv_freq: None },
        rope: rope(f, Arch::Gemma2, n_rot, n_ctx)?,
        attn_scale: pre_attn_scale(f)?,
        attn_softcap: softcap("attn_logit_softcapping")?,
        final_softcap: softcap("final_logit_softcapping")?,
    })
}

/// Gemma 3's attention: the windowed layers (`layer_types`, else every
/// `sliding_window_pattern`-th layer global), their RoPE, the global
/// layers' RoPE (which alone takes `rope_scaling`), the score scale.
fn gemma3_attention(f: &Fields, n_layer: usize, n_rot: usize, n_ctx: usize) -> Result<GemmaAttention> {
    for k in ["attn_logit_softcapping", "final_logit_softcapping"] {
        if f.get(k).is_some_and(|v| !v.is_null()) {
            return Err(Error::Unsupported { what: alloc::format!("{FILE}: {k} in a Gemma 3 config") });
        }
    }
    causal(f)?;
    let layers = match layer_types(f, n_layer)? {
        Some(l) => l,
        None => every_nth_global(n_layer, f.usize("sliding_window_pattern")?),
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
    let global = rope_params(&Fields(global), "rope_parameters", theta(global, "rope_theta")?, n_rot, n_ctx)?;
    let local = rope_params(&Fields(local), "rope_parameters", theta(local, "rope_local_base_freq")?, n_rot, n_ctx)?;
    if local.pos_scale != 1.0 || local.attn_factor != 1.0 {
        return Err(Error::Unsupported {
            what: alloc::format!("{FILE}: position scaling of the sliding layers' RoPE"),
        });
    }
    Ok(GemmaAttention {
        window: Window { size: f.usize("sliding_window")?, layers, rope_inv_freq: Some(local.inv_freq) },
        rope: global,
        attn_scale: pre_attn_scale(f)?,
        attn_softcap: None,
        final_softcap: None,
    })
}

/// Refuse a Gemma made bidirectional (an encoder, as EmbeddingGemma).
fn causal(f: &Fields) -> Result<()> {
    if f.opt_bool("use_bidirectional_attention")? == Some(true) {
        return Err(Error::Unsupported { what: alloc::format!("{FILE}: use_bidirectional_attention true") });
    }
    Ok(())
}

/// `query_pre_attn_scalar`^−½.
fn pre_attn_scale(f: &Fields) -> Result<f32> {
    Ok((1.0 / (f.usize("query_pre_attn_scalar")? as f64).sqrt()) as f32)
}

/// A Gemma's attention as its config describes it.
struct GemmaAttention {
    window: Window,
    rope: RopeSpec,
    attn_scale: f32,
    attn_softcap: Option<f32>,
    final_softcap: Option<f32>,
}

/// RoPE parameters: transformers 5's `rope_parameters`, or the older
/// `rope_theta` + `rope_scaling`. Returns (base, inv_freq, position scale).
fn rope(f: &Fields, arch: Arch, n_rot: usize, n_ctx_train: usize) -> Result<RopeSpec> {
    let params = f.get("rope_parameters").or_else(|| f.get("rope_scaling"));
    let field = if f.get("rope_parameters").is_some() { "rope_parameters" } else { "rope_scaling" };
    let mut p = match params {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(v) => return Err(bad(field, alloc::format!("{v} is not an object"))),
    };
    // older configs keep the original context at the top level
    let orig = "original_max_position_embeddings";
    if let (false, Some(v)) = (p.contains_key(orig), f.get(orig)) {
        p.insert(orig.into(), v.clone());
    }
    // Phi-3's "su" and "yarn" are LongRoPE (as transformers' Phi3Config reads them)
    let fp = Fields(&p);
    let su = matches!(fp.opt_str("rope_type")?.or(fp.opt_str("type")?), Some("su" | "yarn"));
    if arch == Arch::Phi3 && su {
        p.remove("type");
        p.insert("rope_type".into(), "longrope".into());
    }
    let base = Fields(&p).opt_f64("rope_theta")?.or(f.opt_f64("rope_theta")?).unwrap_or(10000.0) as f32;
    rope_params(&Fields(&p), field, base, n_rot, n_ctx_train)
}

/// The RoPE of `p` (one `rope_parameters` entry) at base `base`.
fn rope_params(p: &Fields, field: &str, base: f32, n_rot: usize, n_ctx_train: usize) -> Result<RopeSpec> {
    let mut freq = inv_freq(base, n_rot);
    let kind = p.opt_str("rope_type")?.or(p.opt_str("type")?).unwrap_or("default");
    let factor = || -> Result<f32> {
        match p.opt_f64("factor")? {
            Some(x) if x > 0.0 => Ok(x as f32),
            other => Err(bad(field, alloc::format!("factor {other:?} must be > 0"))),
        }
    };
    let (mut pos_scale, mut attn_factor, mut long) = (1.0, 1.0, None);
    match kind {
        "default" => {}
        "longrope" | "su" => {
            let (short, l, attn) = longrope(p, field, base, n_rot, n_ctx_train)?;
            (freq, long, attn_factor) = (short, Some(l), attn);
        }
        "linear" => pos_scale = 1.0 / factor()?,
        "yarn" => attn_factor = yarn(p, field, base, n_rot, factor()?, &mut freq)?,
        "llama3" => {
            // transformers' _compute_llama3_parameters, in f32
            let factor = factor()?;
            let low = p.opt_f64("low_freq_factor")?.unwrap_or(1.0) as f32;
            let high = p.opt_f64("high_freq_factor")?.unwrap_or(4.0) as f32;
            let old = p.opt_usize("original_max_position_embeddings")?.unwrap_or(n_ctx_train) as f32;
            if !(high > low) {
                return Err(bad(field, alloc::format!("high_freq_factor {high} must exceed low_freq_factor {low}")));
            }
            let (low_wavelen, high_wavelen) = (old / low, old / high);
            for f in freq.iter_mut() {
                let wavelen = 2.0 * core::f32::consts::PI / *f;
                let scaled = if wavelen > low_wavelen { *f / factor } else { *f };
                let smooth = (old / wavelen - low) / (high - low);
                let medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
                *f = if medium { (1.0 - smooth) * scaled / factor + smooth * scaled } else { scaled };
            }
        }
        other => return Err(Error::Unsupported { what: alloc::format!("{FILE}: {field}: rope type {other:?}") }),
    }
    Ok(RopeSpec { base, inv_freq: freq, pos_scale, attn_factor, long })
}

/// transformers' `_compute_longrope_parameters`: `inv_freq` divided by
/// `short_factor` (and by `long_factor` for a context past
/// `original_max_position_embeddings`); the attention factor
/// √(1 + ln(factor) / ln(original)), factor = max_position_embeddings /
/// original unless given. Returns (short inv_freq, long, attention factor).
fn longrope(p: &Fields, field: &str, base: f32, n_rot: usize, n_ctx: usize) -> Result<(Vec<f32>, LongRope, f32)> {
    let orig = p.usize("original_max_position_embeddings")?;
    let factors = |k: &str| -> Result<Vec<f32>> {
        let v = match p.get(k) {
            Some(Value::Array(a)) if a.len() == n_rot / 2 => a.iter().map(Value::as_f64).collect::<Option<Vec<f64>>>(),
            _ => None,
        };
        v.filter(|v| v.iter().all(|x| x.is_finite() && *x > 0.0))
            .map(|v| v.into_iter().map(|x| x as f32).collect())
            .ok_or_else(|| bad(field, alloc::format!("{k} must be {} positive numbers", n_rot / 2)))
    };
    let scaled = |ext: &[f32]| inv_freq_divided(base, n_rot, ext);
    let factor = p.opt_f64("factor")?.unwrap_or(n_ctx as f64 / orig as f64);
    let attn = match p.opt_f64("attention_factor")? {
        Some(a) => a,
        None if factor <= 1.0 => 1.0,
        None => (1.0 + factor.ln() / (orig as f64).ln()).sqrt(),
    };
    let long = LongRope { orig_ctx: orig, inv_freq: scaled(&factors("long_factor")?) };
    Ok((scaled(&factors("short_factor")?), long, attn as f32))
}

/// A RoPE as config.json describes it.
struct RopeSpec {
    base: f32,
    inv_freq: Vec<f32>,
    /// Positions are multiplied by this (`linear`).
    pos_scale: f32,
    /// cos and sin are multiplied by this (YaRN's attention factor).
    attn_factor: f32,
    /// LongRoPE's frequencies past the original context.
    long: Option<LongRope>,
}

/// transformers' YaRN parameters of a `rope_parameters` entry; the
/// frequencies blended in place (`Yarn::apply`); returns the attention
/// factor (`attention_factor`, else from `mscale`/`mscale_all_dim`, else
/// 0.1·ln(factor) + 1).
fn yarn(p: &Fields, field: &str, base: f32, n_rot: usize, factor: f32, freq: &mut [f32]) -> Result<f32> {
    let orig = p
        .usize("original_max_position_embeddings")
        .map_err(|_| bad(field, "yarn needs original_max_position_embeddings"))?;
    let mscale = |scale: f64, m: f64| if scale <= 1.0 { 1.0 } else { 0.1 * m * libm::log(scale) + 1.0 };
    let f = factor as f64;
    let attn = match (p.opt_f64("attention_factor")?, p.opt_f64("mscale")?, p.opt_f64("mscale_all_dim")?) {
        (Some(a), _, _) => a,
        (None, Some(m), Some(all)) if m != 0.0 && all != 0.0 => mscale(f, m) / mscale(f, all),
        _ => mscale(f, 1.0),
    };
    let y = Yarn {
        factor,
        orig_ctx: orig,
        beta_fast: p.opt_f64("beta_fast")?.filter(|&b| b != 0.0).unwrap_or(32.0),
        beta_slow: p.opt_f64("beta_slow")?.filter(|&b| b != 0.0).unwrap_or(1.0),
        truncate: p.opt_bool("truncate")?.unwrap_or(true),
    };
    y.apply(base, n_rot, freq);
    Ok(attn as f32)
}

impl HfConfig {
    /// Parse and check a config.json.
    pub fn parse(bytes: &[u8]) -> Result<HfConfig> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| bad("(file)", e.to_string()))?;
        let Value::Object(top) = v else { return Err(bad("(file)", "not a JSON object")) };
        let (arch, architecture) = arch(&Fields(&top))?;
        let gemma = matches!(arch, Arch::Gemma2 | Arch::Gemma3);
        let m = if gemma { gemma_fields(arch, &top)? } else { top };
        let f = Fields(&m);
        let act_key = if f.get("hidden_activation").is_some() { "hidden_activation" } else { "hidden_act" };
        let act = match f.opt_str(act_key)? {
            None => Act::Silu,
            Some(a) => Act::parse_hf(a).ok_or_else(|| Error::Unsupported {
                what: alloc::format!("{FILE}: {act_key} {a:?} (tern runs silu and gelu_pytorch_tanh)"),
            })?,
        };
        // a GGUF-derived config keeps `quant_method: gguf` over float weights
        if let Some(q) = f.get("quantization_config") {
            let method = q.get("quant_method").and_then(Value::as_str).unwrap_or("?");
            if method != "gguf" {
                return Err(Error::Unsupported {
                    what: alloc::format!(
                        "{FILE}: quantization_config quant_method {method:?} (tern reads float checkpoints)"
                    ),
                });
            }
        }
        if f.opt_bool("mlp_bias")? == Some(true) {
            return Err(Error::Unsupported { what: alloc::format!("{FILE}: mlp_bias true") });
        }
        let n_embd = f.usize("hidden_size")?;
        let n_head = f.usize("num_attention_heads")?;
        let n_head_kv = f.opt_usize("num_key_value_heads")?.unwrap_or(n_head);
        let head_dim = f.opt_usize("head_dim")?.unwrap_or(n_embd / n_head);
        // RoPE on the first partial_rotary_factor of each head (Phi-3)
        let params = f.get("rope_parameters").and_then(Value::as_object);
        let factor = match params.and_then(|p| p.get("partial_rotary_factor")).filter(|v| !v.is_null()) {
            Some(v) => Some(v.as_f64().ok_or_else(|| bad("partial_rotary_factor", alloc::format!("{v}")))?),
            None => f.opt_f64("partial_rotary_factor")?,
        };
        let n_rot = match factor {
            None => head_dim,
            Some(x) if x > 0.0 && x <= 1.0 => (head_dim as f64 * x) as usize,
            Some(x) => return Err(bad("partial_rotary_factor", alloc::format!("{x} is not in (0, 1]"))),
        };
        check_heads(n_head, n_head_kv, head_dim, n_rot).map_err(|e| bad("head_dim", e.to_string()))?;
        let n_ctx_train = f.opt_usize("max_position_embeddings")?.unwrap_or(2048);
        let n_layer = f.usize("num_hidden_layers")?;
        let (rope, window, attn_scale, (attn_softcap, final_softcap)) = match arch {
            Arch::Gemma2 | Arch::Gemma3 => {
                let g = match arch {
                    Arch::Gemma2 => gemma2_attention(&f, n_layer, head_dim, n_ctx_train)?,
                    _ => gemma3_attention(&f, n_layer, head_dim, n_ctx_train)?,
                };
                (g.rope, Some(g.window), g.attn_scale, (g.attn_softcap, g.final_softcap))
            }
            _ => {
                let window = llama_window(&f, &architecture, n_layer)?;
                (rope(&f, arch, n_rot, n_ctx_train)?, window, head_dim_scale(head_dim), (None, None))
            }
        };
        let RopeSpec { base: rope_base, inv_freq: rope_inv_freq, pos_scale: rope_pos_scale, attn_factor, long } = rope;
        let dtype = match f.opt_str("dtype")?.or(f.opt_str("torch_dtype")?) {
            Some(d) => Some(dtype(d)?),
            None => None,
        };
        let config = Config {
            arch,
            name: f.opt_str("_name_or_path")?.unwrap_or("").to_string(),
            n_vocab: f.usize("vocab_size")?,
            n_embd,
            n_layer,
            n_head,
            n_head_kv,
            head_dim,
            n_ff: f.usize("intermediate_size")?,
            n_ctx_train,
            norm_eps: f.opt_f64("rms_norm_eps")?.unwrap_or(1e-6) as f32,
            // transformers' weights are not permuted as GGUF's llama ones
            // are: every architecture rotates halves
            rope_style: RopeStyle::Neox,
            rope_base,
            n_rot,
            rope_pos_scale,
            rope_inv_freq,
            rope_attn_factor: attn_factor,
            rope_long: long,
            attn_scale,
            attn_softcap,
            final_softcap,
            act,
            embd_scale: gemma.then(|| gemma_embd_scale(n_embd)),
            post_norms: gemma,
            window,
        };
        let qkv_bias = match arch {
            Arch::Qwen2 => true,
            Arch::Llama | Arch::Qwen3 | Arch::Gemma2 | Arch::Gemma3 | Arch::Phi3 => {
                f.opt_bool("attention_bias")?.unwrap_or(false)
            }
        };
        Ok(HfConfig {
            config,
            expect: Expect {
                tied: Some(f.opt_bool("tie_word_embeddings")?.unwrap_or(false)),
                qkv_bias: Some(qkv_bias),
                strict: true,
                norm_plus_one: gemma,
            },
            dtype,
            architecture,
            eos_token_ids: ids(FILE, "eos_token_id", f.get("eos_token_id"))?,
        })
    }
}
