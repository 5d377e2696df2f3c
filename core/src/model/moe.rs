//! Mixture of experts: the configuration (how many experts, how many a
//! token uses, how wide each is), the router's rule a family declares, the
//! routing itself, and the layer that runs it — each token's chosen experts
//! in one matmul per expert over the tokens routed to it.

use super::engine::Engine;
use super::ffn::{activate, mlp, MlpBufs};
use super::matmul::{each_fits, matmul, matmul_each};
use super::scratch::Scratch;
use super::weights::Experts;
use super::View;
use crate::backend::QMatrix;

/// A mixture-of-experts feed-forward layer's shape and routing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moe {
    /// Experts per layer.
    pub n_expert: usize,
    /// Experts each token runs (top-k).
    pub n_expert_used: usize,
    /// Width of each expert's feed-forward layer.
    pub n_ff_exp: usize,
    /// Whether the chosen experts' probabilities are renormalised to sum
    /// to 1 (transformers' `norm_topk_prob`, GGUF `expert_weights_norm`).
    pub norm_topk: bool,
    /// Width of the shared expert every token also runs, gated by a
    /// sigmoid (Qwen2-MoE), if the model has one.
    pub n_ff_shared: Option<usize>,
}

/// Most experts a layer may declare (the largest published models have
/// 256; a file past this is refused before anything is sized by it).
pub(crate) const MAX_EXPERTS: usize = 1024;

/// How a family routes: softmax over every expert's logit, the top k
/// kept, renormalised or not. The families differ only in that rule's
/// default and where a file says it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Router {
    /// Renormalise, for a GGUF file without `expert_weights_norm`
    /// (llama.cpp's rule for the architecture).
    pub gguf_norm: bool,
    /// config.json's key for it and transformers' default; None: always
    /// `gguf_norm` (Mixtral renormalises, whatever the config says).
    pub hf_norm: Option<(&'static str, bool)>,
    /// The family has a shared expert beside the routed ones.
    pub shared_expert: bool,
    /// The family has dense models too (Llama: a GGUF with experts is
    /// Mixtral, converted), which a file without experts is.
    pub dense_too: bool,
}

impl Moe {
    /// Parameters one layer's experts hold (router, experts, shared).
    pub fn layer_params(&self, n_embd: usize) -> (u64, u64) {
        let (e, f) = (n_embd as u64, self.n_ff_exp as u64);
        let shared = self.n_ff_shared.map_or(0, |s| 3 * e * s as u64 + e);
        let router = e * self.n_expert as u64;
        let total = router + self.n_expert as u64 * 3 * e * f + shared;
        let active = router + self.n_expert_used as u64 * 3 * e * f + shared;
        (active, total)
    }
}

/// Softmax over `logits` into `probs`, then the `k` largest (the lower
/// expert first on a tie), renormalised with `norm`: `ids` and `weights`
/// in ascending expert order (the order their outputs are summed in).
pub(crate) fn route(logits: &[f32], k: usize, norm: bool, probs: &mut [f32], ids: &mut [u32], weights: &mut [f32]) {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for (p, &l) in probs.iter_mut().zip(logits) {
        *p = libm::expf(l - max);
        sum += *p;
    }
    probs.iter_mut().for_each(|p| *p /= sum);
    // top k by selection: k is small (≤ 8 in every released model)
    let mut n = 0;
    for (i, &p) in probs.iter().enumerate() {
        // position among the kept, which stay sorted by descending p
        let mut at = n;
        while at > 0 && p > weights[at - 1] {
            at -= 1;
        }
        if at == k {
            continue;
        }
        let end = (n + 1).min(k);
        for j in (at + 1..end).rev() {
            (weights[j], ids[j]) = (weights[j - 1], ids[j - 1]);
        }
        (weights[at], ids[at]) = (p, i as u32);
        n = end;
    }
    if norm {
        let total: f32 = weights[..k].iter().sum();
        weights[..k].iter_mut().for_each(|w| *w /= total);
    }
    // ascending expert order
    for i in 1..k {
        let mut j = i;
        while j > 0 && ids[j - 1] > ids[j] {
            ids.swap(j - 1, j);
            weights.swap(j - 1, j);
            j -= 1;
        }
    }
}

/// `s.y = Σ w · expert(s.xn)` over each token's chosen experts (+ the
/// gated shared expert), for the batch's `n` tokens. Tokens are grouped by
/// expert: one matmul per expert over the tokens routed to it, and an
/// expert no token chose is not read.
pub(super) fn ffn(m: View, e: &Engine, s: &mut Scratch, x: &Experts, n: usize) {
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

    if n == 1 && k <= MAX_FUSED && one_token(m, e, s, x, k) {
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
        mlp(m, e, w, act, &bufs.x[..nt * ne], nt, b, &mut s.y);
        for (j, &slot) in group.iter().enumerate() {
            bufs.out[slot * ne..(slot + 1) * ne].copy_from_slice(&s.y[j * ne..(j + 1) * ne]);
        }
    }

    // the shared expert, gated by sigmoid(x · g)
    if let Some(sh) = &x.shared {
        let b = MlpBufs { gate: &mut s.gate, up: &mut s.up, acts: &mut s.acts, mm: &mut s.mm };
        mlp(m, e, &sh.mlp, act, &s.xn[..n * ne], n, b, &mut bufs.shared);
    }

    combine(s, x, n, k, ne);
}

