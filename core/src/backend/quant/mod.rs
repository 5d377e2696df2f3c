//! Block formats: byte layouts, unpacking to a common integer form, and the
//! reference dequantization built on it. Spec of each layout: its module.

mod blocks;
pub mod iq4_nl;
pub mod iq4_xs;
pub mod q2_k;
pub mod q3_k;
pub mod q4_0;
pub mod q4_1;
pub mod q4_k;
pub mod q5_0;
pub mod q5_1;
pub mod q5_k;
pub mod q6_k;
pub mod q8_0;
pub mod rows8;
#[cfg(test)]
mod tests;
mod types;

pub use blocks::*;
pub use types::{GgmlType, QK_K};

use alloc::vec::Vec;

use crate::error::{Error, Result};

/// The little-endian f16 at byte `i`, as f32.
#[inline]
pub fn f16_at(b: &[u8], i: usize) -> f32 {
    half::f16::from_le_bytes([b[i], b[i + 1]]).to_f32()
}

/// The little-endian bf16 at byte `i`, as f32.
#[inline]
pub fn bf16_at(b: &[u8], i: usize) -> f32 {
    half::bf16::from_le_bytes([b[i], b[i + 1]]).to_f32()
}

/// Byte offsets of a block's f16 scales and mins (each block layout's
/// own constants); empty for the float types.
pub fn f16_fields(ty: GgmlType) -> &'static [usize] {
    match ty {
        GgmlType::Q4_0 => &[q4_0::D],
        GgmlType::Q4_1 => &[q4_1::D, q4_1::M],
        GgmlType::Q5_0 => &[q5_0::D],
        GgmlType::Q5_1 => &[q5_1::D, q5_1::M],
        GgmlType::Q8_0 => &[q8_0::D],
        GgmlType::Q2_K => &[q2_k::D, q2_k::DMIN],
        GgmlType::Q3_K => &[q3_k::D],
        GgmlType::Q4_K => &[q4_k::D, q4_k::DMIN],
        GgmlType::Q5_K => &[q5_k::D, q5_k::DMIN],
        GgmlType::Q6_K => &[q6_k::D],
        GgmlType::IQ4_NL => &[iq4_nl::D],
        GgmlType::IQ4_XS => &[iq4_xs::D],
        _ => &[],
    }
}

/// Unpack one block of a 32-element format; None for other types.
#[inline]
pub fn unpack_32(ty: GgmlType, b: &[u8]) -> Option<Unpacked32> {
    Some(match ty {
        GgmlType::Q4_0 => q4_0::unpack(b),
        GgmlType::Q4_1 => q4_1::unpack(b),
        GgmlType::Q5_0 => q5_0::unpack(b),
        GgmlType::Q5_1 => q5_1::unpack(b),
        GgmlType::Q8_0 => q8_0::unpack(b),
        GgmlType::IQ4_NL => iq4_nl::unpack(b),
        _ => return None,
    })
}

/// A 32-element block format's scales (and mins) widened to f32 for the
/// kernels (`QMatrix::scales`): per row, per group of four blocks, their
/// four `d`, then — formats with a min — their four `m`; a row's last
/// group padded with zeros. None for other types.
pub fn wide_scales(ty: GgmlType, data: &[u8], n_cols: usize, n_rows: usize) -> Option<Vec<f32>> {
    // the scale's offset, and the min's for the formats with one (all
    // five put the scale first)
    let (d, min) = match ty {
        GgmlType::Q4_0 => (q4_0::D, None),
        GgmlType::Q5_0 => (q5_0::D, None),
        GgmlType::Q8_0 => (q8_0::D, None),
        GgmlType::Q4_1 => (q4_1::D, Some(q4_1::M)),
        GgmlType::Q5_1 => (q5_1::D, Some(q5_1::M)),
        _ => return None,
    };
    let (ts, nb) = (ty.type_size(), n_cols / 32);
    if nb == 0 {
        return Some(Vec::new());
    }
    let per = if min.is_some() { 8 } else { 4 };
    let mut out = Vec::with_capacity(n_rows * nb.div_ceil(4) * per);
    for row in data.chunks_exact(nb * ts).take(n_rows) {
        for g in (0..nb).step_by(4) {
            let at = |k: usize, off: usize| if g + k < nb { f16_at(&row[(g + k) * ts..], off) } else { 0.0 };
            out.extend((0..4).map(|k| at(k, d)));
            if let Some(m) = min {
                out.extend((0..4).map(|k| at(k, m)));
            }
        }
    }
    Some(out)
}

/// Unpack one super-block of 256 elements (the K-quants, IQ4_XS); None
/// for other types.
#[inline]
pub fn unpack_k(ty: GgmlType, b: &[u8]) -> Option<UnpackedK> {
    Some(match ty {
        GgmlType::Q2_K => q2_k::unpack(b),
        GgmlType::Q3_K => q3_k::unpack(b),
        GgmlType::Q4_K => q4_k::unpack(b),
        GgmlType::Q5_K => q5_k::unpack(b),
        GgmlType::Q6_K => q6_k::unpack(b),
        GgmlType::IQ4_XS => iq4_xs::unpack(b),
        _ => return None,
    })
}

/// Dequantize one block's worth of elements: `x = d * q + m`.
#[inline]
pub(crate) fn dequantize_32(u: &Unpacked32, out: &mut [f32]) {
    for (o, &q) in out.iter_mut().zip(&u.q) {
        *o = u.d * q as f32 + u.m;
    }
}

/// Dequantize a super-block: `x = (d * sc) * q - (dmin * mn)` per group of 16.
#[inline]
pub(crate) fn dequantize_k(u: &UnpackedK, out: &mut [f32]) {
    for g in 0..16 {
        let dl = u.d * u.sc[g] as f32;
        let ml = u.dmin * u.mn[g] as f32;
        for i in g * 16..g * 16 + 16 {
            out[i] = dl * u.q[i] as f32 - ml;
        }
    }
}

/// Whether tern can dequantize (and so compute with) this type.
pub(crate) fn is_supported(ty: GgmlType) -> bool {
    ty.vec_dot_type().is_some()
}

/// Reference dequantization of a whole row: `src` holds `dst.len()` elements.
#[inline]
pub fn dequantize_row(ty: GgmlType, src: &[u8], dst: &mut [f32]) -> Result<()> {
    let (bs, ts) = ty.block();
    if !dst.len().is_multiple_of(bs) || src.len() != dst.len() / bs * ts {
        return Err(Error::InvalidArgument {
            what: alloc::format!("{} row: {} bytes for {} elements", ty.name(), src.len(), dst.len()),
        });
    }
    match ty {
        GgmlType::F32 => {
            for (o, c) in dst.iter_mut().zip(src.chunks_exact(4)) {
                *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
        }
        GgmlType::F16 => {
            for (i, o) in dst.iter_mut().enumerate() {
                *o = f16_at(src, 2 * i);
            }
        }
        GgmlType::BF16 => {
            for (i, o) in dst.iter_mut().enumerate() {
                *o = bf16_at(src, 2 * i);
            }
        }
        _ => {
            for (b, o) in src.chunks_exact(ts).zip(dst.chunks_exact_mut(bs)) {
                if let Some(u) = unpack_32(ty, b) {
                    dequantize_32(&u, o);
                } else if let Some(u) = unpack_k(ty, b) {
                    dequantize_k(&u, o);
                } else {
                    return Err(Error::Unsupported { what: alloc::format!("dequantizing {}", ty.name()) });
                }
            }
        }
    }
    Ok(())
}
