//! A LoRA adapter's B step (`scalar::lora_up`) with AVX2: 64 outputs in
//! eight registers, each output's products added in the rank's order
//! (multiply, then add: the reference's order in every lane), f16 rows
//! widened by F16C as they are read; bf16 through the reference's loops
//! compiled for AVX2. Bit-identical to the reference.

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::backend::quant::GgmlType;
use tern_core::backend::{scalar, QMatrix};

use super::cpu::Avx2;
use super::exact::{widen_bf16, widen_f16};

/// As `scalar::lora_up`.
pub(super) fn lora_up(_: Avx2, bt: &QMatrix, cols: Range<usize>, mid: &[f32], scale: f32, out: &mut [f32]) {
    match bt.ty {
        // SAFETY: the token proves AVX2, FMA and F16C.
        GgmlType::F16 => unsafe { up::<F16>(bt, cols, mid, scale, out) },
        // SAFETY: as above.
        GgmlType::F32 => unsafe { up::<F32>(bt, cols, mid, scale, out) },
        // SAFETY: as above.
        _ => unsafe { widened(bt, cols, mid, scale, out) },
    }
}

/// Eight elements of a row, as f32.
trait Load8 {
    /// Bytes an element takes.
    const SIZE: usize;
    /// Elements `i..i + 8` of `row`.
    ///
    /// # Safety
    /// The CPU has AVX2 and F16C.
    unsafe fn load8(row: &[u8], i: usize) -> __m256;
    /// Element `i` of `row`.
    fn at(row: &[u8], i: usize) -> f32;
}

struct F16;
struct F32;

impl Load8 for F16 {
    const SIZE: usize = 2;
    #[inline(always)]
    unsafe fn load8(row: &[u8], i: usize) -> __m256 {
        let b = &row[2 * i..2 * i + 16];
        // SAFETY: `b` has 16 bytes; the caller has F16C.
        unsafe { _mm256_cvtph_ps(_mm_loadu_si128(b.as_ptr() as *const __m128i)) }
    }
    #[inline(always)]
    fn at(row: &[u8], i: usize) -> f32 {
        tern_core::backend::quant::f16_at(row, 2 * i)
    }
}

impl Load8 for F32 {
    const SIZE: usize = 4;
    #[inline(always)]
    unsafe fn load8(row: &[u8], i: usize) -> __m256 {
        let b = &row[4 * i..4 * i + 32];
        // SAFETY: `b` has 32 bytes; the caller has AVX.
        unsafe { _mm256_loadu_ps(b.as_ptr() as *const f32) }
    }
    #[inline(always)]
    fn at(row: &[u8], i: usize) -> f32 {
        f32::from_le_bytes([row[4 * i], row[4 * i + 1], row[4 * i + 2], row[4 * i + 3]])
    }
}

/// Outputs a pass keeps in registers.
const W: usize = 64;

#[target_feature(enable = "avx2,fma,f16c")]
fn up<T: Load8>(bt: &QMatrix, cols: Range<usize>, mid: &[f32], scale: f32, out: &mut [f32]) {
    let (r, n) = (bt.n_rows, cols.len());
    debug_assert_eq!(bt.data.len(), r * bt.n_cols * T::SIZE);
    // each row's elements `cols`
    let rows = || bt.data.chunks_exact(bt.n_cols * T::SIZE).map(|row| &row[cols.start * T::SIZE..cols.end * T::SIZE]);
    let nw = n / W * W;
    let s = _mm256_set1_ps(scale);
    for (m, o) in mid.chunks_exact(r).zip(out.chunks_exact_mut(n)) {
        for c in (0..nw).step_by(W) {
            let mut acc = [_mm256_setzero_ps(); W / 8];
            for (row, &mk) in rows().zip(m) {
                let mk = _mm256_set1_ps(mk);
                for (j, a) in acc.iter_mut().enumerate() {
                    // SAFETY: elements c + 8j..+8 are in the row (c + W <= n).
                    let w = unsafe { T::load8(row, c + 8 * j) };
                    *a = _mm256_add_ps(*a, _mm256_mul_ps(mk, w));
                }
            }
            for (j, a) in acc.iter().enumerate() {
                let o = &mut o[c + 8 * j..c + 8 * j + 8];
                // SAFETY: `o` holds 8 f32.
                unsafe {
                    _mm256_storeu_ps(o.as_mut_ptr(), _mm256_add_ps(_mm256_loadu_ps(o.as_ptr()), _mm256_mul_ps(s, *a)))
                };
            }
        }
        // the last outputs one at a time, in the same order
        for (i, o) in o.iter_mut().enumerate().skip(nw) {
            let mut a = 0.0f32;
            for (row, &mk) in rows().zip(m) {
                a += mk * T::at(row, i);
            }
            *o += scale * a;
        }
    }
}

#[target_feature(enable = "avx2,fma,f16c")]
fn widened(bt: &QMatrix, cols: Range<usize>, mid: &[f32], scale: f32, out: &mut [f32]) {
    // (the closure has `widened`'s target features)
    scalar::lora_up_with(bt, cols, mid, scale, out, &mut |ty, src, dst| match ty {
        GgmlType::F16 => widen_f16(src, dst),
        GgmlType::BF16 => widen_bf16(src, dst),
        _ => {
            for (d, c) in dst.iter_mut().zip(src.chunks_exact(4)) {
                *d = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
        }
    })
}
