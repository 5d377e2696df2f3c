//! A mixture-of-experts layer run over a batch: each token routed
//! (`super::moe::route`), then one matmul per expert over the tokens routed
//! to it — or, for one token, its experts side by side — and each token's
//! weighted sum in ascending expert order.

use super::engine::Engine;
use super::matmul::{each_fits, matmul, matmul_each};
use super::mlp::{activate, matrices, mlp, MlpBufs};
use super::moe::route;
use super::scratch::Scratch;
use super::weights::{Experts, TensorRef};
use super::{ExpertPart, View};
use crate::backend::QMatrix;

/// `s.y = Σ w · expert(s.xn)` over each token's chosen experts (+ the
/// gated shared expert), for the batch's `n` tokens. Tokens are grouped by
/// expert: one matmul per expert over the tokens routed to it, and an
/// expert no token chose is not read.
pub(super) fn ffn(m: View, e: &Engine, s: &mut Scratch, x: &Experts, n: usize, l: usize) {
    let moe = m.config.moe.as_ref().expect("an MoE layer in a model with an MoE config");
    let (ne, k, n_x) = (m.config.n_embd, moe.n_expert_used, moe.n_expert);
    let act = m.config.act;

    // router logits, then each token's experts and weights
    let router = m.matrix(&x.router);
    let bufs = &mut s.moe;
    matmul(e, &[(router, None)], &s.xn, n, &mut s.acts, &mut s.mm, &mut [&mut bufs.logits]);
    for t in 0..n {
        let (ids, w) = (&mut bufs.ids[t * k..(t + 1) * k], &mut bufs.weights[t * k..(t + 1) * k]);
        route(&bufs.logits[t * n_x..(t + 1) * n_x], k, moe.norm_topk, &mut bufs.probs, ids, w);
    }

    if n == 1 && k <= MAX_FUSED && one_token(m, e, s, x, k, l) {
        combine(s, x, 1, k, ne);
        return;
    }

    // the (token, slot)s of each expert, in token order
    let bufs = &mut s.moe;
    let starts = &mut bufs.starts[..=n_x];
    starts.fill(0);
    bufs.ids[..n * k].iter().for_each(|&id| starts[id as usize + 1] += 1);
    for i in 0..n_x {
        starts[i + 1] += starts[i];
    }
    let fill = &mut bufs.fill[..n_x];
    fill.copy_from_slice(&starts[..n_x]);
    for (slot, &id) in bufs.ids[..n * k].iter().enumerate() {
        bufs.order[fill[id as usize]] = slot;
        fill[id as usize] += 1;
    }

    // each chosen expert over its tokens: gathered, run, scattered to
    // their slots
    for (id, w) in x.experts.iter().enumerate() {
        let group = &bufs.order[starts[id]..starts[id + 1]];
        if group.is_empty() {
            continue;
        }
        for (j, &slot) in group.iter().enumerate() {
            let t = slot / k;
            bufs.x[j * ne..(j + 1) * ne].copy_from_slice(&s.xn[t * ne..(t + 1) * ne]);
        }
        let nt = group.len();
        let b = MlpBufs { gate: &mut s.gate, up: &mut s.up, acts: &mut s.acts, mm: &mut s.mm };
        // (interleaved if a decode step has packed it; prompts do not pack)
        let w = [(&w.gate, ExpertPart::Gate), (&w.up, ExpertPart::Up), (&w.down, ExpertPart::Down)]
            .map(|(t, p)| m.expert(l, id, p, t, false));
        mlp(e, w, act, None, &bufs.x[..nt * ne], nt, b, &mut s.y, None);
        for (j, &slot) in group.iter().enumerate() {
            bufs.out[slot * ne..(slot + 1) * ne].copy_from_slice(&s.y[j * ne..(j + 1) * ne]);
        }
    }

    // the shared expert, gated by sigmoid(x · g)
    if let Some(sh) = &x.shared {
        let b = MlpBufs { gate: &mut s.gate, up: &mut s.up, acts: &mut s.acts, mm: &mut s.mm };
        mlp(e, matrices(m, &sh.mlp), act, None, &s.xn[..n * ne], n, b, &mut bufs.shared, None);
    }

    combine(s, x, n, k, ne);
}

/// Most experts a token runs for which decode fuses their matmuls.
const MAX_FUSED: usize = 16;

