//! The exact path (f32 activations) with AVX2: each weight row widened to
//! f32 once (F16 by F16C, BF16 by a shift, F32 read in place, the block
//! formats by the reference's dequantization), then each (row, token)'s
//! dot in the contract's 16 lane-strided sums — two 8-wide accumulators,
//! multiply then add — reduced by its fixed tree. Bit-identical to the
//! reference's `row_f32`.

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::backend::quant::{self, GgmlType};
use tern_core::backend::{scalar, QMatrix};

use super::cpu::Avx2;
use super::simd::reduce16;

/// Tokens per pass over a row: 2 accumulators each.
const NT: usize = 4;

std::thread_local! {
    /// A weight row widened to f32: one per thread, reused by every call.
    static WROW: core::cell::RefCell<Vec<f32>> = const { core::cell::RefCell::new(Vec::new()) };
}

/// As `scalar::matmul_rows` with f32 activations.
pub(super) fn matmul_rows(_: Avx2, w: &QMatrix, x: &[f32], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    WROW.with_borrow_mut(|wrow| {
        wrow.resize(w.n_cols, 0.0);
        // SAFETY: the token proves AVX2, FMA and F16C.
        unsafe { rows_with(w, x, n_tok, rows, out, wrow) }
    })
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn rows_with(w: &QMatrix, x: &[f32], n_tok: usize, rows: Range<usize>, out: &mut [f32], wrow: &mut [f32]) {
    let n = w.n_cols;
    for (r, o) in rows.zip(out.chunks_exact_mut(n_tok)) {
        let wr = widen_row(w, r, wrow);
        for t0 in (0..n_tok).step_by(NT) {
            let nt = NT.min(n_tok - t0);
            dots(wr, &x[t0 * n..(t0 + nt) * n], nt, &mut o[t0..t0 + nt]);
        }
    }
}

/// Row `r` of `w` as f32: read in place (F32), else widened into `wrow`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn widen_row<'a>(w: &'a QMatrix, r: usize, wrow: &'a mut [f32]) -> &'a [f32] {
    let row = w.row(r);
    match w.ty {
        GgmlType::F32 => {
            // SAFETY: every bit pattern is an f32; `align_to` hands out
            // only whole, aligned elements (x86-64 is little-endian).
            match unsafe { row.align_to::<f32>() } {
                (&[], mid, &[]) => mid,
                _ => {
                    // an unaligned row (never from a GGUF): copied
                    for (o, c) in wrow.iter_mut().zip(row.chunks_exact(4)) {
                        *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
                    }
                    wrow
                }
            }
        }
        GgmlType::F16 => {
            widen_f16(row, wrow);
            wrow
        }
        GgmlType::BF16 => {
            widen_bf16(row, wrow);
            wrow
        }
        _ => {
            if quant::dequantize_row(w.ty, row, wrow).is_err() {
                unreachable!("row type checked at load");
            }
            wrow
        }
    }
}

/// `out[j] = w · x_j` for the `nt` rows of `x`, each in the 16-lane order.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn dots(w: &[f32], x: &[f32], nt: usize, out: &mut [f32]) {
    let n = w.len();
    let n16 = n / 16 * 16;
    let mut acc = [[_mm256_setzero_ps(); 2]; NT];
    let ld = |v: &[f32], i: usize| {
        let v = &v[i..i + 8];
        // SAFETY: `v` has 8 elements.
        unsafe { _mm256_loadu_ps(v.as_ptr()) }
    };
    for i in (0..n16).step_by(16) {
        let (w0, w1) = (ld(w, i), ld(w, i + 8));
        for (j, a) in acc.iter_mut().enumerate().take(nt) {
            a[0] = _mm256_add_ps(a[0], _mm256_mul_ps(w0, ld(x, j * n + i)));
            a[1] = _mm256_add_ps(a[1], _mm256_mul_ps(w1, ld(x, j * n + i + 8)));
        }
    }
    for (j, (a, o)) in acc.iter().zip(out.iter_mut()).enumerate().take(nt) {
        *o = if n16 == n {
            reduce16(a[0], a[1])
        } else {
            // ragged row: its tail into the lanes, then the reference's tree
            let mut l = [0.0f32; 16];
            // SAFETY: `l` holds 16 f32.
            unsafe {
                _mm256_storeu_ps(l.as_mut_ptr(), a[0]);
                _mm256_storeu_ps(l.as_mut_ptr().add(8), a[1]);
            }
            scalar::reduce16_tail(l, &w[n16..], &x[j * n + n16..(j + 1) * n])
        };
    }
}

#[inline]
#[target_feature(enable = "avx2,f16c")]
pub(super) fn widen_f16(row: &[u8], out: &mut [f32]) {
    let n8 = out.len() / 8 * 8;
    for i in (0..n8).step_by(8) {
        let b = &row[2 * i..2 * i + 16];
        // SAFETY: `b` has 16 bytes, `out[i..i + 8]` 8 f32.
        unsafe {
            let v = _mm256_cvtph_ps(_mm_loadu_si128(b.as_ptr() as *const __m128i));
            _mm256_storeu_ps(out[i..i + 8].as_mut_ptr(), v);
        }
    }
    for (i, o) in out.iter_mut().enumerate().skip(n8) {
        *o = quant::f16_at(row, 2 * i);
    }
}

#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn widen_bf16(row: &[u8], out: &mut [f32]) {
    let n8 = out.len() / 8 * 8;
    for i in (0..n8).step_by(8) {
        let b = &row[2 * i..2 * i + 16];
        // SAFETY: `b` has 16 bytes, `out[i..i + 8]` 8 f32.
        unsafe {
            let h = _mm256_cvtepu16_epi32(_mm_loadu_si128(b.as_ptr() as *const __m128i));
            // NaNs come out quiet, as the reference's conversion makes them
            let nan = _mm256_cmpgt_epi32(_mm256_and_si256(h, _mm256_set1_epi32(0x7FFF)), _mm256_set1_epi32(0x7F80));
            let v = _mm256_or_si256(_mm256_slli_epi32::<16>(h), _mm256_and_si256(nan, _mm256_set1_epi32(0x0040_0000)));
            _mm256_storeu_si256(out[i..i + 8].as_mut_ptr() as *mut __m256i, v);
        }
    }
    for (i, o) in out.iter_mut().enumerate().skip(n8) {
        *o = quant::bf16_at(row, 2 * i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every f16 and bf16 bit pattern widens to the reference's f32 bits,
    /// NaNs included.
    #[test]
    fn widening_equals_the_reference_on_every_pattern() {
        if !(is_x86_feature_detected!("avx2") && is_x86_feature_detected!("f16c")) {
            return;
        }
        let bytes: Vec<u8> = (0..=u16::MAX).flat_map(|h| h.to_le_bytes()).collect();
        let mut got = vec![0.0f32; 1 << 16];
        // SAFETY: the CPU has AVX2 and F16C (checked above).
        unsafe { widen_f16(&bytes, &mut got) };
        for (i, g) in got.iter().enumerate() {
            assert_eq!(g.to_bits(), quant::f16_at(&bytes, 2 * i).to_bits(), "f16 {i:#06x}");
        }
        // SAFETY: as above.
        unsafe { widen_bf16(&bytes, &mut got) };
        for (i, g) in got.iter().enumerate() {
            assert_eq!(g.to_bits(), quant::bf16_at(&bytes, 2 * i).to_bits(), "bf16 {i:#06x}");
        }
    }
}
