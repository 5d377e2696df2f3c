//! The 32-element formats without a min (Q4_0, Q5_0, Q8_0, IQ4_NL), 8
//! rows interleaved. A group's block:
//!
//! - `d`: the 8 rows' f16 scales (16 bytes);
//! - Q5_0 only, `masks`: 8 u32, mask k's bit `4r + i` the fifth bit of
//!   row r's element `4k + i` (32 bytes);
//! - Q4_0, Q5_0 and IQ4_NL (its indices), `nibbles`: 4 vectors of 32 bytes, vector p's bytes
//!   `4r..4r + 4` row r's packed bytes `4p..4p + 4` (low nibbles: elements
//!   `4p..`, high nibbles: elements `16 + 4p..`);
//! - Q8_0, `bytes`: 8 vectors of 32 bytes, vector k's bytes `4r..4r + 4`
//!   row r's quants `4k..4k + 4` plus 128, as unsigned bytes.

use super::super::{f16_at, iq4_nl, q4_0, q5_0, q8_0, GgmlType, Unpacked32};
use super::ROWS;

/// Byte offset of the scales in a group's block.
pub const D: usize = 0;
/// Byte offset of Q5_0's masks.
pub const MASKS: usize = 2 * ROWS;
/// Byte offset of the quants: after the masks (Q5_0) or the scales.
pub const fn quants(ty: GgmlType) -> usize {
    match ty {
        GgmlType::Q5_0 => MASKS + 4 * ROWS,
        _ => D + 2 * ROWS,
    }
}

/// Bytes of a group's block.
pub(super) const fn bytes(ty: GgmlType) -> Option<usize> {
    match ty {
        GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::IQ4_NL => Some(quants(ty) + 4 * 32),
        GgmlType::Q8_0 => Some(quants(ty) + 8 * 32),
        _ => None,
    }
}
const _: () = assert!(matches!(bytes(GgmlType::Q5_0), Some(176)));
const _: () = assert!(matches!(bytes(GgmlType::Q4_0), Some(144)));
const _: () = assert!(matches!(bytes(GgmlType::Q8_0), Some(272)));

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// A file block `src` as row `r` of the group block `o` (zeroed before
/// its first row).
pub(super) fn pack_block(ty: GgmlType, src: &[u8], r: usize, o: &mut [u8]) {
    let q = quants(ty);
    o[D + 2 * r..D + 2 * r + 2].copy_from_slice(&src[..2]);
    match ty {
        GgmlType::Q8_0 => {
            for k in 0..8 {
                let v = u32_at(src, q8_0::QS + 4 * k) ^ 0x8080_8080;
                o[q + 32 * k + 4 * r..][..4].copy_from_slice(&v.to_le_bytes());
            }
        }
        _ => {
            let qs = if ty == GgmlType::Q5_0 { q5_0::QS } else { q4_0::QS };
            for p in 0..4 {
                o[q + 32 * p + 4 * r..][..4].copy_from_slice(&src[qs + 4 * p..][..4]);
            }
            if ty == GgmlType::Q5_0 {
                let qh = u32_at(src, q5_0::QH);
                for k in 0..8 {
                    let v = u32_at(o, MASKS + 4 * k) | ((qh >> (4 * k)) & 0xF) << (4 * r);
                    o[MASKS + 4 * k..][..4].copy_from_slice(&v.to_le_bytes());
                }
            }
        }
    }
}

/// Row `r` of group block `o`, as its file block unpacked.
pub(super) fn unpack(ty: GgmlType, o: &[u8], r: usize) -> Option<Unpacked32> {
    bytes(ty)?;
    let q = quants(ty);
    let mut w = [0i8; 32];
    for (j, w) in w.iter_mut().enumerate() {
        *w = match ty {
            GgmlType::Q8_0 => (o[q + 32 * (j / 4) + 4 * r + j % 4] ^ 0x80) as i8,
            _ => {
                let (p, i) = ((j % 16) / 4, j % 4);
                let byte = o[q + 32 * p + 4 * r + i];
                let nib = if j < 16 { byte & 0xF } else { byte >> 4 };
                match ty {
                    GgmlType::Q5_0 => {
                        let mask = u32_at(o, MASKS + 4 * (j / 4));
                        (nib | (((mask >> (4 * r + i)) & 1) as u8) << 4) as i8 - 16
                    }
                    GgmlType::IQ4_NL => iq4_nl::KVALUES[nib as usize],
                    _ => nib as i8 - 8,
                }
            }
        };
    }
    Some(Unpacked32 { q: w, d: f16_at(o, D + 2 * r), m: 0.0 })
}
