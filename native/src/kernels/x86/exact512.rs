//! The exact path (f32 activations) with AVX-512: as `exact`, but each pass
//! takes four weight rows against four tokens, one 16-lane accumulator per
//! (row, token) — the contract's 16 lane-strided sums in one register,
//! multiply then add, the same lanes as `exact`'s two 8-wide halves — so a
//! token's activations load once for four rows. Reduced by the reference's
//! fixed tree: bit-identical to `exact` and to the reference's `row_f32`.

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::backend::{scalar, QMatrix};

use super::cpu::Avx512;
use super::exact::widen_row;
use super::simd::reduce16;

/// Weight rows per pass.
const R: usize = 4;
/// Tokens per pass.
const T: usize = 4;

std::thread_local! {
    /// `R` weight rows widened to f32: one per thread, reused by every call.
    static WROWS: core::cell::RefCell<Vec<f32>> = const { core::cell::RefCell::new(Vec::new()) };
}

/// As `scalar::matmul_rows` with f32 activations.
pub(super) fn matmul_rows(_: Avx512, w: &QMatrix, x: &[f32], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    WROWS.with_borrow_mut(|buf| {
        buf.resize(R * w.n_cols, 0.0);
        // SAFETY: the token proves AVX-512F (and AVX2, FMA, F16C).
        unsafe { rows_with(w, x, n_tok, rows, out, buf) }
    })
}

#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn rows_with(w: &QMatrix, x: &[f32], n_tok: usize, rows: Range<usize>, out: &mut [f32], buf: &mut [f32]) {
    let n = w.n_cols;
    for r0 in rows.clone().step_by(R) {
        let nr = R.min(rows.end - r0);
        let mut slots = buf.chunks_exact_mut(n);
        let mut ws: Vec<&[f32]> = Vec::with_capacity(R);
        for r in r0..r0 + nr {
            let slot = slots.next().unwrap_or_default();
            ws.push(widen_row(w, r, slot));
        }
        // a short group repeats its last row (its sums are not written)
        let ws: [&[f32]; R] = core::array::from_fn(|i| ws[i.min(nr - 1)]);
        for t0 in (0..n_tok).step_by(T) {
            let nt = T.min(n_tok - t0);
            let xs: [&[f32]; T] = core::array::from_fn(|j| &x[(t0 + j.min(nt - 1)) * n..][..n]);
            let d = dots(ws, xs);
            for (i, d) in d.iter().enumerate().take(nr) {
                let o = &mut out[(r0 - rows.start + i) * n_tok + t0..][..nt];
                o.copy_from_slice(&d[..nt]);
            }
        }
    }
}

/// Each row of `ws` dotted with each of `xs`, in the 16-lane order.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn dots(ws: [&[f32]; R], xs: [&[f32]; T]) -> [[f32; T]; R] {
    let n = ws[0].len();
    let n16 = n / 16 * 16;
    let ld = |v: &[f32], i: usize| {
        let v = &v[i..i + 16];
        // SAFETY: `v` has 16 elements.
        unsafe { _mm512_loadu_ps(v.as_ptr()) }
    };
    let mut acc = [[_mm512_setzero_ps(); T]; R];
    for i in (0..n16).step_by(16) {
        let wv: [__m512; R] = core::array::from_fn(|r| ld(ws[r], i));
        for (t, x) in xs.iter().enumerate() {
            let xv = ld(x, i);
            for r in 0..R {
                acc[r][t] = _mm512_add_ps(acc[r][t], _mm512_mul_ps(wv[r], xv));
            }
        }
    }
    core::array::from_fn(|r| {
        core::array::from_fn(|t| {
            let a = acc[r][t];
            let lo = _mm512_castps512_ps256(a);
            let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(a)));
            if n16 == n {
                reduce16(lo, hi)
            } else {
                // ragged row: its tail into the lanes, then the reference's tree
                let mut l = [0.0f32; 16];
                // SAFETY: `l` holds 16 f32.
                unsafe { _mm512_storeu_ps(l.as_mut_ptr(), a) };
                for i in n16..n {
                    l[i % 16] += ws[r][i] * xs[t][i];
                }
                scalar::reduce16(l)
            }
        })
    })
}
