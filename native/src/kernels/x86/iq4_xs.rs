//! IQ4_XS with AVX2: per row and super-block, each 32-run's table values
//! as signed bytes (`vpshufb`) once; per token, each run's exact dot by
//! the sign trick (`|v| · ±a` in `vpmaddubsw`: |v| ≤ 127 and |a| ≤ 127,
//! so no i16 pair saturates), times the run's scale in `vpmaddwd`, summed
//! in i32 — the reference's `isum` — then its float update, the same
//! expression: the same bits. Rows go 8 at a time: a token's activations
//! loaded once for the 8, their 8 sums reduced together (`hsum8`) and the
//! update done for the 8 in one vector, each lane the scalar expression.
//! With AVX-512 VNNI the groups take the values plus 128 as unsigned bytes
//! (`vpdpbusd`, two runs a register, no i16 pairs to saturate), each run's
//! sum times its scale (`vpmulld`), less 128 · Σ scale · the activations'
//! group sums: the same integer `isum`, so the same bits.

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::backend::quant::{f16_at, iq4_nl, iq4_xs, BlockQ8K, QK_K};
use tern_core::backend::QMatrix;

use super::cpu::{Avx2, Avx512};
use super::legacy::nibbles;
use super::simd::{hsum1, hsum8, load32, scatter8, ROWS};

/// Tokens whose sums a row's pass keeps (the row's blocks unpacked once
/// for them).
const TOKENS: usize = 8;

/// As `scalar::matmul_rows` for IQ4_XS weights.
pub(super) fn matmul_rows(_: Avx2, w: &QMatrix, a: &[BlockQ8K], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    // SAFETY: the token proves AVX2, FMA and F16C.
    unsafe { rows_imp(w, a, n_tok, rows, out) }
}

/// As `matmul_rows`, whole groups of 8 rows with AVX-512 VNNI.
pub(super) fn matmul_rows_vnni(
    _: Avx512,
    w: &QMatrix,
    a: &[BlockQ8K],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
) {
    let n8 = if n_tok >= GROUP_TOKENS { rows.len() / ROWS * ROWS } else { 0 };
    for (g, o) in (rows.start..rows.start + n8).step_by(ROWS).zip(out.chunks_exact_mut(ROWS * n_tok)) {
        // SAFETY: the token proves AVX2, FMA, F16C and AVX-512 F/BW/VL/VNNI.
        unsafe { group_vnni(w, a, n_tok, g, o) }
    }
    // SAFETY: the same.
    unsafe { one_by_one(w, a, n_tok, rows.start + n8..rows.end, &mut out[n8 * n_tok..]) }
}

/// A super-block of one row for `vpdpbusd`: runs 2k and 2k + 1 as values
/// plus 128 in `u[k]`, their scales in i32 lanes 0-7 and 8-15 of `sc[k]`,
/// each 16-group's scale in i16 lane g of `sc16`.
#[derive(Clone, Copy)]
struct RunsU {
    u: [__m512i; 4],
    sc: [__m512i; 4],
    sc16: __m256i,
}

#[inline]
#[target_feature(enable = "avx2,avx512f,avx512bw")]
fn unpack_u(b: &[u8]) -> RunsU {
    // SAFETY: the table has 16 bytes.
    let table = unsafe { _mm_loadu_si128(iq4_nl::KVALUES_PLUS_128.as_ptr() as *const __m128i) };
    let table = _mm256_broadcastsi128_si256(table);
    let z = _mm512_setzero_si512();
    let mut r = RunsU { u: [z; 4], sc: [z; 4], sc16: _mm256_setzero_si256() };
    let mut sc16 = [0i16; 16];
    for k in 0..4 {
        let lo = _mm256_shuffle_epi8(table, nibbles(b, iq4_xs::QS + 32 * k));
        let hi = _mm256_shuffle_epi8(table, nibbles(b, iq4_xs::QS + 32 * k + 16));
        r.u[k] = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi);
        let (s0, s1) = (iq4_xs::scale(b, 2 * k), iq4_xs::scale(b, 2 * k + 1));
        r.sc[k] =
            _mm512_inserti64x4::<1>(_mm512_castsi256_si512(_mm256_set1_epi32(s0 as i32)), _mm256_set1_epi32(s1 as i32));
        sc16[4 * k..4 * k + 4].copy_from_slice(&[s0, s0, s1, s1]);
    }
    // SAFETY: `sc16` holds 16 i16.
    r.sc16 = unsafe { _mm256_loadu_si256(sc16.as_ptr() as *const __m256i) };
    r
}

