//! Helpers the x86 kernels share: loads, horizontal sums, transposes,
//! prefetch hints, and laying a tile of results out by row. All need AVX2
//! (their callers are AVX2 `target_feature` functions).

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::backend::{scalar, Acts, QMatrix};

/// Rows in a group summed per row (each row's dot summed horizontally).
pub(super) const R: usize = 4;
/// Rows in a transposed group (8 rows, one per lane).
pub(super) const ROWS: usize = 8;
/// Tokens per tile of the AVX2 kernels: each weight block is unpacked once
/// per tile.
pub(super) const TILE: usize = 4;
/// Tokens per tile where AVX-512's 32 registers allow a wider one; also
/// the fewest tokens for which the transposed 8-row kernels pay off.
pub(super) const PREFILL_TILE: usize = 8;
/// How far ahead in each row to prefetch (bytes).
pub(super) const PREFETCH: usize = 8192;

/// The f16 at byte `o` of each of the four rows, as four f32 (exact). A
/// macro so it is always inlined into the (F16C) kernel using it.
macro_rules! f16x4 {
    ($rws:expr, $o:expr) => {{
        let (rws, o): (&[&[u8]; 4], usize) = ($rws, $o);
        let h = |i: usize| i16::from_le_bytes([rws[i][o], rws[i][o + 1]]);
        _mm_cvtph_ps(_mm_setr_epi16(h(0), h(1), h(2), h(3), 0, 0, 0, 0))
    }};
}
pub(super) use f16x4;

/// The f16 at byte `o` of each of the 8 rows, as 8 f32 (exact). A macro
/// so it is always inlined into the (F16C) kernel using it: as a function
/// it stayed a call in the decode loop (6 % of SmolLM2's decode).
macro_rules! f16x8 {
    ($rws:expr, $o:expr) => {{
        let (rws, o): (&[&[u8]; 8], usize) = ($rws, $o);
        let h = |i: usize| i16::from_le_bytes([rws[i][o], rws[i][o + 1]]);
        _mm256_cvtph_ps(_mm_setr_epi16(h(0), h(1), h(2), h(3), h(4), h(5), h(6), h(7)))
    }};
}
pub(super) use f16x8;

/// 32 bytes from the start of `p`.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn load32(p: &[i8]) -> __m256i {
    let p = &p[..32];
    // SAFETY: `p` has 32 bytes.
    unsafe { _mm256_loadu_si256(p.as_ptr() as *const __m256i) }
}

/// 32 bytes of `b` from byte `at`.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn load32_at(b: &[u8], at: usize) -> __m256i {
    let b = &b[at..at + 32];
    // SAFETY: `b` has 32 bytes.
    unsafe { _mm256_loadu_si256(b.as_ptr() as *const __m256i) }
}

/// 16 bytes of `b` from byte `at`.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn load16_at(b: &[u8], at: usize) -> __m128i {
    let b = &b[at..at + 16];
    // SAFETY: `b` has 16 bytes.
    unsafe { _mm_loadu_si128(b.as_ptr() as *const __m128i) }
}

/// The sum of one 8×i32 vector.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn hsum1(v: __m256i) -> i32 {
    let s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256::<1>(v));
    let s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
    _mm_cvtsi128_si32(_mm_add_epi32(s, _mm_shuffle_epi32::<0b01>(s)))
}

/// Sum each of four 8×i32 vectors: [Σa, Σb, Σc, Σd].
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn hsum4(a: __m256i, b: __m256i, c: __m256i, d: __m256i) -> __m128i {
    let ab = _mm256_hadd_epi32(a, b);
    let cd = _mm256_hadd_epi32(c, d);
    let s = _mm256_hadd_epi32(ab, cd);
    _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256::<1>(s))
}

/// The 8 sums of eight 8×i32 vectors, in order.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn hsum8(p: &[__m256i; 8]) -> __m256i {
    let q0 = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    let q1 = _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]), _mm256_hadd_epi32(p[6], p[7]));
    // q0: rows 0-3 over lanes 0-3 (low half) and 4-7 (high half); q1 rows 4-7
    _mm256_add_epi32(_mm256_permute2x128_si256::<0x20>(q0, q1), _mm256_permute2x128_si256::<0x31>(q0, q1))
}

/// Eight f32 from `x[i..]`.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn loadf(x: &[f32], i: usize) -> __m256 {
    let x = &x[i..i + 8];
    // SAFETY: `x` has 8 elements.
    unsafe { _mm256_loadu_ps(x.as_ptr()) }
}

/// Eight f32 to `x[i..]`.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn storef(x: &mut [f32], i: usize, v: __m256) {
    let x = &mut x[i..i + 8];
    // SAFETY: `x` has 8 elements.
    unsafe { _mm256_storeu_ps(x.as_mut_ptr(), v) }
}

/// The contract's `reduce16` of lanes (lo = 0..8, hi = 8..16): (j + 8),
/// then 4, 2, 1.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn reduce16(lo: __m256, hi: __m256) -> f32 {
    let a = _mm256_add_ps(lo, hi);
    let b = _mm_add_ps(_mm256_castps256_ps128(a), _mm256_extractf128_ps::<1>(a));
    let c = _mm_add_ps(b, _mm_movehl_ps(b, b));
    _mm_cvtss_f32(_mm_add_ss(c, _mm_shuffle_ps::<1>(c, c)))
}

