//! NEON inner loops of tiled attention (`tiles::attention`): scores are
//! the contract's 16-lane dots (four 4-lane accumulators, multiply then
//! add) reduced by its fixed tree; each output element accumulates p·v
//! over a tile's positions in order, four at a time.

use core::arch::aarch64::*;

use tern_core::backend::scalar;
use tern_core::backend::tiles::TileOps;

#[inline(always)]
fn ld(x: &[f32], i: usize) -> float32x4_t {
    let x = &x[i..i + 4];
    // SAFETY: `x` has 4 elements; NEON baseline.
    unsafe { vld1q_f32(x.as_ptr()) }
}

/// `Σ a[i]·b[i]` by the contract: lane i % 16, then `reduce16`.
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n16 = a.len() / 16 * 16;
    let mut l = [0.0f32; 16];
    // SAFETY: NEON baseline; `l` holds 16 f32.
    unsafe {
        let mut acc = [vdupq_n_f32(0.0); 4];
        for i in (0..n16).step_by(16) {
            for (k, acc) in acc.iter_mut().enumerate() {
                *acc = vaddq_f32(*acc, vmulq_f32(ld(a, i + 4 * k), ld(b, i + 4 * k)));
            }
        }
        for (k, acc) in acc.iter().enumerate() {
            vst1q_f32(l[4 * k..].as_mut_ptr(), *acc);
        }
    }
    scalar::reduce16_tail(l, &a[n16..], &b[n16..])
}

/// `o[i] += p · x[i]`, four at a time (multiply, then add).
#[inline(always)]
fn axpy(o: &mut [f32], p: f32, x: &[f32]) {
    let n4 = o.len() / 4 * 4;
    // SAFETY: NEON baseline; i + 4 ≤ n4 ≤ o.len(), x.len().
    unsafe {
        let pv = vdupq_n_f32(p);
        for i in (0..n4).step_by(4) {
            vst1q_f32(o[i..].as_mut_ptr(), vaddq_f32(ld(o, i), vmulq_f32(pv, ld(x, i))));
        }
    }
    scalar::axpy(&mut o[n4..], p, &x[n4..]);
}

/// The NEON baseline's tile loops.
pub struct Neon;

impl TileOps for Neon {
    #[inline]
    fn dots(&self, q: &[f32], rows: &[f32], st: usize, s: &mut [f32]) {
        for (i, s) in s.iter_mut().enumerate() {
            *s = dot(q, &rows[i * st..i * st + q.len()]);
        }
    }
    #[inline]
    fn accumulate(&self, o: &mut [f32], p: &[f32], rows: &[f32], st: usize) {
        for (i, &p) in p.iter().enumerate() {
            axpy(o, p, &rows[i * st..i * st + o.len()]);
        }
    }
}
