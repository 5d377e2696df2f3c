//! Q6_K: 256 weights in 16 groups of 16, 6-bit values in [-32, 31], 8-bit
//! signed scales. `x = (d * sc) * q`.
//! Layout (210 bytes): ql: [u8; 128] (low four bits) | qh: [u8; 64] (high two
//! bits) | scales: [i8; 16] | d: f16. In each 128-element half, byte l of ql
//! holds elements l (low nibble) and l+64 (high), byte l+32 holds l+32 and
//! l+96; byte l of qh holds the high bits of l, l+32, l+64, l+96 at 0,2,4,6.

use super::{f16_at, UnpackedK};

/// Byte offsets of the fields (the layout above): every backend reads
/// the block through these.
pub const QL: usize = 0;
/// The quants' high two bits.
pub const QH: usize = 128;
/// The 8-bit scales.
pub const SCALES: usize = 192;
/// The f16 scale `d`.
pub const D: usize = 208;
/// Bytes of a block.
pub const BLOCK_BYTES: usize = D + 2;
const _: () = assert!(BLOCK_BYTES == 210);

#[inline]
pub(crate) fn unpack(b: &[u8]) -> UnpackedK {
    let mut u = UnpackedK::ZERO;
    for g in 0..16 {
        u.sc[g] = b[SCALES + g] as i8 as i16;
    }
    for half in 0..2 {
        let ql = &b[QL + half * 64..QL + half * 64 + 64];
        let qh = &b[QH + half * 32..QH + half * 32 + 32];
        let q = &mut u.q[half * 128..half * 128 + 128];
        for l in 0..32 {
            let hi = |k: usize| ((qh[l] >> (2 * k)) & 3) << 4;
            q[l] = ((ql[l] & 0x0F) | hi(0)) as i8 - 32;
            q[l + 32] = ((ql[l + 32] & 0x0F) | hi(1)) as i8 - 32;
            q[l + 64] = ((ql[l] >> 4) | hi(2)) as i8 - 32;
            q[l + 96] = ((ql[l + 32] >> 4) | hi(3)) as i8 - 32;
        }
    }
    u.d = f16_at(b, D);
    u
}
