//! Attention of one head in SIMD128, cached rows widened as they are used
//! (no row buffer): scores by the contract's 16-lane dot and tree, the
//! reference's softmax (libm's exp, four lanes at a time: `exp.rs`), then
//! the weighted sum element by element — bit for bit
//! `scalar::attention_head`.

use core::arch::wasm32::*;

use tern_core::backend::{scalar, Cached, KvRows, Queries, Score};

use super::v;

/// Elements `at..at + 8` of cached rows as two f32 vectors.
#[inline(always)]
fn load8(rows: &KvRows, at: usize) -> (v128, v128) {
    match rows {
        KvRows::F32(x) => (v::load(x, at), v::load(x, at + 4)),
        KvRows::F16(x) => {
            let bits: &[u16] = half::slice::HalfFloatSliceExt::reinterpret_cast(*x);
            let h = v::load(bits, at);
            (v::f16_to_f32(u32x4_extend_low_u16x8(h)), v::f16_to_f32(u32x4_extend_high_u16x8(h)))
        }
        KvRows::Q8_0(_) => {
            let mut row = [0.0f32; 8];
            super::float::read(rows, at..at + 8, &mut row);
            (v::load(&row, 0), v::load(&row, 4))
        }
    }
}

/// Whether this path takes a head of `hd` (whole 16-lane chunks).
pub fn handles(hd: usize) -> bool {
    hd % 16 == 0 && hd <= scalar::MAX_HEAD_DIM
}

pub fn head(q: &[f32], kv: Cached, n_kv: usize, score: Score, scores: &mut [f32], out: &mut [f32]) {
    let (hd, st) = (q.len(), kv.stride());
    let scores = &mut scores[..n_kv];
    let mut max = f32::NEG_INFINITY;
    for (t, len, k, _) in kv.runs(n_kv) {
        for (i, s) in scores[t..t + len].iter_mut().enumerate() {
            let base = i * st;
            let mut l = [f32x4_splat(0.0); 4];
            for c in (0..hd).step_by(16) {
                let (k0, k1) = load8(&k, base + c);
                let (k2, k3) = load8(&k, base + c + 8);
                for (j, kj) in [k0, k1, k2, k3].into_iter().enumerate() {
                    l[j] = f32x4_add(l[j], f32x4_mul(v::load(q, c + 4 * j), kj));
                }
            }
            *s = score.of(v::reduce16(l));
            // as `max.max(*s)` (NaNs skipped), without its libm call
            if *s > max {
                max = *s;
            }
        }
    }
    let inv = super::exp::softmax_exp(scores, max);
    out.fill(0.0);
    for (t, len, _, vr) in kv.runs(n_kv) {
        for (i, &e) in scores[t..t + len].iter().enumerate() {
            let p = f32x4_splat(e * inv);
            let base = i * st;
            for c in (0..hd).step_by(8) {
                let (v0, v1) = load8(&vr, base + c);
                let o0 = f32x4_add(v::load(out, c), f32x4_mul(p, v0));
                let o1 = f32x4_add(v::load(out, c + 4), f32x4_mul(p, v1));
                v::store(out, c, o0);
                v::store(out, c + 4, o1);
            }
        }
    }
}

std::thread_local! {
    /// A head's cached K and V rows widened to f32 for a run of queries.
    static KV: core::cell::RefCell<(Vec<f32>, Vec<f32>)> = const { core::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Whether a run of queries is worth widening the rows once for: f16 rows
/// of a head `head` takes, more than one query.
pub fn widens(kv: Cached, hd: usize, n_queries: usize) -> bool {
    !kv.is_f32() && handles(hd) && n_queries > 1
}

/// A run of queries over the same cached rows (`Kernels::attention_queries`,
/// when `widens`): the rows are widened once for all of them, then each
/// query is `head` over f32 rows (widening is exact, so the same bits).
pub fn queries(qs: Queries, kv: Cached, scores: &mut [f32], out: &mut [f32]) {
    let hd = out.len() / qs.n_kv.len().max(1);
    let n = qs.n_kv.iter().copied().max().unwrap_or(0);
    KV.with_borrow_mut(|(kf, vf)| {
        kf.resize(n * hd, 0.0);
        vf.resize(n * hd, 0.0);
        for t in 0..n {
            for (rows, buf) in [(kv.key(t), &mut *kf), (kv.value(t), &mut *vf)] {
                for c in (0..hd).step_by(8) {
                    let (a, b) = load8(&rows, c);
                    v::store(buf, t * hd + c, a);
                    v::store(buf, t * hd + c + 4, b);
                }
            }
        }
        let wide = Cached::dense(KvRows::F32(kf), KvRows::F32(vf), hd);
        qs.each(out, |q, n, o| head(q, wide, n, qs.score, scores, o));
    })
}
