//! LAuReL (Gemma 3n's learned augmented residual): beside attention, a
//! low-rank path from the normed input, `x + norm(right(left(x)))`, which
//! joins the attention's residual as `(residual + laurel) / √2`.

use super::engine::Engine;
use super::gemma3n_weights::Gemma3nLayer;
use super::matmul::matmul;
use super::scratch::Scratch;
use super::View;

/// LAuReL of the `n` normed rows in `s.xn`, into `s.g3n.laurel` (through `s.y`).
pub(super) fn run(m: View, e: &Engine, s: &mut Scratch, w: &Gemma3nLayer, n: usize) {
    let ne = m.config.n_embd;
    let left = m.matrix(&w.laurel_left);
    matmul(e, &[(left, None)], &s.xn, n, &mut s.acts, &mut s.mm, &mut [&mut s.g3n.narrow]);
    let right = m.matrix(&w.laurel_right);
    matmul(e, &[(right, None)], &s.g3n.narrow, n, &mut s.acts, &mut s.mm, &mut [&mut s.y]);
    for t in 0..n {
        let out = &mut s.g3n.laurel[t * ne..(t + 1) * ne];
        e.kernels.rms_norm(&s.y[t * ne..(t + 1) * ne], &w.laurel_norm, m.config.norm_eps, out);
        out.iter_mut().zip(&s.xn[t * ne..(t + 1) * ne]).for_each(|(o, x)| *o += x);
    }
}

/// `x = (x + laurel) / √2` for the `n` rows of the residual stream.
pub(super) fn join(s: &mut Scratch, n: usize) {
    let ne = s.x.len() / s.n_batch;
    for (x, l) in s.x[..n * ne].iter_mut().zip(&s.g3n.laurel) {
        *x = (*x + l) / core::f32::consts::SQRT_2;
    }
}
