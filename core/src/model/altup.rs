//! AltUp (Gemma 3n): the residual stream carried as `n_altup` parallel
//! streams. The embedding spreads into them; before each layer a router
//! mixes them into predictions and the layer runs on the active one; after
//! it, the correction carries the layer's change into every stream; at the
//! end they are brought back into one. As transformers'
//! `Gemma3nTextAltUp` and `Gemma3nTextModel`.

use super::engine::Engine;
use super::gemma3n::MAX_ALTUP;
use super::gemma3n_weights::{Gemma3nLayer, Gemma3nWeights};
use super::matmul::matmul;
use super::scratch::Scratch;
use super::View;

/// Rows `t` of stream `k` (streams laid out stream by stream, `n_batch`
/// rows each).
fn at(s: &Scratch, k: usize, t: usize) -> core::ops::Range<usize> {
    let ne = s.x.len() / s.n_batch;
    let row = (k * s.n_batch + t) * ne;
    row..row + ne
}

/// √mean(x²), summed in f64.
fn rms(x: &[f32]) -> f32 {
    let ss: f64 = x.iter().map(|&v| v as f64 * v as f64).sum();
    libm::sqrt(ss / x.len() as f64) as f32
}

/// `x · target / rms(x)` (the mean square at least 1e-5), in place.
fn rescale(x: &mut [f32], target: f32) {
    let ss: f64 = x.iter().map(|&v| v as f64 * v as f64).sum();
    let now = libm::sqrtf(((ss / x.len() as f64) as f32).max(1e-5));
    x.iter_mut().for_each(|v| *v = *v * target / now);
}

/// Spread the `n` embeddings in `s.x` into the streams: stream 0 the
/// embedding, stream k its k-th projection rescaled to the embedding's RMS.
pub(super) fn spread(m: View, e: &Engine, s: &mut Scratch, w: &Gemma3nWeights, n: usize) {
    let ne = m.config.n_embd;
    for t in 0..n {
        let r = at(s, 0, t);
        s.g3n.streams[r].copy_from_slice(&s.x[t * ne..(t + 1) * ne]);
    }
    for (k, proj) in w.proj.iter().enumerate() {
        matmul(e, &[(m.matrix(proj), None)], &s.x, n, &mut s.acts, &mut s.mm, &mut [&mut s.y]);
        for t in 0..n {
            let (r, target) = (at(s, k + 1, t), rms(&s.x[t * ne..(t + 1) * ne]));
            s.g3n.streams[r.clone()].copy_from_slice(&s.y[t * ne..(t + 1) * ne]);
            rescale(&mut s.g3n.streams[r], target);
        }
    }
}

/// `s.g3n.modal = tanh(router(rms_norm(x) / n_embd))` for `n` rows of `x`
/// (stream `k`, or `s.x` if None), through `s.xn`.
fn modalities(m: View, e: &Engine, s: &mut Scratch, w: &Gemma3nLayer, stream: Option<usize>, n: usize) {
    let (c, ne) = (m.config, m.config.n_embd);
    for t in 0..n {
        let x = match stream {
            Some(k) => &s.g3n.streams[at(s, k, t)],
            None => &s.x[t * ne..(t + 1) * ne],
        };
        let xn = &mut s.xn[t * ne..(t + 1) * ne];
        e.kernels.rms_norm(x, &w.router_norm, c.norm_eps, xn);
        let scale = 1.0 / ne as f32;
        xn.iter_mut().for_each(|v| *v *= scale);
    }
    matmul(e, &[(m.matrix(&w.router), None)], &s.xn, n, &mut s.acts, &mut s.mm, &mut [&mut s.g3n.modal]);
    s.g3n.modal[..n * w.router.n_rows].iter_mut().for_each(|v| *v = libm::tanhf(*v));
}

