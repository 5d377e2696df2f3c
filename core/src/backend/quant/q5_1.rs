//! Q5_1: 32 weights as 5-bit values with an offset. `x = d * q + m`.
//! Layout (24 bytes): d: f16 | m: f16 | qh: u32 | qs: [u8; 16] (as Q5_0).

use super::{f16_at, Unpacked32};

/// Byte offsets of the fields (the layout above): every backend reads
/// the block through these.
pub const D: usize = 0;
/// The f16 min `m`.
pub const M: usize = 2;
/// The fifth bits.
pub const QH: usize = 4;
/// The packed nibbles.
pub const QS: usize = 8;
/// Bytes of a block.
pub const BLOCK_BYTES: usize = QS + 16;
const _: () = assert!(BLOCK_BYTES == 24);

#[inline]
pub(crate) fn unpack(b: &[u8]) -> Unpacked32 {
    let qh = u32::from_le_bytes([b[QH], b[QH + 1], b[QH + 2], b[QH + 3]]);
    let mut q = [0i8; 32];
    for j in 0..16 {
        let h0 = ((qh >> j) & 1) as u8;
        let h1 = ((qh >> (j + 16)) & 1) as u8;
        q[j] = ((b[QS + j] & 0x0F) | (h0 << 4)) as i8;
        q[j + 16] = ((b[QS + j] >> 4) | (h1 << 4)) as i8;
    }
    Unpacked32 { q, d: f16_at(b, D), m: f16_at(b, M) }
}
