//! Q4_0, Q5_0, Q8_0 and IQ4_NL read from their 8-row interleaved copy
//! (`quant::rows8`, made at load) with AVX-512 VNNI. A block of 8 rows is
//! 4 or 8 loads, already one row per lane: no transpose, and one stream of
//! bytes per 8 rows. Two groups share each 512-bit register; per token 8
//! `vpdpbusd` with its activations broadcast, from `−OFFSET · Σa`, then the
//! reference's float update `acc + (dw · da) · isum` on 16 rows — the
//! integers and the float order of `legacy_vnni`'s transposed tiles, so the
//! same bits.
//!
//! Any number of tokens: decode reads each group once as one stream; a
//! speculative verify step's 2–16 tokens share each block's unpacking (the
//! reason for the layout: bench/NOTES "Issue 48"). The rows of the range
//! outside whole groups go through `legacy_vnni`.

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::backend::quant::{iq4_nl, rows8, BlockQ8_0, GgmlType, QK8};
use tern_core::backend::{Acts, QMatrix};

use super::cpu::Avx512;
use super::legacy::{add_fifth_bits, u32_at, Block32, Iq4Nl, Q4_0, Q5_0, Q8_0};
use super::legacy_vnni::{self, neg_offset_sums_in, NEG_SUMS_ON_STACK};
use super::simd::{bcast, load16_at, load32_at, prefetch, scatter8, PREFETCH, ROWS};

/// A format with the interleaved layout: a group's block as the 8 vectors
/// of unsigned quants (vector k: elements `4k..4k + 4` of each row).
pub(super) trait Interleaved: Block32 {
    const TY: GgmlType;
    /// # Safety
    /// The CPU has AVX2 and AVX-512 BW/VL; `b` is a whole group block.
    unsafe fn weights(b: &[u8]) -> [__m256i; ROWS];
}

/// The nibbles of Q4_0 and Q5_0: vector p's low nibbles are elements
/// `4p..`, its high nibbles `16 + 4p..`. (Loops, not closures: a closure
/// does not inherit the target features, and its intrinsics would stay
/// calls.)
#[inline]
#[target_feature(enable = "avx2")]
fn nibble_vectors(b: &[u8], at: usize) -> [__m256i; ROWS] {
    let m = _mm256_set1_epi8(0x0F);
    let mut v = [_mm256_setzero_si256(); ROWS];
    for p in 0..4 {
        let q = load32_at(b, at + 32 * p);
        v[p] = _mm256_and_si256(q, m);
        v[p + 4] = _mm256_and_si256(_mm256_srli_epi16::<4>(q), m);
    }
    v
}

/// Q5_0's vectors: the nibbles plus 16 where the masks say.
#[inline]
#[target_feature(enable = "avx2,avx512bw,avx512vl")]
fn five_bit_vectors(b: &[u8]) -> [__m256i; ROWS] {
    let mut v = nibble_vectors(b, rows8::quants(GgmlType::Q5_0));
    for (k, v) in v.iter_mut().enumerate() {
        *v = add_fifth_bits(*v, u32_at(b, rows8::MASKS + 4 * k));
    }
    v
}

/// Q8_0's vectors: already unsigned.
#[inline]
#[target_feature(enable = "avx2")]
fn byte_vectors(b: &[u8]) -> [__m256i; ROWS] {
    let mut v = [_mm256_setzero_si256(); ROWS];
    for (k, v) in v.iter_mut().enumerate() {
        *v = load32_at(b, rows8::quants(GgmlType::Q8_0) + 32 * k);
    }
    v
}

impl Interleaved for Q4_0 {
    const TY: GgmlType = GgmlType::Q4_0;
    #[inline(always)]
    unsafe fn weights(b: &[u8]) -> [__m256i; ROWS] {
        // SAFETY: the caller guarantees AVX2.
        unsafe { nibble_vectors(b, rows8::quants(Self::TY)) }
    }
}

impl Interleaved for Q5_0 {
    const TY: GgmlType = GgmlType::Q5_0;
    #[inline(always)]
    unsafe fn weights(b: &[u8]) -> [__m256i; ROWS] {
        // SAFETY: the caller guarantees AVX2 and AVX-512 BW/VL.
        unsafe { five_bit_vectors(b) }
    }
}

/// IQ4_NL's vectors: the nibbles looked up as the table's values plus
/// 128 (`legacy::Iq4Nl`'s unsigned bytes).
#[inline]
#[target_feature(enable = "avx2")]
fn table_vectors(b: &[u8]) -> [__m256i; ROWS] {
    // SAFETY: the table has 16 bytes.
    let table = unsafe { _mm_loadu_si128(iq4_nl::KVALUES_PLUS_128.as_ptr() as *const __m128i) };
    let table = _mm256_broadcastsi128_si256(table);
    let mut v = nibble_vectors(b, rows8::quants(GgmlType::IQ4_NL));
    for v in v.iter_mut() {
        *v = _mm256_shuffle_epi8(table, *v);
    }
    v
}

