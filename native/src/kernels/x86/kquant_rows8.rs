//! Q4_K and Q6_K read from their 8-row interleaved copy (`quant::rows8`,
//! made at load) with AVX-512 VNNI: no per-super-block unpacking into rows
//! and no transpose (`kunpack::across`, which the file layout needs),
//! each run's 8 weight vectors already one row per lane. Two groups share
//! each 512-bit register, as in `rows8`.
//!
//! Per super-block and token the reference's exact integers, 16 rows a
//! lane each: `isum = Σ_run scale · (quants · activations)` — Q6_K's
//! unsigned quants' offset taken off by starting each 16-group's dot at
//! `−32 · bsum` —, Q4_K's `imin = Σ min · bsum`; then the reference's float
//! update (`Across::update`'s), so the same bits.

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::backend::quant::rows8::{self, q4_k, q6_k};
use tern_core::backend::quant::{BlockQ8K, GgmlType, QK_K};
use tern_core::backend::QMatrix;

use super::cpu::Avx512;
use super::kunpack::{KQuant, Q4K, Q6K};
use super::rows8::{block_pair, each_pair, join};
use super::simd::{bcast, load16_at, load32_at, ROWS};

/// A K-quant with the interleaved layout.
pub(super) trait KInterleaved: KQuant {
    /// Byte offset of the rows' f16 `d` in a group's block.
    const D: usize;
    /// Byte offset of the rows' f16 `dmin` and of their mins (`[run][row]`
    /// bytes), for the formats with mins.
    const MINS: Option<(usize, usize)>;
    /// Byte offset of the scales: `[run][row]` unsigned bytes where a run
    /// has one (`RUN_SCALE`), else `[16-group][row]` signed ones.
    const SCALES: usize;
    /// Run `j`'s 8 unsigned weight vectors of group block `b` (vector k:
    /// elements `4k..4k + 4` of the 8 rows).
    ///
    /// # Safety
    /// The CPU has AVX2.
    unsafe fn run(b: &[u8], j: usize) -> [__m256i; ROWS];
}

/// Run `j`'s low four bits: the nibbles of pair `j / 2` at `at`.
#[inline]
#[target_feature(enable = "avx2")]
fn nibbles(b: &[u8], at: usize, j: usize) -> [__m256i; ROWS] {
    let (m, shift) = (_mm256_set1_epi8(0x0F), _mm_cvtsi32_si128(4 * (j % 2) as i32));
    let mut v = [_mm256_setzero_si256(); ROWS];
    for (k, v) in v.iter_mut().enumerate() {
        *v = _mm256_and_si256(_mm256_srl_epi16(load32_at(b, at + 256 * (j / 2) + 32 * k), shift), m);
    }
    v
}

/// Q6_K's run `j`: its nibbles and, above them, its two high bits.
#[inline]
#[target_feature(enable = "avx2")]
fn six_bits(b: &[u8], j: usize) -> [__m256i; ROWS] {
    let mut v = nibbles(b, q6_k::QL, j);
    let (m, shift) = (_mm256_set1_epi8(0x30), 2 * (j % 4) as i32);
    for (k, v) in v.iter_mut().enumerate() {
        let h = load32_at(b, q6_k::QH + 256 * (j / 4) + 32 * k);
        // bits 2m..2m + 2 of each byte to bits 4..6
        let h = match shift {
            0 => _mm256_slli_epi16::<4>(h),
            2 => _mm256_slli_epi16::<2>(h),
            4 => h,
            _ => _mm256_srli_epi16::<2>(h),
        };
        *v = _mm256_or_si256(*v, _mm256_and_si256(h, m));
    }
    v
}

impl KInterleaved for Q4K {
    const D: usize = q4_k::D;
    const MINS: Option<(usize, usize)> = Some((q4_k::DMIN, q4_k::MINS));
    const SCALES: usize = q4_k::SCALES;
    #[inline(always)]
    unsafe fn run(b: &[u8], j: usize) -> [__m256i; ROWS] {
        // SAFETY: the caller guarantees AVX2.
        unsafe { nibbles(b, q4_k::QS, j) }
    }
}

impl KInterleaved for Q6K {
    const D: usize = q6_k::D;
    const MINS: Option<(usize, usize)> = None;
    const SCALES: usize = q6_k::SCALES;
    #[inline(always)]
    unsafe fn run(b: &[u8], j: usize) -> [__m256i; ROWS] {
        // SAFETY: the caller guarantees AVX2.
        unsafe { six_bits(b, j) }
    }
}

