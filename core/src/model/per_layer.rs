//! Gemma 3n's per-layer inputs: each token gives every layer a narrow
//! vector of its own — a row of the per-layer embedding plus a projection
//! of the token's embedding — which gates what the layer adds to AltUp's
//! other streams. As transformers' `get_per_layer_inputs`,
//! `project_per_layer_inputs` and the decoder layer's last step.

use super::engine::Engine;
use super::gemma3n_weights::{Gemma3nLayer, Gemma3nWeights};
use super::matmul::matmul;
use super::scratch::Scratch;
use super::View;
use crate::backend::quant;
use crate::error::Result;

/// Token `id`'s row of the per-layer embedding, × √width, into `out` (row
/// 0 for an id past the table, as transformers reads it).
pub(super) fn embed(m: View, w: &Gemma3nWeights, id: u32, out: &mut [f32]) -> Result<()> {
    let Some(g) = &m.config.gemma3n else { return Ok(()) };
    let table = m.matrix(&w.per_layer_embd);
    let row = if (id as usize) < table.n_rows { id as usize } else { 0 };
    quant::dequantize_row(table.ty, table.row(row), out)?;
    let scale = libm::sqrtf(g.n_embd_per_layer as f32);
    out.iter_mut().for_each(|v| *v *= scale);
    Ok(())
}

/// The `n` tokens' per-layer inputs from their embeddings (`s.x`) and
/// looked-up rows (`s.g3n.embd`): `(norm(proj(x) · n_embd^-½) + row) · 2^-½`
/// for each layer's part, into `s.g3n.inputs`.
pub(super) fn inputs(m: View, e: &Engine, s: &mut Scratch, w: &Gemma3nWeights, n: usize) {
    let Some(g) = &m.config.gemma3n else { return };
    let (c, p) = (m.config, g.n_embd_per_layer);
    let proj = m.matrix(&w.per_layer_proj);
    matmul(e, &[(proj, None)], &s.x, n, &mut s.acts, &mut s.mm, &mut [&mut s.g3n.inputs]);
    let (scale, half) = (1.0 / libm::sqrtf(c.n_embd as f32), core::f32::consts::FRAC_1_SQRT_2);
    let b = &mut s.g3n;
    for (part, row) in b.inputs[..n * c.n_layer * p].chunks_exact_mut(p).zip(b.embd.chunks_exact(p)) {
        let tmp = &mut b.narrow[..p];
        part.iter().zip(tmp.iter_mut()).for_each(|(v, t)| *t = v * scale);
        e.kernels.rms_norm(tmp, &w.per_layer_norm, c.norm_eps, part);
        part.iter_mut().zip(row).for_each(|(v, r)| *v = (*v + r) * half);
    }
}

/// Layer `l`'s per-layer input, after the correction: the active stream
/// (scaled) gates it, `norm(proj(gelu(gate(a)) · input))`, added to
/// streams 1.. .
pub(super) fn inject(m: View, e: &Engine, s: &mut Scratch, w: &Gemma3nLayer, l: usize, n: usize) {
    let Some(g) = &m.config.gemma3n else { return };
    let (c, ne, p) = (m.config, m.config.n_embd, g.n_embd_per_layer);
    let width = c.n_layer * p;
    for t in 0..n {
        let a = (g.active * s.n_batch + t) * ne;
        let x = &mut s.xn[t * ne..(t + 1) * ne];
        x.copy_from_slice(&s.g3n.streams[a..a + ne]);
        if g.correct_scale {
            x.iter_mut().zip(&w.correct_scale).for_each(|(v, s)| *v *= s);
        }
    }
    let gate = m.matrix(&w.inp_gate);
    matmul(e, &[(gate, None)], &s.xn, n, &mut s.acts, &mut s.mm, &mut [&mut s.g3n.narrow]);
    for t in 0..n {
        let input = &s.g3n.inputs[t * width + l * p..t * width + (l + 1) * p];
        e.kernels.geglu(&mut s.g3n.narrow[t * p..(t + 1) * p], input);
    }
    let proj = m.matrix(&w.inp_proj);
    matmul(e, &[(proj, None)], &s.g3n.narrow, n, &mut s.acts, &mut s.mm, &mut [&mut s.y]);
    for t in 0..n {
        e.kernels.rms_norm(&s.y[t * ne..(t + 1) * ne], &w.inp_norm, c.norm_eps, &mut s.xn[t * ne..(t + 1) * ne]);
        for k in 1..g.n_altup {
            let r = (k * s.n_batch + t) * ne;
            s.g3n.streams[r..r + ne].iter_mut().zip(&s.xn[t * ne..(t + 1) * ne]).for_each(|(v, y)| *v += y);
        }
    }
}
