//! AVX-512 VNNI kernels for the formats without a min (Q4_0, Q5_0, Q8_0),
//! 8 rows at a time. Prefill: tiles of 8 rows × 16 tokens; each block's 8
//! weight rows are transposed once (lane i = row i), so a token's 8 row
//! dots are 8 `vpdpbusd` with its activations broadcast, from
//! `−OFFSET·Σa` — no horizontal sums. Decode (one token, short rows): the
//! 8 rows' dots reduced by one hadd tree. Either way the reference's float
//! update `acc + (dw · da) · isum` runs on 8 rows per instruction, with
//! the reference's integers: the same numbers.

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::kernels::{Acts, QMatrix};
use tern_core::quant::{BlockQ8_0, GgmlType, QK8};

use super::avx2_q::{corr_vnni, dot32_vnni, load32, weights_vnni, Block32, PREFETCH, Q4_0, Q5_0, Q8_0};

pub(super) const ROWS: usize = 8;
/// Tokens per tile in prefill; decode (one token) runs tiles of one.
const NT: usize = 16;

/// Rows of `rows` in groups of 8 (outputs `out[row * n_tok + token]`);
/// returns how many rows it did (0 for other formats or activations).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
pub fn matmul_rows(w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) -> usize {
    let Acts::Q8_0(a) = x else { return 0 };
    match w.ty {
        GgmlType::Q4_0 if n_tok == 1 => groups::<Q4_0, 1>(w, a, n_tok, rows, out),
        GgmlType::Q5_0 if n_tok == 1 => groups::<Q5_0, 1>(w, a, n_tok, rows, out),
        GgmlType::Q8_0 if n_tok == 1 => groups::<Q8_0, 1>(w, a, n_tok, rows, out),
        GgmlType::Q4_0 => groups::<Q4_0, NT>(w, a, n_tok, rows, out),
        GgmlType::Q5_0 => groups::<Q5_0, NT>(w, a, n_tok, rows, out),
        GgmlType::Q8_0 => groups::<Q8_0, NT>(w, a, n_tok, rows, out),
        _ => 0,
    }
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn groups<T: Block32, const NT: usize>(
    w: &QMatrix,
    a: &[BlockQ8_0],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
) -> usize {
    let nb = w.n_cols / QK8;
    // prefill: every (token, block)'s `−OFFSET · Σa`, once for all row groups
    let neg_corr = if NT > 1 { neg_offset_sums::<T>(a) } else { Vec::new() };
    each_tile::<NT>(w, n_tok, rows, out, |rws, t0, nt| {
        if NT > 1 {
            tile_transposed::<T, NT>(rws, a, &neg_corr, nb, t0, nt)
        } else {
            tile::<T, NT>(rws, a, nb, t0, nt)
        }
    })
}

/// Every whole 8-row group of `rows` through `tile(rows, t0, nt)` for the
/// tokens in tiles of `NT`; the results (8 rows per vector) laid out as
/// `out[row * n_tok + token]`. Returns how many rows it did.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn each_tile<const NT: usize>(
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
            for (j, v) in tile(&rws, t0, nt).iter().take(nt).enumerate() {
                let mut o = [0.0f32; ROWS];
                // SAFETY: `o` holds 8 f32.
                unsafe { _mm256_storeu_ps(o.as_mut_ptr(), *v) };
                for (i, &x) in o.iter().enumerate() {
                    out[(g * ROWS + i) * n_tok + t0 + j] = x;
                }
            }
        }
    }
    n8
}

/// Hint the cache to fetch byte `o` of each of the 8 rows (a hint only:
/// addresses past a row's end are never dereferenced).
#[inline(always)]
pub(super) fn prefetch8(rws: &[&[u8]; ROWS], o: usize) {
    for r in rws {
        // SAFETY: prefetch never faults and reads nothing observable.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(r.as_ptr().wrapping_add(o) as *const i8) };
    }
}

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

/// `−OFFSET · Σa` of every activation block, in the blocks' order.
#[inline]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl,avx512vnni")]
fn neg_offset_sums<T: Block32>(a: &[BlockQ8_0]) -> Vec<i32> {
    a.iter()
        .map(|ab| {
            let c = corr_vnni::<T>(load32(&ab.qs));
            let s = _mm_add_epi32(_mm256_castsi256_si128(c), _mm256_extracti128_si256::<1>(c));
            let s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
            let s = _mm_add_epi32(s, _mm_shuffle_epi32::<0b01>(s));
            -_mm_cvtsi128_si32(s)
        })
        .collect()
}