/// As `scalar::matmul_rows` for the whole 8-row groups `gs` of a K-quant
/// matrix, from `w.rows8` (which the caller has checked is there); false
/// (nothing done) for a type without the layout.
pub(super) fn matmul_groups(
    _: Avx512,
    w: &QMatrix,
    a: &[BlockQ8K],
    n_tok: usize,
    gs: Range<usize>,
    out: &mut [f32],
) -> bool {
    match w.ty {
        // SAFETY: the token proves AVX-512 F/BW/VL/VNNI, AVX2, FMA and F16C.
        GgmlType::Q4_K => unsafe { groups::<Q4K>(w, a, n_tok, gs, out) },
        // SAFETY: as above.
        GgmlType::Q6_K => unsafe { groups::<Q6K>(w, a, n_tok, gs, out) },
        _ => return false,
    }
    true
}

/// Groups `gs` for every token, in tiles of one token (decode), of
/// exactly 2, 3 or 4 or else 8 or 16 (a verify step: each block unpacked
/// once; an exact small tile keeps its sums in registers — `small_batch
/// q4_k 4864`, 4 tokens 0.84 → 0.55 of one token's file-layout time), or
/// 64 (prefill).
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn groups<K: KInterleaved>(w: &QMatrix, a: &[BlockQ8K], n_tok: usize, gs: Range<usize>, out: &mut [f32]) {
    let nb = w.n_cols / QK_K;
    let gb = rows8::bytes(K::TYPE).unwrap_or(0) * nb;
    match n_tok {
        1 => each_pair::<1>(w.rows8, gb, n_tok, gs, out, |g0, g1, t0, nt| tile16::<K, 1>(g0, g1, a, nb, t0, nt)),
        2 => each_pair::<2>(w.rows8, gb, n_tok, gs, out, |g0, g1, t0, nt| tile16::<K, 2>(g0, g1, a, nb, t0, nt)),
        3 => each_pair::<3>(w.rows8, gb, n_tok, gs, out, |g0, g1, t0, nt| tile16::<K, 3>(g0, g1, a, nb, t0, nt)),
        4 => each_pair::<4>(w.rows8, gb, n_tok, gs, out, |g0, g1, t0, nt| tile16::<K, 4>(g0, g1, a, nb, t0, nt)),
        5..=8 => each_pair::<8>(w.rows8, gb, n_tok, gs, out, |g0, g1, t0, nt| tile16::<K, 8>(g0, g1, a, nb, t0, nt)),
        9..=16 => each_pair::<16>(w.rows8, gb, n_tok, gs, out, |g0, g1, t0, nt| tile16::<K, 16>(g0, g1, a, nb, t0, nt)),
        _ => each_pair::<64>(w.rows8, gb, n_tok, gs, out, |g0, g1, t0, nt| tile16::<K, 64>(g0, g1, a, nb, t0, nt)),
    }
}

/// 16 bytes at `at` of two group blocks (8 of each) as 16 i32 lanes,
/// zero- or sign-extended.
#[inline]
#[target_feature(enable = "avx2,avx512f")]
fn lanes16(b0: &[u8], b1: &[u8], at: usize, signed: bool) -> __m512i {
    let u = |b: &[u8]| i64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
    let x = _mm_set_epi64x(u(b1), u(b0));
    if signed {
        _mm512_cvtepi8_epi32(x)
    } else {
        _mm512_cvtepu8_epi32(x)
    }
}

/// The 16 rows' f16 at `at` of two group blocks, as f32.
#[inline]
#[target_feature(enable = "avx2,avx512f,f16c")]
fn f16x16(b0: &[u8], b1: &[u8], at: usize) -> __m512 {
    _mm512_cvtph_ps(_mm256_set_m128i(load16_at(b1, at), load16_at(b0, at)))
}

