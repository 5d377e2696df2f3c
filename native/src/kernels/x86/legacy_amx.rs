//! The legacy formats without a min (Q4_0, Q5_0, Q8_0) on AMX tiles, in
//! prefill: per block of 32, one `tdpbssd` gives the exact integer dots of
//! 16 weight rows with 16 tokens (signed × signed, so no offset to take
//! back), and AVX-512 applies the reference's float update to each:
//! `acc + (dw · da) · isum`, block after block — the scalar bits.
//!
//! A call lays its tokens' activations out once in the tiles' VNNI layout
//! (`pack_tokens`), then for each 16 weight rows unpacks every block of
//! them once (signed bytes, rows 32 bytes apart) and runs each group of
//! 16 tokens over all blocks with its 16 rows' sums in registers. Rows
//! and tokens short of 16 are zeros in the tiles, their sums unused.

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::backend::quant::{BlockQ8_0, QK8};
use tern_core::backend::QMatrix;

use super::cpu::Amx;
use super::legacy::Block32;
use super::tiles::{store_sums, vnni_layout, Set, TileBytes, TileSums, Tiles, BLOCK, B_BYTES, TILE_ROWS};

/// As `scalar::matmul_rows` for format `T` (one without a min), on tiles.
pub(super) fn matmul_rows<T: Block32>(
    amx: Amx,
    w: &QMatrix,
    a: &[BlockQ8_0],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
) {
    // SAFETY: the token proves AVX-512 F/BW/VL, AVX2, FMA and F16C.
    unsafe { rows_imp::<T>(amx, w, a, n_tok, rows, out) }
}

#[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl")]
fn rows_imp<T: Block32>(amx: Amx, w: &QMatrix, a: &[BlockQ8_0], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    let nb = w.n_cols / QK8;
    if nb == 0 {
        // no columns: every dot is the empty sum, as the reference's
        out.fill(0.0);
        return;
    }
    let groups = n_tok.div_ceil(TILE_ROWS);
    // each token group's blocks in the VNNI layout, and their scales
    let mut b_tiles = vec![TileBytes([0; B_BYTES]); groups * nb];
    let mut da = vec![[0.0f32; TILE_ROWS]; groups * nb];
    for g in 0..groups {
        let toks = g * TILE_ROWS..((g + 1) * TILE_ROWS).min(n_tok);
        for b in 0..nb {
            pack_tokens(a, nb, toks.clone(), b, &mut b_tiles[g * nb + b], &mut da[g * nb + b]);
        }
    }
    // one row group's blocks: signed quants (row i at 32·i) and scales
    let mut w_tiles = vec![TileBytes([0; B_BYTES]); nb];
    let mut dw_bits = vec![[0u16; TILE_ROWS]; nb];
    let mut dw = vec![[0.0f32; TILE_ROWS]; nb];
    // block b + 1's product runs while block b's sums are stored and used
    let mut c = TileSums([0; TILE_ROWS * TILE_ROWS]);
    let set = |b: usize| if b % 2 == 0 { Set::Even } else { Set::Odd };
    let mut tiles = Tiles::new(amx);
    for r0 in rows.clone().step_by(TILE_ROWS) {
        let nr = TILE_ROWS.min(rows.end - r0);
        for (i, r) in (r0..r0 + nr).enumerate() {
            let row = w.row(r);
            for b in 0..nb {
                let blk = &row[b * T::BYTES..(b + 1) * T::BYTES];
                // SAFETY: this fn enables AVX2 and AVX-512 BW/VL.
                let q = _mm256_sub_epi8(unsafe { T::unsigned_512(blk) }, _mm256_set1_epi8(T::OFFSET));
                let dst = &mut w_tiles[b].0[i * BLOCK..(i + 1) * BLOCK];
                // SAFETY: 32 bytes into the 32 of `dst`.
                unsafe { _mm256_storeu_si256(dst.as_mut_ptr().cast(), q) };
                dw_bits[b][i] = u16::from_le_bytes([blk[T::D_AT], blk[T::D_AT + 1]]);
            }
        }
        if nr < TILE_ROWS {
            for (t, d) in w_tiles.iter_mut().zip(dw_bits.iter_mut()) {
                t.0[nr * BLOCK..].fill(0);
                d[nr..].fill(0);
            }
        }
        // the scales of each block's 16 rows, widened at once (exact)
        for (bits, d) in dw_bits.iter().zip(dw.iter_mut()) {
            // SAFETY: 16 u16 read from `bits`, 16 floats written to `d`.
            unsafe { _mm512_storeu_ps(d.as_mut_ptr(), _mm512_cvtph_ps(_mm256_loadu_si256(bits.as_ptr().cast()))) };
        }
        for g in 0..groups {
            let mut acc = [_mm512_setzero_ps(); TILE_ROWS];
            tiles.dot(set(0), &w_tiles[0].0, BLOCK, &b_tiles[g * nb]);
            for b in 0..nb {
                if b + 1 < nb {
                    tiles.dot(set(b + 1), &w_tiles[b + 1].0, BLOCK, &b_tiles[g * nb + b + 1]);
                }
                tiles.store(set(b), &mut c);
                // SAFETY: 16 floats of the 16 in `da[..]`.
                let dav = unsafe { _mm512_loadu_ps(da[g * nb + b].as_ptr()) };
                for (i, acc) in acc.iter_mut().enumerate() {
                    let sums = &c.0[i * TILE_ROWS..(i + 1) * TILE_ROWS];
                    // SAFETY: 16 i32 of the 16 in `sums`.
                    let isum = _mm512_cvtepi32_ps(unsafe { _mm512_loadu_si512(sums.as_ptr().cast()) });
                    let d = _mm512_mul_ps(_mm512_set1_ps(dw[b][i]), dav);
                    *acc = _mm512_add_ps(*acc, _mm512_mul_ps(d, isum));
                }
            }
            store_sums(&acc, nr, &mut out[(r0 - rows.start) * n_tok..], n_tok, g * TILE_ROWS);
        }
    }
}

/// Block `b` of tokens `toks` (at most 16) in the VNNI layout (`tiles`),
/// tokens past the last zeros; `d` gets their scales (0 past the last).
#[inline]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
fn pack_tokens(a: &[BlockQ8_0], nb: usize, toks: Range<usize>, b: usize, out: &mut TileBytes, d: &mut [f32; 16]) {
    d.fill(0.0);
    for (d, t) in d.iter_mut().zip(toks.clone()) {
        *d = a[t * nb + b].d;
    }
    *out = vnni_layout(|i| (i < toks.len()).then(|| &a[(toks.start + i) * nb + b].qs));
}
