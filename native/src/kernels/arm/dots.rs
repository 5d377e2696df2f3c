//! Exact integer dots of 16 or 32 signed bytes, two ways: plain NEON
//! (widening multiplies, pairwise-accumulated into i32 lanes) and the
//! dotprod extension's `sdot`. Both give the exact i32 sum, so kernels
//! built on either equal the scalar reference.

use core::arch::aarch64::*;
use core::arch::asm;

/// An instruction set's exact 8-bit dot.
pub trait Idot {
    /// `acc + Σ w·a` by lanes: each lane of the result holds a partial sum.
    fn mac16(acc: int32x4_t, w: int8x16_t, a: int8x16_t) -> int32x4_t;
}

pub struct Plain;
pub struct Sdot;

impl Idot for Plain {
    #[inline(always)]
    fn mac16(acc: int32x4_t, w: int8x16_t, a: int8x16_t) -> int32x4_t {
        // SAFETY: NEON is part of the aarch64 baseline.
        unsafe {
            let lo = vmull_s8(vget_low_s8(w), vget_low_s8(a));
            let hi = vmull_s8(vget_high_s8(w), vget_high_s8(a));
            vpadalq_s16(vpadalq_s16(acc, lo), hi)
        }
    }
}

impl Idot for Sdot {
    #[inline(always)]
    fn mac16(acc: int32x4_t, w: int8x16_t, a: int8x16_t) -> int32x4_t {
        // SAFETY: reached only from functions compiled with `dotprod`, on
        // CPUs that have it (the backend's constructor checks).
        unsafe { sdot(acc, w, a) }
    }
}

#[inline]
#[target_feature(enable = "dotprod")]
fn sdot(mut acc: int32x4_t, w: int8x16_t, a: int8x16_t) -> int32x4_t {
    // (sdot's intrinsic is not stable Rust yet; the instruction is.)
    // SAFETY: register-only arithmetic, no memory or stack use.
    unsafe {
        asm!("sdot {0:v}.4s, {1:v}.16b, {2:v}.16b", inout(vreg) acc, in(vreg) w, in(vreg) a, options(pure, nomem, nostack))
    };
    acc
}

/// 16 activation bytes from `a[i..]`.
#[inline(always)]
pub fn load16(a: &[i8], i: usize) -> int8x16_t {
    let a = &a[i..i + 16];
    // SAFETY: `a` has 16 bytes.
    unsafe { vld1q_s8(a.as_ptr()) }
}

/// Exact Σ of 32 weights (two vectors) with 32 activations.
#[inline(always)]
pub fn idot32<D: Idot>(w: [int8x16_t; 2], a: &[i8]) -> i32 {
    let acc = D::mac16(D::mac16(zero(), w[0], load16(a, 0)), w[1], load16(a, 16));
    // SAFETY: NEON baseline.
    unsafe { vaddvq_s32(acc) }
}

/// Exact Σ of 16 weights with 16 activations.
#[inline(always)]
pub fn idot16<D: Idot>(w: &[i8], a: &[i8]) -> i32 {
    let acc = D::mac16(zero(), load16(w, 0), load16(a, 0));
    // SAFETY: NEON baseline.
    unsafe { vaddvq_s32(acc) }
}

#[inline(always)]
fn zero() -> int32x4_t {
    // SAFETY: NEON baseline.
    unsafe { vdupq_n_s32(0) }
}