/// Most experts a token runs for which decode fuses their matmuls.
const MAX_FUSED: usize = 16;

/// One token's experts in three parallel regions: every chosen expert's
/// gate and up (one input), their activations, every down (each its own
/// input), into the token's slots; false (nothing done) if the experts'
/// matrices differ in type or shape.
fn one_token(m: View, e: &Engine, s: &mut Scratch, x: &Experts, k: usize) -> bool {
    let ids = &s.moe.ids[..k];
    let expert = |j: usize| &x.experts[ids[j.min(k - 1)] as usize];
    let downs: [QMatrix; MAX_FUSED] = core::array::from_fn(|j| m.matrix(&expert(j).down));
    let gate_up: [(QMatrix, Option<&[f32]>); 2 * MAX_FUSED] = core::array::from_fn(|i| {
        let w = expert(i / 2);
        (m.matrix(if i % 2 == 0 { &w.gate } else { &w.up }), None)
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
        mlp(m, e, &sh.mlp, m.config.act, &s.xn[..ne], 1, b, &mut s.moe.shared);
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

/// The buffers an MoE layer works in, for up to `n_batch` tokens.
pub(crate) struct MoeBufs {
    /// (n_batch, n_expert) router logits
    pub logits: alloc::vec::Vec<f32>,
    /// (n_expert) one token's probabilities
    pub probs: alloc::vec::Vec<f32>,
    /// (n_batch, k) each token's experts and weights, ascending by expert
    pub ids: alloc::vec::Vec<u32>,
    pub weights: alloc::vec::Vec<f32>,
    /// (n_expert + 1) where each expert's slots start in `order`
    pub starts: alloc::vec::Vec<usize>,
    /// (n_expert) filling cursor
    pub fill: alloc::vec::Vec<usize>,
    /// (n_batch · k) slots (token · k + i) grouped by expert
    pub order: alloc::vec::Vec<usize>,
    /// (n_batch, n_embd) one expert's tokens gathered
    pub x: alloc::vec::Vec<f32>,
    /// (n_batch · k, n_embd) each slot's expert output
    pub out: alloc::vec::Vec<f32>,
    /// (n_batch, n_embd) the shared expert's output
    pub shared: alloc::vec::Vec<f32>,
}

impl MoeBufs {
    /// None for a dense model (no buffers).
    pub(crate) fn new(moe: Option<&Moe>, n_embd: usize, n_batch: usize) -> MoeBufs {
        use alloc::vec;
        let (n_x, k, sh) = moe.map_or((0, 0, false), |m| (m.n_expert, m.n_expert_used, m.n_ff_shared.is_some()));
        let any = moe.is_some();
        MoeBufs {
            logits: vec![0.0; n_batch * n_x],
            probs: vec![0.0; n_x],
            ids: vec![0; n_batch * k],
            weights: vec![0.0; n_batch * k],
            starts: vec![0; if any { n_x + 1 } else { 0 }],
            fill: vec![0; n_x],
            order: vec![0; n_batch * k],
            x: vec![0.0; if any { n_batch * n_embd } else { 0 }],
            out: vec![0.0; n_batch * k * n_embd],
            shared: vec![0.0; if sh { n_batch * n_embd } else { 0 }],
        }
    }

    /// Bytes held.
    pub(crate) fn bytes(&self) -> usize {
        4 * (self.logits.len() + self.probs.len() + self.ids.len() + self.weights.len())
            + 8 * (self.starts.len() + self.fill.len() + self.order.len())
            + 4 * (self.x.len() + self.out.len() + self.shared.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routed(logits: &[f32], k: usize, norm: bool) -> (alloc::vec::Vec<u32>, alloc::vec::Vec<f32>) {
        let mut probs = alloc::vec![0.0; logits.len()];
        let (mut ids, mut w) = (alloc::vec![0; k], alloc::vec![0.0; k]);
        route(logits, k, norm, &mut probs, &mut ids, &mut w);
        (ids, w)
    }

    #[test]
    fn the_top_k_of_the_softmax_in_expert_order() {
        let logits = [0.5, 2.0, -1.0, 1.5, 3.0, 0.0];
        let (ids, w) = routed(&logits, 3, false);
        assert_eq!(ids, [1, 3, 4]);
        let z: f32 = logits.iter().map(|&l| libm::expf(l - 3.0)).sum();
        for (&i, &w) in ids.iter().zip(&w) {
            assert!((w - libm::expf(logits[i as usize] - 3.0) / z).abs() < 1e-7);
        }
        let (ids_n, wn) = routed(&logits, 3, true);
        assert_eq!(ids_n, ids);
        assert!((wn.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!((wn[2] / wn[0] - w[2] / w[0]).abs() < 1e-5);
        // one expert, and all of them
        assert_eq!(routed(&logits, 1, true), (alloc::vec![4], alloc::vec![1.0]));
        assert_eq!(routed(&logits, 6, false).0, [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn a_tie_keeps_the_lower_expert() {
        assert_eq!(routed(&[1.0, 2.0, 2.0, 2.0], 2, false).0, [1, 2]);
    }
}
