//! Gemma 3n's block beyond Gemma's, as configured: AltUp's parallel
//! residual streams, LAuReL's low-rank residual, per-layer inputs, KV
//! shared by the last layers, per-layer feed-forward widths and the
//! Gaussian top-k (activation sparsity) of the first layers. The forward
//! pass is `super::altup` (the streams), `super::per_layer` (the per-layer
//! inputs) and `super::laurel`.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::limits::{MAX_EMBD, MAX_FF, MAX_VOCAB};
use crate::error::{Error, Result};

/// Most AltUp streams a file may declare (the released models have 4).
pub(crate) const MAX_ALTUP: usize = 16;

/// Gemma 3n's additions to Gemma's block.
#[derive(Debug, Clone, PartialEq)]
pub struct Gemma3n {
    /// AltUp's residual streams (`altup_num_inputs`).
    pub n_altup: usize,
    /// The stream the layers run on (`altup_active_idx`).
    pub active: usize,
    /// The corrected active stream is scaled (`altup_correct_scale`)
    /// before it gates the per-layer input.
    pub correct_scale: bool,
    /// Width of a layer's per-layer input (`hidden_size_per_layer_input`).
    pub n_embd_per_layer: usize,
    /// Rows of the per-layer embedding (`vocab_size_per_layer_input`): an
    /// id past them reads row 0, as transformers does.
    pub n_vocab_per_layer: usize,
    /// LAuReL's rank.
    pub laurel_rank: usize,
    /// Per layer: its feed-forward width.
    pub n_ff: Vec<usize>,
    /// Per layer: the Gaussian top-k's multiplier of the standard
    /// deviation, Φ⁻¹(sparsity), for a sparse layer.
    pub sparsity: Vec<Option<f32>>,
    /// Per layer: the layer whose keys and values it attends to — itself,
    /// or for the last `num_kv_shared_layers`, the last layer of its kind
    /// (windowed or global) before them.
    pub kv_source: Vec<usize>,
}

fn bad(key: &str, value: impl ToString, why: &str) -> Error {
    Error::Hyperparameter { key: key.into(), value: value.to_string(), why: why.into() }
}

/// Each setting's key: GGUF's (after `gemma3n.`) and config.json's.
const KEYS: [(&str, &str); 8] = [
    ("altup.num_inputs", "altup_num_inputs"),
    ("altup.active_idx", "altup_active_idx"),
    ("embedding_length_per_layer_input", "hidden_size_per_layer_input"),
    ("per_layer_token_embd.weight rows", "vocab_size_per_layer_input"),
    ("blk.0.laurel_l.weight rows", "laurel_rank"),
    ("feed_forward_length", "intermediate_size"),
    ("activation_sparsity_scale", "activation_sparsity_pattern"),
    ("attention.shared_kv_layers", "num_kv_shared_layers"),
];

/// How the file names setting `i` of [`KEYS`].
pub(crate) fn key(hf: bool, i: usize) -> String {
    match (hf, KEYS[i]) {
        (true, (_, k)) => k.into(),
        (false, (k, _)) if k.contains(".weight") => k.into(),
        (false, (k, _)) => format!("gemma3n.{k}"),
    }
}

impl Gemma3n {
    /// Refuse what no model has: sizes past the limits, per-layer lists of
    /// the wrong length, a K/V source that is not an earlier layer of the
    /// same kind keeping its own.
    /// `hf`: name config.json's keys, else GGUF's.
    pub(crate) fn check(&self, hf: bool, n_layer: usize, windowed: &[bool]) -> Result<()> {
        let key = |i| key(hf, i);
        let sizes = [
            (0, self.n_altup, MAX_ALTUP),
            (2, self.n_embd_per_layer, MAX_EMBD),
            (3, self.n_vocab_per_layer, MAX_VOCAB),
            (4, self.laurel_rank, MAX_EMBD),
        ];
        for (i, v, max) in sizes {
            if v == 0 || v > max {
                return Err(bad(&key(i), v, &format!("must be in 1..={max}")));
            }
        }
        if self.n_embd_per_layer.saturating_mul(n_layer) > MAX_FF {
            return Err(bad(&key(2), self.n_embd_per_layer, "times the layers is too wide"));
        }
        if self.active >= self.n_altup {
            return Err(bad(&key(1), self.active, &format!("must be below {} streams", self.n_altup)));
        }
        for (i, len) in [(5, self.n_ff.len()), (6, self.sparsity.len()), (7, self.kv_source.len())] {
            if len != n_layer {
                return Err(bad(&key(i), len, &format!("entries for {n_layer} layers")));
            }
        }
        if let Some(&f) = self.n_ff.iter().find(|&&f| f == 0 || f > MAX_FF) {
            return Err(bad(&key(5), f, &format!("must be in 1..={MAX_FF}")));
        }
        if let Some(s) = self.sparsity.iter().flatten().find(|s| !s.is_finite()) {
            return Err(bad(&key(6), s, "must be finite"));
        }
        for (l, &src) in self.kv_source.iter().enumerate() {
            let kind = |i: usize| windowed.get(i).copied().unwrap_or(false);
            if src > l || self.kv_source[src] != src || kind(src) != kind(l) {
                return Err(bad(&key(7), src, &format!("is no source of K/V for layer {l}")));
            }
        }
        Ok(())
    }

