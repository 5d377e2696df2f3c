//! A GGUF file as a model: its configuration from the metadata, its
//! weights bound from its tensors.

use alloc::string::ToString;
use alloc::vec::Vec;

use super::Gguf;
use crate::error::{Error, Result};
use crate::model::config::{
    check_heads, every_nth_global, gemma_embd_scale, head_dim_scale, inv_freq, inv_freq_divided, Act, Arch, Config,
    LongRope, RopeStyle, Window, Yarn,
};
use crate::model::weights::{self, Expect, Weights};
use crate::model::Model;
use crate::tensors;

impl<B: AsRef<[u8]>> Model<B> {
    /// Parse a GGUF file held in `bytes`, bind and check its weights, and
    /// let `with` read anything else it needs (e.g. the tokenizer) from the
    /// same parse.
    pub fn load_gguf_with<T>(bytes: B, with: impl FnOnce(&Gguf) -> Result<T>) -> Result<(Model<B>, T)> {
        let (config, weights, extra) = {
            let g = Gguf::parse(bytes.as_ref())?;
            let ff = weights::rope_freq_factors(&g)?;
            let config = Config::from_gguf(&g, tensors::n_vocab(&g)?, ff.as_deref())?;
            config.check_fits(false, bytes.as_ref().len() as u64)?;
            let weights = Weights::bind(&g, &config, Expect::GGUF)?;
            (config, weights, with(&g)?)
        };
        Ok((Model::from_parts(alloc::vec![bytes], config, weights)?, extra))
    }

    /// Parse a GGUF file held in `bytes` into a model.
    pub fn load_gguf(bytes: B) -> Result<Model<B>> {
        Ok(Self::load_gguf_with(bytes, |_| Ok(()))?.0)
    }
}

