//! Prefill of the K-quants (Q2_K … Q6_K) with AVX-512 VNNI: tiles of 8
//! rows × 64 tokens. Each super-block's unpacked quants are transposed once across
//! the 8 rows (lane i = row i), so a token's 32-element run dot for all 8
//! rows is 8 `vpdpbusd` with its activations broadcast — no horizontal
//! sums. The integers are the reference's (`Σ scale · dot` and
//! `Σ minw · bsum`, exact, so their order is free) and the float update
//! is its expression, 8 rows per instruction.

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::backend::quant::{BlockQ8K, QK_K};
use tern_core::backend::QMatrix;

use super::cpu::Avx512;
use super::kunpack::{across, KQuant};
use super::simd::{bcast, each_tile8, prefetch, PREFETCH, ROWS};

/// Tokens per tile: each super-block's unpacking serves them all (16 → 64
/// took Qwen pp512 152 → 160 tok/s).
const NT: usize = 64;

/// Whole 8-row groups of `rows` of K-quant `K` (outputs `out[row * n_tok
/// + token]`); returns how many rows it did.
pub(super) fn groups8<K: KQuant>(
    _: Avx512,
    w: &QMatrix,
    a: &[BlockQ8K],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
) -> usize {
    // SAFETY: the token proves AVX-512 F/BW/VL/VNNI, AVX2, FMA and F16C.
    unsafe { groups8_imp::<K>(w, a, n_tok, rows, out) }
}

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn groups8_imp<K: KQuant>(w: &QMatrix, a: &[BlockQ8K], n_tok: usize, rows: Range<usize>, out: &mut [f32]) -> usize {
    let nb = w.n_cols / QK_K;
    match n_tok {
        // a speculative verify step: a tile of 8 (the 64-token tile's
        // sums cost as much to clear as to fill at 2–8 tokens)
        ..=8 => each_tile8::<8>(w, n_tok, rows, out, |rws, t0, nt| tile::<K, 8>(rws, a, nb, t0, nt)),
        _ => each_tile8::<NT>(w, n_tok, rows, out, |rws, t0, nt| tile::<K, NT>(rws, a, nb, t0, nt)),
    }
}

/// Four tokens' dots with 4-byte groups `K0..K1` of one run: 8 rows each.
#[inline]
#[target_feature(enable = "avx2,avx512f,avx512vl,avx512vnni")]
// indexed loops with constant bounds unroll fully; the iterator form did
// not (pp512 188 → 137 tok/s)
#[allow(clippy::needless_range_loop)]
fn run4<const K0: usize, const K1: usize>(q: &[__m256i; 8], qa: [&[i8; 32]; 4]) -> [__m256i; 4] {
    let mut s = [_mm256_setzero_si256(); 4];
    for k in K0..K1 {
        for j in 0..4 {
            s[j] = _mm256_dpbusd_epi32(s[j], q[k], _mm256_set1_epi32(bcast(qa[j], k)));
        }
    }
    s
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn tile<K: KQuant, const NT: usize>(
    rws: &[&[u8]; ROWS],
    a: &[BlockQ8K],
    nb: usize,
    t0: usize,
    nt: usize,
) -> [__m256; NT] {
    let ts = K::TYPE.type_size();
    let mut acc = [_mm256_setzero_ps(); NT];
    // tokens past `nt` repeat the last one (their results are dropped)
    let tok = |j: usize| (t0 + j.min(nt - 1)) * nb;
    for b in 0..nb {
        let o = b * ts;
        prefetch(rws, o + PREFETCH);
        let x = across::<K>(rws, o);
        let mut isum = [_mm256_setzero_si256(); NT];
        for (r, qr) in x.q.iter().enumerate() {
            // the run's 8 weight vectors stay in registers over the tokens
            let qr = *qr;
            // the 4-token groups holding a token of the tile
            for (j4, isum) in isum.chunks_exact_mut(4).enumerate().take(nt.div_ceil(4)) {
                let mut qa = [&[0i8; 32]; 4];
                for (j, qa) in qa.iter_mut().enumerate() {
                    let t = t0 + (4 * j4 + j).min(nt - 1);
                    *qa = a[t * nb + b].qs[32 * r..32 * r + 32].try_into().expect("a run is 32 bytes");
                }
                let mut s = [_mm256_setzero_si256(); 4];
                if K::RUN_SCALE {
                    let d = run4::<0, 8>(&qr, qa);
                    for j in 0..4 {
                        s[j] = _mm256_mullo_epi32(d[j], x.mult[2 * r]);
                    }
                } else {
                    let (lo, hi) = (run4::<0, 4>(&qr, qa), run4::<4, 8>(&qr, qa));
                    for j in 0..4 {
                        let lo = _mm256_mullo_epi32(lo[j], x.mult[2 * r]);
                        s[j] = _mm256_add_epi32(lo, _mm256_mullo_epi32(hi[j], x.mult[2 * r + 1]));
                    }
                }
                for (i, s) in isum.iter_mut().zip(s) {
                    *i = _mm256_add_epi32(*i, s);
                }
            }
        }
        for (j, (acc, isum)) in acc.iter_mut().zip(isum).enumerate().take(nt) {
            let ab = &a[tok(j) + b];
            let bs = |p: usize| (ab.bsums[2 * p] as u16 as i32) | ((ab.bsums[2 * p + 1] as i32) << 16);
            let mut imin = _mm256_setzero_si256();
            for (p, m) in x.minw.iter().enumerate() {
                imin = _mm256_dpwssd_epi32(imin, *m, _mm256_set1_epi32(bs(p)));
            }
            let t = x.update::<K>(ab.d, isum, imin);
            *acc = _mm256_add_ps(*acc, t);
        }
    }
    acc
}
