//! The exact path (f32 activations) with NEON: each weight row widened to
//! f32 once (F16 by `fcvtl`, BF16 by a shift, F32 read in place, the block
//! formats by the reference's dequantization), then each (row, token)'s
//! dot in the contract's 16 lane-strided sums — four 4-lane accumulators,
//! multiply then add — reduced by its fixed tree. Bit-identical to the
//! reference's `row_f32`.

use core::arch::aarch64::*;
use core::arch::asm;
use core::ops::Range;

use tern_core::backend::quant::{self, GgmlType};
use tern_core::backend::{scalar, QMatrix};

/// Tokens per pass over a row: 4 accumulators each.
const NT: usize = 4;

std::thread_local! {
    /// A weight row widened to f32: one per thread, reused by every call.
    static WROW: core::cell::RefCell<Vec<f32>> = const { core::cell::RefCell::new(Vec::new()) };
}

pub fn matmul_rows(w: &QMatrix, x: &[f32], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    WROW.with_borrow_mut(|wrow| {
        wrow.resize(w.n_cols, 0.0);
        rows_with(w, x, n_tok, rows, out, wrow)
    })
}

fn rows_with(w: &QMatrix, x: &[f32], n_tok: usize, rows: Range<usize>, out: &mut [f32], wrow: &mut [f32]) {
    let n = w.n_cols;
    for (r, o) in rows.zip(out.chunks_exact_mut(n_tok)) {
        let row = w.row(r);
        match w.ty {
            GgmlType::F32 => {
                for (o, c) in wrow.iter_mut().zip(row.chunks_exact(4)) {
                    *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                }
            }
            GgmlType::F16 => widen_f16(row, wrow),
            GgmlType::BF16 => widen_bf16(row, wrow),
            _ => {
                if quant::dequantize_row(w.ty, row, wrow).is_err() {
                    unreachable!("row type checked at load");
                }
            }
        }
        for t0 in (0..n_tok).step_by(NT) {
            let nt = NT.min(n_tok - t0);
            dots(wrow, &x[t0 * n..(t0 + nt) * n], nt, &mut o[t0..t0 + nt]);
        }
    }
}

#[inline(always)]
fn ld(x: &[f32], i: usize) -> float32x4_t {
    let x = &x[i..i + 4];
    // SAFETY: `x` has 4 elements; NEON baseline.
    unsafe { vld1q_f32(x.as_ptr()) }
}

/// `out[j] = w · x_j` for the `nt` rows of `x`, each in the 16-lane order.
#[inline(always)]
fn dots(w: &[f32], x: &[f32], nt: usize, out: &mut [f32]) {
    let n = w.len();
    let n16 = n / 16 * 16;
    // SAFETY: NEON baseline.
    let mut acc = [[unsafe { vdupq_n_f32(0.0) }; 4]; NT];
    for i in (0..n16).step_by(16) {
        let wv = [ld(w, i), ld(w, i + 4), ld(w, i + 8), ld(w, i + 12)];
        for (j, a) in acc.iter_mut().enumerate().take(nt) {
            for (k, a) in a.iter_mut().enumerate() {
                // SAFETY: NEON baseline.
                *a = unsafe { vaddq_f32(*a, vmulq_f32(wv[k], ld(x, j * n + i + 4 * k))) };
            }
        }
    }
    for (j, (a, o)) in acc.iter().zip(out.iter_mut()).enumerate().take(nt) {
        let mut l = [0.0f32; 16];
        for (k, a) in a.iter().enumerate() {
            // SAFETY: `l[4k..]` has 4 f32; NEON baseline.
            unsafe { vst1q_f32(l[4 * k..].as_mut_ptr(), *a) };
        }
        // a ragged row's tail into its lanes, then the reference's tree
        *o = scalar::reduce16_tail(l, &w[n16..], &x[j * n + n16..(j + 1) * n]);
    }
}

/// Four little-endian u16 from `b[2i..2i + 8]`.
#[inline(always)]
fn u16x4(b: &[u8], i: usize) -> uint16x4_t {
    let b = &b[2 * i..2 * i + 8];
    // SAFETY: `b` has 8 bytes; NEON baseline.
    unsafe { vld1_u16(b.as_ptr() as *const u16) }
}

fn widen_f16(row: &[u8], out: &mut [f32]) {
    let n4 = out.len() / 4 * 4;
    for i in (0..n4).step_by(4) {
        let h = u16x4(row, i);
        let v: float32x4_t;
        // SAFETY: `fcvtl` (half → single, exact; NaNs quieted like the
        // reference's conversion) is base ARMv8-A; registers only.
        unsafe {
            asm!("fcvtl {o:v}.4s, {h:v}.4h", h = in(vreg) h, o = out(vreg) v, options(pure, nomem, nostack));
            vst1q_f32(out[i..i + 4].as_mut_ptr(), v);
        }
    }
    for (i, o) in out.iter_mut().enumerate().skip(n4) {
        *o = quant::f16_at(row, 2 * i);
    }
}

fn widen_bf16(row: &[u8], out: &mut [f32]) {
    let n4 = out.len() / 4 * 4;
    for i in (0..n4).step_by(4) {
        let h = u16x4(row, i);
        // SAFETY: NEON baseline; `out[i..i + 4]` has 4 f32.
        unsafe {
            let v = vshll_n_u16::<16>(h);
            // NaNs come out quiet, as the reference's conversion makes them
            let nan = vcgtq_u32(vandq_u32(vmovl_u16(h), vdupq_n_u32(0x7FFF)), vdupq_n_u32(0x7F80));
            let v = vorrq_u32(v, vandq_u32(nan, vdupq_n_u32(0x0040_0000)));
            vst1q_f32(out[i..i + 4].as_mut_ptr(), vreinterpretq_f32_u32(v));
        }
    }
    for (i, o) in out.iter_mut().enumerate().skip(n4) {
        *o = quant::bf16_at(row, 2 * i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every f16 and bf16 bit pattern widens to the reference's f32 bits,
    /// NaNs included.
    #[test]
    fn widening_equals_the_reference_on_every_pattern() {
        let bytes: Vec<u8> = (0..=u16::MAX).flat_map(|h| h.to_le_bytes()).collect();
        let mut got = vec![0.0f32; 1 << 16];
        widen_f16(&bytes, &mut got);
        for (i, g) in got.iter().enumerate() {
            assert_eq!(g.to_bits(), quant::f16_at(&bytes, 2 * i).to_bits(), "f16 {i:#06x}");
        }
        widen_bf16(&bytes, &mut got);
        for (i, g) in got.iter().enumerate() {
            assert_eq!(g.to_bits(), quant::bf16_at(&bytes, 2 * i).to_bits(), "bf16 {i:#06x}");
        }
    }
}