/// One token's experts in three parallel regions: every chosen expert's
/// gate and up (one input), their activations, every down (each its own
/// input), into the token's slots; false (nothing done) if the experts'
/// matrices differ in type or shape.
fn one_token(m: View, e: &Engine, s: &mut Scratch, x: &Experts, k: usize, l: usize) -> bool {
    let ids = &s.moe.ids[..k];
    let id = |j: usize| ids[j.min(k - 1)] as usize;
    // (each interleaved on its first use here, when the model packs lazily:
    // those not yet, shared among the workers)
    let todo: [(usize, usize, ExpertPart, &TensorRef); 3 * MAX_FUSED] = core::array::from_fn(|i| {
        let w = &x.experts[id(i / 3)];
        let (t, p) = [(&w.gate, ExpertPart::Gate), (&w.up, ExpertPart::Up), (&w.down, ExpertPart::Down)][i % 3];
        (l, id(i / 3), p, t)
    });
    m.pack_experts(e, &todo[..3 * k]);
    let downs: [QMatrix; MAX_FUSED] =
        core::array::from_fn(|j| m.expert(l, id(j), ExpertPart::Down, &x.experts[id(j)].down, j < k));
    let gate_up: [(QMatrix, Option<&[f32]>); 2 * MAX_FUSED] = core::array::from_fn(|i| {
        let (j, w) = (i / 2, &x.experts[id(i / 2)]);
        let (t, p) = if i % 2 == 0 { (&w.gate, ExpertPart::Gate) } else { (&w.up, ExpertPart::Up) };
        (m.expert(l, id(j), p, t, j < k), None)
    });
    let gu: [QMatrix; 2 * MAX_FUSED] = core::array::from_fn(|i| gate_up[i].0);
    if !each_fits(&gu[..2 * k]) || !each_fits(&downs[..k]) {
        return false;
    }
    let (ff, ne) = (gu[0].n_rows, m.config.n_embd);
    let mut outs: [&mut [f32]; 2 * MAX_FUSED] = Default::default();
    let pairs = s.gate.chunks_exact_mut(ff).zip(s.up.chunks_exact_mut(ff)).take(k);
    for (j, (g, u)) in pairs.enumerate() {
        (outs[2 * j], outs[2 * j + 1]) = (g, u);
    }
    matmul(e, &gate_up[..2 * k], &s.xn[..ne], 1, &mut s.acts, &mut s.mm, &mut outs[..2 * k]);
    let b = MlpBufs { gate: &mut s.gate, up: &mut s.up, acts: &mut s.acts, mm: &mut s.mm };
    activate(e, m.config.act, b.gate, b.up, k * ff);
    matmul_each(e, &downs[..k], &s.gate[..k * ff], &mut s.acts, &mut s.moe.out[..k * ne]);
    if let Some(sh) = &x.shared {
        let b = MlpBufs { gate: &mut s.gate, up: &mut s.up, acts: &mut s.acts, mm: &mut s.mm };
        mlp(e, matrices(m, &sh.mlp), m.config.act, None, &s.xn[..ne], 1, b, &mut s.moe.shared, None);
    }
    true
}

/// `s.y` for `n` tokens from their slots' expert outputs: each token's
/// weighted sum, its experts in ascending order, then the gated shared
/// expert.
fn combine(s: &mut Scratch, x: &Experts, n: usize, k: usize, ne: usize) {
    let bufs = &s.moe;
    for t in 0..n {
        let y = &mut s.y[t * ne..(t + 1) * ne];
        for slot in t * k..(t + 1) * k {
            let (w, out) = (bufs.weights[slot], &bufs.out[slot * ne..(slot + 1) * ne]);
            if slot == t * k {
                y.iter_mut().zip(out).for_each(|(y, &o)| *y = o * w);
            } else {
                y.iter_mut().zip(out).for_each(|(y, &o)| *y += o * w);
            }
        }
        if let Some(sh) = &x.shared {
            let xn = &s.xn[t * ne..(t + 1) * ne];
            let g = sigmoid(xn.iter().zip(&sh.gate).fold(0.0f32, |a, (&x, &g)| a + x * g));
            let out = &bufs.shared[t * ne..(t + 1) * ne];
            y.iter_mut().zip(out).for_each(|(y, &o)| *y += g * o);
        }
    }
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + libm::expf(-x))
}
