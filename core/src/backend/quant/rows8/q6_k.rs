//! Q6_K, 8 rows interleaved, its quants unsigned (`q + 32`, 0..63). Its 256
//! elements are 8 runs of 32 (run j: elements `32j..32j + 32`, 16-groups
//! 2j and 2j + 1); a group's block:
//!
//! - `d`: the 8 rows' f16 scales (16 bytes);
//! - `scales`: 16-group g's signed scale of row r at byte `8g + r` (128
//!   bytes);
//! - `ql`: the low four bits, for each pair of runs i (runs 2i, 2i + 1),
//!   8 vectors of 32 bytes: vector k's bytes `4r..4r + 4` hold row r's
//!   elements `4k..4k + 4` of run 2i in their low nibbles, of run 2i + 1
//!   in their high nibbles (1024 bytes);
//! - `qh`: the high two bits, for each quarter h (runs 4h..4h + 4), 8
//!   vectors of 32 bytes: byte `4r + e` of vector k holds, at bits
//!   `2m..2m + 2`, those of row r's element `4k + e` of run 4h + m (512
//!   bytes).

use super::super::{f16_at, q6_k, UnpackedK};
use super::ROWS;

/// Byte offset of the 8 rows' `d`.
pub const D: usize = 0;
/// Byte offset of the scales, `[16-group][row]`.
pub const SCALES: usize = D + 2 * ROWS;
/// Byte offset of the low four bits.
pub const QL: usize = SCALES + 16 * ROWS;
/// Byte offset of the high two bits.
pub const QH: usize = QL + 4 * 8 * 32;
/// Bytes of a group's block.
pub const BYTES: usize = QH + 2 * 8 * 32;
const _: () = assert!(BYTES == ROWS * q6_k::BLOCK_BYTES);

/// Where element `l` of run `j` of row `r` lies: (`ql` byte, its shift),
/// (`qh` byte, its shift).
fn at(j: usize, l: usize, r: usize) -> ((usize, u32), (usize, u32)) {
    let v = 32 * (l / 4) + 4 * r + l % 4;
    ((QL + 256 * (j / 2) + v, 4 * (j % 2) as u32), (QH + 256 * (j / 4) + v, 2 * (j % 4) as u32))
}

/// A file block `src` as row `r` of the group block `o` (zeroed before
/// its first row), four elements at a time: run j's elements `4k..4k + 4`
/// are four consecutive bytes of the file's `ql` (its half j / 4, nibble
/// (j % 4) / 2) and of its `qh` (bits `2(j % 4)..`, where this layout
/// keeps them).
pub(super) fn pack_block(src: &[u8], r: usize, o: &mut [u8]) {
    let u32_at = |b: &[u8], i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let mut or_at = |i: usize, v: u32| {
        let w = u32_at(o, i) | v;
        o[i..i + 4].copy_from_slice(&w.to_le_bytes());
    };
    for j in 0..8 {
        let (half, q) = (j / 4, j % 4);
        for k in 0..8 {
            let l = 4 * k;
            let lo = (u32_at(src, q6_k::QL + 64 * half + 32 * (q % 2) + l) >> (4 * (q / 2))) & 0x0F0F_0F0F;
            let hi = u32_at(src, q6_k::QH + 32 * half + l) & (0x0303_0303 << (2 * q));
            let ((at_lo, sl), (at_hi, _)) = at(j, l, r);
            or_at(at_lo, lo << sl);
            or_at(at_hi, hi);
        }
    }
    o[D + 2 * r..][..2].copy_from_slice(&src[q6_k::D..q6_k::D + 2]);
    for g in 0..16 {
        o[SCALES + ROWS * g + r] = src[q6_k::SCALES + g];
    }
}

/// Row `r` of group block `o`, as its file block unpacked.
pub(super) fn unpack(o: &[u8], r: usize) -> UnpackedK {
    let mut u = UnpackedK::ZERO;
    for g in 0..16 {
        u.sc[g] = o[SCALES + ROWS * g + r] as i8 as i16;
    }
    for (e, q) in u.q.iter_mut().enumerate() {
        let ((lo, sl), (hi, sh)) = at(e / 32, e % 32, r);
        *q = (((o[lo] >> sl) & 0xF) | (((o[hi] >> sh) & 3) << 4)) as i8 - 32;
    }
    u.d = f16_at(o, D + 2 * r);
    u
}
