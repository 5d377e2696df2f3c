//! The legacy formats without a min (Q4_0, Q5_0, Q8_0) with AVX-512 VNNI:
//! unsigned quants straight into `vpdpbusd` (u8 × i8), the offset taken
//! back as `OFFSET · Σa` — the same exact integers as the AVX2 dot.
//!
//! Eight rows at a time where it pays: prefill in tiles of 8 rows × 64
//! tokens, each block's 8 weight rows transposed once (lane i = row i), so
//! a token's 8 row dots are 8 `vpdpbusd` with its activations broadcast,
//! from `−OFFSET·Σa`, with no horizontal sums; decode of short rows as 8
//! rows' dots reduced by one hadd tree. Either way the reference's float
//! update `acc + (dw · da) · isum` runs on 8 rows per instruction. The
//! rows left over go four at a time (`legacy::rows_32` compiled for VNNI).

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::backend::quant::{BlockQ8_0, QK8};
use tern_core::backend::{Acts, QMatrix};

use super::cpu::Avx512;
use super::legacy::{rows_32, Act32, Block32, Dot32};
use super::simd::{
    bcast, each_group4, each_tile8, f16x8, hsum1, hsum8, load32, prefetch, tiles, transpose8, PREFETCH, PREFILL_TILE,
    R, ROWS, TILE,
};

/// Tokens per 8-row tile in prefill (each block's unpacked, transposed
/// weights serve them all: 16 → 64 took Qwen pp512 141 → 152 tok/s);
/// decode (one token) runs tiles of one.
const NT: usize = 64;
/// Longest row (bytes) the 8-row decode takes: eight long rows are eight
/// distant streams (Q8_0 at 2048 columns: 10 GB/s in 8-row groups, 25-30
/// in 4-row ones; at 896 columns they are even).
const SHORT_ROW: usize = 1024;
/// Fewest tokens for the transposed 8-row tiles (fewer: 4-row tiles of 4
/// tokens). A verify step of speculative decoding is 2–9 tokens: one
/// thread, a 64 MiB Q5_0 matrix of 896 columns, time against one token's
/// (bench/NOTES "Issue 48"), 4-row tiles → transposed: 5 tokens 2.09 →
/// 1.44–1.89, 6: 2.48 → 1.55–2.08, 7: 2.97 → 1.58–2.24; at 4 tokens and
/// fewer the 4-row tiles are as fast or faster.
const TRANSPOSED_MIN: usize = 5;

/// As `scalar::matmul_rows` for format `T` (one without a min).
pub(super) fn matmul_rows<T: Block32>(
    _: Avx512,
    w: &QMatrix,
    x: Acts,
    a: &[BlockQ8_0],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
) {
    // SAFETY: the token proves AVX-512 F/BW/VL/VNNI, AVX2, FMA and F16C.
    unsafe { rows_imp::<T>(w, x, a, n_tok, rows, out) }
}

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn rows_imp<T: Block32>(w: &QMatrix, x: Acts, a: &[BlockQ8_0], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    let nb = w.n_cols / QK8;
    // prefill, and decode of short rows: 8 rows at a time first
    let done = if n_tok >= TRANSPOSED_MIN {
        groups8::<T, NT>(w, a, n_tok, rows.clone(), out)
    } else if n_tok == 1 && w.row_bytes() <= SHORT_ROW {
        groups8::<T, 1>(w, a, n_tok, rows.clone(), out)
    } else {
        0
    };
    let (rows, out) = (rows.start + done..rows.end, &mut out[done * n_tok..]);
    each_group4(w, x, n_tok, rows, out, |rws, out| {
        if n_tok >= PREFILL_TILE {
            tiles::<PREFILL_TILE>(n_tok, out, |t0, nt| rows_vnni::<T, _, PREFILL_TILE>(rws, a, nb, t0, nt))
        } else if n_tok == 1 {
            // decode: one-token tiles, no loop over tile slots (Q4_1 alone
            // 18 → 23 GB/s with the AVX2 kernel)
            tiles::<1>(n_tok, out, |t0, nt| rows_vnni::<T, _, 1>(rws, a, nb, t0, nt))
        } else {
            tiles::<TILE>(n_tok, out, |t0, nt| rows_vnni::<T, _, TILE>(rws, a, nb, t0, nt))
        }
    })
}

