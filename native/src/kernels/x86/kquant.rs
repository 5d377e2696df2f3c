//! K-quant kernels with AVX2 (the VNNI backend's 8-row prefill tiles are
//! in `kquant_vnni`): decode one row at a time, prefill four rows × a tile
//! of tokens (a wider tile where AVX-512 has the registers). Per (row,
//! token) and super-block: the exact integers `isum`, `imin`
//! (`kunpack::kdot`), one horizontal sum, and the reference's float update
//! — bit-identical to it.

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::backend::quant::{f16_at, BlockQ8K, QK_K};
use tern_core::backend::{Acts, QMatrix};

use super::cpu::{Avx2, Avx512};
use super::kunpack::{kdot, KQuant};
use super::simd::{each_group4, f16x4, hsum4, prefetch, tiles, PREFETCH, PREFILL_TILE, R, TILE};

/// As `scalar::matmul_rows` for K-quant `K`.
pub(super) fn matmul_rows<K: KQuant>(
    _: Avx2,
    w: &QMatrix,
    a: &[BlockQ8K],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
) {
    // SAFETY: the token proves AVX2, FMA and F16C.
    unsafe { avx2_tiles::<K>(w, a, n_tok, rows, out) }
}

/// As `matmul_rows`, for prefill: tiles of `PREFILL_TILE` tokens.
pub(super) fn matmul_rows_prefill<K: KQuant>(
    _: Avx512,
    w: &QMatrix,
    a: &[BlockQ8K],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
) {
    // SAFETY: the token proves AVX-512 F/BW/VL, AVX2, FMA and F16C.
    unsafe { avx512_tiles::<K>(w, a, n_tok, rows, out) }
}

#[target_feature(enable = "avx2,fma,f16c")]
fn avx2_tiles<K: KQuant>(w: &QMatrix, a: &[BlockQ8K], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    let nb = w.n_cols / QK_K;
    if n_tok == 1 {
        for (r, o) in rows.zip(out.iter_mut()) {
            *o = row_decode::<K>(w.row(r), a, nb);
        }
        return;
    }
    each_group4(w, Acts::Q8K(a), n_tok, rows, out, |rws, out| {
        tiles::<TILE>(n_tok, out, |t0, nt| rows_avx2::<K, TILE>(rws, a, nb, t0, nt))
    })
}

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
fn avx512_tiles<K: KQuant>(w: &QMatrix, a: &[BlockQ8K], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    let nb = w.n_cols / QK_K;
    each_group4(w, Acts::Q8K(a), n_tok, rows, out, |rws, out| {
        tiles::<PREFILL_TILE>(n_tok, out, |t0, nt| rows_avx512::<K, PREFILL_TILE>(rws, a, nb, t0, nt))
    })
}

/// The reference's float update of one super-block for four (row, token)
/// pairs: `(d·da)·isum − (dmin·da)·imin`, or `(d·da)·(isum − imin)` where
/// `imin` undoes a quant offset (no mins).
#[inline]
#[target_feature(enable = "avx2")]
fn update<K: KQuant>(d: __m128, dmin: __m128, da: __m128, isum: __m128i, imin: __m128i) -> __m128 {
    if K::DMIN_AT.is_some() {
        let x = _mm_mul_ps(_mm_mul_ps(d, da), _mm_cvtepi32_ps(isum));
        _mm_sub_ps(x, _mm_mul_ps(_mm_mul_ps(dmin, da), _mm_cvtepi32_ps(imin)))
    } else {
        _mm_mul_ps(_mm_mul_ps(d, da), _mm_cvtepi32_ps(_mm_sub_epi32(isum, imin)))
    }
}

