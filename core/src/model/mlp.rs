//! A gated MLP, `down(act(gate(x)) · up(x))`: the feed-forward layer of a
//! dense model (Gemma 3n's first layers' through a Gaussian top-k), and
//! each expert of a mixture (`super::experts`).

use super::adapter::Proj;
use super::engine::Engine;
use super::matmul::{matmul, ActBufs};
use super::parts::Act;
use super::weights::Mlp;
use super::View;
use crate::backend::QMatrix;

/// The buffers an MLP works in (borrowed from the scratch apart from its
/// input and output).
pub(super) struct MlpBufs<'a> {
    pub gate: &'a mut [f32],
    pub up: &'a mut [f32],
    pub acts: &'a mut ActBufs,
    pub mm: &'a mut [f32],
}

/// A projection's extra output: `delta(p, x, out)` adds to `out` what
/// LoRA adapters add to projection `p` of input `x`.
pub(super) type Delta<'a> = &'a mut dyn FnMut(Proj, &[f32], &mut [f32]);

/// An MLP's matrices as the kernels take them: `[gate, up, down]`.
pub(super) fn matrices<'a>(m: View<'a>, w: &Mlp) -> [QMatrix<'a>; 3] {
    [m.matrix(&w.gate), m.matrix(&w.up), m.matrix(&w.down)]
}

/// `y = down(act(gate(x)) · up(x))` for `n` rows of `x` through `w`
/// (`[gate, up, down]`); with a `sparsity` multiplier, the gate through
/// the Gaussian top-k first; each projection's output plus its `delta`.
#[allow(clippy::too_many_arguments)]
pub(super) fn mlp(
    e: &Engine,
    w: [QMatrix; 3],
    act: Act,
    sparsity: Option<f32>,
    x: &[f32],
    n: usize,
    b: MlpBufs,
    y: &mut [f32],
    mut delta: Option<Delta>,
) {
    let [gate, up, down] = w;
    let (nf, ne) = (gate.n_rows, down.n_rows);
    matmul(e, &[(gate, None), (up, None)], x, n, b.acts, b.mm, &mut [&mut *b.gate, &mut *b.up]);
    if let Some(d) = delta.as_mut() {
        d(Proj::Gate, &x[..n * gate.n_cols], &mut b.gate[..n * nf]);
        d(Proj::Up, &x[..n * gate.n_cols], &mut b.up[..n * nf]);
    }
    if let Some(k) = sparsity {
        b.gate[..n * nf].chunks_exact_mut(nf).for_each(|g| gaussian_top_k(g, k));
    }
    activate(e, act, b.gate, b.up, n * nf);
    matmul(e, &[(down, None)], b.gate, n, b.acts, b.mm, &mut [&mut *y]);
    if let Some(d) = delta.as_mut() {
        d(Proj::Down, &b.gate[..n * nf], &mut y[..n * ne]);
    }
}

/// Gemma 3n's activation sparsity: `g = relu(g − (mean + std · k))` over
/// one token's gate, the standard deviation the population's, `k` =
/// Φ⁻¹(sparsity) (so about that share of a normal gate is cut to zero).
fn gaussian_top_k(g: &mut [f32], k: f32) {
    let len = g.len() as f64;
    let mean = g.iter().map(|&v| v as f64).sum::<f64>() / len;
    let var = g.iter().map(|&v| (v as f64 - mean) * (v as f64 - mean)).sum::<f64>() / len;
    let cutoff = mean as f32 + libm::sqrt(var) as f32 * k;
    g.iter_mut().for_each(|v| *v = (*v - cutoff).max(0.0));
}

/// `gate = act(gate) · up` over the first `len` elements: an equal share
/// per worker, even of one token's row.
pub(super) fn activate(e: &Engine, act: Act, gate: &mut [f32], up: &[f32], len: usize) {
    let k = e.kernels;
    let per = len.div_ceil(e.par.n_workers()).next_multiple_of(16);
    e.par.for_each_run(&mut gate[..len], per, &|i, g| match act {
        Act::Silu => k.swiglu(g, &up[i * per..]),
        Act::GeluTanh => k.geglu(g, &up[i * per..]),
    });
}
