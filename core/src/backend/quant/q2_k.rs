//! Q2_K: 256 weights in 16 groups of 16, 2-bit values, 4-bit scale and min
//! per group. `x = (d * sc) * q - (dmin * mn)`.
//! Layout (84 bytes): scales: [u8; 16] (low nibble scale, high nibble min)
//! | qs: [u8; 64] | d: f16 | dmin: f16. Byte l of each 32-byte half of qs
//! holds elements l, l+32, l+64, l+96 of its 128-element half at bits 0,2,4,6.

use super::{f16_at, UnpackedK};

/// Byte offsets of the fields (the layout above): every backend reads
/// the block through these.
pub const SCALES: usize = 0;
/// The quants.
pub const QS: usize = 16;
/// The f16 scale `d`.
pub const D: usize = 80;
/// The f16 min scale `dmin`.
pub const DMIN: usize = 82;
/// Bytes of a block.
pub const BLOCK_BYTES: usize = DMIN + 2;
const _: () = assert!(BLOCK_BYTES == 84);

#[inline]
pub(crate) fn unpack(b: &[u8]) -> UnpackedK {
    let mut u = UnpackedK::ZERO;
    for g in 0..16 {
        u.sc[g] = (b[SCALES + g] & 0x0F) as i16;
        u.mn[g] = (b[SCALES + g] >> 4) as i16;
    }
    let qs = &b[QS..D];
    for half in 0..2 {
        for shift in 0..4 {
            for l in 0..32 {
                let v = (qs[half * 32 + l] >> (2 * shift)) & 3;
                u.q[half * 128 + shift * 32 + l] = v as i8;
            }
        }
    }
    u.d = f16_at(b, D);
    u.dmin = f16_at(b, DMIN);
    u
}
