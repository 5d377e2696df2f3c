//! Small SIMD128 helpers shared by the kernels: checked loads and stores,
//! lane folds, f16 widening.

use core::arch::wasm32::*;

/// The 16 bytes of `s[at..]` (elements of any size; no alignment needed).
#[inline(always)]
pub fn load<T: Copy>(s: &[T], at: usize) -> v128 {
    assert!((at + 16 / core::mem::size_of::<T>()) * core::mem::size_of::<T>() <= core::mem::size_of_val(s));
    // SAFETY: the 16 bytes at element `at` are inside `s` (checked above);
    // v128_load has no alignment requirement.
    unsafe { v128_load(s.as_ptr().add(at) as *const v128) }
}

/// The 8 bytes of `s[at..at + 8]` in the low half, zeros above.
#[inline(always)]
pub fn load64(s: &[u8], at: usize) -> v128 {
    let s = &s[at..at + 8];
    // SAFETY: `s` has 8 bytes; v128_load64_zero has no alignment requirement.
    unsafe { v128_load64_zero(s.as_ptr() as *const u64) }
}

/// Store 16 bytes at `s[at..]`.
#[inline(always)]
pub fn store<T: Copy>(s: &mut [T], at: usize, v: v128) {
    assert!((at + 16 / core::mem::size_of::<T>()) * core::mem::size_of::<T>() <= core::mem::size_of_val(s));
    // SAFETY: the 16 bytes at element `at` are inside `s` (checked above).
    unsafe { v128_store(s.as_mut_ptr().add(at) as *mut v128, v) }
}

/// The contract's 16-lane tree (`scalar::reduce16`) over lanes 0-3, 4-7,
/// 8-11, 12-15 in four vectors: the same adds in the same order.
#[inline(always)]
pub fn reduce16(l: [v128; 4]) -> f32 {
    // l[j] += l[j + 8], then l[j] += l[j + 4]: lanes 0-3
    let c = f32x4_add(f32x4_add(l[0], l[2]), f32x4_add(l[1], l[3]));
    // l[j] += l[j + 2], then l[0] + l[1]
    let d = f32x4_add(c, i32x4_shuffle::<2, 3, 2, 3>(c, c));
    f32x4_extract_lane::<0>(d) + f32x4_extract_lane::<1>(d)
}

/// Lane sums of two vectors, half-folded: [a0+a2, b0+b2, a1+a3, b1+b3].
#[inline(always)]
pub fn fold2(a: v128, b: v128) -> v128 {
    i32x4_add(i32x4_shuffle::<0, 4, 1, 5>(a, b), i32x4_shuffle::<2, 6, 3, 7>(a, b))
}

/// From `fold2(p0, p1)` and `fold2(p2, p3)`: lane i the sum of `p_i`'s lanes.
#[inline(always)]
pub fn fold4(a: v128, b: v128) -> v128 {
    i32x4_add(i32x4_shuffle::<0, 1, 4, 5>(a, b), i32x4_shuffle::<2, 3, 6, 7>(a, b))
}

/// The sum of the 4 i32 lanes.
#[inline(always)]
pub fn hsum(v: v128) -> i32 {
    let s = i32x4_add(v, i32x4_shuffle::<2, 3, 0, 1>(v, v));
    let s = i32x4_add(s, i32x4_shuffle::<1, 0, 3, 2>(s, s));
    i32x4_extract_lane::<0>(s)
}

/// f16 bit patterns (the low 16 bits of each u32 lane) to f32, exactly as
/// `half::f16::to_f32`: normals and subnormals by rebiasing the exponent
/// with one exact multiply by 2^112, infinities kept, NaNs made quiet.
#[inline(always)]
pub fn f16_to_f32(h: v128) -> v128 {
    let em = v128_and(h, u32x4_splat(0x7fff));
    let sh = i32x4_shl(em, 13);
    let finite = f32x4_mul(sh, f32x4_splat(f32::from_bits(0x7780_0000))); // 2^112
    let quiet = v128_and(i32x4_gt(em, i32x4_splat(0x7c00)), u32x4_splat(0x0040_0000));
    let special = v128_or(v128_or(sh, u32x4_splat(0x7f80_0000)), quiet);
    let is_special = i32x4_gt(em, i32x4_splat(0x7bff));
    let sign = i32x4_shl(v128_and(h, u32x4_splat(0x8000)), 16);
    v128_or(sign, v128_bitselect(special, finite, is_special))
}

/// Every f16 pattern's f32 (by `half`, so exact by construction): scales
/// are widened by lookup, cheaper in wasm than the arithmetic.
pub fn f16_table() -> &'static [f32; 65536] {
    static TABLE: std::sync::OnceLock<Box<[f32; 65536]>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = Box::new([0.0f32; 65536]);
        for (i, v) in t.iter_mut().enumerate() {
            *v = half::f16::from_bits(i as u16).to_f32();
        }
        t
    })
}

#[cfg(test)]
mod tests {
    use wasm_bindgen_test::wasm_bindgen_test;

    use super::*;

    /// Every f16 pattern widens to the bits `half` gives.
    #[wasm_bindgen_test]
    fn f16_widening_matches_half_on_all_patterns() {
        for h in (0..=0xffffu32).step_by(4) {
            let v = f16_to_f32(u32x4(h, h + 1, h + 2, h + 3));
            let got = [
                u32x4_extract_lane::<0>(v),
                u32x4_extract_lane::<1>(v),
                u32x4_extract_lane::<2>(v),
                u32x4_extract_lane::<3>(v),
            ];
            for (i, g) in got.into_iter().enumerate() {
                let want = half::f16::from_bits((h + i as u32) as u16).to_f32().to_bits();
                assert_eq!(g, want, "f16 {:#06x}", h + i as u32);
            }
        }
    }
}
