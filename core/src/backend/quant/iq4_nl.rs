//! IQ4_NL: 32 weights as 4-bit indices into a fixed non-linear table of
//! 16 values, denser near zero. `x = d * KVALUES[q]`.
//! Layout (18 bytes): d: f16 | qs: [u8; 16] (element j's index in the low
//! nibble of `qs[j]`, element j+16's in the high nibble) — Q4_0's, with
//! the table in place of `q - 8`.

use super::{f16_at, Unpacked32};

/// The values the 16 indices stand for (ggml's `kvalues_iq4nl`).
pub const KVALUES: [i8; 16] = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];

/// The same values plus 128, as unsigned bytes (`v ^ 0x80`): the form
/// kernels with unsigned × signed byte dots take them in.
pub const KVALUES_PLUS_128: [u8; 16] = {
    let mut t = [0u8; 16];
    let mut i = 0;
    while i < 16 {
        t[i] = KVALUES[i] as u8 ^ 0x80;
        i += 1;
    }
    t
};

// the layout is Q4_0's: its offsets
pub use super::q4_0::{BLOCK_BYTES, D, QS};

#[inline]
pub(crate) fn unpack(b: &[u8]) -> Unpacked32 {
    let mut q = [0i8; 32];
    for j in 0..16 {
        q[j] = KVALUES[(b[QS + j] & 0x0F) as usize];
        q[j + 16] = KVALUES[(b[QS + j] >> 4) as usize];
    }
    Unpacked32 { q, d: f16_at(b, D), m: 0.0 }
}
