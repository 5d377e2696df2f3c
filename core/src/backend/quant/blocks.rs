//! Unpacked blocks: the common form every weight format is decoded into for
//! the integer dot products, and the 8-bit activation blocks they pair with.
//!
//! A 32-element weight block is `x[i] = d * q[i] + m` (m = 0 for the
//! symmetric formats). A K-quant super-block of 256 elements is 16 groups of
//! 16: `x[i] = d * sc[g] * q[i] - dmin * mn[g]` with small integer scales and
//! mins (formats with 32-element sub-blocks repeat each scale twice).

use super::QK_K;

/// Elements of a 32-element block (and of a Q8_0/Q8_1 activation block).
pub const QK8: usize = 32;

/// A 32-element weight block unpacked: `x[i] = d * q[i] + m`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Unpacked32 {
    /// The quants.
    pub q: [i8; QK8],
    /// The scale.
    pub d: f32,
    /// The min (0 for the symmetric formats).
    pub m: f32,
}

/// A K-quant super-block unpacked: `x[i] = d * sc[g] * q[i] - dmin * mn[g]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UnpackedK {
    /// The quants.
    pub q: [i8; QK_K],
    /// Each 16-group's scale.
    pub sc: [i16; 16],
    /// Each 16-group's min.
    pub mn: [i16; 16],
    /// The super-block scale.
    pub d: f32,
    /// The super-block min scale.
    pub dmin: f32,
}

impl UnpackedK {
    /// All zeros.
    pub const ZERO: UnpackedK = UnpackedK { q: [0; QK_K], sc: [0; 16], mn: [0; 16], d: 0.0, dmin: 0.0 };
}

/// Activations for Q4_0 / Q5_0 / Q8_0 weights: `x[i] ≈ d * qs[i]`. As in
/// ggml, `d` is rounded to f16 after quantizing with the unrounded scale.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ8_0 {
    /// The scale (f16-rounded).
    pub d: f32,
    /// The quants.
    pub qs: [i8; QK8],
}

/// Activations for Q4_1 / Q5_1 weights: as Q8_0 plus `s = d * Σ qs` (f16-rounded).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ8_1 {
    /// The scale (f16-rounded).
    pub d: f32,
    /// `d * Σ qs` (f16-rounded).
    pub s: f32,
    /// The quants.
    pub qs: [i8; QK8],
}

/// Activations for K-quant weights: 256 values, with the sum of each group of 16.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockQ8K {
    /// The scale.
    pub d: f32,
    /// The quants.
    pub qs: [i8; QK_K],
    /// Each 16-group's sum of quants.
    pub bsums: [i16; 16],
}

impl BlockQ8_0 {
    /// All zeros.
    pub const ZERO: BlockQ8_0 = BlockQ8_0 { d: 0.0, qs: [0; QK8] };
}
impl BlockQ8_1 {
    /// All zeros.
    pub const ZERO: BlockQ8_1 = BlockQ8_1 { d: 0.0, s: 0.0, qs: [0; QK8] };
}
impl BlockQ8K {
    /// All zeros.
    pub const ZERO: BlockQ8K = BlockQ8K { d: 0.0, qs: [0; QK_K], bsums: [0; 16] };
}

/// Scale for symmetric 8-bit quantization: `d = amax / 127`, and its inverse.
#[inline]
fn scale_of(x: &[f32]) -> (f32, f32) {
    // a comparison, not `f32::max` (a libm call in wasm); the same result,
    // NaNs skipped
    scale_of_amax(x.iter().fold(0.0f32, |a, &v| if v.abs() > a { v.abs() } else { a }))
}

/// `(d, 1/d)` of a block whose largest |x| is `amax` (SIMD quantizers
/// find `amax` their own way and share the rest).
#[inline]
pub fn scale_of_amax(amax: f32) -> (f32, f32) {
    let d = amax / 127.0;
    (d, if d != 0.0 { 1.0 / d } else { 0.0 })
}

/// Round half to even, clamp to ±127 (the contract's rounding). For
/// |v| < 2^22, adding and subtracting 1.5·2^23 rounds to the nearest
/// integer, ties to even, in IEEE arithmetic on every target (|v| ≤ 127.01
/// here); it compiles to plain adds that vectorize.
#[inline]
fn q8(v: f32) -> i8 {
    const MAGIC: f32 = 12582912.0;
    ((v + MAGIC) - MAGIC).clamp(-127.0, 127.0) as i8
}

/// The scale as ggml stores it in Q8_0/Q8_1 blocks: rounded to f16.
#[inline]
pub fn f16_round(v: f32) -> f32 {
    half::f16::from_f32(v).to_f32()
}

/// 32 values as a Q8_0 block.
#[inline]
pub fn quantize_q8_0(x: &[f32], out: &mut BlockQ8_0) {
    let (d, id) = scale_of(x);
    out.d = f16_round(d);
    for (q, &v) in out.qs.iter_mut().zip(x) {
        *q = q8(v * id);
    }
}

/// 32 values as a Q8_1 block.
#[inline]
pub fn quantize_q8_1(x: &[f32], out: &mut BlockQ8_1) {
    let (d, id) = scale_of(x);
    let mut sum = 0i32;
    for (q, &v) in out.qs.iter_mut().zip(x) {
        *q = q8(v * id);
        sum += *q as i32;
    }
    out.d = f16_round(d);
    out.s = f16_round(d * sum as f32);
}

/// 256 values as a Q8_K super-block.
#[inline]
pub fn quantize_q8_k(x: &[f32], out: &mut BlockQ8K) {
    let (d, id) = scale_of(x);
    out.d = d;
    for (q, &v) in out.qs.iter_mut().zip(x) {
        *q = q8(v * id);
    }
    for (g, s) in out.bsums.iter_mut().enumerate() {
        *s = out.qs[g * 16..g * 16 + 16].iter().map(|&q| q as i16).sum();
    }
}

/// Exact integer inner product of two 8-bit vectors.
#[inline]
pub(crate) fn idot(a: &[i8], b: &[i8]) -> i32 {
    a.iter().zip(b).map(|(&x, &y)| x as i32 * y as i32).sum()
}

/// One 32-element block: `(d*dy) * Σ q*qy`, plus `m * s` for the offset formats.
#[inline]
pub(crate) fn dot_32_q8_0(w: &Unpacked32, a: &BlockQ8_0) -> f32 {
    (w.d * a.d) * idot(&w.q, &a.qs) as f32
}

/// As `dot_32_q8_0`, plus `m * s`.
#[inline]
pub(crate) fn dot_32_q8_1(w: &Unpacked32, a: &BlockQ8_1) -> f32 {
    (w.d * a.d) * idot(&w.q, &a.qs) as f32 + w.m * a.s
}

/// One super-block: `(d*dy) * Σ_g sc_g Σ q*qy - (dmin*dy) * Σ_g mn_g bsum_g`.
#[inline]
pub(crate) fn dot_k_q8_k(w: &UnpackedK, a: &BlockQ8K) -> f32 {
    let mut isum = 0i32;
    let mut imin = 0i32;
    for g in 0..16 {
        let r = g * 16..g * 16 + 16;
        isum += w.sc[g] as i32 * idot(&w.q[r.clone()], &a.qs[r]);
        imin += w.mn[g] as i32 * a.bsums[g] as i32;
    }
    (w.d * a.d) * isum as f32 - (w.dmin * a.d) * imin as f32
}
