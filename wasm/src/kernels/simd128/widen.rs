//! Activation rows widened once per matmul call to i16 in the layout the
//! weight kernels consume: within every 16 elements, the 8 at even
//! positions, then the 8 at odd ones ("eo16"). Weights of every block type
//! unpack naturally into that order from 16-bit lanes (a lane holds two
//! bytes: an even and an odd element), so `i32x4.dot_i16x8` pairs them
//! with no shuffles. Integer dots are exact, so the order changes nothing.

use core::arch::wasm32::*;

use super::v;

/// `qs` (a multiple of 16 i8) into `out` in eo16 order.
#[inline]
pub fn eo16(qs: &[i8], out: &mut [i16]) {
    debug_assert_eq!(qs.len(), out.len());
    for (i, c) in qs.chunks_exact(16).enumerate() {
        let x = v::load(c, 0);
        v::store(out, 16 * i, i16x8_shr(i16x8_shl(x, 8), 8));
        v::store(out, 16 * i + 8, i16x8_shr(x, 8));
    }
}
