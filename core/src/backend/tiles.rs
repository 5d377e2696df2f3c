//! Attention over tiles of cached positions with an online softmax: the
//! order the numerics contract fixes, the same for every backend, which
//! supplies only the inner loops (`TileOps`).
//!
//! For one query over `n` positions, tiles of `TILE` positions from the
//! first (the last may be short), each in turn:
//!
//! 1. `s[i] = score(dot(q, k_i))`, the contract's 16-lane dot;
//! 2. `m' = max(m, s[..])` (m starts at −∞), `c = exp(m − m')` (1 when
//!    the maximum did not move);
//! 3. `p[i] = exp(s[i] − m')`;
//! 4. `l = l·c + Σp` (l starts at 0; Σ by the contract's 16-lane sum of
//!    the tile);
//! 5. `o[e] = o[e]·c` (skipped when c is 1), then `o[e] += p[i]·v_i[e]`
//!    for i in position order, a multiply and an add each (o starts at 0).
//!
//! Then `out[e] = o[e] · (1/l)`. A run of queries over the same rows works
//! tile by tile, each tile's keys and values widened once for all of them
//! (a decode step's query heads of one KV head, a prompt's queries of one
//! head), every query keeping its own order.

use core::ops::Range;

use super::{scalar, Cached, KvRows, Queries, Score};

/// Positions in a tile.
pub const TILE: usize = 32;

/// Floats of `work` skipped at most to start the widened rows on a
/// 64-byte line (a wide load from a row then stays within a line).
const ALIGN: usize = 16;

/// Scratch floats `attention` needs for `n_queries` queries of `hd`
/// elements (two tiles of rows widened, a tile's scores, and the running
/// maximum and sum of each query, after up to `ALIGN` skipped).
pub const fn work_len(hd: usize, n_queries: usize) -> usize {
    ALIGN + 2 * TILE * hd + TILE + 2 * n_queries
}

/// The inner loops of tiled attention. Each default is the reference;
/// a backend overrides them with SIMD loops of the same arithmetic.
pub trait TileOps {
    /// `s[i] = dot(q, rows[i·st..][..q.len()])`, each the contract's
    /// 16-lane dot (`scalar::dot_f32`).
    #[inline]
    fn dots(&self, q: &[f32], rows: &[f32], st: usize, s: &mut [f32]) {
        for (i, s) in s.iter_mut().enumerate() {
            *s = scalar::dot_f32(q, &rows[i * st..i * st + q.len()]);
        }
    }
    /// `s[i] = score.of(s[i])`; returns the largest of `m` and them, NaN
    /// skipped (`m` itself is never NaN; which of two equal zeros is
    /// returned does not matter, as each is only subtracted and compared).
    #[inline]
    fn scores(&self, s: &mut [f32], score: Score, m: f32) -> f32 {
        let mut m = m;
        for x in s.iter_mut() {
            *x = score.of(*x);
            // as `m.max(*x)` (NaN skipped), without a libm call
            if *x > m {
                m = *x;
            }
        }
        m
    }
    /// `Σ s[i]` by the contract's 16-lane order (`scalar::sum_f32`).
    #[inline]
    fn sum(&self, s: &[f32]) -> f32 {
        scalar::sum_f32(s)
    }
    /// `s[i] = exp(s[i] − m)`.
    #[inline]
    fn exp_shifted(&self, s: &mut [f32], m: f32) {
        scalar::exp_shifted(s, m)
    }
    /// `o[e] = o[e] · c`.
    #[inline]
    fn scale(&self, o: &mut [f32], c: f32) {
        o.iter_mut().for_each(|o| *o *= c);
    }
    /// `o[e] += p[i] · rows[i·st + e]` for i = 0, 1, ... in turn, a
    /// multiply and then an add.
    #[inline]
    fn accumulate(&self, o: &mut [f32], p: &[f32], rows: &[f32], st: usize) {
        for (i, &p) in p.iter().enumerate() {
            scalar::axpy(o, p, &rows[i * st..i * st + o.len()]);
        }
    }
    /// `len` rows of `hd` elements, `st` apart in `x`, widened to f32
    /// into `out` (rows of `hd`), as `KvRows::read`.
    #[inline]
    fn widen(&self, x: KvRows, st: usize, len: usize, hd: usize, out: &mut [f32]) {
        for (i, o) in out[..len * hd].chunks_exact_mut(hd).enumerate() {
            x.read(i * st..i * st + hd, o);
        }
    }
}

/// The reference's inner loops.
pub struct Plain;

impl TileOps for Plain {}