impl Interleaved for Iq4Nl {
    const TY: GgmlType = GgmlType::IQ4_NL;
    #[inline(always)]
    unsafe fn weights(b: &[u8]) -> [__m256i; ROWS] {
        // SAFETY: the caller guarantees AVX2.
        unsafe { table_vectors(b) }
    }
}

impl Interleaved for Q8_0 {
    const TY: GgmlType = GgmlType::Q8_0;
    #[inline(always)]
    unsafe fn weights(b: &[u8]) -> [__m256i; ROWS] {
        // SAFETY: the caller guarantees AVX2.
        unsafe { byte_vectors(b) }
    }
}

/// As `scalar::matmul_rows` for format `T`, from `w.rows8` (which the
/// caller has checked is there).
pub(super) fn matmul_rows<T: Interleaved>(
    t: Avx512,
    w: &QMatrix,
    x: Acts,
    a: &[BlockQ8_0],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
) {
    by_groups(
        rows,
        n_tok,
        out,
        |rows, out| legacy_vnni::matmul_rows::<T>(t, w, x, a, n_tok, rows, out),
        |gs, out| {
            // SAFETY: the token proves AVX-512 F/BW/VL/VNNI, AVX2, FMA and F16C.
            unsafe { groups::<T>(w, a, n_tok, gs, out) }
        },
    )
}

/// Split `rows` (outputs `out`, `n_tok` a row) into the whole 8-row
/// groups inside them, which go to `groups`, and the rows around them,
/// which go to `edge` (as the file has them).
pub(super) fn by_groups(
    rows: Range<usize>,
    n_tok: usize,
    out: &mut [f32],
    mut edge: impl FnMut(Range<usize>, &mut [f32]),
    groups: impl FnOnce(Range<usize>, &mut [f32]),
) {
    let g0 = rows.start.div_ceil(ROWS);
    let g1 = rows.end / ROWS;
    if g0 >= g1 {
        return edge(rows, out);
    }
    let (head, body) = out.split_at_mut((g0 * ROWS - rows.start) * n_tok);
    let (body, tail) = body.split_at_mut((g1 - g0) * ROWS * n_tok);
    if !head.is_empty() {
        edge(rows.start..g0 * ROWS, head);
    }
    groups(g0..g1, body);
    if !tail.is_empty() {
        edge(g1 * ROWS..rows.end, tail);
    }
}

/// Groups `gs` for every token, in tiles of one token (decode), of
/// exactly 2, 3 or 4 or else 8 or 16 (a verify step: each block unpacked
/// once; an exact small tile keeps its sums in registers — `small_batch
/// q4_k 4864`, 4 tokens 0.84 → 0.55 of one token's file-layout time), or
/// 64 (prefill).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn groups<T: Interleaved>(w: &QMatrix, a: &[BlockQ8_0], n_tok: usize, gs: Range<usize>, out: &mut [f32]) {
    let (mut stack, mut heap) = ([0; NEG_SUMS_ON_STACK], Vec::new());
    let neg_corr = neg_offset_sums_in::<T>(a, &mut stack, &mut heap);
    let nb = w.n_cols / QK8;
    let gb = rows8::bytes(T::TY).unwrap_or(0);
    match n_tok {
        1 => each_pair::<1>(w.rows8, gb * nb, n_tok, gs, out, |g0, g1, t0, nt| {
            tile16::<T, 1>(g0, g1, a, neg_corr, nb, t0, nt)
        }),
        2 => each_pair::<2>(w.rows8, gb * nb, n_tok, gs, out, |g0, g1, t0, nt| {
            tile16::<T, 2>(g0, g1, a, neg_corr, nb, t0, nt)
        }),
        3 => each_pair::<3>(w.rows8, gb * nb, n_tok, gs, out, |g0, g1, t0, nt| {
            tile16::<T, 3>(g0, g1, a, neg_corr, nb, t0, nt)
        }),
        4 => each_pair::<4>(w.rows8, gb * nb, n_tok, gs, out, |g0, g1, t0, nt| {
            tile16::<T, 4>(g0, g1, a, neg_corr, nb, t0, nt)
        }),
        5..=8 => each_pair::<8>(w.rows8, gb * nb, n_tok, gs, out, |g0, g1, t0, nt| {
            tile16::<T, 8>(g0, g1, a, neg_corr, nb, t0, nt)
        }),
        9..=16 => each_pair::<16>(w.rows8, gb * nb, n_tok, gs, out, |g0, g1, t0, nt| {
            tile16::<T, 16>(g0, g1, a, neg_corr, nb, t0, nt)
        }),
        _ => each_pair::<64>(w.rows8, gb * nb, n_tok, gs, out, |g0, g1, t0, nt| {
            tile16::<T, 64>(g0, g1, a, neg_corr, nb, t0, nt)
        }),
    }
}