/// Rows `g..g + 8` for every token, with VNNI.
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn group_vnni(w: &QMatrix, a: &[BlockQ8K], n_tok: usize, g: usize, out: &mut [f32]) {
    let (nb, ts) = (w.n_cols / QK_K, iq4_xs::BLOCK_BYTES);
    let rws: [&[u8]; ROWS] = core::array::from_fn(|r| w.row(g + r));
    let z = _mm512_setzero_si512();
    for t0 in (0..n_tok).step_by(TOKENS) {
        let nt = TOKENS.min(n_tok - t0);
        let mut acc = [_mm256_setzero_ps(); TOKENS];
        for b in 0..nb {
            // (loops, not closures: a closure does not inherit the target
            // features, and its intrinsics would stay calls)
            let mut runs = [RunsU { u: [z; 4], sc: [z; 4], sc16: _mm256_setzero_si256() }; ROWS];
            let mut d = [0.0f32; ROWS];
            for r in 0..ROWS {
                let blk = &rws[r][b * ts..(b + 1) * ts];
                (runs[r], d[r]) = (unpack_u(blk), f16_at(blk, iq4_xs::D));
            }
            // SAFETY: `d` holds 8 f32.
            let d = unsafe { _mm256_loadu_ps(d.as_ptr()) };
            for (j, acc) in acc.iter_mut().enumerate().take(nt) {
                let ab = &a[(t0 + j) * nb + b];
                let mut av = [z; 4];
                for (k, av) in av.iter_mut().enumerate() {
                    // SAFETY: `qs` has 256 bytes; 64 from 64k.
                    *av = unsafe { _mm512_loadu_si512(ab.qs[64 * k..].as_ptr() as *const __m512i) };
                }
                // SAFETY: `bsums` holds 16 i16.
                let bs = unsafe { _mm256_loadu_si256(ab.bsums.as_ptr() as *const __m256i) };
                let mut s = [_mm256_setzero_si256(); ROWS];
                for (s, r) in s.iter_mut().zip(&runs) {
                    let mut v = z;
                    for k in 0..4 {
                        v = _mm512_add_epi32(v, _mm512_mullo_epi32(_mm512_dpbusd_epi32(z, r.u[k], av[k]), r.sc[k]));
                    }
                    let v = _mm256_add_epi32(_mm512_castsi512_si256(v), _mm512_extracti64x4_epi64::<1>(v));
                    // the offset back: 128 · Σ scale · group sum
                    *s = _mm256_sub_epi32(v, _mm256_slli_epi32::<7>(_mm256_madd_epi16(r.sc16, bs)));
                }
                let isum = _mm256_cvtepi32_ps(hsum8(&s));
                // the reference's update, lane by lane: acc + ((d·da)·isum − (0·da)·0)
                let da = _mm256_set1_ps(ab.d);
                let t = _mm256_mul_ps(_mm256_mul_ps(d, da), isum);
                let m = _mm256_mul_ps(_mm256_mul_ps(_mm256_setzero_ps(), da), _mm256_setzero_ps());
                *acc = _mm256_add_ps(*acc, _mm256_sub_ps(t, m));
            }
        }
        scatter8(out, n_tok, t0, &acc[..nt]);
    }
}

/// A super-block's 8 runs: values, their magnitudes, each run's scale in
/// every i16 lane.
#[derive(Clone, Copy)]
struct Runs {
    v: [__m256i; 8],
    abs: [__m256i; 8],
    scale: [__m256i; 8],
}

#[inline]
#[target_feature(enable = "avx2")]
fn unpack(b: &[u8]) -> Runs {
    // SAFETY: the table has 16 bytes.
    let table = unsafe { _mm_loadu_si128(iq4_nl::KVALUES.as_ptr() as *const __m128i) };
    let table = _mm256_broadcastsi128_si256(table);
    let mut r =
        Runs { v: [_mm256_setzero_si256(); 8], abs: [_mm256_setzero_si256(); 8], scale: [_mm256_setzero_si256(); 8] };
    for k in 0..8 {
        let v = _mm256_shuffle_epi8(table, nibbles(b, iq4_xs::QS + 16 * k));
        (r.v[k], r.abs[k], r.scale[k]) = (v, _mm256_sign_epi8(v, v), _mm256_set1_epi16(iq4_xs::scale(b, k)));
    }
    r
}

/// The reference's `isum` of a super-block's runs with a token's block.
#[inline]
#[target_feature(enable = "avx2")]
fn isum(r: &Runs, a: &BlockQ8K) -> i32 {
    let mut s = _mm256_setzero_si256();
    for k in 0..8 {
        let av = load32(&a.qs[32 * k..]);
        let p = _mm256_maddubs_epi16(r.abs[k], _mm256_sign_epi8(av, r.v[k]));
        s = _mm256_add_epi32(s, _mm256_madd_epi16(p, r.scale[k]));
    }
    hsum1(s)
}

/// Tokens from which rows go 8 at a time (below, decode: a row's blocks
/// unpacked and used at once beat 8 rows' kept for few tokens —
/// `kernel_speed IQ4_XS` decode 4.7 against 3.1 GB/s).
const GROUP_TOKENS: usize = 4;