/// Attention of a run of queries over the same cached rows: query j
/// (`qs.q[j·stride..][..hd]`) over the first `qs.n_kv[j]` positions,
/// writing `out[j·hd..][..hd]`; `work` holds `work_len(hd, n_queries)`.
#[inline(always)]
pub fn attention<O: TileOps>(ops: &O, qs: Queries, kv: Cached, work: &mut [f32], out: &mut [f32]) {
    let nq = qs.n_kv.len();
    if nq == 0 {
        return;
    }
    let hd = out.len() / nq;
    let skip = work.as_ptr().align_offset(64).min(ALIGN);
    let work = &mut work[skip..];
    let (kw, rest) = work.split_at_mut(TILE * hd);
    let (vw, rest) = rest.split_at_mut(TILE * hd);
    let (s, rest) = rest.split_at_mut(TILE);
    let (m, rest) = rest.split_at_mut(nq);
    let l = &mut rest[..nq];
    m.fill(f32::NEG_INFINITY);
    l.fill(0.0);
    out.fill(0.0);
    let n = qs.n_kv.iter().copied().max().unwrap_or(0);
    for t0 in (0..n).step_by(TILE) {
        let len = TILE.min(n - t0);
        let (k, v, st) = tile_rows(ops, kv.from(t0), len, hd, kw, vw);
        for (j, &nj) in qs.n_kv.iter().enumerate() {
            if nj <= t0 {
                continue;
            }
            let s = &mut s[..len.min(nj - t0)];
            ops.dots(&qs.q[j * qs.stride..][..hd], k, st, s);
            let mt = ops.scores(s, qs.score, m[j]);
            let c = if mt == m[j] { 1.0 } else { libm::expf(m[j] - mt) };
            ops.exp_shifted(s, mt);
            l[j] = l[j] * c + ops.sum(s);
            let o = &mut out[j * hd..(j + 1) * hd];
            if c != 1.0 {
                ops.scale(o, c);
            }
            ops.accumulate(o, s, v, st);
            m[j] = mt;
        }
    }
    for (o, &l) in out.chunks_exact_mut(hd).zip(l.iter()) {
        // l ≥ 1 (the tile maximum's own term) once a position was seen
        if l > 0.0 {
            ops.scale(o, 1.0 / l);
        }
    }
}

/// A tile's key and value rows as f32 and the elements from one row to
/// the next: the cache's own rows when they are f32 in one run, else
/// widened into `kw` and `vw`.
#[inline(always)]
fn tile_rows<'a, O: TileOps>(
    ops: &O,
    tile: Cached<'a>,
    len: usize,
    hd: usize,
    kw: &'a mut [f32],
    vw: &'a mut [f32],
) -> (&'a [f32], &'a [f32], usize) {
    let st = tile.stride();
    let mut runs = tile.runs(len);
    if let Some((_, n, KvRows::F32(k), KvRows::F32(v))) = runs.next() {
        if n == len {
            return (k, v, st);
        }
    }
    for (t, n, k, v) in tile.runs(len) {
        let rows: Range<usize> = t * hd..(t + n) * hd;
        ops.widen(k, st, n, hd, &mut kw[rows.clone()]);
        ops.widen(v, st, n, hd, &mut vw[rows]);
    }
    (kw, vw, hd)
}

#[cfg(test)]
mod tests {
    use alloc::vec;
    use alloc::vec::Vec;

    use super::*;

    /// The tiled online softmax against the two-pass softmax in f64: tiles
    /// whose maximum rises, falls and stays, queries that see 1, 31, 32,
    /// 33 and 100 positions, with and without a softcap.
    #[test]
    fn tiles_equal_a_plain_softmax() {
        let (hd, n) = (16, 100);
        let f = |i: usize, s: f32| (((i * 7919 + 13) % 2003) as f32 / 1001.5 - 1.0) * s;
        // keys grow along the positions, so later tiles raise the maximum
        let k: Vec<f32> = (0..n * hd).map(|i| f(i, 1.0) + (i / hd) as f32 * 0.05).collect();
        let v: Vec<f32> = (0..n * hd).map(|i| f(i + 5, 2.0)).collect();
        let lens = [1, 31, 32, 33, 100];
        // even queries lean on the growing keys (the maximum moves at
        // every tile), odd ones against them (it stays in the first)
        let q: Vec<f32> =
            (0..lens.len() * hd).map(|i| f(i + 9, 1.0).abs() * if i / hd % 2 == 0 { 1.0 } else { -1.0 }).collect();
        for score in [Score::scaled(0.25), Score { scale: 0.25, softcap: Some(2.0) }] {
            let kv = Cached::dense(KvRows::F32(&k), KvRows::F32(&v), hd);
            let qs = Queries { q: &q, stride: hd, n_kv: &lens, score };
            let mut out = vec![0.0; lens.len() * hd];
            attention(&Plain, qs, kv, &mut vec![0.0; work_len(hd, lens.len())], &mut out);
            for (j, &len) in lens.iter().enumerate() {
                let qj = &q[j * hd..(j + 1) * hd];
                let s: Vec<f64> = (0..len)
                    .map(|t| {
                        let d: f64 = (0..hd).map(|e| qj[e] as f64 * k[t * hd + e] as f64).sum();
                        score.capped((d * 0.25) as f32) as f64
                    })
                    .collect();
                let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let sum: f64 = s.iter().map(|x| libm::exp(x - m)).sum();
                for e in 0..hd {
                    let want: f64 = (0..len).map(|t| libm::exp(s[t] - m) / sum * v[t * hd + e] as f64).sum();
                    let got = out[j * hd + e] as f64;
                    assert!((got - want).abs() < 1e-5, "query {j} ({len} positions), element {e}: {got} vs {want}");
                }
            }
        }
    }
}
