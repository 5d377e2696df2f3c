//! AVX2 attention of one head over cached f32 or f16 rows, in the scalar
//! reference's order: each score is the contract's 16-lane dot (two 8-wide
//! accumulators, multiply then add) reduced by its fixed tree; the softmax
//! is the reference's own code; each output element accumulates p·v over
//! positions 0, 1, 2, ... — eight elements per instruction. f16 rows widen
//! with F16C, Q8_0 rows as `q · d` in f32: both exact.

use core::arch::x86_64::*;

use tern_core::backend::{q8_0_at, scalar, Cached, KvRows, KvType, Queries, Runs, Score};
use tern_core::quant::{q8_0, QK8};

use super::cpu::Avx2;
use super::simd::{reduce16, transpose8};

/// Eight elements of a row from element `i`, widened to f32.
#[inline]
#[target_feature(enable = "avx2,f16c")]
pub(super) fn load8(x: KvRows, i: usize) -> __m256 {
    match x {
        KvRows::F32(x) => {
            let x = &x[i..i + 8];
            // SAFETY: `x` has 8 elements.
            unsafe { _mm256_loadu_ps(x.as_ptr()) }
        }
        KvRows::F16(x) => {
            let x = &x[i..i + 8];
            // SAFETY: `x` has 8 f16 = 16 bytes.
            unsafe { _mm256_cvtph_ps(_mm_loadu_si128(x.as_ptr() as *const __m128i)) }
        }
        KvRows::Q8_0(x) => load8_q8(x, i),
    }
}

/// `load8` of Q8_0 rows (apart, so the f32 and f16 cases stay small
/// enough to inline into every loop).
#[inline(never)]
#[target_feature(enable = "avx2")]
fn load8_q8(x: &[u8], i: usize) -> __m256 {
    if i % QK8 > QK8 - 8 {
        let mut row = [0.0f32; 8];
        KvRows::Q8_0(x).read(i..i + 8, &mut row);
        return loadf(&row, 0);
    }
    // the 8 quants lie in one block: widened, times its scale
    let (d, _) = q8_0_at(x, i);
    q8x8(x, i / QK8 * q8_0::BLOCK_BYTES + q8_0::QS + i % QK8, _mm256_set1_ps(d))
}

/// The 8 quants at byte `at` of Q8_0 rows, times the scale `d`.
#[inline]
#[target_feature(enable = "avx2")]
fn q8x8(x: &[u8], at: usize, d: __m256) -> __m256 {
    let q = &x[at..at + 8];
    // SAFETY: `q` has 8 bytes.
    let q = unsafe { _mm_loadl_epi64(q.as_ptr() as *const __m128i) };
    _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d)
}

#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn loadf(x: &[f32], i: usize) -> __m256 {
    let x = &x[i..i + 8];
    // SAFETY: `x` has 8 elements.
    unsafe { _mm256_loadu_ps(x.as_ptr()) }
}

/// The contract's dot of `q` with the row of `k` starting at `at`.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn dot(q: &[f32], k: KvRows, at: usize) -> f32 {
    let hd = q.len();
    let n16 = hd / 16 * 16;
    let (mut lo, mut hi) = (_mm256_setzero_ps(), _mm256_setzero_ps());
    for i in (0..n16).step_by(16) {
        lo = _mm256_add_ps(lo, _mm256_mul_ps(loadf(q, i), load8(k, at + i)));
        hi = _mm256_add_ps(hi, _mm256_mul_ps(loadf(q, i + 8), load8(k, at + i + 8)));
    }
    if n16 == hd {
        return reduce16(lo, hi);
    }
    // ragged head: finish the lanes the reference's way
    let mut l = [0.0f32; 16];
    // SAFETY: `l` holds 16 f32.
    unsafe {
        _mm256_storeu_ps(l.as_mut_ptr(), lo);
        _mm256_storeu_ps(l.as_mut_ptr().add(8), hi);
    }
    let mut row = [0.0f32; 16];
    k.read(at + n16..at + hd, &mut row[..hd - n16]);
    scalar::reduce16_tail(l, &q[n16..], &row[..hd - n16])
}

