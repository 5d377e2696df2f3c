//! i8mm: legacy-format blocks two rows × two tokens at a time with `smmla`,
//! which multiplies a 2×8 by an 8×2 matrix of bytes into a 2×2 of i32 —
//! four `smmla` give a block's four exact dots with no horizontal sums. The
//! float expression per (row, token) is the reference's, blocks in order.

use core::arch::aarch64::*;
use core::arch::asm;
use core::ops::Range;

use tern_core::backend::quant::{GgmlType, QK8};
use tern_core::backend::{Acts, QMatrix};

use super::dots::Sdot;
use super::matmul::{self, Act32};
use super::unpack::unpack;

#[inline]
#[target_feature(enable = "i8mm")]
fn smmla(mut acc: int32x4_t, a: int8x16_t, b: int8x16_t) -> int32x4_t {
    // (smmla's intrinsic is not stable Rust yet; the instruction is.)
    // SAFETY: register-only arithmetic, no memory or stack use.
    unsafe {
        asm!("smmla {0:v}.4s, {1:v}.16b, {2:v}.16b", inout(vreg) acc, in(vreg) a, in(vreg) b, options(pure, nomem, nostack))
    };
    acc
}

/// The 8-byte chunks `c` (0..4) of two 32-byte operands, side by side.
#[inline(always)]
fn pair(x: [int8x16_t; 2], y: [int8x16_t; 2], c: usize) -> int8x16_t {
    // SAFETY: NEON baseline.
    unsafe {
        let (x, y) = (vreinterpretq_s64_s8(x[c / 2]), vreinterpretq_s64_s8(y[c / 2]));
        vreinterpretq_s8_s64(if c % 2 == 0 { vzip1q_s64(x, y) } else { vzip2q_s64(x, y) })
    }
}

/// [w0·a0, w0·a1, w1·a0, w1·a1], exact.
#[inline(always)]
fn dots2x2(w: [[int8x16_t; 2]; 2], a: [[int8x16_t; 2]; 2]) -> [i32; 4] {
    // SAFETY: reached only from i8mm target_feature functions; NEON baseline.
    unsafe {
        let mut acc = vdupq_n_s32(0);
        for c in 0..4 {
            acc = smmla(acc, pair(w[0], w[1], c), pair(a[0], a[1], c));
        }
        let mut o = [0i32; 4];
        vst1q_s32(o.as_mut_ptr(), acc);
        o
    }
}

#[inline(always)]
fn load32(q: &[i8]) -> [int8x16_t; 2] {
    let q = &q[..32];
    // SAFETY: `q` has 32 bytes; NEON baseline.
    unsafe { [vld1q_s8(q.as_ptr()), vld1q_s8(q[16..].as_ptr())] }
}

/// Legacy formats in 2×2 tiles; other work (an odd last row or token,
/// K-quants, f32) goes to the dotprod kernels.
#[inline(always)]
pub fn matmul_rows(w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    use GgmlType::*;
    let legacy = matches!(w.ty, Q4_0 | Q4_1 | Q5_0 | Q5_1 | Q8_0);
    match x {
        Acts::Q8_0(a) if legacy => rows_2x2(w, a, x, n_tok, rows, out),
        Acts::Q8_1(a) if legacy => rows_2x2(w, a, x, n_tok, rows, out),
        _ => matmul::matmul_rows::<Sdot>(w, x, n_tok, rows, out),
    }
}

/// Token `t`'s activations alone.
fn token(x: Acts, t: usize, nb: usize) -> Acts {
    match x {
        Acts::Q8_0(a) => Acts::Q8_0(&a[t * nb..(t + 1) * nb]),
        Acts::Q8_1(a) => Acts::Q8_1(&a[t * nb..(t + 1) * nb]),
        _ => unreachable!("legacy formats pair with Q8_0/Q8_1"),
    }
}

#[inline(always)]
fn rows_2x2<A: Act32>(w: &QMatrix, a: &[A], x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    let (nb, ts) = (w.n_cols / QK8, w.ty.type_size());
    let (n_rows, n_toks) = (rows.len() / 2 * 2, n_tok / 2 * 2);
    for i in (0..n_rows).step_by(2) {
        let rw = [w.row(rows.start + i), w.row(rows.start + i + 1)];
        for t in (0..n_toks).step_by(2) {
            let mut acc = [0.0f32; 4];
            for b in 0..nb {
                // The rows were validated at load: their type always unpacks.
                let (Some(u0), Some(u1)) = (unpack(w.ty, &rw[0][b * ts..]), unpack(w.ty, &rw[1][b * ts..])) else {
                    unreachable!()
                };
                let ab = [&a[t * nb + b], &a[(t + 1) * nb + b]];
                let isum = dots2x2([u0.q, u1.q], [load32(ab[0].qs()), load32(ab[1].qs())]);
                for (k, s) in acc.iter_mut().enumerate() {
                    let (u, ab) = (if k < 2 { &u0 } else { &u1 }, ab[k % 2]);
                    *s += ab.term((u.d * ab.d()) * isum[k] as f32, u.m);
                }
            }
            for (k, &v) in acc.iter().enumerate() {
                out[(i + k / 2) * n_tok + t + k % 2] = v;
            }
        }
        if n_toks < n_tok {
            // the odd last token of these two rows
            let (r, t) = (rows.start + i, n_tok - 1);
            let mut col = [0.0f32; 2];
            matmul::matmul_rows::<Sdot>(w, token(x, t, nb), 1, r..r + 2, &mut col);
            out[i * n_tok + t] = col[0];
            out[(i + 1) * n_tok + t] = col[1];
        }
    }
    if n_rows < rows.len() {
        // the odd last row, all tokens (its outputs are contiguous)
        let r = rows.start + n_rows;
        matmul::matmul_rows::<Sdot>(w, x, n_tok, r..r + 1, &mut out[n_rows * n_tok..]);
    }
}
