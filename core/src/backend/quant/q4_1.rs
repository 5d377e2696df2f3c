//! Q4_1: 32 weights as 4-bit values with an offset. `x = d * q + m`.
//! Layout (20 bytes): d: f16 | m: f16 | qs: [u8; 16] (nibbles as in Q4_0).

use super::{f16_at, Unpacked32};

/// Byte offsets of the fields (the layout above): every backend reads
/// the block through these.
pub const D: usize = 0;
/// The f16 min `m`.
pub const M: usize = 2;
/// The packed nibbles.
pub const QS: usize = 4;
/// Bytes of a block.
pub const BLOCK_BYTES: usize = QS + 16;
const _: () = assert!(BLOCK_BYTES == 20);

#[inline]
pub(crate) fn unpack(b: &[u8]) -> Unpacked32 {
    let mut q = [0i8; 32];
    for j in 0..16 {
        q[j] = (b[QS + j] & 0x0F) as i8;
        q[j + 16] = (b[QS + j] >> 4) as i8;
    }
    Unpacked32 { q, d: f16_at(b, D), m: f16_at(b, M) }
}