/// As `scalar::attention_head`.
pub(super) fn attention_head(
    _: Avx2,
    q: &[f32],
    kv: Cached,
    n_kv: usize,
    score: Score,
    s: &mut [f32],
    out: &mut [f32],
) {
    // SAFETY: the token proves AVX2 and F16C.
    unsafe { head(q, kv, n_kv, score, s, out) }
}

#[target_feature(enable = "avx2,f16c")]
fn head(q: &[f32], kv: Cached, n_kv: usize, score: Score, scores: &mut [f32], out: &mut [f32]) {
    let scores = &mut scores[..n_kv];
    let mut max = f32::NEG_INFINITY;
    let st = kv.stride();
    let mut runs = kv.runs(n_kv);
    while let Some((t, len, k, _)) = runs.next() {
        prefetch_next(runs, st, q.len(), false);
        for (i, s) in scores[t..t + len].iter_mut().enumerate() {
            *s = score.of(dot(q, k, i * st));
            max = max.max(*s);
        }
    }
    let inv = super::exp::softmax_exp(scores, max);
    weighted_sum(scores, inv, kv, out);
}

/// Rows a run's first prefetch covers.
const PREFETCH_ROWS: usize = 16;

/// Ask for the first rows of the next run (the K rows, or V) before they
/// are read: a run's rows are contiguous, but the next run's may be
/// anywhere (another KV block), where the hardware's stream prefetcher
/// must first miss to find them.
#[inline]
#[target_feature(enable = "avx2")]
fn prefetch_next(mut runs: Runs, st: usize, hd: usize, value: bool) {
    let Some((_, len, k, v)) = runs.next() else { return };
    let rows = if value { v } else { k };
    for i in 0..len.min(PREFETCH_ROWS) {
        let (p, bytes) = match rows {
            KvRows::F32(x) => (x[i * st..].as_ptr() as *const i8, 4 * hd),
            KvRows::F16(x) => (x[i * st..].as_ptr() as *const i8, 2 * hd),
            KvRows::Q8_0(x) => (x[KvType::Q8_0.bytes(i * st)..].as_ptr() as *const i8, KvType::Q8_0.bytes(hd)),
        };
        for line in (0..bytes).step_by(64) {
            // SAFETY: a prefetch is a hint: it reads nothing and never
            // faults, whatever the address. (A safe function from Rust
            // 1.90 on; unsafe in the minimum, 1.89.)
            #[allow(unused_unsafe)]
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(line))
            };
        }
    }
}

/// `out = Σ_t (scores[t] · inv) · v_t` over positions in order, as the
/// reference's `axpy` loop (out starts at zero).
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn weighted_sum(scores: &[f32], inv: f32, kv: Cached, out: &mut [f32]) {
    let (hd, st) = (out.len(), kv.stride());
    let n8 = hd / 8 * 8;
    let mut row = [0.0f32; 8];
    for i0 in (0..hd).step_by(64) {
        // up to 64 output elements in registers across all positions: 8
        // independent chains, so a position costs throughput, not latency
        let w = (hd - i0).min(64);
        let mut acc = [_mm256_setzero_ps(); 8];
        let nv = w / 8;
        let mut runs = kv.runs(scores.len());
        while let Some((t, len, _, v)) = runs.next() {
            prefetch_next(runs, st, hd, true);
            for (i, &e) in scores[t..t + len].iter().enumerate() {
                let p = _mm256_set1_ps(e * inv);
                for (j, a) in acc[..nv].iter_mut().enumerate() {
                    *a = _mm256_add_ps(*a, _mm256_mul_ps(p, load8(v, i * st + i0 + 8 * j)));
                }
            }
        }
        for (j, a) in acc[..nv].iter().enumerate() {
            // SAFETY: `out` has hd ≥ i0 + 8(j + 1) elements.
            unsafe { _mm256_storeu_ps(out[i0 + 8 * j..].as_mut_ptr(), *a) };
        }
        if i0 + w == hd && n8 < hd {
            // ragged head tail, scalar in the same order
            let tail = &mut out[n8..hd];
            tail.fill(0.0);
            for (t, len, _, v) in kv.runs(scores.len()) {
                for (i, &e) in scores[t..t + len].iter().enumerate() {
                    let p = e * inv;
                    v.read(i * st + n8..i * st + hd, &mut row[..hd - n8]);
                    for (o, &vv) in tail.iter_mut().zip(&row) {
                        *o += p * vv;
                    }
                }
            }
        }
    }
}

