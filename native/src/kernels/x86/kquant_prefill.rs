//! Prefill of the K-quants (Q2_K … Q6_K) with AVX2 alone, in tiles of 8
//! rows × `NT` tokens: the VNNI tiles (`kquant_vnni`) in AVX2's
//! instructions. A group's super-blocks are laid out across its 8 rows
//! once (`kunpack::across`, lane i = row i) and kept for all its tiles;
//! a token's 4-byte column dots for the 8 rows are `vpmaddubsw` with its
//! activations broadcast, added in i16 as far as they cannot overflow
//! (`U_MAX · 128 · 2` per column), then `vpmaddwd` with the rows' scales.
//! The integers are the reference's (`Σ scale · dot` and
//! `Σ minw · bsum`, exact, so their order is free) and the float update
//! is its expression, 8 rows per instruction.

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::backend::quant::{BlockQ8K, QK_K};
use tern_core::backend::QMatrix;

use super::cpu::Avx2;
use super::kunpack::{across, Across, KQuant};
use super::simd::{bcast, each_tile8};

/// Tokens per tile.
const NT: usize = 16;

/// Whole 8-row groups of `rows` of K-quant `K` (outputs `out[row * n_tok
/// + token]`); returns how many rows it did.
pub(super) fn groups8<K: KQuant>(
    _: Avx2,
    w: &QMatrix,
    a: &[BlockQ8K],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
) -> usize {
    // SAFETY: the token proves AVX2, FMA and F16C.
    unsafe { groups8_imp::<K>(w, a, n_tok, rows, out) }
}

#[target_feature(enable = "avx2,fma,f16c")]
fn groups8_imp<K: KQuant>(w: &QMatrix, a: &[BlockQ8K], n_tok: usize, rows: Range<usize>, out: &mut [f32]) -> usize {
    let nb = w.n_cols / QK_K;
    let ts = K::TYPE.type_size();
    // a group's super-blocks across its rows, once for all its tiles
    // (`each_tile8` starts each group at token 0)
    let mut sbs: Vec<Across> = Vec::with_capacity(nb);
    each_tile8::<NT>(w, n_tok, rows, out, |rws, t0, nt| {
        if t0 == 0 {
            sbs.clear();
            sbs.extend((0..nb).map(|b| {
                let mut x = across::<K>(rws, b * ts);
                // each i32 scale as an i16 pair, for `vpmaddwd`
                x.mult = x.mult.map(|m| {
                    _mm256_or_si256(_mm256_blend_epi16::<0xAA>(m, _mm256_setzero_si256()), _mm256_slli_epi32::<16>(m))
                });
                x
            }));
        }
        tile::<K>(&sbs, a, t0, nt)
    })
}

/// Columns a `vpmaddwd` takes at once: as many 4-byte columns as add up in
/// i16 without overflow, within one scale's reach (a 16-group, or a
/// 32-run where the format's two groups share a scale).
const fn chunk<K: KQuant>() -> usize {
    let fit = (i16::MAX as i32 / (2 * 128 * K::U_MAX)) as usize;
    let reach = if K::RUN_SCALE { 8 } else { 4 };
    let mut c = 1;
    while 2 * c <= fit && 2 * c <= reach {
        c *= 2;
    }
    c
}

/// One run's dot for the 8 rows: columns `qr` with the token's 32
/// activations `qa`, each chunk's i16 sum times its scale (`mult`, the
/// run's two 16-groups' scales).
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
// indexed loops with constant bounds unroll fully
#[allow(clippy::needless_range_loop)]
unsafe fn run_dot<K: KQuant>(qr: &[__m256i; 8], qa: &[i8; 32], mult: [__m256i; 2]) -> __m256i {
    let c = chunk::<K>();
    // SAFETY: the caller guarantees AVX2.
    unsafe {
        let mut s = _mm256_setzero_si256();
        for k0 in (0..8).step_by(c) {
            let mut p = _mm256_maddubs_epi16(qr[k0], _mm256_set1_epi32(bcast(qa, k0)));
            for k in k0 + 1..k0 + c {
                p = _mm256_add_epi16(p, _mm256_maddubs_epi16(qr[k], _mm256_set1_epi32(bcast(qa, k))));
            }
            s = _mm256_add_epi32(s, _mm256_madd_epi16(p, mult[k0 / 4]));
        }
        s
    }
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn tile<K: KQuant>(sbs: &[Across], a: &[BlockQ8K], t0: usize, nt: usize) -> [__m256; NT] {
    let nb = sbs.len();
    let mut acc = [_mm256_setzero_ps(); NT];
    for (b, x) in sbs.iter().enumerate() {
        let mut isum = [_mm256_setzero_si256(); NT];
        for (r, qr) in x.q.iter().enumerate() {
            // the run's 8 weight vectors stay in registers over the tokens
            let qr = *qr;
            let mult = [x.mult[2 * r], x.mult[2 * r + 1]];
            for (j, isum) in isum.iter_mut().enumerate().take(nt) {
                let qa: &[i8; 32] = a[(t0 + j) * nb + b].qs[32 * r..32 * r + 32].try_into().expect("a run is 32 bytes");
                // SAFETY: this fn enables AVX2.
                *isum = _mm256_add_epi32(*isum, unsafe { run_dot::<K>(&qr, qa, mult) });
            }
        }
        for (j, (acc, isum)) in acc.iter_mut().zip(isum).enumerate().take(nt) {
            let ab = &a[(t0 + j) * nb + b];
            let bs = |p: usize| (ab.bsums[2 * p] as u16 as i32) | ((ab.bsums[2 * p + 1] as i32) << 16);
            let mut imin = _mm256_setzero_si256();
            for (p, m) in x.minw.iter().enumerate() {
                imin = _mm256_add_epi32(imin, _mm256_madd_epi16(*m, _mm256_set1_epi32(bs(p))));
            }
            let t = x.update::<K>(ab.d, isum, imin);
            *acc = _mm256_add_ps(*acc, t);
        }
    }
    acc
}