/// Eight 8-dword vectors transposed: lane i of `v[k]` is dword k of
/// `w[i]` (for 32-byte blocks: bytes 4k..4k+4 of row i).
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn transpose8(w: &[__m256i; 8]) -> [__m256i; 8] {
    let t: [__m256i; 8] = core::array::from_fn(|i| {
        let (x, y) = (w[i / 2 * 2], w[i / 2 * 2 + 1]);
        if i % 2 == 0 {
            _mm256_unpacklo_epi32(x, y)
        } else {
            _mm256_unpackhi_epi32(x, y)
        }
    });
    // u[4h + k]: rows 4h..4h+4, dword k in the low half and k + 4 in the high
    let u: [__m256i; 8] = core::array::from_fn(|i| {
        let (h, k) = (i / 4, i % 4);
        let (x, y) = (t[4 * h + k / 2], t[4 * h + 2 + k / 2]);
        if k % 2 == 0 {
            _mm256_unpacklo_epi64(x, y)
        } else {
            _mm256_unpackhi_epi64(x, y)
        }
    });
    core::array::from_fn(|k| {
        if k < 4 {
            _mm256_permute2x128_si256::<0x20>(u[k], u[4 + k])
        } else {
            _mm256_permute2x128_si256::<0x31>(u[k - 4], u[k])
        }
    })
}

/// Activation bytes `4k..4k + 4` of a 32-byte run, for broadcasting to
/// every lane.
#[inline(always)]
pub(super) fn bcast(q: &[i8; 32], k: usize) -> i32 {
    i32::from_le_bytes([q[4 * k] as u8, q[4 * k + 1] as u8, q[4 * k + 2] as u8, q[4 * k + 3] as u8])
}

/// Hint the cache to fetch byte `o` of each row (a hint only: addresses
/// past a row's end are never dereferenced).
#[inline(always)]
pub(super) fn prefetch<const N: usize>(rws: &[&[u8]; N], o: usize) {
    for r in rws {
        let p = r.as_ptr().wrapping_add(o) as *const i8;
        // SAFETY: prefetch never faults and reads nothing observable.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p) };
    }
}

/// Four f32 lanes as an array.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn to_array(v: __m128) -> [f32; 4] {
    let mut o = [0.0f32; 4];
    // SAFETY: `o` holds four f32.
    unsafe { _mm_storeu_ps(o.as_mut_ptr(), v) };
    o
}

/// The rows of `rows` in groups of four through `group(rows, out)`, each
/// group's outputs `out[row * n_tok + token]`; the last rows (fewer than
/// four) through the reference.
#[inline(always)]
pub(super) fn each_group4(
    w: &QMatrix,
    x: Acts,
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
    mut group: impl FnMut(&[&[u8]; R], &mut [f32]),
) {
    let n_full = rows.len() / R * R;
    for g in 0..n_full / R {
        let r0 = rows.start + g * R;
        let rws = [w.row(r0), w.row(r0 + 1), w.row(r0 + 2), w.row(r0 + 3)];
        group(&rws, &mut out[g * R * n_tok..(g + 1) * R * n_tok]);
    }
    if n_full < rows.len() {
        let tail = rows.start + n_full..rows.end;
        scalar::matmul_rows(w, x, n_tok, tail, &mut out[n_full * n_tok..]);
    }
}

/// Run `tile(t0, nt)` over the tokens in tiles of `NT` and lay its
/// [token][row] results out as `out[row * n_tok + token]` (four rows).
#[inline(always)]
pub(super) fn tiles<const NT: usize>(
    n_tok: usize,
    out: &mut [f32],
    mut tile: impl FnMut(usize, usize) -> [[f32; 4]; NT],
) {
    for t0 in (0..n_tok).step_by(NT) {
        let nt = NT.min(n_tok - t0);
        for (j, acc) in tile(t0, nt).into_iter().take(nt).enumerate() {
            for (i, v) in acc.into_iter().enumerate() {
                out[i * n_tok + t0 + j] = v;
            }
        }
    }
}

/// Every whole 8-row group of `rows` through `tile(rows, t0, nt)` for the
/// tokens in tiles of `NT`; the results (8 rows per vector) laid out as
/// `out[row * n_tok + token]`. Returns how many rows it did. A group's
/// tiles come one after another from token 0 (`t0 == 0` starts a new
/// group: the AVX2 tiles lay its blocks out then, once for all its tiles).
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn each_tile8<const NT: usize>(
    w: &QMatrix,
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
    mut tile: impl FnMut(&[&[u8]; ROWS], usize, usize) -> [__m256; NT],
) -> usize {
    let n8 = rows.len() / ROWS * ROWS;
    for g in 0..n8 / ROWS {
        let r0 = rows.start + g * ROWS;
        let rws: [&[u8]; ROWS] = core::array::from_fn(|i| w.row(r0 + i));
        for t0 in (0..n_tok).step_by(NT) {
            let nt = NT.min(n_tok - t0);
            scatter8(&mut out[g * ROWS * n_tok..], n_tok, t0, &tile(&rws, t0, nt)[..nt]);
        }
    }
    n8
}

/// Tokens `t0..` of 8 rows (one vector a token, a row a lane) laid out as
/// `out[row * n_tok + token]`.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn scatter8(out: &mut [f32], n_tok: usize, t0: usize, tokens: &[__m256]) {
    for (j, v) in tokens.iter().enumerate() {
        let mut o = [0.0f32; ROWS];
        // SAFETY: `o` holds 8 f32.
        unsafe { _mm256_storeu_ps(o.as_mut_ptr(), *v) };
        for (i, &x) in o.iter().enumerate() {
            out[i * n_tok + t0 + j] = x;
        }
    }
}
