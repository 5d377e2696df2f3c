//! AVX2 inner loops of tiled attention (`tiles::attention`, whose order
//! they keep): a tile's scores four keys at a time — the contract's 16
//! lane-strided partial sums in two 8-wide accumulators per key (multiply
//! then add), the four keys' fixed trees folded together —, `expf8` for
//! the exponentials, and each output element accumulating p·v over the
//! tile's positions in order with up to 64 elements in registers; the
//! scores' scaling and running maximum, and their sum in the contract's 16
//! lanes, eight at a time. f16 rows widen with F16C, Q8_0 rows as `q · d`
//! in f32: both exact.

use core::arch::x86_64::*;

use tern_core::backend::quant::{q8_0, QK8};
use tern_core::backend::tiles::{self, TileOps};
use tern_core::backend::{q8_0_at, scalar, Cached, KvRows, Queries, Score};

use super::cpu::Avx2;
use super::simd::{loadf, reduce16, storef};

/// `Kernels::attention_queries` on AVX2 (and AVX-512, which has no loops
/// of its own here).
pub(super) fn attention_queries(t: Avx2, qs: Queries, kv: Cached, work: &mut [f32], out: &mut [f32]) {
    tiles::attention(&t, qs, kv, work, out)
}

impl TileOps for Avx2 {
    #[inline]
    fn dots(&self, q: &[f32], rows: &[f32], st: usize, s: &mut [f32]) {
        // SAFETY: the token proves AVX2.
        unsafe { dots(q, rows, st, s) }
    }
    #[inline]
    fn scores(&self, s: &mut [f32], score: Score, m: f32) -> f32 {
        match score.softcap {
            // SAFETY: the token proves AVX2.
            None => unsafe { scaled_max(s, score.scale, m) },
            Some(_) => tiles::Plain.scores(s, score, m),
        }
    }
    #[inline]
    fn sum(&self, s: &[f32]) -> f32 {
        // SAFETY: the token proves AVX2.
        unsafe { sum(s) }
    }
    #[inline]
    fn exp_shifted(&self, s: &mut [f32], m: f32) {
        super::exp::exp_shifted(*self, s, m)
    }
    #[inline]
    fn accumulate(&self, o: &mut [f32], p: &[f32], rows: &[f32], st: usize) {
        // SAFETY: the token proves AVX2.
        unsafe { accumulate(o, p, rows, st) }
    }
    #[inline]
    fn widen(&self, x: KvRows, st: usize, len: usize, hd: usize, out: &mut [f32]) {
        // SAFETY: the token proves AVX2 and F16C.
        unsafe { widen(x, st, len, hd, out) }
    }
}

/// `s[i] = s[i] · scale`; the largest of `m` and them, NaN skipped
/// (`max(x, m)` keeps m when x is NaN; m never is).
#[target_feature(enable = "avx2")]
fn scaled_max(s: &mut [f32], scale: f32, m: f32) -> f32 {
    let n8 = s.len() / 8 * 8;
    let (sc, mut mv) = (_mm256_set1_ps(scale), _mm256_set1_ps(m));
    for c in s[..n8].chunks_exact_mut(8) {
        let x = _mm256_mul_ps(loadf(c, 0), sc);
        storef(c, 0, x);
        mv = _mm256_max_ps(x, mv);
    }
    let h = _mm_max_ps(_mm256_castps256_ps128(mv), _mm256_extractf128_ps::<1>(mv));
    let h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    let m = _mm_cvtss_f32(_mm_max_ss(h, _mm_shuffle_ps::<1>(h, h)));
    // the ragged end: the reference's loop
    tiles::Plain.scores(&mut s[n8..], Score::scaled(scale), m)
}

