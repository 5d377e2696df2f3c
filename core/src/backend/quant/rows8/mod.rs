//! Eight rows interleaved: a matrix rewritten at load so that a block of 8
//! consecutive rows is one run of bytes in which each 32-byte vector holds
//! 4 weights of every row (bytes `4r..4r + 4`: row r). A SIMD kernel then
//! takes a block's 8 rows with a few loads and no transpose
//! (`QMatrix::rows8`). The same numbers as the file's blocks.
//!
//! Group g (rows 8g..8g + 8), block b (the file's block b of each of the 8
//! rows) is at `(g · n_blocks + b) · bytes(ty)`. The layout of a group's
//! block, per format: [`legacy`] (Q4_0, Q5_0, Q8_0, IQ4_NL), [`q4_k`], [`q6_k`].

pub mod legacy;
pub mod q4_k;
pub mod q6_k;

use alloc::vec::Vec;

use super::{GgmlType, Unpacked32, UnpackedK};

pub use legacy::{quants, D, MASKS};

/// Rows in a group.
pub const ROWS: usize = 8;

/// Bytes of one block of a group (8 of the file's blocks), None for a type
/// without this layout.
pub const fn bytes(ty: GgmlType) -> Option<usize> {
    match ty {
        GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 | GgmlType::IQ4_NL => legacy::bytes(ty),
        GgmlType::Q4_K => Some(q4_k::BYTES),
        GgmlType::Q6_K => Some(q6_k::BYTES),
        _ => None,
    }
}
const _: () = assert!(matches!(bytes(GgmlType::Q4_K), Some(1184)));
const _: () = assert!(matches!(bytes(GgmlType::Q6_K), Some(1680)));

/// Bytes the whole groups of a matrix take in this layout, None for a type
/// without it or rows that are not whole blocks.
pub fn matrix_bytes(ty: GgmlType, n_cols: usize, n_rows: usize) -> Option<usize> {
    let bs = ty.block_size();
    (n_cols % bs == 0).then_some(n_rows / ROWS * (n_cols / bs) * bytes(ty)?)
}

/// Append the whole groups of 8 rows of a matrix (`n_rows / 8` of them;
/// the rows past stay in `data` alone) in this layout to `out`; false (and
/// nothing appended) for another type, rows that are not whole blocks, or
/// memory that cannot be had.
pub fn pack(ty: GgmlType, data: &[u8], n_cols: usize, n_rows: usize, out: &mut Vec<u8>) -> bool {
    let (Some(gb), Some(n)) = (bytes(ty), matrix_bytes(ty, n_cols, n_rows)) else {
        return false;
    };
    let (ts, nb) = (ty.type_size(), n_cols / ty.block_size());
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
                match ty {
                    GgmlType::Q4_K => q4_k::pack_block(src, r, o),
                    GgmlType::Q6_K => q6_k::pack_block(src, r, o),
                    _ => legacy::pack_block(ty, src, r, o),
                }
            }
        }
    }
    true
}

/// Group block of row `r`'s block `b` in a packed matrix of `n_blocks`
/// blocks a row, and `r`'s place in its group.
fn group_block(ty: GgmlType, packed: &[u8], n_blocks: usize, r: usize, b: usize) -> Option<(&[u8], usize)> {
    let gb = bytes(ty)?;
    Some((packed.get(((r / ROWS) * n_blocks + b) * gb..)?.get(..gb)?, r % ROWS))
}

/// Row `r`'s block `b` of a 32-element format read back from a packed
/// matrix of `n_blocks` blocks a row (the file's block, unpacked): the
/// layout's definition, for tests.
pub fn unpack(ty: GgmlType, packed: &[u8], n_blocks: usize, r: usize, b: usize) -> Option<Unpacked32> {
    let (o, r) = group_block(ty, packed, n_blocks, r, b)?;
    legacy::unpack(ty, o, r)
}

/// As [`unpack`], for a K-quant's super-block.
pub fn unpack_k(ty: GgmlType, packed: &[u8], n_blocks: usize, r: usize, b: usize) -> Option<UnpackedK> {
    let (o, r) = group_block(ty, packed, n_blocks, r, b)?;
    match ty {
        GgmlType::Q4_K => Some(q4_k::unpack(o, r)),
        GgmlType::Q6_K => Some(q6_k::unpack(o, r)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::quant::{unpack_32, unpack_k as file_k};

    fn random(n: usize, s: &mut u64) -> Vec<u8> {
        (0..n)
            .map(|_| {
                *s ^= *s << 13;
                *s ^= *s >> 7;
                *s ^= *s << 17;
                *s as u8
            })
            .collect()
    }

    #[test]
    fn every_row_reads_back_as_its_file_block() {
        let mut s = 0x1234_5678_9abc_def0u64;
        let types = [GgmlType::Q4_0, GgmlType::Q5_0, GgmlType::Q8_0, GgmlType::IQ4_NL, GgmlType::Q4_K, GgmlType::Q6_K];
        for ty in types {
            let (nb, n_rows) = (3, 19);
            let n_cols = nb * ty.block_size();
            let data = random(n_rows * nb * ty.type_size(), &mut s);
            let mut packed = Vec::new();
            assert!(pack(ty, &data, n_cols, n_rows, &mut packed));
            assert_eq!(packed.len(), 2 * nb * bytes(ty).unwrap());
            for r in 0..16 {
                for b in 0..nb {
                    let src = &data[(r * nb + b) * ty.type_size()..];
                    let at = alloc::format!("{ty:?} row {r} block {b}");
                    if ty.block_size() == 32 {
                        let (want, got) = (unpack_32(ty, src).unwrap(), unpack(ty, &packed, nb, r, b).unwrap());
                        assert_eq!((got.q, got.d.to_bits()), (want.q, want.d.to_bits()), "{at}");
                    } else {
                        let (want, got) = (file_k(ty, src).unwrap(), unpack_k(ty, &packed, nb, r, b).unwrap());
                        assert_eq!((got.q, got.sc, got.mn), (want.q, want.sc, want.mn), "{at}");
                        assert_eq!(
                            (got.d.to_bits(), got.dmin.to_bits()),
                            (want.d.to_bits(), want.dmin.to_bits()),
                            "{at}"
                        );
                    }
                }
            }
            assert!(unpack(ty, &packed, nb, 16, 0).is_none(), "row 16 is past the whole groups");
            assert!(unpack_k(ty, &packed, nb, 16, 0).is_none());
        }
        let mut out = Vec::new();
        assert!(!pack(GgmlType::Q4_1, &[0; 20], 32, 1, &mut out));
        assert!(!pack(GgmlType::Q8_0, &[0; 33], 32, 1, &mut out));
        assert!(!pack(GgmlType::Q4_K, &[0; 144], 128, 1, &mut out), "a row that is not whole super-blocks");
        assert!(out.is_empty());
    }
}
