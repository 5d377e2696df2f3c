//! `config.json` (as transformers writes it) → the normalised [`Config`],
//! for `LlamaForCausalLM`, `Qwen2ForCausalLM` and `Qwen3ForCausalLM`.

use alloc::string::{String, ToString};
use alloc::vec::Vec;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::model::config::{check_heads, inv_freq, Arch, Config, RopeStyle};
use crate::model::weights::Expect;
use crate::quant::GgmlType;

const FILE: &str = "config.json";

fn bad(field: &str, detail: impl Into<String>) -> Error {
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

struct Fields<'a>(&'a Map<String, Value>);

impl Fields<'_> {
    fn get(&self, k: &str) -> Option<&Value> {
        self.0.get(k).filter(|v| !v.is_null())
    }
    fn opt_usize(&self, k: &str) -> Result<Option<usize>> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => match v.as_u64() {
                Some(n) if n > 0 && n < (1 << 31) => Ok(Some(n as usize)),
                _ => Err(bad(k, alloc::format!("{v} is not a positive integer below 2^31"))),
            },
        }
    }
    fn usize(&self, k: &str) -> Result<usize> {
        self.opt_usize(k)?.ok_or_else(|| bad(k, "missing"))
    }
    fn opt_f64(&self, k: &str) -> Result<Option<f64>> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => v
                .as_f64()
                .filter(|x| x.is_finite())
                .map(Some)
                .ok_or_else(|| bad(k, alloc::format!("{v} is not a number"))),
        }
    }
    fn opt_bool(&self, k: &str) -> Result<Option<bool>> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => v.as_bool().map(Some).ok_or_else(|| bad(k, alloc::format!("{v} is not true or false"))),
        }
    }
    fn opt_str(&self, k: &str) -> Result<Option<&str>> {
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
        "LlamaForCausalLM" | "llama" => Arch::Llama,
        "Qwen2ForCausalLM" | "qwen2" => Arch::Qwen2,
        "Qwen3ForCausalLM" | "qwen3" => Arch::Qwen3,
        _ => return Err(Error::UnsupportedArch { arch: name }),
    };
    Ok((arch, name))
}

/// RoPE parameters: transformers 5's `rope_parameters`, or the older
/// `rope_theta` + `rope_scaling`. Returns (base, inv_freq, position scale).
fn rope(f: &Fields, n_rot: usize, n_ctx_train: usize) -> Result<(f32, Vec<f32>, f32)> {
    let params = f.get("rope_parameters").or_else(|| f.get("rope_scaling"));
    let field = if f.get("rope_parameters").is_some() { "rope_parameters" } else { "rope_scaling" };
    let p = match params {
        None => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(v) => return Err(bad(field, alloc::format!("{v} is not an object"))),
    };
    let p = Fields(&p);
    let base = p.opt_f64("rope_theta")?.or(f.opt_f64("rope_theta")?).unwrap_or(10000.0) as f32;
    let mut freq = inv_freq(base, n_rot);
    let kind = p.opt_str("rope_type")?.or(p.opt_str("type")?).unwrap_or("default");
    let factor = || -> Result<f32> {
        match p.opt_f64("factor")? {
            Some(x) if x > 0.0 => Ok(x as f32),
            other => Err(bad(field, alloc::format!("factor {other:?} must be > 0"))),
        }
    };
    let mut pos_scale = 1.0;
    match kind {
        "default" => {}
        "linear" => pos_scale = 1.0 / factor()?,
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
    Ok((base, freq, pos_scale))
}

impl HfConfig {
    /// Parse and check a config.json.
    pub fn parse(bytes: &[u8]) -> Result<HfConfig> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| bad("(file)", e.to_string()))?;
        let Value::Object(m) = v else { return Err(bad("(file)", "not a JSON object")) };
        let f = Fields(&m);
        let (arch, architecture) = arch(&f)?;
        if let Some(act) = f.opt_str("hidden_act")? {
            if act != "silu" {
                return Err(Error::Unsupported { what: alloc::format!("{FILE}: hidden_act {act:?} (tern runs silu)") });
            }
        }
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
        if f.opt_bool("use_sliding_window")? == Some(true) {
            return Err(Error::Unsupported { what: alloc::format!("{FILE}: use_sliding_window true") });
        }
        if let Some(Value::Array(kinds)) = f.get("layer_types") {
            if let Some(k) = kinds.iter().find(|k| k.as_str() != Some("full_attention")) {
                return Err(Error::Unsupported { what: alloc::format!("{FILE}: layer_types has {k}") });
            }
        }
        let n_embd = f.usize("hidden_size")?;
        let n_head = f.usize("num_attention_heads")?;
        let n_head_kv = f.opt_usize("num_key_value_heads")?.unwrap_or(n_head);
        let head_dim = f.opt_usize("head_dim")?.unwrap_or(n_embd / n_head);
        check_heads(n_head, n_head_kv, head_dim, head_dim).map_err(|e| bad("head_dim", e.to_string()))?;
        let n_ctx_train = f.opt_usize("max_position_embeddings")?.unwrap_or(2048);
        let (rope_base, rope_inv_freq, rope_pos_scale) = rope(&f, head_dim, n_ctx_train)?;
        let dtype = match f.opt_str("dtype")?.or(f.opt_str("torch_dtype")?) {
            Some(d) => Some(dtype(d)?),
            None => None,
        };
        let config = Config {
            arch,
            name: f.opt_str("_name_or_path")?.unwrap_or("").to_string(),
            n_vocab: f.usize("vocab_size")?,
            n_embd,
            n_layer: f.usize("num_hidden_layers")?,
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
            n_rot: head_dim,
            rope_pos_scale,
            rope_inv_freq,
        };
        let qkv_bias = match arch {
            Arch::Qwen2 => true,
            Arch::Llama | Arch::Qwen3 => f.opt_bool("attention_bias")?.unwrap_or(false),
        };
        Ok(HfConfig {
            config,
            expect: Expect {
                tied: Some(f.opt_bool("tie_word_embeddings")?.unwrap_or(false)),
                qkv_bias: Some(qkv_bias),
                strict: true,
            },
            dtype,
            architecture,
            eos_token_ids: ids(FILE, "eos_token_id", f.get("eos_token_id"))?,
        })
    }
}