/// Fewest queries the keys are transposed for.
pub(super) const TRANSPOSE_MIN: usize = 8;

/// A run of queries over the same rows (`Kernels::attention_queries`):
/// the keys are transposed once, 8 positions to a vector, so each query's
/// scores come 8 positions at a time — the 16 lane-strided partial sums of
/// the contract kept in 16 vectors (lane = position) and reduced by its
/// tree, with no horizontal sums; the values are widened to f32 once.
pub(super) fn attention_queries(_: Avx2, qs: Queries, kv: Cached, scores: &mut [f32], out: &mut [f32]) {
    // SAFETY: the token proves AVX2, FMA and F16C.
    unsafe { queries(qs, kv, scores, out) }
}

#[target_feature(enable = "avx2,fma,f16c")]
fn queries(qs: Queries, kv: Cached, scores: &mut [f32], out: &mut [f32]) {
    let (n_kv, score) = (qs.n_kv, qs.score);
    let hd = out.len() / n_kv.len().max(1);
    // the transposition pays for itself over a prompt's run of queries, not
    // over the few heads of a decode step that share a KV head (F16C widens
    // a row in one instruction anyway)
    if n_kv.len() < TRANSPOSE_MIN || !hd.is_multiple_of(16) {
        if !kv.is_f32() && hd.is_multiple_of(16) && (2..=GROUP_MAX).contains(&n_kv.len()) {
            return grouped(qs, kv, hd, out);
        }
        qs.each(out, |q, n, o| head(q, kv, n, score, scores, o));
        return;
    }
    let max_kv = n_kv.iter().copied().max().unwrap_or(0);
    let nb = max_kv.div_ceil(8);
    let (kt, vf) = keys_and_values(kv, max_kv, hd);
    let mut sc = vec![0.0f32; nb * 8];
    for (j, (&n, o)) in n_kv.iter().zip(out.chunks_exact_mut(hd)).enumerate() {
        let qj = &qs.q[j * qs.stride..j * qs.stride + hd];
        for (b, s8) in sc.chunks_exact_mut(8).enumerate().take(n.div_ceil(8)) {
            let s = _mm256_mul_ps(scores8(qj, &kt[b * 8 * hd..(b + 1) * 8 * hd]), _mm256_set1_ps(score.scale));
            // SAFETY: `s8` holds 8 f32.
            unsafe { _mm256_storeu_ps(s8.as_mut_ptr(), s) };
        }
        let s = &mut sc[..n];
        let inv = softmax(s, score);
        weighted_sum(s, inv, Cached::dense(KvRows::F32(&vf), KvRows::F32(&vf), hd), o);
    }
}

std::thread_local! {
    /// `grouped`'s scores (a row per query) and a run's rows widened.
    static GROUP: core::cell::RefCell<(Vec<f32>, Vec<f32>)> = const { core::cell::RefCell::new((Vec::new(), Vec::new())) };
}

/// Most queries `grouped` takes (fewer than `TRANSPOSE_MIN`).
const GROUP_MAX: usize = TRANSPOSE_MIN - 1;

