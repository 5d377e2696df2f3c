//! Gemma 3n's weights beyond Gemma's, bound by their GGUF names
//! (transformers' through the family's renames): the model's per-layer
//! embedding and projection, AltUp's stream projections; each layer's
//! AltUp router and coefficients, LAuReL, per-layer input gate and
//! projection.

use alloc::format;
use alloc::vec::Vec;

use super::binder::Binder;
use super::gemma3n::Gemma3n;
use super::tensor_ref::TensorRef;
use crate::tensors::TensorDir;

/// One layer's Gemma 3n weights.
#[derive(Debug, Clone)]
pub struct Gemma3nLayer {
    /// AltUp's router: a logit per stream (`altup_router`).
    pub router: TensorRef,
    /// RMSNorm of the router's input.
    pub router_norm: Vec<f32>,
    /// Prediction coefficients: n_altup² rows of n_altup.
    pub predict: Vec<f32>,
    /// Correction coefficients: n_altup rows of n_altup.
    pub correct: Vec<f32>,
    /// Scale of the corrected active stream (`altup_correct_scale`).
    pub correct_scale: Vec<f32>,
    /// LAuReL: `x + norm(right(left(x)))`.
    pub laurel_left: TensorRef,
    /// LAuReL's way back up.
    pub laurel_right: TensorRef,
    /// LAuReL's RMSNorm.
    pub laurel_norm: Vec<f32>,
    /// The per-layer input's gate (`inp_gate`: n_embd → its width).
    pub inp_gate: TensorRef,
    /// Its projection back (`proj`).
    pub inp_proj: TensorRef,
    /// RMSNorm of the projection (`post_norm`).
    pub inp_norm: Vec<f32>,
}

/// The model's Gemma 3n weights.
#[derive(Debug, Clone)]
pub struct Gemma3nWeights {
    /// Per-layer embeddings: a row of n_layer · width per token id
    /// (`per_layer_token_embd`); only looked up.
    pub per_layer_embd: TensorRef,
    /// The embedding's projection to the per-layer inputs
    /// (`per_layer_model_proj`).
    pub per_layer_proj: TensorRef,
    /// RMSNorm of each layer's part of the projection.
    pub per_layer_norm: Vec<f32>,
    /// Streams 1.. from the embedding (`altup_proj`).
    pub proj: Vec<TensorRef>,
    /// Streams 1.. back, at the end (`altup_unembd_proj`).
    pub unembd: Vec<TensorRef>,
}

impl Gemma3nLayer {
    pub(crate) fn matrices(&self) -> [&TensorRef; 5] {
        [&self.router, &self.laurel_left, &self.laurel_right, &self.inp_gate, &self.inp_proj]
    }
    pub(crate) fn matrices_mut(&mut self) -> [&mut TensorRef; 5] {
        [&mut self.router, &mut self.laurel_left, &mut self.laurel_right, &mut self.inp_gate, &mut self.inp_proj]
    }
}

impl Gemma3nWeights {
    pub(crate) fn matrices(&self) -> impl Iterator<Item = &TensorRef> {
        [&self.per_layer_embd, &self.per_layer_proj].into_iter().chain(&self.proj).chain(&self.unembd)
    }
    pub(crate) fn matrices_mut(&mut self) -> impl Iterator<Item = &mut TensorRef> {
        let Gemma3nWeights { per_layer_embd, per_layer_proj, proj, unembd, .. } = self;
        [per_layer_embd, per_layer_proj].into_iter().chain(proj.iter_mut()).chain(unembd.iter_mut())
    }
}

/// Layer `i`'s Gemma 3n weights.
pub(crate) fn layer<D: TensorDir + ?Sized>(b: &Binder<D>, i: usize, g: &Gemma3n, e: usize) -> Gemma3nLayer {
    let n = |s: &str| format!("blk.{i}.{s}");
    let (a, p, r) = (g.n_altup, g.n_embd_per_layer, g.laurel_rank);
    Gemma3nLayer {
        router: b.matrix(&n("altup_router.weight"), e, a),
        router_norm: b.vector(&n("altup_router_norm.weight"), e),
        predict: b.vector_of(&n("altup_predict_coef.weight"), a, a * a),
        correct: b.vector_of(&n("altup_correct_coef.weight"), a, a),
        correct_scale: b.vector(&n("altup_correct_scale.weight"), e),
        laurel_left: b.matrix(&n("laurel_l.weight"), e, r),
        laurel_right: b.matrix(&n("laurel_r.weight"), r, e),
        laurel_norm: b.vector(&n("laurel_post_norm.weight"), e),
        inp_gate: b.matrix(&n("inp_gate.weight"), e, p),
        inp_proj: b.matrix(&n("proj.weight"), p, e),
        inp_norm: b.vector(&n("post_norm.weight"), e),
    }
}

/// The model's Gemma 3n weights: AltUp's projections stacked (GGUF's
/// `altup_proj`, `[n_embd, n_embd, n_altup − 1]`) or one per stream
/// (`altup_proj.K.weight`: transformers' `altup_projections.K`).
pub(crate) fn model<D: TensorDir + ?Sized>(b: &Binder<D>, g: &Gemma3n, e: usize, n_layer: usize) -> Gemma3nWeights {
    let (w, streams) = (n_layer * g.n_embd_per_layer, g.n_altup - 1);
    let projections = |name: &str| -> Vec<TensorRef> {
        match b.has(&format!("{name}.weight")) {
            true => {
                let all = b.stacked(&format!("{name}.weight"), e, e, streams);
                (0..streams).map(|k| all.rows(k * e..(k + 1) * e)).collect()
            }
            false => (0..streams).map(|k| b.matrix(&format!("{name}.{k}.weight"), e, e)).collect(),
        }
    };
    Gemma3nWeights {
        per_layer_embd: b.matrix("per_layer_token_embd.weight", w, g.n_vocab_per_layer),
        per_layer_proj: b.matrix("per_layer_model_proj.weight", e, w),
        per_layer_norm: b.vector("per_layer_proj_norm.weight", g.n_embd_per_layer),
        proj: projections("altup_proj"),
        unembd: projections("altup_unembd_proj"),
    }
}
