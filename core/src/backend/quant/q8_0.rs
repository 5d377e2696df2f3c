//! Q8_0: 32 weights as signed bytes. `x = d * q`.
//! Layout (34 bytes): d: f16 | qs: [i8; 32].

use super::{f16_at, Unpacked32};

/// Byte offsets of the fields (the layout above): every backend reads
/// the block through these.
pub const D: usize = 0;
/// The quants.
pub const QS: usize = 2;
/// Bytes of a block.
pub const BLOCK_BYTES: usize = QS + 32;
const _: () = assert!(BLOCK_BYTES == 34);

#[inline]
pub(crate) fn unpack(b: &[u8]) -> Unpacked32 {
    let mut q = [0i8; 32];
    for (o, &v) in q.iter_mut().zip(&b[QS..BLOCK_BYTES]) {
        *o = v as i8;
    }
    Unpacked32 { q, d: f16_at(b, D), m: 0.0 }
}

/// Quantize a row (a multiple of 32 values) and append its blocks to `out`
/// (weights quantized at load; the scale rounding as activations').
pub(crate) fn quantize_row(x: &[f32], out: &mut alloc::vec::Vec<u8>) {
    let mut b = super::BlockQ8_0::ZERO;
    for chunk in x.chunks_exact(32) {
        super::quantize_q8_0(chunk, &mut b);
        let at = out.len();
        out.resize(at + BLOCK_BYTES, 0);
        store(&b, &mut out[at..]);
    }
}

/// A quantized block (its scale already f16-rounded) in this layout, into
/// `out[..BLOCK_BYTES]`.
#[inline]
pub fn store(b: &super::BlockQ8_0, out: &mut [u8]) {
    out[D..D + 2].copy_from_slice(&half::f16::from_f32(b.d).to_le_bytes());
    for (o, &q) in out[QS..BLOCK_BYTES].iter_mut().zip(&b.qs) {
        *o = q as u8;
    }
}
