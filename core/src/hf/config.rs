//! `config.json` (as transformers writes it) → the normalised [`Config`]:
//! the dimensions every family shares read here, the rest by the family
//! config.json names (`crate::model::family`).

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use serde_json::{Map, Value};

use super::fields::{bad, ids, Fields, FILE};
use crate::backend::quant::GgmlType;
use crate::error::{Error, Result};
use crate::model::config::{check_heads, embd_scale, Config};
use crate::model::family::{gemma3n, Dims, Family};
use crate::model::moe::Moe;
use crate::model::parts::{Act, RopeSpec, RopeStyle};
use crate::model::weights::Expect;

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

fn dtype(name: &str) -> Result<GgmlType> {
    match name {
        "float32" => Ok(GgmlType::F32),
        "float16" => Ok(GgmlType::F16),
        "bfloat16" => Ok(GgmlType::BF16),
        other => Err(bad("dtype", alloc::format!("{other:?} (tern reads float32, float16 and bfloat16)"))),
    }
}

/// The family config.json names (`architectures`, else `model_type`),
/// and the name.
fn family(f: &Fields) -> Result<(&'static Family, String)> {
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
    Ok((Family::by_hf_name(&name)?, name))
}

/// Keys whose null means "none", not "the default" (Gemma 2's softcaps).
const NULL_MEANS_NONE: [&str; 2] = ["attn_logit_softcapping", "final_logit_softcapping"];

/// The fields of a family with config-class defaults: those defaults
/// (hub configs leave most out), under the file's own, which for a
/// multimodal checkpoint (`Gemma3ForConditionalGeneration`) are its
/// `text_config` (the language model; the vision tower is not run) and
/// the top level's dtype and tying.
fn with_defaults(defaults: &str, top: &Map<String, Value>) -> Result<Map<String, Value>> {
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

impl HfConfig {
    /// Parse and check a config.json.
    pub fn parse(bytes: &[u8]) -> Result<HfConfig> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| bad("(file)", e.to_string()))?;
        let Value::Object(top) = v else { return Err(bad("(file)", "not a JSON object")) };
        let (family, architecture) = family(&Fields(&top))?;
        let m = match family.hf_defaults {
            Some(defaults) => with_defaults(defaults, &top)?,
            None => top,
        };
        let f = Fields(&m);
        let act_key = if f.get("hidden_activation").is_some() { "hidden_activation" } else { "hidden_act" };
        let act = match f.opt_str(act_key)? {
            None => family.block.act,
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
        let dims = Dims { n_layer, n_embd, n_head, head_dim, n_rot, n_ctx_train };
        let (rope, attention) = (family.hf)(&f, &dims)?;
        let windowed = attention.window.as_ref().map_or(&[][..], |w| &w.layers);
        let gemma3n = family.block.altup.then(|| gemma3n::from_hf(&f, n_layer, windowed)).transpose()?;
        let n_ff = gemma3n.as_ref().map_or_else(|| f.usize("intermediate_size"), |g| Ok(g.widest_ff()))?;
        let moe = moe(&f, family, n_ff)?;
        let block = family.block;
        let RopeSpec { base: rope_base, inv_freq: rope_inv_freq, pos_scale: rope_pos_scale, attn_factor, long } = rope;
        let dtype = match f.opt_str("dtype")?.or(f.opt_str("torch_dtype")?) {
            Some(d) => Some(dtype(d)?),
            None => None,
        };
        let config = Config {
            arch: family.arch(),
            name: f.opt_str("_name_or_path")?.unwrap_or("").to_string(),
            n_vocab: f.usize("vocab_size")?,
            n_embd,
            n_layer,
            n_head,
            n_head_kv,
            head_dim,
            n_ff,
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
            attn_scale: attention.scale,
            attn_softcap: attention.softcap,
            final_softcap: attention.final_softcap,
            act,
            embd_scale: block.embd_scale.then(|| embd_scale(n_embd)),
            post_norms: block.post_norms,
            window: attention.window,
            qk_norm_whole: block.qk_norm_whole,
            moe,
            gemma3n,
        };
        let qkv_bias = block.qkv_bias || f.opt_bool("attention_bias")?.unwrap_or(false);
        Ok(HfConfig {
            config,
            expect: Expect {
                tied: Some(f.opt_bool("tie_word_embeddings")?.unwrap_or(false)),
                qkv_bias: Some(qkv_bias),
                strict: true,
                norm_plus_one: block.norm_plus_one,
            },
            dtype,
            architecture,
            eos_token_ids: ids(FILE, "eos_token_id", f.get("eos_token_id"))?,
        })
    }
}

/// The experts of a family that has them: `num_experts` (or
/// `num_local_experts`), `num_experts_per_tok`, `moe_intermediate_size`
/// (else `intermediate_size`), `shared_expert_intermediate_size`, and the
/// family's renormalisation rule; every layer sparse (a config making some
/// dense is refused, naming the key), no clipping of Q/K/V.
fn moe(f: &Fields, family: &Family, n_ff: usize) -> Result<Option<Moe>> {
    let Some(router) = family.router.filter(|r| !r.dense_too) else { return Ok(None) };
    if f.opt_usize("decoder_sparse_step")?.is_some_and(|s| s != 1) {
        return Err(bad("decoder_sparse_step", "tern runs models whose every layer has experts (1)"));
    }
    if let Some(v) = f.get("mlp_only_layers").filter(|v| v.as_array().is_none_or(|a| !a.is_empty())) {
        return Err(bad("mlp_only_layers", alloc::format!("{v}: tern runs models whose every layer has experts")));
    }
    if let Some(v) = f.get("clip_qkv") {
        return Err(bad("clip_qkv", alloc::format!("{v}: tern does not clip Q/K/V")));
    }
    let count = if f.get("num_experts").is_some() { "num_experts" } else { "num_local_experts" };
    let norm_topk = match router.hf_norm {
        Some((key, default)) => f.opt_bool(key)?.unwrap_or(default),
        None => router.gguf_norm,
    };
    Ok(Some(Moe {
        n_expert: f.usize(count)?,
        n_expert_used: f.usize("num_experts_per_tok")?,
        n_ff_exp: f.opt_usize("moe_intermediate_size")?.unwrap_or(n_ff),
        norm_topk,
        n_ff_shared: match router.shared_expert {
            true => Some(f.usize("shared_expert_intermediate_size")?),
            false => None,
        },
    }))
}