/// VNNI's dot: unsigned quants into `vpdpbusd`, less `OFFSET · Σ a`.
struct VnniDot;

impl Dot32 for VnniDot {
    type Corr = __m256i;
    #[inline(always)]
    unsafe fn weights<T: Block32>(b: &[u8]) -> __m256i {
        // SAFETY: the caller guarantees AVX2 and AVX-512 BW/VL.
        unsafe { weights_vnni::<T>(b) }
    }
    #[inline(always)]
    unsafe fn corr<T: Block32>(a: __m256i) -> __m256i {
        // SAFETY: the caller guarantees AVX2, AVX-512 VL and VNNI.
        unsafe { corr_vnni::<T>(a) }
    }
    #[inline(always)]
    unsafe fn dot<T: Block32>(w: __m256i, a: __m256i, c: __m256i) -> __m256i {
        // SAFETY: the caller guarantees AVX2, AVX-512 VL and VNNI.
        unsafe { dot32_vnni::<T>(w, a, c) }
    }
}

/// `legacy::rows_32` with VNNI.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn rows_vnni<T: Block32, A: Act32, const NT: usize>(
    rws: &[&[u8]; R],
    a: &[A],
    nb: usize,
    t0: usize,
    nt: usize,
) -> [[f32; 4]; NT] {
    // SAFETY: this fn's features are the ones rows_32 and VnniDot need.
    unsafe { rows_32::<VnniDot, T, A, NT>(rws, a, nb, t0, nt) }
}

/// VNNI: unsigned quants straight into `vpdpbusd` (u8 × i8).
///
/// # Safety
/// The CPU has AVX2 and AVX-512 BW/VL.
#[inline(always)]
unsafe fn weights_vnni<T: Block32>(b: &[u8]) -> __m256i {
    // SAFETY: the caller guarantees what `unsigned_512` needs.
    unsafe { T::unsigned_512(b) }
}

/// VNNI: `OFFSET · Σ a` as 8 partial sums, once per token and block.
///
/// # Safety
/// The CPU has AVX2, AVX-512 VL and VNNI.
#[inline(always)]
unsafe fn corr_vnni<T: Block32>(a: __m256i) -> __m256i {
    // SAFETY: the caller guarantees AVX2, AVX-512 VL and VNNI.
    unsafe { corr_vnni_imp(T::OFFSET, a) }
}

#[inline]
#[target_feature(enable = "avx2,avx512vl,avx512vnni")]
fn corr_vnni_imp(offset: i8, a: __m256i) -> __m256i {
    if offset == 0 {
        return _mm256_setzero_si256();
    }
    _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(offset), a)
}

/// VNNI: `Σ u·a − OFFSET·Σ a`, the same exact integers as the AVX2 dot.
///
/// # Safety
/// The CPU has AVX2, AVX-512 VL and VNNI.
#[inline(always)]
unsafe fn dot32_vnni<T: Block32>(u: __m256i, a: __m256i, c: __m256i) -> __m256i {
    // SAFETY: the caller guarantees AVX2, AVX-512 VL and VNNI.
    unsafe { dot32_vnni_imp(u, a, c) }
}

#[inline]
#[target_feature(enable = "avx2,avx512vl,avx512vnni")]
fn dot32_vnni_imp(u: __m256i, a: __m256i, c: __m256i) -> __m256i {
    _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), u, a), c)
}