/// Eight rows' 32-byte blocks as eight vectors of their k-th 4-byte groups:
/// lane i of `v[k]` holds bytes 4k..4k+4 of row i (an 8×8 dword transpose).
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

/// Prefill tile, weights transposed once per block: for each token the 8
/// rows' exact dots land one per lane (`vpdpbusd` of a weight column
/// vector with the token's broadcast 4 activation bytes), so no horizontal
/// sums — the same integers and the same float update as `tile`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn tile_transposed<T: Block32, const NT: usize>(
    rws: &[&[u8]; ROWS],
    a: &[BlockQ8_0],
    neg_corr: &[i32],
    nb: usize,
    t0: usize,
    nt: usize,
) -> [__m256; NT] {
    let ts = T::BYTES;
    let mut acc = [_mm256_setzero_ps(); NT];
    for b in 0..nb {
        let o = b * ts;
        prefetch8(rws, o + PREFETCH);
        let v = transpose8(&core::array::from_fn(|i| weights_vnni::<T>(&rws[i][o..o + ts])));
        let dw = f16x8!(rws, o);
        for (j, acc) in acc.iter_mut().enumerate().take(nt) {
            let ta = (t0 + j) * nb + b;
            let ab = &a[ta];
            let mut s = _mm256_set1_epi32(neg_corr[ta]);
            for (k, vk) in v.iter().enumerate() {
                s = _mm256_dpbusd_epi32(s, *vk, _mm256_set1_epi32(bcast(&ab.qs, k)));
            }
            let t = _mm256_mul_ps(_mm256_mul_ps(dw, _mm256_set1_ps(ab.d)), _mm256_cvtepi32_ps(s));
            *acc = _mm256_add_ps(*acc, t);
        }
    }
    acc
}

/// Activation bytes `4k..4k + 4` of a 32-byte run, for broadcasting to
/// every lane.
#[inline(always)]
pub(super) fn bcast(q: &[i8; 32], k: usize) -> i32 {
    i32::from_le_bytes([q[4 * k] as u8, q[4 * k + 1] as u8, q[4 * k + 2] as u8, q[4 * k + 3] as u8])
}

/// The 8 sums of eight 8×i32 vectors, in order.
#[inline]
#[target_feature(enable = "avx2")]
fn hsum8(p: &[__m256i; 8]) -> __m256i {
    let q0 = _mm256_hadd_epi32(_mm256_hadd_epi32(p[0], p[1]), _mm256_hadd_epi32(p[2], p[3]));
    let q1 = _mm256_hadd_epi32(_mm256_hadd_epi32(p[4], p[5]), _mm256_hadd_epi32(p[6], p[7]));
    // q0: rows 0-3 over lanes 0-3 (low half) and 4-7 (high half); q1 rows 4-7
    _mm256_add_epi32(_mm256_permute2x128_si256::<0x20>(q0, q1), _mm256_permute2x128_si256::<0x31>(q0, q1))
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn tile<T: Block32, const NT: usize>(
    rws: &[&[u8]; ROWS],
    a: &[BlockQ8_0],
    nb: usize,
    t0: usize,
    nt: usize,
) -> [__m256; NT] {
    let ts = T::BYTES;
    let mut acc = [_mm256_setzero_ps(); NT];
    for b in 0..nb {
        let o = b * ts;
        prefetch8(rws, o + PREFETCH);
        let w: [__m256i; ROWS] = core::array::from_fn(|i| weights_vnni::<T>(&rws[i][o..o + ts]));
        let dw = f16x8!(rws, o);
        for (j, acc) in acc.iter_mut().enumerate().take(nt) {
            let ab = &a[(t0 + j) * nb + b];
            let av = load32(&ab.qs);
            let c = corr_vnni::<T>(av);
            let p: [__m256i; ROWS] = core::array::from_fn(|i| dot32_vnni::<T>(w[i], av, c));
            let isum = _mm256_cvtepi32_ps(hsum8(&p));
            let t = _mm256_mul_ps(_mm256_mul_ps(dw, _mm256_set1_ps(ab.d)), isum);
            *acc = _mm256_add_ps(*acc, t);
        }
    }
    acc
}
