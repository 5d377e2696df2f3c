//! Q3_K: 256 weights in 16 groups of 16, 3-bit values in [-4, 3], 6-bit
//! signed scales. `x = (d * sc) * q`.
//! Layout (110 bytes): hmask: [u8; 32] (bit k of byte l is the high bit of
//! element 32k+l; a set bit means no -4 offset) | qs: [u8; 64] (low two
//! bits, as in Q2_K) | scales: [u8; 12] (16 six-bit values, see below) | d: f16.

use super::{f16_at, UnpackedK};

/// Byte offsets of the fields (the layout above): every backend reads
/// the block through these.
pub const HMASK: usize = 0;
/// The quants' low two bits.
pub const QS: usize = 32;
/// The packed 6-bit scales.
pub const SCALES: usize = 96;
/// The f16 scale `d`.
pub const D: usize = 108;
/// Bytes of a block.
pub const BLOCK_BYTES: usize = D + 2;
const _: () = assert!(BLOCK_BYTES == 110);

/// Scale g: low four bits from byte g (g < 8) or the high nibble of byte
/// g-8; high two bits from byte 8 + g%4 at bit 2*(g/4).
#[inline]
fn scale(s: &[u8], g: usize) -> i16 {
    let lo = if g < 8 { s[g] & 0x0F } else { s[g - 8] >> 4 };
    let hi = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
    (lo | (hi << 4)) as i16 - 32
}

#[inline]
pub(crate) fn unpack(b: &[u8]) -> UnpackedK {
    let mut u = UnpackedK::ZERO;
    let (hmask, qs, scales) = (&b[HMASK..QS], &b[QS..SCALES], &b[SCALES..D]);
    for g in 0..16 {
        u.sc[g] = scale(scales, g);
    }
    for half in 0..2 {
        for shift in 0..4 {
            let k = half * 4 + shift; // which 32-element run, 0..8
            for l in 0..32 {
                let low = ((qs[half * 32 + l] >> (2 * shift)) & 3) as i8;
                let high_set = (hmask[l] >> k) & 1 == 1;
                u.q[k * 32 + l] = if high_set { low } else { low - 4 };
            }
        }
    }
    u.d = f16_at(b, D);
    u
}