/// Whole groups of 8 rows (for `GROUP_TOKENS` or more), then the rest one
/// at a time.
#[target_feature(enable = "avx2,fma,f16c")]
fn rows_imp(w: &QMatrix, a: &[BlockQ8K], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    let n8 = if n_tok >= GROUP_TOKENS { rows.len() / ROWS * ROWS } else { 0 };
    for (g, o) in (rows.start..rows.start + n8).step_by(ROWS).zip(out.chunks_exact_mut(ROWS * n_tok)) {
        group(w, a, n_tok, g, o);
    }
    one_by_one(w, a, n_tok, rows.start + n8..rows.end, &mut out[n8 * n_tok..]);
}

/// Rows `g..g + 8` for every token.
#[target_feature(enable = "avx2,fma,f16c")]
fn group(w: &QMatrix, a: &[BlockQ8K], n_tok: usize, g: usize, out: &mut [f32]) {
    let (nb, ts) = (w.n_cols / QK_K, iq4_xs::BLOCK_BYTES);
    let rws: [&[u8]; ROWS] = core::array::from_fn(|r| w.row(g + r));
    for t0 in (0..n_tok).step_by(TOKENS) {
        let nt = TOKENS.min(n_tok - t0);
        let mut acc = [_mm256_setzero_ps(); TOKENS];
        for b in 0..nb {
            // (loops, not closures: a closure does not inherit the target
            // features, and its intrinsics would stay calls)
            let z = _mm256_setzero_si256();
            let mut runs = [Runs { v: [z; 8], abs: [z; 8], scale: [z; 8] }; ROWS];
            let mut d = [0.0f32; ROWS];
            for r in 0..ROWS {
                let blk = &rws[r][b * ts..(b + 1) * ts];
                (runs[r], d[r]) = (unpack(blk), f16_at(blk, iq4_xs::D));
            }
            // SAFETY: `d` holds 8 f32.
            let d = unsafe { _mm256_loadu_ps(d.as_ptr()) };
            for (j, acc) in acc.iter_mut().enumerate().take(nt) {
                let ab = &a[(t0 + j) * nb + b];
                let mut av = [z; 8];
                for (k, av) in av.iter_mut().enumerate() {
                    *av = load32(&ab.qs[32 * k..]);
                }
                let mut s = [_mm256_setzero_si256(); ROWS];
                for (s, r) in s.iter_mut().zip(&runs) {
                    *s = isum_vec(r, &av);
                }
                let isum = _mm256_cvtepi32_ps(hsum8(&s));
                // the reference's update, lane by lane: acc + ((d·da)·isum − (0·da)·0)
                let da = _mm256_set1_ps(ab.d);
                let t = _mm256_mul_ps(_mm256_mul_ps(d, da), isum);
                let m = _mm256_mul_ps(_mm256_mul_ps(_mm256_setzero_ps(), da), _mm256_setzero_ps());
                *acc = _mm256_add_ps(*acc, _mm256_sub_ps(t, m));
            }
        }
        scatter8(out, n_tok, t0, &acc[..nt]);
    }
}

/// A row's `isum` with a token's runs `av`, before the horizontal sum.
#[inline]
#[target_feature(enable = "avx2")]
fn isum_vec(r: &Runs, av: &[__m256i; 8]) -> __m256i {
    let mut s = _mm256_setzero_si256();
    for k in 0..8 {
        let p = _mm256_maddubs_epi16(r.abs[k], _mm256_sign_epi8(av[k], r.v[k]));
        s = _mm256_add_epi32(s, _mm256_madd_epi16(p, r.scale[k]));
    }
    s
}

#[target_feature(enable = "avx2,fma,f16c")]
fn one_by_one(w: &QMatrix, a: &[BlockQ8K], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    let (nb, ts) = (w.n_cols / QK_K, iq4_xs::BLOCK_BYTES);
    for (r, o) in rows.zip(out.chunks_exact_mut(n_tok)) {
        let row = w.row(r);
        for t0 in (0..n_tok).step_by(TOKENS) {
            let nt = TOKENS.min(n_tok - t0);
            let mut acc = [0.0f32; TOKENS];
            for b in 0..nb {
                let blk = &row[b * ts..(b + 1) * ts];
                let (runs, d) = (unpack(blk), f16_at(blk, iq4_xs::D));
                for (j, acc) in acc.iter_mut().enumerate().take(nt) {
                    let ab = &a[(t0 + j) * nb + b];
                    // the reference's update, its min term (none) included
                    *acc += (d * ab.d) * isum(&runs, ab) as f32 - (0.0 * ab.d) * 0.0;
                }
            }
            o[t0..t0 + nt].copy_from_slice(&acc[..nt]);
        }
    }
}