/// Groups `gs` of an interleaved copy (`group_bytes` each), two at a
/// time, one per half of each 512-bit register (an odd last group twice,
/// its second half dropped): `tile(first, second, t0, nt)` gives tokens
/// `t0..t0 + nt`'s sums of their 16 rows, laid out as `out[row · n_tok +
/// token]`.
#[inline]
#[target_feature(enable = "avx2,avx512f")]
pub(super) fn each_pair<const NT: usize>(
    rows8: &[u8],
    group_bytes: usize,
    n_tok: usize,
    gs: Range<usize>,
    out: &mut [f32],
    mut tile: impl FnMut(&[u8], &[u8], usize, usize) -> [__m512; NT],
) {
    let group = |g: usize| &rows8[g * group_bytes..(g + 1) * group_bytes];
    for i in 0..gs.len().div_ceil(2) {
        let g = gs.start + 2 * i;
        let n = (gs.end - g).min(2);
        for t0 in (0..n_tok).step_by(NT) {
            let nt = NT.min(n_tok - t0);
            let acc = tile(group(g), group(g + n - 1), t0, nt);
            for (j, v) in acc.iter().take(nt).enumerate() {
                let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(*v)));
                for (h, half) in [_mm512_castps512_ps256(*v), hi].into_iter().enumerate().take(n) {
                    scatter8(&mut out[(2 * i + h) * ROWS * n_tok..], n_tok, t0 + j, &[half]);
                }
            }
        }
    }
}

/// Tokens `t0..t0 + nt` against two groups, one per half of each 512-bit
/// register: per block their 8 weight vectors and scales once, then for
/// each token the 16 rows' exact dots one per lane and the float update.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn tile16<T: Interleaved, const NT: usize>(
    g0: &[u8],
    g1: &[u8],
    a: &[BlockQ8_0],
    neg_corr: &[i32],
    nb: usize,
    t0: usize,
    nt: usize,
) -> [__m512; NT] {
    let gb = rows8::bytes(T::TY).unwrap_or(0);
    let mut acc = [_mm512_setzero_ps(); NT];
    for b in 0..nb {
        let (b0, b1) = block_pair(g0, g1, b, gb);
        // SAFETY: this fn enables AVX2 and AVX-512 BW/VL; both are blocks.
        let v = join(unsafe { (T::weights(b0), T::weights(b1)) });
        let dw = _mm512_cvtph_ps(_mm256_set_m128i(load16_at(b1, rows8::D), load16_at(b0, rows8::D)));
        for (j, acc) in acc.iter_mut().enumerate().take(nt) {
            let ta = (t0 + j) * nb + b;
            let ab = &a[ta];
            let mut s = _mm512_set1_epi32(neg_corr[ta]);
            for (k, vk) in v.iter().enumerate() {
                s = _mm512_dpbusd_epi32(s, *vk, _mm512_set1_epi32(bcast(&ab.qs, k)));
            }
            let t = _mm512_mul_ps(_mm512_mul_ps(dw, _mm512_set1_ps(ab.d)), _mm512_cvtepi32_ps(s));
            *acc = _mm512_add_ps(*acc, t);
        }
    }
    acc
}

/// Block `b` (`gb` bytes) of each of two groups, the lines ahead of them
/// prefetched.
#[inline(always)]
pub(super) fn block_pair<'g>(g0: &'g [u8], g1: &'g [u8], b: usize, gb: usize) -> (&'g [u8], &'g [u8]) {
    let (b0, b1) = (&g0[b * gb..(b + 1) * gb], &g1[b * gb..(b + 1) * gb]);
    for line in (0..gb).step_by(64) {
        prefetch(&[b0, b1], PREFETCH + line);
    }
    (b0, b1)
}

/// Two groups' 8 vectors, one group a half of each 512-bit register.
#[inline]
#[target_feature(enable = "avx2,avx512f")]
pub(super) fn join((v0, v1): ([__m256i; ROWS], [__m256i; ROWS])) -> [__m512i; ROWS] {
    let mut v = [_mm512_setzero_si512(); ROWS];
    for k in 0..ROWS {
        v[k] = _mm512_inserti64x4::<1>(_mm512_castsi256_si512(v0[k]), v1[k]);
    }
    v
}
