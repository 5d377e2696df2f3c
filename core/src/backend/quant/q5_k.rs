//! Q5_K: as Q4_K with a fifth bit. `x = (d * sc) * q - (dmin * mn)`.
//! Layout (176 bytes): d: f16 | dmin: f16 | scales: [u8; 12] (as Q4_K) |
//! qh: [u8; 32] (bit k of byte l is the fifth bit of element 32k+l) |
//! qs: [u8; 128] (low four bits, as Q4_K).

use super::{f16_at, q4_k, UnpackedK};

/// Byte offsets of the fields (the layout above): every backend reads
/// the block through these.
pub const D: usize = 0;
/// The f16 min scale `dmin`.
pub const DMIN: usize = 2;
/// The packed scales and mins.
pub const SCALES: usize = 4;
/// The fifth bits.
pub const QH: usize = 16;
/// The packed nibbles.
pub const QS: usize = 48;
/// Bytes of a block.
pub const BLOCK_BYTES: usize = QS + 128;
const _: () = assert!(BLOCK_BYTES == 176);

#[inline]
pub(crate) fn unpack(b: &[u8]) -> UnpackedK {
    let mut u = UnpackedK::ZERO;
    q4_k::set_scales(&mut u, &b[SCALES..QH]);
    let (qh, qs) = (&b[QH..QS], &b[QS..BLOCK_BYTES]);
    for i in 0..4 {
        for l in 0..32 {
            let (k0, k1) = (2 * i, 2 * i + 1);
            let h0 = ((qh[l] >> k0) & 1) << 4;
            let h1 = ((qh[l] >> k1) & 1) << 4;
            u.q[k0 * 32 + l] = ((qs[i * 32 + l] & 0x0F) | h0) as i8;
            u.q[k1 * 32 + l] = ((qs[i * 32 + l] >> 4) | h1) as i8;
        }
    }
    u.d = f16_at(b, D);
    u.dmin = f16_at(b, DMIN);
    u
}