/// Before layer `w`: each stream's prediction, a mix of all of them by
/// coefficients the router picks, into `s.g3n.preds`; the active one into
/// `s.x`, for the layer to run on.
pub(super) fn predict(m: View, e: &Engine, s: &mut Scratch, w: &Gemma3nLayer, n: usize) {
    let Some(g) = &m.config.gemma3n else { return };
    let (a, ne) = (g.n_altup, m.config.n_embd);
    modalities(m, e, s, w, Some(g.active), n);
    for t in 0..n {
        // coef[k·a + j]: stream j's share in stream k's prediction
        let mut coef = [0.0f32; MAX_ALTUP * MAX_ALTUP];
        let modal = &s.g3n.modal[t * a..(t + 1) * a];
        for (o, c) in coef[..a * a].iter_mut().enumerate() {
            *c = w.predict[o * a..(o + 1) * a].iter().zip(modal).map(|(p, m)| p * m).sum();
        }
        // where each stream's row of token t starts
        let mut row = [0usize; MAX_ALTUP];
        row[..a].iter_mut().enumerate().for_each(|(j, r)| *r = at(s, j, t).start);
        for k in 0..a {
            for d in 0..ne {
                let mix: f32 = (0..a).map(|j| coef[k * a + j] * s.g3n.streams[row[j] + d]).sum();
                s.g3n.preds[row[k] + d] = mix + s.g3n.streams[row[k] + d];
            }
        }
        let active = at(s, g.active, t);
        s.x[t * ne..(t + 1) * ne].copy_from_slice(&s.g3n.preds[active]);
    }
}

/// After the layer (its output in `s.x`): every stream's prediction moved
/// by the active one's error, each by its own coefficient, into the
/// streams.
pub(super) fn correct(m: View, e: &Engine, s: &mut Scratch, w: &Gemma3nLayer, n: usize) {
    let Some(g) = &m.config.gemma3n else { return };
    let (a, ne) = (g.n_altup, m.config.n_embd);
    modalities(m, e, s, w, None, n);
    for t in 0..n {
        let modal = &s.g3n.modal[t * a..(t + 1) * a];
        let mut coef = [0.0f32; MAX_ALTUP];
        for (k, c) in coef[..a].iter_mut().enumerate() {
            *c = w.correct[k * a..(k + 1) * a].iter().zip(modal).map(|(p, m)| p * m).sum::<f32>() + 1.0;
        }
        let active = at(s, g.active, t).start;
        for (k, &c) in coef[..a].iter().enumerate() {
            let r = at(s, k, t);
            for d in 0..ne {
                let innovation = s.x[t * ne + d] - s.g3n.preds[active + d];
                s.g3n.streams[r.start + d] = innovation * c + s.g3n.preds[r.start + d];
            }
        }
    }
}

/// The streams brought back into one for the batch rows `rows`: stream 0,
/// and each other's projection back rescaled to stream 0's RMS, averaged,
/// into `s.x`.
pub(super) fn gather(m: View, e: &Engine, s: &mut Scratch, w: &Gemma3nWeights, rows: &[usize]) {
    let ne = m.config.n_embd;
    let n = rows.len();
    for (t, &r) in rows.iter().enumerate() {
        let src = at(s, 0, r);
        s.g3n.laurel[t * ne..(t + 1) * ne].copy_from_slice(&s.g3n.streams[src]);
    }
    for (k, unembd) in w.unembd.iter().enumerate() {
        for (t, &r) in rows.iter().enumerate() {
            let src = at(s, k + 1, r);
            s.xn[t * ne..(t + 1) * ne].copy_from_slice(&s.g3n.streams[src]);
        }
        matmul(e, &[(m.matrix(unembd), None)], &s.xn, n, &mut s.acts, &mut s.mm, &mut [&mut s.y]);
        for (t, &r) in rows.iter().enumerate() {
            let target = rms(&s.g3n.streams[at(s, 0, r)]);
            let y = &mut s.y[t * ne..(t + 1) * ne];
            rescale(y, target);
            s.g3n.laurel[t * ne..(t + 1) * ne].iter_mut().zip(y.iter()).for_each(|(o, v)| *o += v);
        }
    }
    let streams = (w.unembd.len() + 1) as f32;
    for (t, &r) in rows.iter().enumerate() {
        let sum = &s.g3n.laurel[t * ne..(t + 1) * ne];
        s.x[r * ne..(r + 1) * ne].iter_mut().zip(sum).for_each(|(x, v)| *x = v / streams);
    }
}