impl Config {
    /// Read the configuration. `n_vocab` and rope frequency factors come
    /// from tensors, which the caller has already located.
    pub fn from_gguf(g: &Gguf, n_vocab: usize, rope_freq_factors: Option<&[f32]>) -> Result<Config> {
        let arch = Arch::parse(g.require_str("general.architecture")?)?;
        let a = arch.name();
        let k = |s: &str| alloc::format!("{a}.{s}");
        let n_embd = usize_key(g, &k("embedding_length"))?;
        let n_head = usize_key(g, &k("attention.head_count"))?;
        let n_head_kv = opt_usize_key(g, &k("attention.head_count_kv"))?.unwrap_or(n_head);
        let head_dim = opt_usize_key(g, &k("attention.key_length"))?.unwrap_or(n_embd / n_head);
        if let Some(vl) = opt_usize_key(g, &k("attention.value_length"))? {
            if vl != head_dim {
                return Err(Error::Unsupported { what: alloc::format!("value_length {vl} != key_length {head_dim}") });
            }
        }
        let n_rot = opt_usize_key(g, &k("rope.dimension_count"))?.unwrap_or(head_dim);
        check_heads(n_head, n_head_kv, head_dim, n_rot)?;
        let rope_base = g.get_f32(&k("rope.freq_base"))?.unwrap_or(10000.0);
        let (mut rope_pos_scale, mut rope_attn_factor, mut yarn) = (1.0f32, 1.0f32, None);
        let scaling = g.get_str(&k("rope.scaling.type"))?.unwrap_or("none");
        let factor = || -> Result<f32> {
            match g.get_f32(&k("rope.scaling.factor"))? {
                Some(f) if f > 0.0 && f.is_finite() => Ok(f),
                f => Err(Error::InvalidValue {
                    field: "rope.scaling.factor",
                    offset: 0,
                    detail: alloc::format!("{f:?} (must be a number above 0)"),
                }),
            }
        };
        match scaling {
            "none" => {}
            "linear" => rope_pos_scale = 1.0 / factor()?,
            "yarn" => {
                // llama.cpp's keys and defaults (ext factor 1, betas 32
                // and 1); cos and sin scaled by attn_factor · (1 + 0.1 ln factor)
                for (key, neutral) in [("rope.scaling.yarn_ext_factor", 1.0), ("rope.scaling.yarn_log_multiplier", 0.0)]
                {
                    if let Some(v) = g.get_f32(&k(key))?.filter(|&v| v != neutral) {
                        return Err(Error::Unsupported { what: alloc::format!("{a}.{key} {v}") });
                    }
                }
                let factor = factor()?;
                let beta =
                    |key: &str, default: f32| -> Result<f64> { Ok(g.get_f32(&k(key))?.unwrap_or(default) as f64) };
                yarn = Some(Yarn {
                    factor,
                    orig_ctx: usize_key(g, &k("rope.scaling.original_context_length"))?,
                    beta_fast: beta("rope.scaling.yarn_beta_fast", 32.0)?,
                    beta_slow: beta("rope.scaling.yarn_beta_slow", 1.0)?,
                    truncate: true,
                });
                let mscale = if factor <= 1.0 { 1.0 } else { 0.1 * libm::log(factor as f64) + 1.0 };
                let attn = g.get_f32(&k("rope.scaling.yarn_attn_factor"))?.unwrap_or(1.0);
                rope_attn_factor = (attn as f64 * mscale) as f32;
            }
            other => return Err(Error::Unsupported { what: alloc::format!("rope scaling {other:?}") }),
        }
        if let Some(ff) = rope_freq_factors {
            if ff.len() != n_rot / 2 {
                return Err(Error::TensorShape {
                    tensor: "rope_freqs.weight".into(),
                    detail: alloc::format!("{} factors for {} rotated pairs", ff.len(), n_rot / 2),
                });
            }
        }
        let mut rope_inv_freq = inv_freq(rope_base, n_rot);
        if let Some(ff) = rope_freq_factors {
            for (f, d) in rope_inv_freq.iter_mut().zip(ff) {
                *f /= d;
            }
        }
        if let Some(y) = &yarn {
            y.apply(rope_base, n_rot, &mut rope_inv_freq);
        }
        // LongRoPE (llama.cpp's phi3): short and long factor tensors, the
        // original context and the attention factor as keys
        let factors = |name: &str| -> Result<Option<Vec<f32>>> {
            match weights::rope_factors(g, name)? {
                Some(f) if f.len() != n_rot / 2 => Err(Error::TensorShape {
                    tensor: name.into(),
                    detail: alloc::format!("{} factors for {} rotated pairs", f.len(), n_rot / 2),
                }),
                f => Ok(f),
            }
        };
        let rope_long = match (factors("rope_factors_short.weight")?, factors("rope_factors_long.weight")?) {
            (Some(short), Some(long)) => {
                rope_inv_freq = inv_freq_divided(rope_base, n_rot, &short);
                rope_attn_factor = g.get_f32(&k("rope.scaling.attn_factor"))?.unwrap_or(1.0);
                let orig_ctx = usize_key(g, &k("rope.scaling.original_context_length"))?;
                Some(LongRope { orig_ctx, inv_freq: inv_freq_divided(rope_base, n_rot, &long) })
            }
            (None, None) => None,
            _ => return Err(Error::Unsupported { what: "one of rope_factors_short/long without the other".into() }),
        };
        let n_layer = usize_key(g, &k("block_count"))?;
        let gemma = matches!(arch, Arch::Gemma2 | Arch::Gemma3);
        // what llama.cpp fills in for gemma2/gemma3, the GGUF not saying
        // it: the 27Bs (46 and 62 layers) scale scores by (n_embd/n_head)^-½,
        // the others by head_dim^-½; gemma2 windows every other layer and
        // softcaps at 50 (scores) and 30 (logits) unless the file says;
        // gemma3 makes every 6th layer global, the others windowed with
        // their own RoPE base 10 000 and no position scaling
        let attn_scale = match (arch, n_layer) {
            (Arch::Gemma2, 46) | (Arch::Gemma3, 62) => head_dim_scale(n_embd / n_head),
            _ => head_dim_scale(head_dim),
        };
        let window = match arch {
            Arch::Gemma2 => Some(Window {
                size: usize_key(g, &k("attention.sliding_window"))?,
                layers: every_nth_global(n_layer, 2),
                rope_inv_freq: None,
            }),
            Arch::Gemma3 => Some(Window {
                size: usize_key(g, &k("attention.sliding_window"))?,
                layers: every_nth_global(n_layer, 6),
                rope_inv_freq: Some(inv_freq(10000.0, n_rot)),
            }),
            // Phi-3 (and a llama, as Mistral's) with a sliding window:
            // every layer windowed
            Arch::Phi3 | Arch::Llama => opt_usize_key(g, &k("attention.sliding_window"))?.map(|size| Window {
                size,
                layers: alloc::vec![true; n_layer],
                rope_inv_freq: None,
            }),
            _ => None,
        };
        let softcap = |key: &str, default: f32| -> Result<Option<f32>> {
            match arch {
                Arch::Gemma2 => Ok(Some(g.get_f32(&k(key))?.unwrap_or(default))),
                _ => Ok(None),
            }
        };
        Ok(Config {
            arch,
            name: g.get_str("general.name")?.unwrap_or("").to_string(),
            n_vocab,
            n_embd,
            n_layer,
            n_head,
            n_head_kv,
            head_dim,
            n_ff: usize_key(g, &k("feed_forward_length"))?,
            n_ctx_train: opt_usize_key(g, &k("context_length"))?.unwrap_or(2048),
            norm_eps: g.get_f32(&k("attention.layer_norm_rms_epsilon"))?.unwrap_or(1e-5),
            rope_style: match arch {
                Arch::Llama => RopeStyle::Adjacent,
                Arch::Qwen2 | Arch::Qwen3 | Arch::Gemma2 | Arch::Gemma3 | Arch::Phi3 => RopeStyle::Neox,
            },
            rope_base,
            n_rot,
            rope_pos_scale,
            rope_inv_freq,
            rope_attn_factor,
            rope_long,
            attn_scale,
            attn_softcap: softcap("attn_logit_softcapping", 50.0)?,
            final_softcap: softcap("final_logit_softcapping", 30.0)?,
            act: if gemma { Act::GeluTanh } else { Act::Silu },
            embd_scale: gemma.then(|| gemma_embd_scale(n_embd)),
            post_norms: gemma,
            window,
        })
    }
}

pub(crate) fn usize_key(g: &Gguf, key: &str) -> Result<usize> {
    let v = g.require_u64(key)?;
    usize::try_from(v).ok().filter(|&v| v > 0 && v < (1 << 31)).ok_or_else(|| Error::Hyperparameter {
        key: key.into(),
        value: v.to_string(),
        why: "must be in 1..2^31".into(),
    })
}

pub(crate) fn opt_usize_key(g: &Gguf, key: &str) -> Result<Option<usize>> {
    if g.get(key).is_none() {
        return Ok(None);
    }
    usize_key(g, key).map(Some)
}