    /// The widest layer's feed-forward width.
    pub fn widest_ff(&self) -> usize {
        self.n_ff.iter().copied().max().unwrap_or(0)
    }
}

/// Each layer's K/V source when the last `n_shared` of `windowed.len()`
/// layers reuse the last earlier layer of their kind (transformers'
/// `kv_sharing_modes`, llama.cpp's `n_layer_kv_from_start`).
/// `hf`: errors name config.json's key, else GGUF's.
pub(crate) fn kv_sources(hf: bool, n_shared: usize, windowed: &[bool]) -> Result<Vec<usize>> {
    let n = windowed.len();
    if n_shared >= n {
        return Err(bad(&key(hf, 7), n_shared, &format!("must be below the {n} layers")));
    }
    let first = n - n_shared;
    (0..n)
        .map(|l| match l < first {
            true => Ok(l),
            false => (0..first)
                .rev()
                .find(|&j| windowed[j] == windowed[l])
                .ok_or_else(|| bad(&key(hf, 7), n_shared, &format!("leaves layer {l} no earlier layer of its kind"))),
        })
        .collect()
}

/// Φ⁻¹(p), the standard normal's quantile, for 0 < p < 1 (Acklam's
/// rational approximation, then one Halley step on erfc: f64-accurate),
/// rounded to f32 as transformers' `Normal(0, 1).icdf` is.
#[cfg_attr(not(feature = "std"), allow(dead_code))] // config.json's sparsity needs std
pub(crate) fn std_multiplier(p: f64) -> Option<f32> {
    if !(p > 0.0 && p < 1.0) {
        return None;
    }
    const A: [f64; 6] = [
        -3.969683028665376e1,
        2.209460984245205e2,
        -2.759285104469687e2,
        1.38357751867269e2,
        -3.066479806614716e1,
        2.506628277459239,
    ];
    const B: [f64; 5] =
        [-5.447609879822406e1, 1.615858368580409e2, -1.556989798598866e2, 6.680131188771972e1, -1.328068155288572e1];
    const C: [f64; 6] = [
        -7.784894002430293e-3,
        -3.223964580411365e-1,
        -2.400758277161838,
        -2.549732539343734,
        4.374664141464968,
        2.938163982698783,
    ];
    const D: [f64; 4] = [7.784695709041462e-3, 3.224671290700398e-1, 2.445134137142996, 3.754408661907416];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    let x = if p < 0.02425 {
        tail(libm::sqrt(-2.0 * libm::log(p)))
    } else if p > 1.0 - 0.02425 {
        -tail(libm::sqrt(-2.0 * libm::log(1.0 - p)))
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    };
    // one Halley step: e = Φ(x) − p
    let e = 0.5 * libm::erfc(-x / core::f64::consts::SQRT_2) - p;
    let u = e * libm::sqrt(2.0 * core::f64::consts::PI) * libm::exp(x * x / 2.0);
    Some((x - u / (1.0 + x * u / 2.0)) as f32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_the_normal_ones() {
        // transformers' Normal(0, 1).icdf(0.95) in f32, and symmetric ones
        assert_eq!(std_multiplier(0.95), Some(1.644_853_6));
        assert_eq!(std_multiplier(0.5), Some(0.0));
        assert_eq!(std_multiplier(0.01).map(|x| (x + 2.326_347_9).abs() < 1e-6), Some(true));
        assert_eq!(std_multiplier(0.999_9).map(|x| (x - 3.719_016_5).abs() < 1e-6), Some(true));
        assert_eq!(std_multiplier(0.0), None);
        assert_eq!(std_multiplier(1.0), None);
    }

    #[test]
    fn shared_layers_read_the_last_of_their_kind() {
        let w = [true, true, false, true, true, false];
        assert_eq!(kv_sources(false, 2, &w).unwrap(), [0, 1, 2, 3, 3, 2]);
        assert_eq!(kv_sources(false, 0, &w).unwrap(), [0, 1, 2, 3, 4, 5]);
        assert!(kv_sources(false, 6, &w).is_err());
        // no global layer before the shared ones
        assert!(kv_sources(false, 3, &[true, true, true, false]).is_err());
    }
}