/// Tokens `t0..t0 + nt` against two groups, one per half of each 512-bit
/// register: per super-block and run the 16 rows' weight vectors once,
/// then each token's exact dots one row a lane, then the float update.
#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn tile16<K: KInterleaved, const NT: usize>(
    g0: &[u8],
    g1: &[u8],
    a: &[BlockQ8K],
    nb: usize,
    t0: usize,
    nt: usize,
) -> [__m512; NT] {
    let gb = rows8::bytes(K::TYPE).unwrap_or(0);
    let mut acc = [_mm512_setzero_ps(); NT];
    for b in 0..nb {
        let (b0, b1) = block_pair(g0, g1, b, gb);
        let mut isum = [_mm512_setzero_si512(); NT];
        for j in 0..8 {
            // SAFETY: this fn enables AVX2; both are group blocks.
            let v = join(unsafe { (K::run(b0, j), K::run(b1, j)) });
            if K::RUN_SCALE {
                let sc = lanes16(b0, b1, K::SCALES + ROWS * j, false);
                for (t, isum) in isum.iter_mut().enumerate().take(nt) {
                    let qa: &[i8; 32] = a[(t0 + t) * nb + b].qs[32 * j..32 * j + 32].try_into().expect("a run");
                    let mut s = _mm512_setzero_si512();
                    for (k, vk) in v.iter().enumerate() {
                        s = _mm512_dpbusd_epi32(s, *vk, _mm512_set1_epi32(bcast(qa, k)));
                    }
                    *isum = _mm512_add_epi32(*isum, _mm512_mullo_epi32(s, sc));
                }
            } else {
                let sc_lo = lanes16(b0, b1, K::SCALES + ROWS * 2 * j, true);
                let sc_hi = lanes16(b0, b1, K::SCALES + ROWS * (2 * j + 1), true);
                for (t, isum) in isum.iter_mut().enumerate().take(nt) {
                    let ab = &a[(t0 + t) * nb + b];
                    let qa: &[i8; 32] = ab.qs[32 * j..32 * j + 32].try_into().expect("a run");
                    // the unsigned quants' +32, taken off each 16-group's dot
                    let mut lo = _mm512_set1_epi32(-32 * ab.bsums[2 * j] as i32);
                    let mut hi = _mm512_set1_epi32(-32 * ab.bsums[2 * j + 1] as i32);
                    for k in 0..4 {
                        lo = _mm512_dpbusd_epi32(lo, v[k], _mm512_set1_epi32(bcast(qa, k)));
                        hi = _mm512_dpbusd_epi32(hi, v[k + 4], _mm512_set1_epi32(bcast(qa, k + 4)));
                    }
                    let s = _mm512_add_epi32(_mm512_mullo_epi32(lo, sc_lo), _mm512_mullo_epi32(hi, sc_hi));
                    *isum = _mm512_add_epi32(*isum, s);
                }
            }
        }
        let d = f16x16(b0, b1, K::D);
        match K::MINS {
            Some((dmin_at, mins_at)) => {
                // run p's min in both i16 halves: its two 16-groups' bsum weights
                let mut minw = [_mm512_setzero_si512(); 8];
                for (p, m) in minw.iter_mut().enumerate() {
                    let x = lanes16(b0, b1, mins_at + ROWS * p, false);
                    *m = _mm512_or_si512(x, _mm512_slli_epi32::<16>(x));
                }
                let dmin = f16x16(b0, b1, dmin_at);
                for (t, (acc, isum)) in acc.iter_mut().zip(isum).enumerate().take(nt) {
                    let ab = &a[(t0 + t) * nb + b];
                    let bs = |p: usize| (ab.bsums[2 * p] as u16 as i32) | ((ab.bsums[2 * p + 1] as i32) << 16);
                    let mut imin = _mm512_setzero_si512();
                    for (p, m) in minw.iter().enumerate() {
                        imin = _mm512_dpwssd_epi32(imin, *m, _mm512_set1_epi32(bs(p)));
                    }
                    let da = _mm512_set1_ps(ab.d);
                    let s = _mm512_mul_ps(_mm512_mul_ps(d, da), _mm512_cvtepi32_ps(isum));
                    let t = _mm512_sub_ps(s, _mm512_mul_ps(_mm512_mul_ps(dmin, da), _mm512_cvtepi32_ps(imin)));
                    *acc = _mm512_add_ps(*acc, t);
                }
            }
            None => {
                for (t, (acc, isum)) in acc.iter_mut().zip(isum).enumerate().take(nt) {
                    let da = _mm512_set1_ps(a[(t0 + t) * nb + b].d);
                    *acc = _mm512_add_ps(*acc, _mm512_mul_ps(_mm512_mul_ps(d, da), _mm512_cvtepi32_ps(isum)));
                }
            }
        }
    }
    acc
}

/// The types this kernel reads.
pub(super) fn reads(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q4_K | GgmlType::Q6_K)
}
