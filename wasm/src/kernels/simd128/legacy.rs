//! 32-element block formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) against 8-bit activations,
//! four weight rows at a time with one row per lane: the exact integer dot
//! of each block, then the reference's float expression per lane,
//! accumulated block 0, 1, 2, ... — bit for bit `scalar::matmul_rows`.

use core::arch::wasm32::*;
use core::ops::Range;

use tern_core::kernels::QMatrix;
use tern_core::quant::{BlockQ8_0, BlockQ8_1, QK8};

use super::v;

/// A block format: its size, how the quants of the block at byte `at`
/// unpack into the four eo16 half-groups (even then odd of elements 0-15,
/// even then odd of 16-31), and whether it has a min (f16 at byte 2).
pub trait Legacy {
    const BYTES: usize;
    const MIN: bool;
    fn unpack(b: &[u8], at: usize) -> [v128; 4];
}

pub struct Q4_0;
pub struct Q4_1;
pub struct Q5_0;
pub struct Q5_1;
pub struct Q8_0;

/// 16 nibble bytes at `at`: lane j holds bytes 2j (elements 2j, 2j+16)
/// and 2j+1 (elements 2j+1, 2j+17).
#[inline(always)]
fn nibbles(b: &[u8], at: usize) -> [v128; 4] {
    let x = v::load(b, at);
    let m = i16x8_splat(0x0f);
    let even_lo = v128_and(x, m);
    let even_hi = v128_and(u16x8_shr(x, 4), m);
    let odd_lo = v128_and(u16x8_shr(x, 8), m);
    let odd_hi = u16x8_shr(x, 12);
    [even_lo, odd_lo, even_hi, odd_hi]
}

