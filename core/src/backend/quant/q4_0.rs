//! Q4_0: 32 weights as 4-bit values around 8. `x = d * (q - 8)`.
//! Layout (18 bytes): d: f16 | qs: [u8; 16] (element j in the low nibble of
//! `qs[j]`, element j+16 in the high nibble).

use super::{f16_at, Unpacked32};

/// Byte offsets of the fields (the layout above): every backend reads
/// the block through these.
pub const D: usize = 0;
/// The packed nibbles.
pub const QS: usize = 2;
/// Bytes of a block.
pub const BLOCK_BYTES: usize = QS + 16;
const _: () = assert!(BLOCK_BYTES == 18);

#[inline]
pub(crate) fn unpack(b: &[u8]) -> Unpacked32 {
    let mut q = [0i8; 32];
    for j in 0..16 {
        q[j] = (b[QS + j] & 0x0F) as i8 - 8;
        q[j + 16] = (b[QS + j] >> 4) as i8 - 8;
    }
    Unpacked32 { q, d: f16_at(b, D), m: 0.0 }
}
