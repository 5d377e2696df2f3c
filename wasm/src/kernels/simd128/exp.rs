//! `expf` four lanes at a time, bit-identical to `libm::expf` (FreeBSD's
//! e_expf.c, which the reference uses): the same argument reduction, the
//! same polynomial and division, and scalbn's same two-step scaling, in
//! exactly rounded vector operations, the special cases blended in. For
//! the softmax and SiLU, which otherwise call libm once per element.

use core::arch::wasm32::*;

use tern_core::backend::scalar;

use super::v;

// e_expf.c's constants, by their bits
const LN2_HI: f32 = f32::from_bits(0x3f31_7200);
const LN2_LO: f32 = f32::from_bits(0x35bf_be8e);
const INV_LN2: f32 = f32::from_bits(0x3fb8_aa3b);
const P1: f32 = f32::from_bits(0x3e2a_aa8f);
const P2: f32 = f32::from_bits(0xbb35_5215);

/// `2^n` for n in −126..=127, lane-wise.
#[inline(always)]
fn pow2(n: v128) -> v128 {
    i32x4_shl(i32x4_add(n, i32x4_splat(127)), 23)
}

/// `mask ? a : b`, lane-wise.
#[inline(always)]
fn pick(mask: v128, a: v128, b: v128) -> v128 {
    v128_bitselect(a, b, mask)
}

#[inline(always)]
pub fn expf4(x: v128) -> v128 {
    let hx = v128_and(x, i32x4_splat(0x7fff_ffff));
    let neg = i32x4_shr(x, 31); // all ones where x < 0
    let gt = |v: i32| i32x4_gt(hx, i32x4_splat(v));

    // argument reduction: k = round(x / ln2) for |x| > 1.5 ln2, ±1 above
    // 0.5 ln2, else 0 (then hi = x, lo = 0 and x is unchanged below)
    let half = pick(neg, f32x4_splat(-0.5), f32x4_splat(0.5));
    let k_big = i32x4_trunc_sat_f32x4(f32x4_add(f32x4_mul(f32x4_splat(INV_LN2), x), half));
    let k_one = v128_or(neg, i32x4_splat(1)); // 1 − 2·sign
    let k = v128_and(pick(gt(0x3f85_1592), k_big, k_one), gt(0x3eb1_7218));
    let kf = f32x4_convert_i32x4(k);
    let hi = f32x4_sub(x, f32x4_mul(kf, f32x4_splat(LN2_HI)));
    let lo = f32x4_mul(kf, f32x4_splat(LN2_LO));
    let r = f32x4_sub(hi, lo);

    // y = 1 + (r·c / (2 − c) − lo + hi)
    let rr = f32x4_mul(r, r);
    let poly = f32x4_add(f32x4_splat(P1), f32x4_mul(rr, f32x4_splat(P2)));
    let c = f32x4_sub(r, f32x4_mul(rr, poly));
    let q = f32x4_div(f32x4_mul(r, c), f32x4_sub(f32x4_splat(2.0), c));
    let y = f32x4_add(f32x4_splat(1.0), f32x4_add(f32x4_sub(q, lo), hi));

    // scalbn(y, k): a first step of 2^127 or 2^−102 when k is out of range
    let big = i32x4_gt(k, i32x4_splat(127));
    let small = i32x4_lt(k, i32x4_splat(-126));
    let n1 = v128_or(v128_and(big, i32x4_splat(127)), v128_and(small, i32x4_splat(-102)));
    let y = f32x4_mul(f32x4_mul(y, pow2(n1)), pow2(i32x4_sub(k, n1)));

    // |x| ≤ 2^−14: 1 + x
    let y = pick(gt(0x3900_0000), y, f32x4_add(f32x4_splat(1.0), x));
    // overflow (x ≥ 88.72…): x·2^127; underflow (x ≤ −103.97…): 0; NaN: x
    let over = v128_andnot(gt(0x42b1_7217), neg);
    let y = pick(over, f32x4_mul(x, f32x4_splat(f32::from_bits(0x7f00_0000))), y);
    let under = v128_and(neg, gt(0x42cf_f1b4));
    let y = v128_andnot(y, under);
    pick(gt(0x7f80_0000), x, y)
}

/// As `scalar::exp_shifted`: `s = exp(s − m)`.
pub fn exp_shifted(s: &mut [f32], m: f32) {
    let n4 = s.len() / 4 * 4;
    let mv = f32x4_splat(m);
    for i in (0..n4).step_by(4) {
        v::store(s, i, expf4(f32x4_sub(v::load(s, i), mv)));
    }
    scalar::exp_shifted(&mut s[n4..], m);
}

/// As `scalar::swiglu`: `g = g / (1 + exp(−g)) · u`.
pub fn swiglu(g: &mut [f32], u: &[f32]) {
    let n4 = g.len().min(u.len()) / 4 * 4;
    for i in (0..n4).step_by(4) {
        let x = v::load(g, i);
        let e = expf4(f32x4_neg(x));
        v::store(g, i, f32x4_mul(f32x4_div(x, f32x4_add(f32x4_splat(1.0), e)), v::load(u, i)));
    }
    scalar::swiglu(&mut g[n4..], &u[n4..]);
}

/// As `scalar::geglu`: `g = g / (1 + exp(−z)) · u`, z = 2√(2/π)·g·(1 + 0.044715·g²).
pub fn geglu(g: &mut [f32], u: &[f32]) {
    let n4 = g.len().min(u.len()) / 4 * 4;
    let (k, c, one) = (f32x4_splat(scalar::TWO_SQRT_2_OVER_PI), f32x4_splat(scalar::GELU_C), f32x4_splat(1.0));
    for i in (0..n4).step_by(4) {
        let x = v::load(g, i);
        // the reference's order: (k·x) · (1 + (c·x)·x)
        let z = f32x4_mul(f32x4_mul(k, x), f32x4_add(one, f32x4_mul(f32x4_mul(c, x), x)));
        let e = expf4(f32x4_neg(z));
        v::store(g, i, f32x4_mul(f32x4_div(x, f32x4_add(one, e)), v::load(u, i)));
    }
    scalar::geglu(&mut g[n4..], &u[n4..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `expf4` against libm's `expf` (core's `check_expf` cases).
    #[wasm_bindgen_test::wasm_bindgen_test]
    fn expf4_equals_libm() {
        tern_core::backend::conformance::check_expf(4, |g| v::store(g, 0, expf4(v::load(g, 0)))).unwrap();
    }
}
