//! The exact path (f32 activations) for every weight type: each row
//! widened to f32 once (F16 and BF16 eight at a time, exactly as `half`;
//! F32 read; block formats by the reference's dequantization), then each
//! token's dot in the contract's 16-lane order, two tokens per pass over
//! the row — bit for bit the reference's `row_f32`, which is that same
//! order over the row.

use core::arch::wasm32::*;
use core::cell::RefCell;
use core::ops::Range;

use tern_core::backend::quant::{self, GgmlType};
use tern_core::backend::QMatrix;

use super::{float, v};

std::thread_local! {
    /// A weight row widened to f32 (one per thread, reused).
    static WROW: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

pub fn matmul_rows(w: &QMatrix, x: &[f32], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    let n = w.n_cols;
    WROW.with_borrow_mut(|wrow| {
        wrow.resize(n, 0.0);
        for (r, o) in rows.zip(out.chunks_exact_mut(n_tok)) {
            let row = w.row(r);
            match w.ty {
                GgmlType::F32 => {
                    for (o, c) in wrow.iter_mut().zip(row.chunks_exact(4)) {
                        *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                    }
                }
                GgmlType::F16 => widen16(row, wrow, v::f16_to_f32),
                GgmlType::BF16 => widen16(row, wrow, bf16_to_f32),
                _ => {
                    if quant::dequantize_row(w.ty, row, wrow).is_err() {
                        unreachable!("row type checked at load");
                    }
                }
            }
            // tokens two at a time (each weight vector loaded once for
            // both), then the odd one
            let pairs = n_tok / 2 * 2;
            for t in (0..pairs).step_by(2) {
                let d = dot2(wrow, [&x[t * n..][..n], &x[(t + 1) * n..][..n]]);
                o[t..t + 2].copy_from_slice(&d);
            }
            if pairs < n_tok {
                o[pairs] = float::dot(wrow, &x[pairs * n..][..n]);
            }
        }
    })
}

/// `w · x[0]` and `w · x[1]`, each in the contract's order (as
/// `float::dot`).
#[inline(always)]
fn dot2(w: &[f32], x: [&[f32]; 2]) -> [f32; 2] {
    let n = w.len();
    assert!(x[0].len() == n && x[1].len() == n);
    let n16 = n / 16 * 16;
    let (wp, xp) = (w.as_ptr(), x.map(<[f32]>::as_ptr));
    let mut l = [[f32x4_splat(0.0); 4]; 2];
    for i in (0..n16).step_by(16) {
        for k in 0..4 {
            // SAFETY: `i + 4k + 4 <= n16 <= n`: inside `w` and each `x`;
            // v128_load has no alignment requirement.
            let (wv, x0, x1) = unsafe {
                (
                    v128_load(wp.add(i + 4 * k) as *const v128),
                    v128_load(xp[0].add(i + 4 * k) as *const v128),
                    v128_load(xp[1].add(i + 4 * k) as *const v128),
                )
            };
            l[0][k] = f32x4_add(l[0][k], f32x4_mul(wv, x0));
            l[1][k] = f32x4_add(l[1][k], f32x4_mul(wv, x1));
        }
    }
    [0, 1].map(|j| float::lanes_done(l[j], &w[n16..], &x[j][n16..]))
}

/// 16-bit floats (little-endian bytes) to f32 by `conv` on u32 lanes.
#[inline(always)]
fn widen16(row: &[u8], out: &mut [f32], conv: impl Fn(v128) -> v128) {
    let n8 = out.len() / 8 * 8;
    for i in (0..n8).step_by(8) {
        let h = v::load(row, 2 * i);
        v::store(out, i, conv(u32x4_extend_low_u16x8(h)));
        v::store(out, i + 4, conv(u32x4_extend_high_u16x8(h)));
    }
    for i in n8..out.len() {
        let h = u16::from_le_bytes([row[2 * i], row[2 * i + 1]]) as u32;
        out[i] = f32::from_bits(u32x4_extract_lane::<0>(conv(u32x4_splat(h))));
    }
}

/// bf16 bit patterns (low 16 bits of u32 lanes) to f32, as `half`: the
/// bits shifted up, NaNs made quiet.
#[inline(always)]
pub fn bf16_to_f32(h: v128) -> v128 {
    let x = i32x4_shl(h, 16);
    let nan = i32x4_gt(v128_and(x, u32x4_splat(0x7fff_ffff)), i32x4_splat(0x7f80_0000));
    v128_or(x, v128_and(nan, u32x4_splat(0x0040_0000)))
}

#[cfg(test)]
mod tests {
    use wasm_bindgen_test::wasm_bindgen_test;

    use super::*;

    /// Every bf16 pattern widens to the bits `half` gives.
    #[wasm_bindgen_test]
    fn bf16_widening_matches_half_on_all_patterns() {
        for h in 0..=0xffffu32 {
            let got = u32x4_extract_lane::<0>(bf16_to_f32(u32x4_splat(h)));
            assert_eq!(got, half::bf16::from_bits(h as u16).to_f32().to_bits(), "bf16 {h:#06x}");
        }
    }
}