/// A few queries over the same narrow (f16, Q8_0) rows — a decode step's
/// query heads of one KV head: each run of rows is widened to f32 once
/// for all of them, keys then values, so the cache is read once per step
/// and KV head rather than once per query head. Each query's numbers are
/// `head`'s: its scores in position order, the reference's softmax, and
/// each output element summed over positions in order (the partial sums
/// stay in `out` from one run to the next).
#[target_feature(enable = "avx2,f16c")]
fn grouped(qs: Queries, kv: Cached, hd: usize, out: &mut [f32]) {
    let (n_kv, score) = (qs.n_kv, qs.score);
    let max_kv = n_kv.iter().copied().max().unwrap_or(0);
    let st = kv.stride();
    GROUP.with_borrow_mut(|(sc, rows)| {
        sc.resize(n_kv.len() * max_kv, 0.0);
        let mut max = [f32::NEG_INFINITY; GROUP_MAX];
        let mut runs = kv.runs(max_kv);
        while let Some((t, len, k, _)) = runs.next() {
            prefetch_next(runs, st, hd, false);
            widen(k, st, len, hd, rows);
            for (j, &n) in n_kv.iter().enumerate() {
                let q = &qs.q[j * qs.stride..j * qs.stride + hd];
                for i in 0..len.min(n.saturating_sub(t)) {
                    let s = score.of(dot(q, KvRows::F32(rows), i * hd));
                    sc[j * max_kv + t + i] = s;
                    max[j] = max[j].max(s);
                }
            }
        }
        let mut inv = [0.0f32; GROUP_MAX];
        for (j, &n) in n_kv.iter().enumerate() {
            inv[j] = super::exp::softmax_exp(&mut sc[j * max_kv..][..n], max[j]);
        }
        out.fill(0.0);
        let mut runs = kv.runs(max_kv);
        while let Some((t, len, _, v)) = runs.next() {
            prefetch_next(runs, st, hd, true);
            widen(v, st, len, hd, rows);
            for (j, (&n, o)) in n_kv.iter().zip(out.chunks_exact_mut(hd)).enumerate() {
                let m = len.min(n.saturating_sub(t));
                accumulate(&sc[j * max_kv + t..][..m], inv[j], rows, o);
            }
        }
    })
}

/// `len` rows of `hd` elements, `st` apart in `x`, widened into `out`.
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn widen(x: KvRows, st: usize, len: usize, hd: usize, out: &mut Vec<f32>) {
    out.resize(len * hd, 0.0);
    match x {
        KvRows::Q8_0(q) => {
            for (i, row) in out.chunks_exact_mut(hd).enumerate() {
                for (b, o) in row.chunks_exact_mut(QK8).enumerate() {
                    let e = i * st + b * QK8;
                    let (d, _) = q8_0_at(q, e);
                    let at = e / QK8 * q8_0::BLOCK_BYTES + q8_0::QS;
                    let d = _mm256_set1_ps(d);
                    for c in 0..QK8 / 8 {
                        // SAFETY: `o` has 32 floats.
                        unsafe { _mm256_storeu_ps(o[8 * c..].as_mut_ptr(), q8x8(q, at + 8 * c, d)) };
                    }
                }
            }
        }
        _ => {
            for (i, row) in out.chunks_exact_mut(hd).enumerate() {
                for c in (0..hd).step_by(8) {
                    // SAFETY: `row` has hd ≥ c + 8 elements.
                    unsafe { _mm256_storeu_ps(row[c..].as_mut_ptr(), load8(x, i * st + c)) };
                }
            }
        }
    }
}

/// `out += Σ_i (p[i] · inv) · rows[i]` over the rows in order, each
/// element's sum as `weighted_sum`'s (a multiply, then an add).
#[inline]
#[target_feature(enable = "avx2")]
fn accumulate(p: &[f32], inv: f32, rows: &[f32], out: &mut [f32]) {
    let hd = out.len();
    for i0 in (0..hd).step_by(64) {
        let nv = (hd - i0).min(64) / 8;
        let mut acc = [_mm256_setzero_ps(); 8];
        for (j, a) in acc[..nv].iter_mut().enumerate() {
            *a = loadf(out, i0 + 8 * j);
        }
        for (i, &e) in p.iter().enumerate() {
            let w = _mm256_set1_ps(e * inv);
            for (j, a) in acc[..nv].iter_mut().enumerate() {
                *a = _mm256_add_ps(*a, _mm256_mul_ps(w, loadf(rows, i * hd + i0 + 8 * j)));
            }
        }
        for (j, a) in acc[..nv].iter().enumerate() {
            // SAFETY: `out` has hd ≥ i0 + 8(j + 1) elements.
            unsafe { _mm256_storeu_ps(out[i0 + 8 * j..].as_mut_ptr(), *a) };
        }
    }
}

