//! Q4_K, 8 rows interleaved. Its 256 elements are 8 runs of 32 (run j:
//! elements `32j..32j + 32`, scale and min j); a group's block:
//!
//! - `d`, then `dmin`: the 8 rows' f16 super-block scales (16 bytes each);
//! - `scales`, then `mins`: run j's 6-bit scale (min) of row r at byte
//!   `8j + r` (64 bytes each);
//! - `qs`: for each pair of runs i (runs 2i, 2i + 1), 8 vectors of 32 bytes:
//!   vector k's bytes `4r..4r + 4` hold row r's elements `4k..4k + 4` of
//!   run 2i in their low nibbles, of run 2i + 1 in their high nibbles (the
//!   file's bytes `32i + 4k..`: only the rows interleave) — 1024 bytes.

use super::super::{f16_at, q4_k, UnpackedK};
use super::ROWS;

/// Byte offset of the 8 rows' `d`.
pub const D: usize = 0;
/// Byte offset of the 8 rows' `dmin`.
pub const DMIN: usize = 2 * ROWS;
/// Byte offset of the scales, `[run][row]`.
pub const SCALES: usize = DMIN + 2 * ROWS;
/// Byte offset of the mins, `[run][row]`.
pub const MINS: usize = SCALES + 8 * ROWS;
/// Byte offset of the nibbles.
pub const QS: usize = MINS + 8 * ROWS;
/// Bytes of a group's block.
pub const BYTES: usize = QS + 4 * 8 * 32;
const _: () = assert!(BYTES == ROWS * q4_k::BLOCK_BYTES + 32);

/// A file block `src` as row `r` of the group block `o`.
pub(super) fn pack_block(src: &[u8], r: usize, o: &mut [u8]) {
    o[D + 2 * r..][..2].copy_from_slice(&src[q4_k::D..q4_k::D + 2]);
    o[DMIN + 2 * r..][..2].copy_from_slice(&src[q4_k::DMIN..q4_k::DMIN + 2]);
    for j in 0..8 {
        let (sc, mn) = q4_k::scale_min(j, &src[q4_k::SCALES..q4_k::QS]);
        o[SCALES + ROWS * j + r] = sc;
        o[MINS + ROWS * j + r] = mn;
    }
    for i in 0..4 {
        for k in 0..8 {
            o[QS + 256 * i + 32 * k + 4 * r..][..4].copy_from_slice(&src[q4_k::QS + 32 * i + 4 * k..][..4]);
        }
    }
}

/// Row `r` of group block `o`, as its file block unpacked.
pub(super) fn unpack(o: &[u8], r: usize) -> UnpackedK {
    let mut u = UnpackedK::ZERO;
    for g in 0..16 {
        u.sc[g] = o[SCALES + ROWS * (g / 2) + r] as i16;
        u.mn[g] = o[MINS + ROWS * (g / 2) + r] as i16;
    }
    for (e, q) in u.q.iter_mut().enumerate() {
        let (j, l) = (e / 32, e % 32);
        let byte = o[QS + 256 * (j / 2) + 32 * (l / 4) + 4 * r + l % 4];
        *q = (if j % 2 == 0 { byte & 0xF } else { byte >> 4 }) as i8;
    }
    u.d = f16_at(o, D + 2 * r);
    u.dmin = f16_at(o, DMIN + 2 * r);
    u
}
