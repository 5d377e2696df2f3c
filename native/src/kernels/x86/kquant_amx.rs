//! The K-quants (Q2_K … Q6_K) on AMX tiles, in prefill. A super-block's
//! 32-element runs of unsigned quants (`kunpack`) are the A tiles of 16
//! weight rows; one `tdpbusd` per run (per 16-element half, for the
//! formats with a scale per 16) gives the exact dots of the 16 rows with
//! 16 tokens, and AVX-512 weighs them by each row's scales into the
//! reference's integers: `isum = Σ scale · dot` and `imin = Σ minw ·
//! bsum` (exact, so their order is free), then its float update, block
//! after block — the scalar bits.
//!
//! A call lays its tokens' runs out once in the tiles' VNNI layout, then
//! for each 16 weight rows unpacks every super-block of them once, and
//! runs each group of 16 tokens over all of them with its 16 rows' sums
//! in registers. Rows and tokens short of 16 are zeros in the tiles.

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::backend::quant::{BlockQ8K, QK_K};
use tern_core::backend::QMatrix;

use super::cpu::Amx;
use super::kunpack::KQuant;
use super::tiles::{store_sums, vnni_layout, Set, TileBytes, TileSums, Tiles, BLOCK, B_BYTES, TILE_ROWS};

/// Runs of 32 in a super-block.
const RUNS: usize = QK_K / BLOCK;

/// One super-block of 16 tokens: each run in the VNNI layout, the tokens'
/// scales, and their 16-group sums in i16 pairs (pair p: groups 2p, 2p + 1).
struct Tokens {
    runs: [TileBytes; RUNS],
    da: [f32; TILE_ROWS],
    bsums: [[i32; TILE_ROWS]; RUNS],
}

/// One super-block of 16 weight rows: each run (row i at 32·i, unsigned),
/// each 16-group's scale by row, each row's bsum weights in i16 pairs, and
/// the rows' `d` and `dmin`.
struct Rows {
    runs: [TileBytes; RUNS],
    sc: [[i32; TILE_ROWS]; 2 * RUNS],
    minw: [[i32; RUNS]; TILE_ROWS],
    d: [f32; TILE_ROWS],
    dmin: [f32; TILE_ROWS],
}

/// As `scalar::matmul_rows` for K-quant `K`, on tiles.
pub(super) fn matmul_rows<K: KQuant>(
    amx: Amx,
    w: &QMatrix,
    a: &[BlockQ8K],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
) {
    // SAFETY: the token proves AVX-512 F/BW/VL/VNNI, AVX2, FMA and F16C.
    unsafe { rows_imp::<K>(amx, w, a, n_tok, rows, out) }
}

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
fn rows_imp<K: KQuant>(amx: Amx, w: &QMatrix, a: &[BlockQ8K], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    let nb = w.n_cols / QK_K;
    if nb == 0 {
        // no columns: every dot is the empty sum, as the reference's
        out.fill(0.0);
        return;
    }
    let groups = n_tok.div_ceil(TILE_ROWS);
    let toks: Vec<Tokens> = (0..groups * nb)
        .map(|i| {
            let (g, b) = (i / nb, i % nb);
            pack_tokens(a, nb, g * TILE_ROWS..((g + 1) * TILE_ROWS).min(n_tok), b)
        })
        .collect();
    let mut wr: Vec<Rows> = (0..nb).map(|_| empty_rows()).collect();
    let mut c = TileSums([0; TILE_ROWS * TILE_ROWS]);
    let mut tiles = Tiles::new(amx);
    for r0 in rows.clone().step_by(TILE_ROWS) {
        let nr = TILE_ROWS.min(rows.end - r0);
        for (b, wb) in wr.iter_mut().enumerate() {
            unpack_rows::<K>(w, r0..r0 + nr, b, wb);
        }
        for g in 0..groups {
            let mut acc = [_mm512_setzero_ps(); TILE_ROWS];
            for (t, wb) in toks[g * nb..(g + 1) * nb].iter().zip(&wr) {
                let mut isum = [_mm512_setzero_si512(); TILE_ROWS];
                for r in 0..RUNS {
                    if K::RUN_SCALE {
                        tiles.dot_u(Set::Even, &wb.runs[r].0, BLOCK, &t.runs[r]);
                        tiles.store(Set::Even, &mut c);
                        weigh(&mut isum, &wb.sc[2 * r], &c);
                    } else {
                        for h in 0..2 {
                            let b_half = &t.runs[r].0[h * B_BYTES / 2..];
                            tiles.dot16_u(Set::Even, &wb.runs[r].0[h * BLOCK / 2..], BLOCK, b_half);
                            tiles.store(Set::Even, &mut c);
                            weigh(&mut isum, &wb.sc[2 * r + h], &c);
                        }
                    }
                }
                // SAFETY: 16 floats of the 16 in `t.da`.
                let da = unsafe { _mm512_loadu_ps(t.da.as_ptr()) };
                // SAFETY: 16 i32 of the 16 in each `t.bsums[p]`.
                let bsums: [__m512i; RUNS] =
                    core::array::from_fn(|p| unsafe { _mm512_loadu_si512(t.bsums[p].as_ptr().cast()) });
                for (i, (acc, isum)) in acc.iter_mut().zip(isum).enumerate() {
                    let mut imin = _mm512_setzero_si512();
                    for (p, bs) in bsums.iter().enumerate() {
                        imin = _mm512_dpwssd_epi32(imin, _mm512_set1_epi32(wb.minw[i][p]), *bs);
                    }
                    let d = _mm512_mul_ps(_mm512_set1_ps(wb.d[i]), da);
                    let t = if K::DMIN_AT.is_some() {
                        let s = _mm512_mul_ps(d, _mm512_cvtepi32_ps(isum));
                        let m = _mm512_mul_ps(_mm512_set1_ps(wb.dmin[i]), da);
                        _mm512_sub_ps(s, _mm512_mul_ps(m, _mm512_cvtepi32_ps(imin)))
                    } else {
                        _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_sub_epi32(isum, imin)))
                    };
                    *acc = _mm512_add_ps(*acc, t);
                }
            }
            store_sums(&acc, nr, &mut out[(r0 - rows.start) * n_tok..], n_tok, g * TILE_ROWS);
        }
    }
}

