//! 32-element block formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL) against 8-bit
//! activations, one weight row at a time: each block's exact integer dot
//! (four i32 partials), then four blocks' float expressions at once (one
//! block per lane, as the reference writes them), added to the row's sum in
//! block order — bit for bit `scalar::matmul_rows`.

use core::arch::wasm32::*;

use tern_core::backend::quant::{iq4_nl, q4_0, q4_1, q5_0, q5_1, q8_0};

use super::v;

/// A block format: its size, where its f16 scale and min are (core's
/// offsets), whether it has a min, and how the quants of a block unpack
/// into the four eo16 half-groups (even then odd elements of 0-15, even
/// then odd of 16-31).
pub trait Legacy {
    const BYTES: usize;
    const MIN: bool;
    const D_AT: usize;
    /// The min's offset (formats with one).
    const M_AT: usize = Self::D_AT;
    /// # Safety
    /// `p` points to a whole block.
    unsafe fn unpack(p: *const u8) -> [v128; 4];
}

pub struct Q4_0;
pub struct Q4_1;
pub struct Q5_0;
pub struct Q5_1;
pub struct Q8_0;
pub struct Iq4Nl;

/// 16 nibble bytes: lane j holds bytes 2j (elements 2j, 2j+16) and 2j+1
/// (elements 2j+1, 2j+17).
#[inline(always)]
fn nibbles(x: v128) -> [v128; 4] {
    let m = i16x8_splat(0x0f);
    [v128_and(x, m), v128_and(u16x8_shr(x, 8), m), v128_and(u16x8_shr(x, 4), m), u16x8_shr(x, 12)]
}

/// 0xff in byte k where bit k of a Q5 block's `qh` is set: elements
/// 0-15, then 16-31.
#[inline(always)]
fn fifth_bits(qh: u32) -> (v128, v128) {
    let qh = u32x4_splat(qh);
    // byte k: the byte of qh holding bit k (constant shuffles: one pshufb)
    let lo = i8x16_shuffle::<0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1>(qh, qh);
    let hi = i8x16_shuffle::<2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3>(qh, qh);
    let bit = u8x16(1, 2, 4, 8, 16, 32, 64, 128, 1, 2, 4, 8, 16, 32, 64, 128);
    let set = |x| i8x16_eq(v128_and(x, bit), bit);
    (set(lo), set(hi))
}

/// 16 signed bytes (elements in order) as i16: [even, odd].
#[inline(always)]
fn split(x: v128) -> [v128; 2] {
    [i16x8_shr(i16x8_shl(x, 8), 8), i16x8_shr(x, 8)]
}

/// A Q5 block's 16 quant bytes and high bits as bytes: elements 0-15 and
/// 16-31, `q = nibble | bit << 4`, less 16 if `centred`.
#[inline(always)]
fn five_bit(qs: v128, qh: u32, centred: bool) -> [v128; 4] {
    let (ml, mh) = fifth_bits(qh);
    let m4 = i8x16_splat(0x0f);
    let x10 = i8x16_splat(0x10);
    let (nl, nh) = (v128_and(qs, m4), v128_and(u16x8_shr(qs, 4), m4));
    let (lo, hi) = if centred {
        // q - 16 = nibble - 16 where the bit is clear
        (i8x16_sub(nl, v128_andnot(x10, ml)), i8x16_sub(nh, v128_andnot(x10, mh)))
    } else {
        (v128_or(nl, v128_and(x10, ml)), v128_or(nh, v128_and(x10, mh)))
    };
    let [e0, o0] = split(lo);
    let [e1, o1] = split(hi);
    [e0, o0, e1, o1]
}

/// # Safety
/// `p..p + 16` is readable.
#[inline(always)]
unsafe fn load(p: *const u8) -> v128 {
    // SAFETY: the caller's contract; v128_load needs no alignment.
    unsafe { v128_load(p as *const v128) }
}

impl Legacy for Q4_0 {
    const BYTES: usize = q4_0::BLOCK_BYTES;
    const MIN: bool = false;
    const D_AT: usize = q4_0::D;
    #[inline(always)]
    unsafe fn unpack(p: *const u8) -> [v128; 4] {
        let eight = i16x8_splat(8);
        // SAFETY: `p` is a Q4_0 block; its 16 quant bytes start at QS.
        nibbles(unsafe { load(p.add(q4_0::QS)) }).map(|n| i16x8_sub(n, eight))
    }
}

