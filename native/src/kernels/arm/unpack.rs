//! The 32-element formats (the legacy ones, IQ4_NL) unpacked with NEON into 32 signed bytes
//! (the same values as core's `quant::unpack_32`), with their scale and min.

use core::arch::aarch64::*;

use tern_core::backend::quant::{f16_at, iq4_nl, q4_0, q4_1, q5_0, q5_1, q8_0, GgmlType};

/// A block's weights as two 16-byte vectors, `d`, and `m` (0 without a min).
pub struct Block {
    pub q: [int8x16_t; 2],
    pub d: f32,
    pub m: f32,
}

/// 16 packed bytes → (low nibbles, high nibbles).
#[inline(always)]
fn nibbles(b: &[u8]) -> (uint8x16_t, uint8x16_t) {
    let b = &b[..16];
    // SAFETY: `b` has 16 bytes; NEON baseline.
    unsafe {
        let v = vld1q_u8(b.as_ptr());
        (vandq_u8(v, vdupq_n_u8(0x0F)), vshrq_n_u8::<4>(v))
    }
}

/// 0x10 in each byte whose bit of `qh` is set: bits 0..16 for the low
/// nibbles, 16..32 for the high ones (ggml's fifth bit).
#[inline(always)]
fn fifth_bits(qh: u32) -> (uint8x16_t, uint8x16_t) {
    let by = qh.to_le_bytes();
    const MASK: [u8; 16] = [1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128];
    // SAFETY: NEON baseline; MASK has 16 bytes.
    unsafe {
        let m = vld1q_u8(MASK.as_ptr());
        let bit = |a: u8, b: u8| vandq_u8(vtstq_u8(vcombine_u8(vdup_n_u8(a), vdup_n_u8(b)), m), vdupq_n_u8(0x10));
        (bit(by[0], by[1]), bit(by[2], by[3]))
    }
}

#[inline(always)]
fn signed(lo: uint8x16_t, hi: uint8x16_t, offset: i8) -> [int8x16_t; 2] {
    // SAFETY: NEON baseline.
    unsafe {
        let o = vdupq_n_s8(offset);
        [vsubq_s8(vreinterpretq_s8_u8(lo), o), vsubq_s8(vreinterpretq_s8_u8(hi), o)]
    }
}

/// Unpack one block of a 32-element format (None for other types).
#[inline(always)]
pub fn unpack(ty: GgmlType, b: &[u8]) -> Option<Block> {
    Some(match ty {
        GgmlType::Q4_0 => {
            let (lo, hi) = nibbles(&b[q4_0::QS..q4_0::BLOCK_BYTES]);
            Block { q: signed(lo, hi, 8), d: f16_at(b, q4_0::D), m: 0.0 }
        }
        GgmlType::Q4_1 => {
            let (lo, hi) = nibbles(&b[q4_1::QS..q4_1::BLOCK_BYTES]);
            Block { q: signed(lo, hi, 0), d: f16_at(b, q4_1::D), m: f16_at(b, q4_1::M) }
        }
        GgmlType::Q5_0 => {
            let (lo, hi) = nibbles(&b[q5_0::QS..q5_0::BLOCK_BYTES]);
            let (h0, h1) = fifth_bits(u32_at(b, q5_0::QH));
            // SAFETY: NEON baseline.
            let (lo, hi) = unsafe { (vorrq_u8(lo, h0), vorrq_u8(hi, h1)) };
            Block { q: signed(lo, hi, 16), d: f16_at(b, q5_0::D), m: 0.0 }
        }
        GgmlType::Q5_1 => {
            let (lo, hi) = nibbles(&b[q5_1::QS..q5_1::BLOCK_BYTES]);
            let (h0, h1) = fifth_bits(u32_at(b, q5_1::QH));
            // SAFETY: NEON baseline.
            let (lo, hi) = unsafe { (vorrq_u8(lo, h0), vorrq_u8(hi, h1)) };
            Block { q: signed(lo, hi, 0), d: f16_at(b, q5_1::D), m: f16_at(b, q5_1::M) }
        }
        GgmlType::Q8_0 => {
            let q = &b[q8_0::QS..q8_0::BLOCK_BYTES];
            // SAFETY: `q` has 32 bytes; NEON baseline.
            let q = unsafe { [vld1q_s8(q.as_ptr() as *const i8), vld1q_s8(q[16..].as_ptr() as *const i8)] };
            Block { q, d: f16_at(b, q8_0::D), m: 0.0 }
        }
        GgmlType::IQ4_NL => {
            let (lo, hi) = nibbles(&b[iq4_nl::QS..iq4_nl::BLOCK_BYTES]);
            // SAFETY: the table has 16 bytes; NEON baseline.
            let q = unsafe {
                let table = vld1q_s8(iq4_nl::KVALUES.as_ptr());
                [vqtbl1q_s8(table, lo), vqtbl1q_s8(table, hi)]
            };
            Block { q, d: f16_at(b, iq4_nl::D), m: 0.0 }
        }
        _ => return None,
    })
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
