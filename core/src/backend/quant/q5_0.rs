//! Q5_0: 32 weights as 5-bit values around 16. `x = d * (q - 16)`.
//! Layout (22 bytes): d: f16 | qh: u32 (bit i is the fifth bit of element i)
//! | qs: [u8; 16] (low four bits, nibbles as in Q4_0).

use super::{f16_at, Unpacked32};

/// Byte offsets of the fields (the layout above): every backend reads
/// the block through these.
pub const D: usize = 0;
/// The fifth bits.
pub const QH: usize = 2;
/// The packed nibbles.
pub const QS: usize = 6;
/// Bytes of a block.
pub const BLOCK_BYTES: usize = QS + 16;
const _: () = assert!(BLOCK_BYTES == 22);

#[inline]
pub(crate) fn unpack(b: &[u8]) -> Unpacked32 {
    let qh = u32::from_le_bytes([b[QH], b[QH + 1], b[QH + 2], b[QH + 3]]);
    let mut q = [0i8; 32];
    for j in 0..16 {
        let h0 = ((qh >> j) & 1) as u8;
        let h1 = ((qh >> (j + 16)) & 1) as u8;
        q[j] = ((b[QS + j] & 0x0F) | (h0 << 4)) as i8 - 16;
        q[j + 16] = ((b[QS + j] >> 4) | (h1 << 4)) as i8 - 16;
    }
    Unpacked32 { q, d: f16_at(b, D), m: 0.0 }
}