/// `Σ s[i]` by the contract's 16 lanes (element i into lane i mod 16,
/// each lane from 0) and its tree.
#[target_feature(enable = "avx2")]
fn sum(s: &[f32]) -> f32 {
    let n16 = s.len() / 16 * 16;
    let (mut lo, mut hi) = (_mm256_setzero_ps(), _mm256_setzero_ps());
    for c in s[..n16].chunks_exact(16) {
        lo = _mm256_add_ps(lo, loadf(c, 0));
        hi = _mm256_add_ps(hi, loadf(c, 8));
    }
    if n16 == s.len() {
        return reduce16(lo, hi);
    }
    let mut l = [0.0; 16];
    storef(&mut l, 0, lo);
    storef(&mut l, 8, hi);
    for (l, &x) in l.iter_mut().zip(&s[n16..]) {
        *l += x;
    }
    scalar::reduce16(l)
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

/// `s[i]` = the contract's dot of `q` with the row at `rows[i·st..]`.
#[target_feature(enable = "avx2")]
fn dots(q: &[f32], rows: &[f32], st: usize, s: &mut [f32]) {
    let hd = q.len();
    if !hd.is_multiple_of(16) {
        // ragged head: the reference's loop
        return tiles::Plain.dots(q, rows, st, s);
    }
    let row = |i: usize| &rows[i * st..i * st + hd];
    let n4 = s.len() / 4 * 4;
    for i in (0..n4).step_by(4) {
        let d = dots4(q, [row(i), row(i + 1), row(i + 2), row(i + 3)]);
        // SAFETY: `s[i..i + 4]` lies inside s.
        unsafe { _mm_storeu_ps(s[i..i + 4].as_mut_ptr(), d) };
    }
    for (i, s) in s.iter_mut().enumerate().skip(n4) {
        let (mut lo, mut hi) = (_mm256_setzero_ps(), _mm256_setzero_ps());
        for (qc, kc) in q.chunks_exact(16).zip(row(i).chunks_exact(16)) {
            lo = _mm256_add_ps(lo, _mm256_mul_ps(loadf(qc, 0), loadf(kc, 0)));
            hi = _mm256_add_ps(hi, _mm256_mul_ps(loadf(qc, 8), loadf(kc, 8)));
        }
        *s = reduce16(lo, hi);
    }
}

/// The contract's dots of `q` with four rows of its length (a multiple
/// of 16): lane j of key r's partial sums in `lo[r]` (j < 8) or `hi[r]`,
/// element d into lane d mod 16; then each key's tree — (j, j + 8), then
/// 4, 2, 1 — over the four keys at once.
#[inline]
#[target_feature(enable = "avx2")]
fn dots4(q: &[f32], k: [&[f32]; 4]) -> __m128 {
    let mut lo = [_mm256_setzero_ps(); 4];
    let mut hi = [_mm256_setzero_ps(); 4];
    for (c, qc) in q.chunks_exact(16).enumerate() {
        let (ql, qh) = (loadf(qc, 0), loadf(qc, 8));
        for r in 0..4 {
            let kc = &k[r][16 * c..16 * c + 16];
            lo[r] = _mm256_add_ps(lo[r], _mm256_mul_ps(ql, loadf(kc, 0)));
            hi[r] = _mm256_add_ps(hi[r], _mm256_mul_ps(qh, loadf(kc, 8)));
        }
    }
    // (j, j + 8): a key's 8 sums in one vector
    let v: [__m256; 4] = core::array::from_fn(|r| _mm256_add_ps(lo[r], hi[r]));
    // (j, j + 4): keys 0 and 1 in u01 = [k0 0..4 | k1 0..4], 2 and 3 in u23
    let u01 = _mm256_add_ps(_mm256_permute2f128_ps::<0x20>(v[0], v[1]), _mm256_permute2f128_ps::<0x31>(v[0], v[1]));
    let u23 = _mm256_add_ps(_mm256_permute2f128_ps::<0x20>(v[2], v[3]), _mm256_permute2f128_ps::<0x31>(v[2], v[3]));
    // (j, j + 2): [k0 0,1 | k2 0,1 | k1 0,1 | k3 0,1]
    let w = _mm256_add_ps(_mm256_shuffle_ps::<0b01_00_01_00>(u01, u23), _mm256_shuffle_ps::<0b11_10_11_10>(u01, u23));
    // (0, 1): [k0, k2, k0, k2 | k1, k3, k1, k3]
    let h = _mm256_hadd_ps(w, w);
    let h = _mm256_permutevar8x32_ps(h, _mm256_setr_epi32(0, 4, 1, 5, 0, 4, 1, 5));
    _mm256_castps256_ps128(h)
}

/// `o[e] += p[i] · rows[i·st + e]` over the rows in order, up to 64
/// elements of `o` in registers across them.
#[target_feature(enable = "avx2")]
fn accumulate(o: &mut [f32], p: &[f32], rows: &[f32], st: usize) {
    let hd = o.len();
    let n8 = hd / 8 * 8;
    for e0 in (0..n8).step_by(64) {
        let o = &mut o[e0..];
        let rows = &rows[e0..];
        match (n8 - e0).min(64) / 8 {
            8 => acc::<8>(o, p, rows, st),
            7 => acc::<7>(o, p, rows, st),
            6 => acc::<6>(o, p, rows, st),
            5 => acc::<5>(o, p, rows, st),
            4 => acc::<4>(o, p, rows, st),
            3 => acc::<3>(o, p, rows, st),
            2 => acc::<2>(o, p, rows, st),
            _ => acc::<1>(o, p, rows, st),
        }
    }
    if n8 < hd {
        // ragged head tail, the reference's order
        for (i, &p) in p.iter().enumerate() {
            scalar::axpy(&mut o[n8..], p, &rows[i * st + n8..i * st + hd]);
        }
    }
}

/// `accumulate` of the first 8·N elements, held in N registers.
#[inline]
#[target_feature(enable = "avx2")]
// indexed loops with constant bounds keep the sums in registers
#[allow(clippy::needless_range_loop)]
fn acc<const N: usize>(o: &mut [f32], p: &[f32], rows: &[f32], st: usize) {
    let o = &mut o[..8 * N];
    let mut a = [_mm256_setzero_ps(); N];
    for j in 0..N {
        a[j] = loadf(o, 8 * j);
    }
    for (i, &p) in p.iter().enumerate() {
        let w = _mm256_set1_ps(p);
        let row = &rows[i * st..i * st + 8 * N];
        for j in 0..N {
            a[j] = _mm256_add_ps(a[j], _mm256_mul_ps(w, loadf(row, 8 * j)));
        }
    }
    for j in 0..N {
        storef(o, 8 * j, a[j]);
    }
}

/// `len` rows of `hd` elements, `st` apart in `x`, widened into `out`.
#[target_feature(enable = "avx2,f16c")]
fn widen(x: KvRows, st: usize, len: usize, hd: usize, out: &mut [f32]) {
    let out = &mut out[..len * hd];
    match x {
        KvRows::Q8_0(q) if hd.is_multiple_of(QK8) => {
            for (i, row) in out.chunks_exact_mut(hd).enumerate() {
                for (b, o) in row.chunks_exact_mut(QK8).enumerate() {
                    let e = i * st + b * QK8;
                    let (d, _) = q8_0_at(q, e);
                    let at = e / QK8 * q8_0::BLOCK_BYTES + q8_0::QS;
                    let d = _mm256_set1_ps(d);
                    for c in 0..QK8 / 8 {
                        storef(o, 8 * c, q8x8(q, at + 8 * c, d));
                    }
                }
            }
        }
        KvRows::F16(x) if hd.is_multiple_of(8) => {
            for (i, row) in out.chunks_exact_mut(hd).enumerate() {
                for (o, h) in row.chunks_exact_mut(8).zip(x[i * st..i * st + hd].chunks_exact(8)) {
                    // SAFETY: `h` has 8 f16 = 16 bytes.
                    let w = unsafe { _mm256_cvtph_ps(_mm_loadu_si128(h.as_ptr() as *const __m128i)) };
                    storef(o, 0, w);
                }
            }
        }
        _ => tiles::Plain.widen(x, st, len, hd, out),
    }
}
