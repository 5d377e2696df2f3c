//! RoPE as GGUF keys and tensors describe it: llama.cpp's `rope.*` keys
//! (linear and YaRN scaling), `rope_freqs` factors, and LongRoPE's short
//! and long factor tensors (Phi-3).

use alloc::vec::Vec;

use super::keys::GgufKeys;
use crate::error::{Error, Result};
use crate::model::parts::{inv_freq, inv_freq_divided, LongRope, RopeSpec, Yarn};
use crate::model::weights;

/// The RoPE of a file whose heads rotate `n_rot` dims; `rope_freq_factors`
/// from the `rope_freqs` tensor.
pub(crate) fn rope(keys: &GgufKeys, n_rot: usize, rope_freq_factors: Option<&[f32]>) -> Result<RopeSpec> {
    let rope_base = keys.f32("rope.freq_base")?.unwrap_or(10000.0);
    let (mut rope_pos_scale, mut rope_attn_factor, mut yarn) = (1.0f32, 1.0f32, None);
    let scaling = keys.str("rope.scaling.type")?.unwrap_or("none");
    let factor = || -> Result<f32> {
        match keys.f32("rope.scaling.factor")? {
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
            for (key, neutral) in [("rope.scaling.yarn_ext_factor", 1.0), ("rope.scaling.yarn_log_multiplier", 0.0)] {
                if let Some(v) = keys.f32(key)?.filter(|&v| v != neutral) {
                    return Err(Error::Unsupported { what: alloc::format!("{} {v}", keys.key(key)) });
                }
            }
            let factor = factor()?;
            let beta = |key: &str, default: f32| -> Result<f64> { Ok(keys.f32(key)?.unwrap_or(default) as f64) };
            yarn = Some(Yarn {
                factor,
                orig_ctx: keys.usize("rope.scaling.original_context_length")?,
                beta_fast: beta("rope.scaling.yarn_beta_fast", 32.0)?,
                beta_slow: beta("rope.scaling.yarn_beta_slow", 1.0)?,
                truncate: true,
            });
            let mscale = if factor <= 1.0 { 1.0 } else { 0.1 * libm::log(factor as f64) + 1.0 };
            let attn = keys.f32("rope.scaling.yarn_attn_factor")?.unwrap_or(1.0);
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
        match weights::rope_factors(keys.g, name)? {
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
            rope_attn_factor = keys.f32("rope.scaling.attn_factor")?.unwrap_or(1.0);
            let orig_ctx = keys.usize("rope.scaling.original_context_length")?;
            Some(LongRope { orig_ctx, inv_freq: inv_freq_divided(rope_base, n_rot, &long) })
        }
        (None, None) => None,
        _ => return Err(Error::Unsupported { what: "one of rope_factors_short/long without the other".into() }),
    };
    Ok(RopeSpec {
        base: rope_base,
        inv_freq: rope_inv_freq,
        pos_scale: rope_pos_scale,
        attn_factor: rope_attn_factor,
        long: rope_long,
    })
}
