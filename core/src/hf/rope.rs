//! RoPE as config.json describes it: transformers 5's `rope_parameters`
//! or the older `rope_theta` + `rope_scaling` — default, linear, Llama 3,
//! YaRN and LongRoPE.

use alloc::vec::Vec;
use serde_json::{Map, Value};

use super::fields::{bad, Fields, FILE};
use crate::error::{Error, Result};
use crate::model::parts::{inv_freq, inv_freq_divided, LongRope, RopeSpec, Yarn};

/// RoPE parameters: transformers 5's `rope_parameters`, or the older
/// `rope_theta` + `rope_scaling`. With `su_is_longrope` (Phi-3), the
/// types `su` and `yarn` are LongRoPE, as transformers' `Phi3Config`
/// reads them.
pub(crate) fn rope(f: &Fields, su_is_longrope: bool, n_rot: usize, n_ctx_train: usize) -> Result<RopeSpec> {
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
    let fp = Fields(&p);
    let su = matches!(fp.opt_str("rope_type")?.or(fp.opt_str("type")?), Some("su" | "yarn"));
    if su_is_longrope && su {
        p.remove("type");
        p.insert("rope_type".into(), "longrope".into());
    }
    let base = Fields(&p).opt_f64("rope_theta")?.or(f.opt_f64("rope_theta")?).unwrap_or(10000.0) as f32;
    rope_params(&Fields(&p), field, base, n_rot, n_ctx_train)
}

/// The RoPE of `p` (one `rope_parameters` entry) at base `base`.
pub(crate) fn rope_params(p: &Fields, field: &str, base: f32, n_rot: usize, n_ctx_train: usize) -> Result<RopeSpec> {
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