impl Legacy for Q4_1 {
    const BYTES: usize = q4_1::BLOCK_BYTES;
    const MIN: bool = true;
    const D_AT: usize = q4_1::D;
    const M_AT: usize = q4_1::M;
    #[inline(always)]
    unsafe fn unpack(p: *const u8) -> [v128; 4] {
        // SAFETY: `p` is a Q4_1 block; its 16 quant bytes start at QS.
        nibbles(unsafe { load(p.add(q4_1::QS)) })
    }
}

impl Legacy for Q5_0 {
    const BYTES: usize = q5_0::BLOCK_BYTES;
    const MIN: bool = false;
    const D_AT: usize = q5_0::D;
    #[inline(always)]
    unsafe fn unpack(p: *const u8) -> [v128; 4] {
        // SAFETY: `p` is a Q5_0 block: 4 high-bit bytes at QH, 16 quant bytes at QS.
        let (qh, qs) = unsafe { ((p.add(q5_0::QH) as *const u32).read_unaligned(), load(p.add(q5_0::QS))) };
        five_bit(qs, u32::from_le(qh), true)
    }
}

impl Legacy for Q5_1 {
    const BYTES: usize = q5_1::BLOCK_BYTES;
    const MIN: bool = true;
    const D_AT: usize = q5_1::D;
    const M_AT: usize = q5_1::M;
    #[inline(always)]
    unsafe fn unpack(p: *const u8) -> [v128; 4] {
        // SAFETY: `p` is a Q5_1 block: 4 high-bit bytes at QH, 16 quant bytes at QS.
        let (qh, qs) = unsafe { ((p.add(q5_1::QH) as *const u32).read_unaligned(), load(p.add(q5_1::QS))) };
        five_bit(qs, u32::from_le(qh), false)
    }
}

impl Legacy for Q8_0 {
    const BYTES: usize = q8_0::BLOCK_BYTES;
    const MIN: bool = false;
    const D_AT: usize = q8_0::D;
    #[inline(always)]
    unsafe fn unpack(p: *const u8) -> [v128; 4] {
        // SAFETY: `p` is a Q8_0 block; its 32 quant bytes start at QS.
        let (x0, x1) = unsafe { (load(p.add(q8_0::QS)), load(p.add(q8_0::QS + 16))) };
        let ([e0, o0], [e1, o1]) = (split(x0), split(x1));
        [e0, o0, e1, o1]
    }
}

impl Legacy for Iq4Nl {
    const BYTES: usize = iq4_nl::BLOCK_BYTES;
    const MIN: bool = false;
    const D_AT: usize = iq4_nl::D;
    #[inline(always)]
    unsafe fn unpack(p: *const u8) -> [v128; 4] {
        // SAFETY: `p` is an IQ4_NL block; its 16 index bytes start at QS;
        // the table has 16 bytes.
        let (qs, table) = unsafe { (load(p.add(iq4_nl::QS)), load(iq4_nl::KVALUES.as_ptr() as *const u8)) };
        let m4 = i8x16_splat(0x0f);
        // elements 0-15 and 16-31: each index's table value
        let lo = i8x16_swizzle(table, v128_and(qs, m4));
        let hi = i8x16_swizzle(table, u8x16_shr(qs, 4));
        let ([e0, o0], [e1, o1]) = (split(lo), split(hi));
        [e0, o0, e1, o1]
    }
}

/// One token's activations as the row kernel reads them: quants widened
/// (eo16), and per block its scale `d` and (Q8_1) scaled sum `s`, padded
/// with zeros to a multiple of 4 blocks.
pub struct Acts<'a> {
    pub q: &'a [i16],
    pub d: &'a [f32],
    pub s: &'a [f32],
}

/// Four i32 partials of an unpacked block · activations at `x`.
///
/// # Safety
/// `x..x + 32` is readable.
#[inline(always)]
unsafe fn dot(q: [v128; 4], x: *const i16) -> v128 {
    // SAFETY: the caller's contract.
    let a = unsafe { [0, 8, 16, 24].map(|o| v128_load(x.add(o) as *const v128)) };
    let s0 = i32x4_add(i32x4_dot_i16x8(q[0], a[0]), i32x4_dot_i16x8(q[1], a[1]));
    let s1 = i32x4_add(i32x4_dot_i16x8(q[2], a[2]), i32x4_dot_i16x8(q[3], a[3]));
    i32x4_add(s0, s1)
}

