//! Prefill of the legacy formats with AVX2 alone, in tiles of 8 rows ×
//! `NT` tokens: each block's 8 weight rows transposed once (lane i = row
//! i), so a token's 8 row dots are 8 `vpmaddubsw` of a weight column vector
//! with its 4 activation bytes broadcast — no horizontal sums, and the
//! reference's float update `acc + ((dw · da) · isum [+ m · s])` on 8 rows
//! per instruction. The VNNI tiles (`legacy_vnni`) in AVX2's instructions:
//!
//! - Q4_0 and Q5_0 go in unsigned (`u = q + OFFSET` ≤ 31), as do Q4_1 and
//!   Q5_1 (their quants, ≤ 31, with a min instead of an offset), so a
//!   pair's i16 is at most 2·31·128 = 7936 and four columns' add up in i16
//!   without overflow (31744) before one `vpmaddwd`; an offset comes back
//!   as `−OFFSET · Σa`, once per (token, block), a min as `m · s` (Q8_1);
//! - Q8_0 (q up to ±128, an unsigned byte would saturate the i16 pairs)
//!   takes the sign trick `|w| · sign(a, w)`, each column widened to i32.
//!
//! The same exact integers as the four-row kernels (`legacy`).

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::backend::quant::QK8;
use tern_core::backend::QMatrix;

use super::cpu::Avx2;
use super::legacy::{Act32, Block32};
use super::simd::{bcast, each_tile8, f16x8, transpose8, ROWS};

/// Tokens per tile (each block's columns stay in registers across them).
const NT: usize = 32;

/// Whole 8-row groups of `rows` for `n_tok` tokens (prefill); returns how
/// many rows it did (the rest go four at a time).
pub(super) fn groups8<T: Block32, A: Act32>(
    _: Avx2,
    w: &QMatrix,
    a: &[A],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
) -> usize {
    // SAFETY: the token proves AVX2, FMA and F16C.
    unsafe { groups8_imp::<T, A>(w, a, n_tok, rows, out) }
}

#[target_feature(enable = "avx2,fma,f16c")]
fn groups8_imp<T: Block32, A: Act32>(w: &QMatrix, a: &[A], n_tok: usize, rows: Range<usize>, out: &mut [f32]) -> usize {
    let nb = w.n_cols / QK8;
    // every (token, block)'s `−OFFSET · Σa`, once for all row groups
    // (none for Q8_0, whose signed dot needs no offset, nor for the
    // formats with a min)
    let signed = T::OFFSET == -128;
    let neg_corr: Vec<i32> = if signed || T::OFFSET == 0 {
        Vec::new()
    } else {
        a.iter().map(|ab| -(T::OFFSET as i32) * ab.qs().iter().map(|&q| q as i32).sum::<i32>()).collect()
    };
    // a group's blocks unpacked and transposed once, for all its tiles
    // (`each_tile8` starts each group at token 0)
    let mut cols: Vec<Columns> = Vec::with_capacity(nb);
    each_tile8::<NT>(w, n_tok, rows, out, |rws, t0, nt| {
        if t0 == 0 {
            cols.clear();
            cols.extend((0..nb).map(|b| columns::<T>(rws, b * T::BYTES)));
        }
        if signed {
            tile_signed(&cols, a, t0, nt)
        } else {
            tile_unsigned::<T, A>(&cols, a, &neg_corr, t0, nt)
        }
    })
}

/// A block of 8 rows transposed: `v[k]` holds bytes `4k..4k + 4` of row
/// i in lane i (unsigned quants, or Q8_0's signed ones with `abs` their
/// magnitudes), `dw` the rows' scales and `m` their mins (formats with
/// one).
struct Columns {
    v: [__m256i; 8],
    abs: [__m256i; 8],
    dw: __m256,
    m: __m256,
}

