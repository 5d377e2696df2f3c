//! Eight rows interleaved: a matrix of a 32-element format without a min
//! (Q4_0, Q5_0, Q8_0) rewritten at load so that a block of 8 consecutive
//! rows is one run of bytes in which each 32-byte vector holds 4 weights of
//! every row (bytes `4r..4r + 4`: row r). A SIMD kernel then takes a
//! block's 8 rows with a few loads and no transpose (`QMatrix::rows8`).
//! The same numbers as the file's blocks.
//!
//! Group g (rows 8g..8g + 8), block b is at `(g · n_blocks + b) · bytes(ty)`:
//!
//! - `d`: the 8 rows' f16 scales (16 bytes);
//! - Q5_0 only, `masks`: 8 u32, mask k's bit `4r + i` the fifth bit of
//!   row r's element `4k + i` (32 bytes);
//! - Q4_0 and Q5_0, `nibbles`: 4 vectors of 32 bytes, vector p's bytes
//!   `4r..4r + 4` row r's packed bytes `4p..4p + 4` (low nibbles: elements
//!   `4p..`, high nibbles: elements `16 + 4p..`);
//! - Q8_0, `bytes`: 8 vectors of 32 bytes, vector k's bytes `4r..4r + 4`
//!   row r's quants `4k..4k + 4` plus 128, as unsigned bytes.

use alloc::vec::Vec;

use super::{q4_0, q5_0, q8_0, GgmlType, Unpacked32};

/// Rows in a group.
pub const ROWS: usize = 8;
/// Byte offset of the scales in a group's block.
pub const D: usize = 0;
/// Byte offset of Q5_0's masks.
pub const MASKS: usize = 2 * ROWS;
/// Byte offset of the quants: after the masks (Q5_0) or the scales.
pub const fn quants(ty: GgmlType) -> usize {
    match ty {
        GgmlType::Q5_0 => MASKS + 4 * ROWS,
        _ => D + 2 * ROWS,
    }
}

/// Bytes of one block of a group (8 of the file's blocks), None for a type
/// without this layout.
pub const fn bytes(ty: GgmlType) -> Option<usize> {
    match ty {
        GgmlType::Q4_0 | GgmlType::Q5_0 => Some(quants(ty) + 4 * 32),
        GgmlType::Q8_0 => Some(quants(ty) + 8 * 32),
        _ => None,
    }
}
const _: () = assert!(matches!(bytes(GgmlType::Q5_0), Some(176)));
const _: () = assert!(matches!(bytes(GgmlType::Q4_0), Some(144)));
const _: () = assert!(matches!(bytes(GgmlType::Q8_0), Some(272)));

/// Bytes the whole groups of a matrix take in this layout, None for a type
/// without it or rows that are not whole blocks.
pub fn matrix_bytes(ty: GgmlType, n_cols: usize, n_rows: usize) -> Option<usize> {
    (n_cols % 32 == 0).then_some(n_rows / ROWS * (n_cols / 32) * bytes(ty)?)
}

/// Append the whole groups of 8 rows of a matrix (`n_rows / 8` of them;
/// the rows past stay in `data` alone) in this layout to `out`; false (and
/// nothing appended) for another type, rows that are not whole blocks, or
/// memory that cannot be had.
pub fn pack(ty: GgmlType, data: &[u8], n_cols: usize, n_rows: usize, out: &mut Vec<u8>) -> bool {
    let (Some(gb), Some(n)) = (bytes(ty), matrix_bytes(ty, n_cols, n_rows)) else {
        return false;
    };
    let (ts, nb) = (ty.type_size(), n_cols / 32);
    if data.len() != n_rows * nb * ts || out.try_reserve(n).is_err() {
        return false;
    }
    if n == 0 {
        return true;
    }
    let at = out.len();
    out.resize(at + n, 0);
    let row_bytes = nb * ts;
    for (rows, group) in data.chunks_exact(ROWS * row_bytes).zip(out[at..].chunks_exact_mut(nb * gb)) {
        for (b, o) in group.chunks_exact_mut(gb).enumerate() {
            for r in 0..ROWS {
                let src = &rows[r * row_bytes + b * ts..][..ts];
                pack_block(ty, src, r, o);
            }
        }
    }
    true
}