/// The f16 at byte `off` of the blocks at `at(0..4)`, as f32 lanes (by
/// the exact lookup table).
///
/// # Safety
/// Each `w + at(k) + off` is two readable bytes.
#[inline(always)]
unsafe fn f16x4(t: &[f32; 65536], w: *const u8, at: impl Fn(usize) -> usize, off: usize) -> v128 {
    // SAFETY: the caller's contract.
    let h = |k: usize| unsafe { u16::from_le((w.add(at(k) + off) as *const u16).read_unaligned()) } as usize;
    f32x4(t[h(0)], t[h(1)], t[h(2)], t[h(3)])
}

/// The scales (and mins) of the blocks at `at(0..4)` as f32 lanes.
///
/// # Safety
/// Each `w + at(k)` is a whole block.
#[inline(always)]
unsafe fn scales<L: Legacy>(t: &[f32; 65536], w: *const u8, at: impl Fn(usize) -> usize + Copy) -> (v128, v128) {
    // SAFETY: the caller's contract (scale and min lie in the block).
    unsafe { (f16x4(t, w, at, L::D_AT), if L::MIN { f16x4(t, w, at, L::M_AT) } else { f32x4_splat(0.0) }) }
}

/// The f32 scales (and mins) of one row's blocks, as `quant::wide_scales`
/// lays them out, or none (then the blocks' own f16 fields are read).
pub type Scales<'a> = Option<&'a [f32]>;

/// Elements of `Scales` per row of `nb` blocks.
pub fn scales_per_row<L: Legacy>(nb: usize) -> usize {
    nb.next_multiple_of(4) * if L::MIN { 2 } else { 1 }
}

/// `row · activations[t]` for one row of `nb` blocks and `T` tokens:
/// each block unpacked once for all of them.
#[inline(always)]
pub fn row<L: Legacy, const T: usize>(row: &[u8], sc: Scales, a: [&Acts; T], nb: usize) -> [f32; T] {
    assert!(row.len() >= nb * L::BYTES);
    assert!(sc.is_none_or(|s| s.len() >= scales_per_row::<L>(nb)));
    for a in &a {
        assert!(a.q.len() >= nb * 32 && a.d.len() >= nb.next_multiple_of(4) && a.s.len() >= nb.next_multiple_of(4));
    }
    let table = v::f16_table();
    let w = row.as_ptr();
    let x = a.map(|a| a.q.as_ptr());
    let mut acc = [0.0f32; T];
    let mut b = 0;
    while b < nb {
        let n = (nb - b).min(4);
        // One block per loop trip (a runtime count, so the trips stay
        // separate: V8 would otherwise start every load of four blocks at
        // once and spill), each token's partials kept for the fold.
        let mut p = [[i32x4_splat(0); 4]; T];
        for k in 0..n {
            // SAFETY: block b + k is in the row and the activations
            // (asserted above; k < n).
            let q = unsafe { L::unpack(w.add((b + k) * L::BYTES)) };
            for t in 0..T {
                // SAFETY: as above.
                p[t][k] = unsafe { dot(q, x[t].add(32 * (b + k))) };
            }
        }
        let (wd, wm) = if let Some(s) = sc {
            let g = if L::MIN { 2 * b } else { b };
            (v::load(s, g), if L::MIN { v::load(s, g + 4) } else { f32x4_splat(0.0) })
        } else if n == 4 {
            // (the common case apart: fixed offsets, no clamping)
            // SAFETY: blocks b..b+4 are in the row.
            unsafe { scales::<L>(table, w, |k| (b + k) * L::BYTES) }
        } else {
            // Lanes past the row's end repeat its last block and are dropped.
            // SAFETY: the offsets stay on blocks b..b+n.
            unsafe { scales::<L>(table, w, |k| (b + k.min(n - 1)) * L::BYTES) }
        };
        for t in 0..T {
            let pt = &p[t];
            let isum = f32x4_convert_i32x4(v::fold4(v::fold2(pt[0], pt[1]), v::fold2(pt[2], pt[3])));
            let mut y = f32x4_mul(f32x4_mul(wd, v::load(a[t].d, b)), isum);
            if L::MIN {
                y = f32x4_add(y, f32x4_mul(wm, v::load(a[t].s, b)));
            }
            let acc = &mut acc[t];
            // lanes past the row's end are not added (not even as 0.0,
            // which would turn a -0.0 sum into +0.0)
            *acc += f32x4_extract_lane::<0>(y);
            if n > 1 {
                *acc += f32x4_extract_lane::<1>(y);
            }
            if n > 2 {
                *acc += f32x4_extract_lane::<2>(y);
            }
            if n > 3 {
                *acc += f32x4_extract_lane::<3>(y);
            }
        }
        b += 4;
    }
    acc
}