/// Whole 8-row groups of `rows` in tiles of `NT` tokens; returns how many
/// rows it did.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn groups8<T: Block32, const NT: usize>(
    w: &QMatrix,
    a: &[BlockQ8_0],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
) -> usize {
    let nb = w.n_cols / QK8;
    if rows.len() < ROWS {
        return 0;
    }
    if NT == 1 {
        return each_tile8::<NT>(w, n_tok, rows, out, |rws, t0, nt| tile8::<T, NT>(rws, a, nb, t0, nt));
    }
    // prefill: every (token, block)'s `−OFFSET · Σa`, once for all row groups
    let (mut stack, mut heap) = ([0; NEG_SUMS_ON_STACK], Vec::new());
    let neg_corr = neg_offset_sums_in::<T>(a, &mut stack, &mut heap);
    each_tile8::<NT>(w, n_tok, rows, out, |rws, t0, nt| tile_transposed::<T, NT>(rws, a, neg_corr, nb, t0, nt))
}

/// `−OFFSET · Σa` of every activation block, in the blocks' order, into
/// `out` (as long as `a`).
#[inline]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) fn neg_offset_sums<T: Block32>(a: &[BlockQ8_0], out: &mut [i32]) {
    for (ab, o) in a.iter().zip(out) {
        *o = -hsum1(corr_vnni_imp(T::OFFSET, load32(&ab.qs)));
    }
}

/// Activation blocks whose `−OFFSET · Σa` a kernel call keeps on the stack
/// (a verify step's few tokens; a longer prefill allocates).
pub(super) const NEG_SUMS_ON_STACK: usize = 2048;

/// [`neg_offset_sums`] of `a` in `stack` when they fit (decode and verify
/// steps come here a few times a layer), else in `heap`.
#[inline]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl,avx512vnni")]
pub(super) fn neg_offset_sums_in<'s, T: Block32>(
    a: &[BlockQ8_0],
    stack: &'s mut [i32; NEG_SUMS_ON_STACK],
    heap: &'s mut Vec<i32>,
) -> &'s [i32] {
    let out = if a.len() <= NEG_SUMS_ON_STACK {
        &mut stack[..a.len()]
    } else {
        heap.resize(a.len(), 0);
        &mut heap[..]
    };
    neg_offset_sums::<T>(a, out);
    out
}

/// Prefill tile, weights transposed once per block: for each token the 8
/// rows' exact dots land one per lane (`vpdpbusd` of a weight column
/// vector with the token's broadcast 4 activation bytes), so no horizontal
/// sums — the same integers and the same float update as `tile8`.
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
        prefetch(rws, o + PREFETCH);
        // SAFETY: this fn enables AVX2 and AVX-512 BW/VL.
        let v = transpose8(&core::array::from_fn(|i| unsafe { weights_vnni::<T>(&rws[i][o..o + ts]) }));
        let dw = f16x8!(rws, o + T::D_AT);
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

/// Decode tile: each row's dot, the 8 reduced by one hadd tree.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn tile8<T: Block32, const NT: usize>(
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
        prefetch(rws, o + PREFETCH);
        // SAFETY: this fn enables AVX2 and AVX-512 BW/VL.
        let w: [__m256i; ROWS] = core::array::from_fn(|i| unsafe { weights_vnni::<T>(&rws[i][o..o + ts]) });
        let dw = f16x8!(rws, o + T::D_AT);
        for (j, acc) in acc.iter_mut().enumerate().take(nt) {
            let ab = &a[(t0 + j) * nb + b];
            let av = load32(&ab.qs);
            let c = corr_vnni_imp(T::OFFSET, av);
            let p: [__m256i; ROWS] = core::array::from_fn(|i| dot32_vnni_imp(w[i], av, c));
            let isum = _mm256_cvtepi32_ps(hsum8(&p));
            let t = _mm256_mul_ps(_mm256_mul_ps(dw, _mm256_set1_ps(ab.d)), isum);
            *acc = _mm256_add_ps(*acc, t);
        }
    }
    acc
}