/// The 5th bits of a Q5 block (u32 at `at`, bit i for element i) as 0x10
/// in the eo16 half-groups' lanes, to OR onto `nibbles`.
#[inline(always)]
fn fifth_bits(b: &[u8], at: usize) -> [v128; 4] {
    let qh = u32x4_splat(u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]));
    // byte k: the byte of qh holding bit k (elements 0-15), then 16-31
    let lo = i8x16_swizzle(qh, i8x16(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
    let hi = i8x16_swizzle(qh, i8x16(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    let bit = u8x16(1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128);
    let x10 = |x| v128_and(i8x16_ne(v128_and(x, bit), i8x16_splat(0)), i8x16_splat(0x10));
    let (lo, hi) = (x10(lo), x10(hi));
    let even = |x| v128_and(x, i16x8_splat(0xff));
    [even(lo), u16x8_shr(lo, 8), even(hi), u16x8_shr(hi, 8)]
}

#[inline(always)]
fn or4(a: [v128; 4], b: [v128; 4]) -> [v128; 4] {
    [v128_or(a[0], b[0]), v128_or(a[1], b[1]), v128_or(a[2], b[2]), v128_or(a[3], b[3])]
}

impl Legacy for Q4_0 {
    const BYTES: usize = 18;
    const MIN: bool = false;
    #[inline(always)]
    fn unpack(b: &[u8], at: usize) -> [v128; 4] {
        let eight = i16x8_splat(8);
        nibbles(b, at + 2).map(|n| i16x8_sub(n, eight))
    }
}

impl Legacy for Q4_1 {
    const BYTES: usize = 20;
    const MIN: bool = true;
    #[inline(always)]
    fn unpack(b: &[u8], at: usize) -> [v128; 4] {
        nibbles(b, at + 4)
    }
}

impl Legacy for Q5_0 {
    const BYTES: usize = 22;
    const MIN: bool = false;
    #[inline(always)]
    fn unpack(b: &[u8], at: usize) -> [v128; 4] {
        let sixteen = i16x8_splat(16);
        or4(nibbles(b, at + 6), fifth_bits(b, at + 2)).map(|n| i16x8_sub(n, sixteen))
    }
}

impl Legacy for Q5_1 {
    const BYTES: usize = 24;
    const MIN: bool = true;
    #[inline(always)]
    fn unpack(b: &[u8], at: usize) -> [v128; 4] {
        or4(nibbles(b, at + 8), fifth_bits(b, at + 4))
    }
}

impl Legacy for Q8_0 {
    const BYTES: usize = 34;
    const MIN: bool = false;
    #[inline(always)]
    fn unpack(b: &[u8], at: usize) -> [v128; 4] {
        let x0 = v::load(b, at + 2);
        let x1 = v::load(b, at + 18);
        let even = |x| i16x8_shr(i16x8_shl(x, 8), 8);
        [even(x0), i16x8_shr(x0, 8), even(x1), i16x8_shr(x1, 8)]
    }
}

/// An activation block's scale and (Q8_1) scaled sum.
pub trait ActBlock {
    fn d(&self) -> f32;
    fn s(&self) -> f32;
}
impl ActBlock for BlockQ8_0 {
    #[inline(always)]
    fn d(&self) -> f32 {
        self.d
    }
    #[inline(always)]
    fn s(&self) -> f32 {
        0.0
    }
}
impl ActBlock for BlockQ8_1 {
    #[inline(always)]
    fn d(&self) -> f32 {
        self.d
    }
    #[inline(always)]
    fn s(&self) -> f32 {
        self.s
    }
}

/// Rows `rows` of `w` against one token: `a` its blocks, `aw` its widened
/// quants; `out[i * stride]` for the i-th row.
pub fn rows<L: Legacy, A: ActBlock>(
    w: &QMatrix,
    a: &[A],
    aw: &[i16],
    rows: Range<usize>,
    out: &mut [f32],
    stride: usize,
) {
    let nb = w.n_cols / QK8;
    let mut r = rows.start;
    while r < rows.end {
        // A partial quad repeats its last row (lanes past it are dropped).
        let quad: [usize; 4] = core::array::from_fn(|i| (r + i).min(rows.end - 1));
        let acc = quad4::<L, A>(quad.map(|q| w.row(q)), a, aw, nb);
        for i in 0..(rows.end - r).min(4) {
            out[(r - rows.start + i) * stride] = lane(acc, i);
        }
        r += 4;
    }
}

#[inline(always)]
pub fn lane(v: v128, i: usize) -> f32 {
    match i {
        0 => f32x4_extract_lane::<0>(v),
        1 => f32x4_extract_lane::<1>(v),
        2 => f32x4_extract_lane::<2>(v),
        _ => f32x4_extract_lane::<3>(v),
    }
}

#[inline(always)]
fn quad4<L: Legacy, A: ActBlock>(r: [&[u8]; 4], a: &[A], aw: &[i16], nb: usize) -> v128 {
    let mut acc = f32x4_splat(0.0);
    for b in 0..nb {
        let x = [v::load16(aw, 32 * b), v::load16(aw, 32 * b + 8), v::load16(aw, 32 * b + 16), v::load16(aw, 32 * b + 24)];
        let at = b * L::BYTES;
        let p = r.map(|row| {
            let q = L::unpack(row, at);
            let s0 = i32x4_add(i32x4_dot_i16x8(q[0], x[0]), i32x4_dot_i16x8(q[1], x[1]));
            let s1 = i32x4_add(i32x4_dot_i16x8(q[2], x[2]), i32x4_dot_i16x8(q[3], x[3]));
            i32x4_add(s0, s1)
        });
        let isum = f32x4_convert_i32x4(v::reduce4(p));
        let ab = &a[b];
        let wd = v::f16x4(r, at);
        let mut t = f32x4_mul(f32x4_mul(wd, f32x4_splat(ab.d())), isum);
        if L::MIN {
            let wm = v::f16x4(r, at + 2);
            t = f32x4_add(t, f32x4_mul(wm, f32x4_splat(ab.s())));
        }
        acc = f32x4_add(acc, t);
    }
    acc
}