/// Decode: one row against one token, row after row so the weights stream
/// through memory in order (four interleaved long rows defeat the
/// hardware prefetcher: Q6_K ran at ~10 GB/s).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn row_decode<K: KQuant>(row: &[u8], a: &[BlockQ8K], nb: usize) -> f32 {
    let ts = K::TYPE.type_size();
    let mut acc = 0.0f32;
    for (b, ab) in a.iter().enumerate().take(nb) {
        let blk = &row[b * ts..(b + 1) * ts];
        // SAFETY: this fn enables AVX2.
        let (vs, vm) = kdot(&unsafe { K::unpack(blk) }, ab);
        let s = hsum4(vs, vm, vs, vm);
        let (isum, imin) = (_mm_extract_epi32::<0>(s), _mm_extract_epi32::<1>(s));
        acc += match K::DMIN_AT {
            Some(m) => (f16_at(blk, K::D_AT) * ab.d) * isum as f32 - (f16_at(blk, m) * ab.d) * imin as f32,
            None => (f16_at(blk, K::D_AT) * ab.d) * (isum - imin) as f32,
        };
    }
    acc
}

/// Four rows × up to `NT` tokens: the one loop, compiled for each
/// caller's features by the thin wrappers below.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C.
#[inline(always)]
unsafe fn rows_k<K: KQuant, const NT: usize>(
    rws: &[&[u8]; R],
    a: &[BlockQ8K],
    nb: usize,
    t0: usize,
    nt: usize,
) -> [[f32; 4]; NT] {
    let ts = K::TYPE.type_size();
    // SAFETY: SSE is baseline on x86-64.
    let mut acc = unsafe { [_mm_setzero_ps(); NT] };
    for b in 0..nb {
        let o = b * ts;
        // SAFETY: the caller guarantees AVX2, FMA and F16C, all these
        // intrinsics and helpers need; each unpacked slice is one whole
        // block of a row.
        unsafe {
            prefetch(rws, o + PREFETCH);
            let kb = [
                K::unpack(&rws[0][o..o + ts]),
                K::unpack(&rws[1][o..o + ts]),
                K::unpack(&rws[2][o..o + ts]),
                K::unpack(&rws[3][o..o + ts]),
            ];
            let d = f16x4!(rws, o + K::D_AT);
            let dmin = match K::DMIN_AT {
                Some(m) => f16x4!(rws, o + m),
                None => _mm_setzero_ps(),
            };
            for (j, acc) in acc.iter_mut().enumerate().take(nt) {
                let ab = &a[(t0 + j) * nb + b];
                let r = [kdot(&kb[0], ab), kdot(&kb[1], ab), kdot(&kb[2], ab), kdot(&kb[3], ab)];
                let isum = hsum4(r[0].0, r[1].0, r[2].0, r[3].0);
                let imin = hsum4(r[0].1, r[1].1, r[2].1, r[3].1);
                *acc = _mm_add_ps(*acc, update::<K>(d, dmin, _mm_set1_ps(ab.d), isum, imin));
            }
        }
    }
    let mut o = [[0.0f32; 4]; NT];
    for (o, v) in o.iter_mut().zip(acc) {
        // SAFETY: `o` holds four f32; SSE is baseline on x86-64.
        unsafe { _mm_storeu_ps(o.as_mut_ptr(), v) };
    }
    o
}

/// `rows_k` with AVX2.
#[target_feature(enable = "avx2,fma,f16c")]
fn rows_avx2<K: KQuant, const NT: usize>(
    rws: &[&[u8]; R],
    a: &[BlockQ8K],
    nb: usize,
    t0: usize,
    nt: usize,
) -> [[f32; 4]; NT] {
    // SAFETY: this fn's features are the ones rows_k needs.
    unsafe { rows_k::<K, NT>(rws, a, nb, t0, nt) }
}

/// `rows_k` with AVX-512's encodings (and its 32 registers).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
fn rows_avx512<K: KQuant, const NT: usize>(
    rws: &[&[u8]; R],
    a: &[BlockQ8K],
    nb: usize,
    t0: usize,
    nt: usize,
) -> [[f32; 4]; NT] {
    // SAFETY: this fn's features include the ones rows_k needs.
    unsafe { rows_k::<K, NT>(rws, a, nb, t0, nt) }
}