/// The 8 rows' block at byte `o` as `Columns`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn columns<T: Block32>(rws: &[&[u8]; ROWS], o: usize) -> Columns {
    let ts = T::BYTES;
    // SAFETY: this fn enables AVX2.
    let v = transpose8(&core::array::from_fn(|i| unsafe { T::unsigned(&rws[i][o..o + ts]) }));
    let dw = f16x8!(rws, o + T::D_AT);
    if T::OFFSET == -128 {
        // (q ^ 0x80) ^ 0x80 = q: the signed quants
        let v = v.map(|u| _mm256_xor_si256(u, _mm256_set1_epi8(-128)));
        Columns { v, abs: v.map(|w| _mm256_sign_epi8(w, w)), dw, m: _mm256_setzero_ps() }
    } else {
        let m = if T::OFFSET == 0 { f16x8!(rws, o + T::M_AT) } else { _mm256_setzero_ps() };
        Columns { v, abs: [_mm256_setzero_si256(); 8], dw, m }
    }
}

/// Q4_0 / Q5_0 (with `neg_corr`) and Q4_1 / Q5_1 (with their mins):
/// unsigned columns, four at a time summed in i16.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn tile_unsigned<T: Block32, A: Act32>(
    cols: &[Columns],
    a: &[A],
    neg_corr: &[i32],
    t0: usize,
    nt: usize,
) -> [__m256; NT] {
    let (nb, ones) = (cols.len(), _mm256_set1_epi16(1));
    let mut acc = [_mm256_setzero_ps(); NT];
    for (b, Columns { v, dw, m, .. }) in cols.iter().enumerate() {
        for (j, acc) in acc.iter_mut().enumerate().take(nt) {
            let ta = (t0 + j) * nb + b;
            let ab = &a[ta];
            let col = |k: usize| _mm256_maddubs_epi16(v[k], _mm256_set1_epi32(bcast(ab.qs(), k)));
            let lo = _mm256_add_epi16(_mm256_add_epi16(col(0), col(1)), _mm256_add_epi16(col(2), col(3)));
            let hi = _mm256_add_epi16(_mm256_add_epi16(col(4), col(5)), _mm256_add_epi16(col(6), col(7)));
            let mut s = _mm256_add_epi32(_mm256_madd_epi16(lo, ones), _mm256_madd_epi16(hi, ones));
            if T::OFFSET != 0 {
                s = _mm256_add_epi32(s, _mm256_set1_epi32(neg_corr[ta]));
            }
            let t = _mm256_mul_ps(_mm256_mul_ps(*dw, _mm256_set1_ps(ab.d())), _mm256_cvtepi32_ps(s));
            // SAFETY: this fn enables AVX2.
            *acc = _mm256_add_ps(*acc, unsafe { ab.with_offset8(t, *m) });
        }
    }
    acc
}

/// Q8_0: signed columns by the sign trick, each widened to i32.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn tile_signed<A: Act32>(cols: &[Columns], a: &[A], t0: usize, nt: usize) -> [__m256; NT] {
    let (nb, ones) = (cols.len(), _mm256_set1_epi16(1));
    let mut acc = [_mm256_setzero_ps(); NT];
    for (b, Columns { v, abs, dw, .. }) in cols.iter().enumerate() {
        for (j, acc) in acc.iter_mut().enumerate().take(nt) {
            let ab = &a[(t0 + j) * nb + b];
            let mut s = _mm256_setzero_si256();
            for (k, (v, abs)) in v.iter().zip(abs).enumerate() {
                let ak = _mm256_sign_epi8(_mm256_set1_epi32(bcast(ab.qs(), k)), *v);
                s = _mm256_add_epi32(s, _mm256_madd_epi16(_mm256_maddubs_epi16(*abs, ak), ones));
            }
            let t = _mm256_mul_ps(_mm256_mul_ps(*dw, _mm256_set1_ps(ab.d())), _mm256_cvtepi32_ps(s));
            *acc = _mm256_add_ps(*acc, t);
        }
    }
    acc
}
