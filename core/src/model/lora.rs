//! LoRA in a forward pass: after a projection's `out = x·Wᵀ (+ b)`, each
//! sequence's adapters add `s·B(A·x)` to its tokens' rows, in the order the
//! sequence lists them — so a token's sum is the same whatever else is in
//! the batch. The tokens of all sequences running one adapter go through
//! A together (the kernels' float matmul, whose per-token numbers do not
//! depend on the other tokens), then each sequence's through Bᵀ at its own
//! scale (`Kernels::lora_up`, straight into the outputs).

use alloc::sync::Arc;
use alloc::vec::Vec;

use super::adapter::{Applied, Proj};
use super::engine::Engine;
use super::matmul::{matmul, ActBufs};
use super::seq::Seq;
use crate::backend::QMatrix;
use crate::parallel::Serial;

/// The buffers the deltas work in, grown to the largest step they see.
pub(crate) struct LoraBufs {
    /// A group's input rows, gathered when its sequences are not adjacent.
    x: Vec<f32>,
    /// (tokens, rank): `A·x`
    mid: Vec<f32>,
    /// the matmul's (rows, tokens) scratch
    mm: Vec<f32>,
    acts: ActBufs,
    /// a group's sequences: first token's row, tokens, their scale
    group: Vec<(usize, usize, f32)>,
}

impl LoraBufs {
    pub(crate) fn new() -> LoraBufs {
        LoraBufs { x: Vec::new(), mid: Vec::new(), mm: Vec::new(), acts: ActBufs::new(0, 0), group: Vec::new() }
    }

    pub(crate) fn bytes(&self) -> usize {
        4 * (self.x.len() + self.mid.len() + self.mm.len())
    }
}

/// Multiply-adds below which a group's pair runs on the calling thread (a
/// decode step's: cheaper than a parallel region's hand-off).
const SERIAL_MACS: usize = 1 << 16;

/// `out[t] += s·B(A·x[t])` for every token `t` of `seqs` (rows of `x` and
/// `out`, the sequences' tokens one after another), for each adapter of
/// its sequence that changes layer `l`'s projection `p`.
pub(super) fn add(e: &Engine, seqs: &[Seq], l: usize, p: Proj, x: &[f32], out: &mut [f32], b: &mut LoraBufs) {
    let slots = seqs.iter().map(|q| q.lora.len()).max().unwrap_or(0);
    let n: usize = seqs.iter().map(|q| q.tokens.len()).sum();
    if slots == 0 || n == 0 {
        return;
    }
    let (n_in, n_out) = (x.len() / n, out.len() / n);
    let same = |a: &Applied, o: Option<&Applied>| o.is_some_and(|o| Arc::ptr_eq(&a.adapter, &o.adapter));
    for slot in 0..slots {
        for (i, first) in seqs.iter().enumerate() {
            let Some(ap) = first.lora.get(slot) else { continue };
            // each adapter once a slot: from the first sequence using it
            if seqs[..i].iter().any(|q| same(ap, q.lora.get(slot))) {
                continue;
            }
            let Some((a, bt, own)) = ap.adapter.pair(l, p) else { continue };
            // the group: the sequences running this adapter in this slot,
            // with their first token's row
            // (kept in the buffers: a decode step allocates nothing)
            b.group.clear();
            let mut t = 0;
            for q in seqs {
                if let Some(mine) = q.lora.get(slot).filter(|o| same(ap, Some(o))) {
                    b.group.push((t, q.tokens.len(), mine.scale * own));
                }
                t += q.tokens.len();
            }
            let group = &b.group;
            let ng: usize = group.iter().map(|g| g.1).sum();
            let (t0, whole) = (group[0].0, group.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0));
            let xin = if whole {
                &x[t0 * n_in..(t0 + ng) * n_in]
            } else {
                b.x.clear();
                for &(t, n, _) in group {
                    b.x.extend_from_slice(&x[t * n_in..(t + n) * n_in]);
                }
                &b.x[..]
            };
            let r = a.n_rows;
            grow(&mut b.mid, ng * r);
            grow(&mut b.mm, ng * r);
            let serial = Engine { par: &Serial, ..*e };
            let e = if ng * r * (n_in + n_out) < SERIAL_MACS { &serial } else { e };
            matmul(e, &[(a, None)], xin, ng, &mut b.acts, &mut b.mm, &mut [&mut b.mid[..ng * r]]);
            let mut row = 0;
            for &(t, n, s) in &b.group {
                up(e, &bt, &b.mid[row * r..(row + n) * r], s, &mut out[t * n_out..(t + n) * n_out]);
                row += n;
            }
        }
    }
}

/// `out[t] += s · Bᵀ·mid[t]` for a sequence's tokens: split by tokens
/// among the workers, or a token's outputs among them (a decode step).
fn up(e: &Engine, bt: &QMatrix, mid: &[f32], s: f32, out: &mut [f32]) {
    let (r, n_out) = (bt.n_rows, bt.n_cols);
    let n = mid.len() / r;
    let workers = e.par.n_workers();
    if n >= workers || workers == 1 {
        let per = n.div_ceil(workers) * n_out;
        e.par.for_each_chunk(out, per, &|i, o| {
            let t0 = i * per / n_out;
            e.kernels.lora_up(bt, 0..n_out, &mid[t0 * r..(t0 + o.len() / n_out) * r], s, o);
        });
        return;
    }
    // fewer tokens than workers: each token's outputs in runs of 64
    for (m, o) in mid.chunks_exact(r).zip(out.chunks_exact_mut(n_out)) {
        let per = n_out.div_ceil(workers).next_multiple_of(64);
        e.par.for_each_chunk(o, per, &|i, o| {
            let c0 = i * per;
            e.kernels.lora_up(bt, c0..c0 + o.len(), m, s, o);
        });
    }
}

fn grow(v: &mut Vec<f32>, n: usize) {
    if v.len() < n {
        v.resize(n, 0.0);
    }
}
