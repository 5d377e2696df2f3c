//! Q4_K: 256 weights in 8 sub-blocks of 32, 4-bit values, 6-bit scale and
//! min per sub-block. `x = (d * sc) * q - (dmin * mn)`.
//! Layout (144 bytes): d: f16 | dmin: f16 | scales: [u8; 12] (8 scales and 8
//! mins, 6 bits each, see `scale_min`) | qs: [u8; 128] (each 32-byte run
//! holds sub-block 2i in its low nibbles and 2i+1 in its high nibbles).

use super::{f16_at, UnpackedK};

/// Byte offsets of the fields (the layout above): every backend reads
/// the block through these.
pub const D: usize = 0;
/// The f16 min scale `dmin`.
pub const DMIN: usize = 2;
/// The packed scales and mins.
pub const SCALES: usize = 4;
/// The packed nibbles.
pub const QS: usize = 16;
/// Bytes of a block.
pub const BLOCK_BYTES: usize = QS + 128;
const _: () = assert!(BLOCK_BYTES == 144);

/// Scale and min of sub-block j (ggml's `get_scale_min_k4`); shared with Q5_K.
#[inline]
pub fn scale_min(j: usize, s: &[u8]) -> (u8, u8) {
    if j < 4 {
        (s[j] & 63, s[j + 4] & 63)
    } else {
        ((s[j + 4] & 0x0F) | ((s[j - 4] >> 6) << 4), (s[j + 4] >> 4) | ((s[j] >> 6) << 4))
    }
}

#[inline]
pub(crate) fn set_scales(u: &mut UnpackedK, scales: &[u8]) {
    for j in 0..8 {
        let (sc, mn) = scale_min(j, scales);
        u.sc[2 * j] = sc as i16;
        u.sc[2 * j + 1] = sc as i16;
        u.mn[2 * j] = mn as i16;
        u.mn[2 * j + 1] = mn as i16;
    }
}

#[inline]
pub(crate) fn unpack(b: &[u8]) -> UnpackedK {
    let mut u = UnpackedK::ZERO;
    set_scales(&mut u, &b[SCALES..QS]);
    let qs = &b[QS..BLOCK_BYTES];
    for i in 0..4 {
        for l in 0..32 {
            u.q[i * 64 + l] = (qs[i * 32 + l] & 0x0F) as i8;
            u.q[i * 64 + 32 + l] = (qs[i * 32 + l] >> 4) as i8;
        }
    }
    u.d = f16_at(b, D);
    u.dmin = f16_at(b, DMIN);
    u
}
