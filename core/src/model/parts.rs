//! The parts a configuration is built from, which the families name:
//! the feed-forward activation, how RoPE pairs and spaces its frequencies
//! (YaRN, LongRoPE), and sliding windows.

use alloc::vec::Vec;

/// Which elements RoPE rotates together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RopeStyle {
    /// ggml "normal" (GGUF llama, whose Q/K rows the converter permuted):
    /// pairs (2i, 2i+1).
    Adjacent,
    /// ggml NEOX / HF `rotate_half`: pairs (i, i + n_rot/2).
    Neox,
}

/// The feed-forward layer's gate activation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Act {
    /// `silu(gate) · up` (Llama, Qwen).
    Silu,
    /// `gelu_tanh(gate) · up` (Gemma).
    GeluTanh,
}

/// Sliding-window attention: the layers that see only the last `size`
/// positions (a query at p sees p − size + 1 ..= p), and their own RoPE.
#[derive(Debug, Clone)]
pub struct Window {
    /// Positions a windowed layer sees, its query's own included.
    pub size: usize,
    /// Per layer: whether it is windowed.
    pub layers: Vec<bool>,
    /// The windowed layers' RoPE `inv_freq` (position scale 1), when it
    /// is not the global layers' (Gemma 3: base 10 000 against 1 000 000).
    pub rope_inv_freq: Option<Vec<f32>>,
}

/// LongRoPE (Phi-3's long-context models): other frequencies for a
/// context past the one the model was first trained at.
#[derive(Debug, Clone)]
pub struct LongRope {
    /// A session of more positions than this uses `inv_freq`.
    pub orig_ctx: usize,
    /// The long factors' `inv_freq`.
    pub inv_freq: Vec<f32>,
}

/// A RoPE as a file describes it (before it goes into [`Config`]).
pub(crate) struct RopeSpec {
    pub base: f32,
    pub inv_freq: Vec<f32>,
    /// Positions are multiplied by this (`linear`).
    pub pos_scale: f32,
    /// cos and sin are multiplied by this (YaRN's attention factor).
    pub attn_factor: f32,
    /// LongRoPE's frequencies past the original context.
    pub long: Option<LongRope>,
}

impl Act {
    /// The activation's name in config.json (`hidden_act`/`hidden_activation`).
    pub fn parse_hf(s: &str) -> Option<Act> {
        match s {
            "silu" | "swish" => Some(Act::Silu),
            "gelu_pytorch_tanh" | "gelu_tanh" => Some(Act::GeluTanh),
            _ => None,
        }
    }
}

/// YaRN: each RoPE frequency blended between itself (extrapolation) and
/// itself / factor (interpolation) by a linear ramp over the dimensions
/// between the correction bounds of `beta_fast` and `beta_slow` rotations
/// (transformers' `_compute_yarn_parameters`, llama.cpp's
/// `ggml_rope_yarn_corr_dims` and ramp: the same numbers).
pub(crate) struct Yarn {
    pub factor: f32,
    /// The context the model was trained at before the extension.
    pub orig_ctx: usize,
    pub beta_fast: f64,
    pub beta_slow: f64,
    /// Round the bounds outward to whole dimensions (both do by default).
    pub truncate: bool,
}

impl Yarn {
    /// Blend `freq` (`inv_freq` at `base` over `n_rot` dims) in place.
    pub fn apply(&self, base: f32, n_rot: usize, freq: &mut [f32]) {
        let (dim, base, orig) = (n_rot as f64, base as f64, self.orig_ctx as f64);
        let corr = |rot: f64| dim * libm::log(orig / (rot * 2.0 * core::f64::consts::PI)) / (2.0 * libm::log(base));
        let (mut low, mut high) = (corr(self.beta_fast), corr(self.beta_slow));
        if self.truncate {
            (low, high) = (libm::floor(low), libm::ceil(high));
        }
        let (low, mut high) = (low.max(0.0) as f32, high.min(dim - 1.0) as f32);
        if low == high {
            high += 0.001;
        }
        for (i, fr) in freq.iter_mut().enumerate() {
            let ramp = ((i as f32 - low) / (high - low)).clamp(0.0, 1.0);
            let extrapolation = 1.0 - ramp;
            let interpolation = *fr / self.factor;
            *fr = interpolation * (1.0 - extrapolation) + *fr * extrapolation;
        }
    }
}

/// `inv_freq[i] = 1 / (ext[i] · base^(2i/n_rot))`, as transformers'
/// LongRoPE computes it (f32 powers).
pub(crate) fn inv_freq_divided(base: f32, n_rot: usize, ext: &[f32]) -> Vec<f32> {
    (0..n_rot / 2).map(|i| 1.0 / (ext[i] * libm::powf(base, (2 * i) as f32 / n_rot as f32))).collect()
}

/// RoPE's `inv_freq[i] = 1 / base^(2i/n_rot)`, i < n_rot/2.
pub(crate) fn inv_freq(base: f32, n_rot: usize) -> Vec<f32> {
    (0..n_rot / 2).map(|i| 1.0 / libm::powf(base, (2 * i) as f32 / n_rot as f32)).collect()
}