/// `isum[i] += sc[i] · c[i]`: row i's dots weighed by its scale.
#[inline]
#[target_feature(enable = "avx512f")]
fn weigh(isum: &mut [__m512i; TILE_ROWS], sc: &[i32; TILE_ROWS], c: &TileSums) {
    for (i, isum) in isum.iter_mut().enumerate() {
        let row = &c.0[i * TILE_ROWS..(i + 1) * TILE_ROWS];
        // SAFETY: 16 i32 of the 16 in `row`.
        let dots = unsafe { _mm512_loadu_si512(row.as_ptr().cast()) };
        *isum = _mm512_add_epi32(*isum, _mm512_mullo_epi32(_mm512_set1_epi32(sc[i]), dots));
    }
}

fn empty_rows() -> Rows {
    let zero = TileBytes([0; B_BYTES]);
    Rows {
        runs: [zero; RUNS],
        sc: [[0; TILE_ROWS]; 2 * RUNS],
        minw: [[0; RUNS]; TILE_ROWS],
        d: [0.0; TILE_ROWS],
        dmin: [0.0; TILE_ROWS],
    }
}

/// Super-block `b` of weight rows `rows` (at most 16) into `out`; rows
/// past the last are zeros.
#[inline]
#[target_feature(enable = "avx2,f16c,avx512f")]
fn unpack_rows<K: KQuant>(w: &QMatrix, rows: Range<usize>, b: usize, out: &mut Rows) {
    let ts = K::TYPE.type_size();
    let n = rows.len();
    for (i, r) in rows.enumerate() {
        let blk = &w.row(r)[b * ts..(b + 1) * ts];
        // SAFETY: this fn enables AVX2.
        let kb = unsafe { K::unpack(blk) };
        for (run, q) in out.runs.iter_mut().zip(kb.q) {
            let dst = &mut run.0[i * BLOCK..(i + 1) * BLOCK];
            // SAFETY: 32 bytes into the 32 of `dst`.
            unsafe { _mm256_storeu_si256(dst.as_mut_ptr().cast(), q) };
        }
        let mut sc = [0i16; 2 * RUNS];
        // SAFETY: 32 bytes into the 32 of `sc`, and of `minw`.
        unsafe {
            _mm256_storeu_si256(sc.as_mut_ptr().cast(), kb.sc);
            _mm256_storeu_si256(out.minw[i].as_mut_ptr().cast(), kb.minw);
        }
        for (g, s) in sc.iter().enumerate() {
            out.sc[g][i] = *s as i32;
        }
        out.d[i] = tern_core::backend::quant::f16_at(blk, K::D_AT);
        out.dmin[i] = K::DMIN_AT.map_or(0.0, |m| tern_core::backend::quant::f16_at(blk, m));
    }
    if n < TILE_ROWS {
        for run in out.runs.iter_mut() {
            run.0[n * BLOCK..].fill(0);
        }
        for sc in out.sc.iter_mut() {
            sc[n..].fill(0);
        }
        for m in out.minw[n..].iter_mut() {
            *m = [0; RUNS];
        }
        out.d[n..].fill(0.0);
        out.dmin[n..].fill(0.0);
    }
}

/// Super-block `b` of tokens `toks` (at most 16): each run in the VNNI
/// layout, their scales and bsum pairs (zeros past the last token).
#[inline]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
fn pack_tokens(a: &[BlockQ8K], nb: usize, toks: Range<usize>, b: usize) -> Tokens {
    let blk = |i: usize| (i < toks.len()).then(|| &a[(toks.start + i) * nb + b]);
    let runs = core::array::from_fn(|r| {
        vnni_layout(|i| blk(i).map(|x| x.qs[r * BLOCK..(r + 1) * BLOCK].try_into().expect("a run is 32 bytes")))
    });
    let mut da = [0.0; TILE_ROWS];
    let mut bsums = [[0i32; TILE_ROWS]; RUNS];
    for i in 0..TILE_ROWS {
        if let Some(x) = blk(i) {
            da[i] = x.d;
            for (p, pairs) in bsums.iter_mut().enumerate() {
                pairs[i] = (x.bsums[2 * p] as u16 as i32) | ((x.bsums[2 * p + 1] as i32) << 16);
            }
        }
    }
    Tokens { runs, da, bsums }
}