/// Scaled dots → softcapped (if the model says) → `exp(s − max)` in
/// place; returns 1 / Σ, as the reference.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn softmax(s: &mut [f32], score: Score) -> f32 {
    score.cap_all(s);
    let mut max = f32::NEG_INFINITY;
    for &x in s.iter() {
        max = max.max(x);
    }
    super::exp::softmax_exp(s, max)
}

/// The first `n` keys transposed (`transposed_keys`) and values widened
/// to f32 rows of `hd`, for a run of queries to share.
#[target_feature(enable = "avx2,f16c")]
pub(super) fn keys_and_values(kv: Cached, n: usize, hd: usize) -> (Vec<f32>, Vec<f32>) {
    let kt = transposed_keys(kv, n, hd);
    let mut vf = vec![0.0f32; n * hd];
    let st = kv.stride();
    for (t, len, _, v) in kv.runs(n) {
        for (i, row) in vf[t * hd..(t + len) * hd].chunks_exact_mut(hd).enumerate() {
            for d in (0..hd).step_by(8) {
                // SAFETY: `row` has hd ≥ d + 8 elements.
                unsafe { _mm256_storeu_ps(row[d..].as_mut_ptr(), load8(v, i * st + d)) };
            }
        }
    }
    (kt, vf)
}

/// Keys 0..n as f32, 8 positions to a vector: element d of position
/// 8b + p at `(b · hd + d) · 8 + p` (positions past n are zero).
#[inline]
#[target_feature(enable = "avx2,f16c")]
fn transposed_keys(kv: Cached, n: usize, hd: usize) -> Vec<f32> {
    let nb = n.div_ceil(8);
    let mut kt = vec![0.0f32; nb * 8 * hd];
    for b in 0..nb {
        let keys: [KvRows; 8] = core::array::from_fn(|p| kv.key((8 * b + p).min(n - 1)));
        for d0 in (0..hd).step_by(8) {
            let mut rows = [_mm256_setzero_si256(); 8];
            for (p, r) in rows.iter_mut().enumerate().take(n - 8 * b) {
                *r = _mm256_castps_si256(load8(keys[p], d0));
            }
            let cols = transpose8(&rows);
            for (i, c) in cols.iter().enumerate() {
                let at = (b * hd + d0 + i) * 8;
                // SAFETY: `kt[at..at + 8]` lies inside kt.
                unsafe { _mm256_storeu_si256(kt[at..at + 8].as_mut_ptr() as *mut __m256i, *c) };
            }
        }
    }
    kt
}

/// The scores of 8 positions (keys transposed, `kt[d · 8 + p]`): lane p
/// gets the contract's dot of `q` with key p — element d into partial
/// sum d mod 16, then the fixed tree.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
// indexed loops with constant bounds keep the 16 partial sums in registers
#[allow(clippy::needless_range_loop)]
fn scores8(q: &[f32], kt: &[f32]) -> __m256 {
    let hd = q.len();
    let mut acc = [_mm256_setzero_ps(); 16];
    for d0 in (0..hd).step_by(16) {
        for l in 0..16 {
            let kv = loadf(kt, (d0 + l) * 8);
            acc[l] = _mm256_add_ps(acc[l], _mm256_mul_ps(_mm256_set1_ps(q[d0 + l]), kv));
        }
    }
    for w in [8, 4, 2, 1] {
        for j in 0..w {
            acc[j] = _mm256_add_ps(acc[j], acc[j + w]);
        }
    }
    acc[0]
}