/// A file block `src` as row `r` of the group block `o`.
#[inline]
fn pack_block(ty: GgmlType, src: &[u8], r: usize, o: &mut [u8]) {
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let q = quants(ty);
    o[D + 2 * r..D + 2 * r + 2].copy_from_slice(&src[..2]);
    match ty {
        GgmlType::Q8_0 => {
            for k in 0..8 {
                let v = u32_at(src, q8_0::QS + 4 * k) ^ 0x8080_8080;
                o[q + 32 * k + 4 * r..][..4].copy_from_slice(&v.to_le_bytes());
            }
        }
        _ => {
            let qs = if ty == GgmlType::Q5_0 { q5_0::QS } else { q4_0::QS };
            for p in 0..4 {
                o[q + 32 * p + 4 * r..][..4].copy_from_slice(&src[qs + 4 * p..][..4]);
            }
            if ty == GgmlType::Q5_0 {
                let qh = u32_at(src, q5_0::QH);
                for k in 0..8 {
                    let v = u32_at(o, MASKS + 4 * k) | ((qh >> (4 * k)) & 0xF) << (4 * r);
                    o[MASKS + 4 * k..][..4].copy_from_slice(&v.to_le_bytes());
                }
            }
        }
    }
}

/// Row `r`'s block `b` read back from a packed matrix of `n_blocks` blocks
/// a row (the file's block, unpacked): the layout's definition, for tests.
pub fn unpack(ty: GgmlType, packed: &[u8], n_blocks: usize, r: usize, b: usize) -> Option<Unpacked32> {
    let gb = bytes(ty)?;
    let o = packed.get(((r / ROWS) * n_blocks + b) * gb..)?.get(..gb)?;
    let (r, q) = (r % ROWS, quants(ty));
    let d = super::f16_at(o, D + 2 * r);
    let mut w = [0i8; 32];
    for (j, w) in w.iter_mut().enumerate() {
        *w = match ty {
            GgmlType::Q8_0 => (o[q + 32 * (j / 4) + 4 * r + j % 4] ^ 0x80) as i8,
            _ => {
                let (p, i) = ((j % 16) / 4, j % 4);
                let byte = o[q + 32 * p + 4 * r + i];
                let nib = if j < 16 { byte & 0xF } else { byte >> 4 };
                if ty == GgmlType::Q5_0 {
                    let mask = u32::from_le_bytes(o[MASKS + 4 * (j / 4)..][..4].try_into().unwrap());
                    (nib | (((mask >> (4 * r + i)) & 1) as u8) << 4) as i8 - 16
                } else {
                    nib as i8 - 8
                }
            }
        };
    }
    Some(Unpacked32 { q: w, d, m: 0.0 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::quant::unpack_32;

    #[test]
    fn every_row_reads_back_as_its_file_block() {
        let mut s = 0x1234_5678_9abc_def0u64;
        for ty in [GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0] {
            let (n_cols, n_rows) = (96, 19);
            let data: Vec<u8> = (0..n_rows * 3 * ty.type_size())
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 7;
                    s ^= s << 17;
                    s as u8
                })
                .collect();
            let mut packed = Vec::new();
            assert!(pack(ty, &data, n_cols, n_rows, &mut packed));
            assert_eq!(packed.len(), 2 * 3 * bytes(ty).unwrap());
            for r in 0..16 {
                for b in 0..3 {
                    let want = unpack_32(ty, &data[(r * 3 + b) * ty.type_size()..]).unwrap();
                    let got = unpack(ty, &packed, 3, r, b).unwrap();
                    assert_eq!((got.q, got.d.to_bits()), (want.q, want.d.to_bits()), "{ty:?} row {r} block {b}");
                }
            }
            assert!(unpack(ty, &packed, 3, 16, 0).is_none(), "row 16 is past the whole groups");
        }
        let mut out = Vec::new();
        assert!(!pack(GgmlType::Q4_1, &[0; 20], 32, 1, &mut out));
        assert!(!pack(GgmlType::Q8_0, &[0; 33], 32, 1, &mut out));
        assert!(out.is_empty());
    }
}
