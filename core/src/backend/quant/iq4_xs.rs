//! IQ4_XS: 256 weights in 8 sub-blocks of 32, each a 4-bit index into
//! IQ4_NL's table per weight and a 6-bit scale stored plus 32.
//! `x = (d * (ls - 32)) * KVALUES[q]`.
//! Layout (136 bytes): d: f16 | scales_h: u16 (sub-block i's high two
//! scale bits at bit 2i) | scales_l: [u8; 4] (sub-block i's low four in
//! byte i/2, low nibble for even i) | qs: [u8; 128] (sub-block i in bytes
//! 16i..16i+16, laid out as an IQ4_NL block's).

use super::iq4_nl::KVALUES;
use super::{f16_at, UnpackedK};

/// Byte offsets of the fields (the layout above): every backend reads
/// the block through these.
pub const D: usize = 0;
/// The scales' high two bits, a little-endian u16.
pub const SCALES_H: usize = 2;
/// The scales' low four bits.
pub const SCALES_L: usize = 4;
/// The packed indices.
pub const QS: usize = 8;
/// Bytes of a block.
pub const BLOCK_BYTES: usize = QS + 128;
const _: () = assert!(BLOCK_BYTES == 136);

/// Sub-block `i`'s scale, `ls - 32` (in -32..=31).
#[inline]
pub fn scale(b: &[u8], i: usize) -> i16 {
    let high = u16::from_le_bytes([b[SCALES_H], b[SCALES_H + 1]]);
    let low = (b[SCALES_L + i / 2] >> (4 * (i % 2))) & 0x0F;
    (low | (((high >> (2 * i)) & 3) as u8) << 4) as i16 - 32
}

/// Into the K-quants' form: each sub-block's scale for both its
/// 16-groups, no mins.
#[inline]
pub(crate) fn unpack(b: &[u8]) -> UnpackedK {
    let mut u = UnpackedK::ZERO;
    for i in 0..8 {
        let ls = scale(b, i);
        u.sc[2 * i] = ls;
        u.sc[2 * i + 1] = ls;
        let qs = &b[QS + 16 * i..QS + 16 * i + 16];
        let q = &mut u.q[32 * i..32 * i + 32];
        for j in 0..16 {
            q[j] = KVALUES[(qs[j] & 0x0F) as usize];
            q[j + 16] = KVALUES[(qs[j] >> 4) as usize];
        }
    }
    u.d = f16_at(b, D);
    u
}
