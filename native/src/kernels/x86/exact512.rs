//! The exact path (f32 activations) with AVX-512: as `exact`, but each pass
//! takes four weight rows against four tokens (a decode's single token: one
//! row at a time), one 16-lane accumulator per (row, token) — the
//! contract's 16 lane-strided sums in one register, multiply then add, the
//! same lanes as `exact`'s two 8-wide halves — so a token's activations
//! load once for four rows. Reduced by the reference's fixed tree:
//! bit-identical to `exact` and to the reference's `row_f32`.

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::backend::quant::{self, GgmlType};
use tern_core::backend::{scalar, QMatrix};

use super::cpu::Avx512;
use super::exact::widen_row;
use super::simd::reduce16;

/// Weight rows per pass (with at least `T` tokens).
const R: usize = 4;
/// Tokens per pass.
const T: usize = 4;

std::thread_local! {
    /// `R` weight rows widened to f32: one per thread, reused by every call.
    static WROWS: core::cell::RefCell<Vec<f32>> = const { core::cell::RefCell::new(Vec::new()) };
}

/// As `scalar::matmul_rows` with f32 activations.
pub(super) fn matmul_rows(_: Avx512, w: &QMatrix, x: &[f32], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    if w.ty == GgmlType::F16 && n_tok < T {
        // SAFETY: the token proves AVX-512F (and AVX2, FMA, F16C).
        return unsafe { f16_rows(w, x, n_tok, rows, out) };
    }
    WROWS.with_borrow_mut(|buf| {
        buf.resize(R * w.n_cols, 0.0);
        // Fewer tokens than a group (decode) stream one weight row at a
        // time: several rows' streams at once read memory slower here.
        // SAFETY: the token proves AVX-512F (and AVX2, FMA, F16C).
        unsafe {
            if n_tok >= T {
                rows_with::<R>(w, x, n_tok, rows, out, buf)
            } else {
                rows_with::<1>(w, x, n_tok, rows, out, buf)
            }
        }
    })
}

#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn rows_with<const ROWS: usize>(
    w: &QMatrix,
    x: &[f32],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
    buf: &mut [f32],
) {
    let n = w.n_cols;
    for r0 in rows.clone().step_by(ROWS) {
        let nr = ROWS.min(rows.end - r0);
        let mut slots = buf.chunks_exact_mut(n);
        let mut ws: [&[f32]; ROWS] = [&[]; ROWS];
        for (i, r) in (r0..r0 + nr).enumerate() {
            ws[i] = widen_row(w, r, slots.next().unwrap_or_default());
        }
        // a short group repeats its last row (its sums are not written)
        let ws: [&[f32]; ROWS] = core::array::from_fn(|i| ws[i.min(nr - 1)]);
        let o = &mut out[(r0 - rows.start) * n_tok..][..nr * n_tok];
        let xrow = |t: usize| &x[t * n..][..n];
        // whole groups of `T` tokens, then the rest one at a time
        let whole = n_tok / T * T;
        for t0 in (0..whole).step_by(T) {
            let xs: [&[f32]; T] = core::array::from_fn(|j| xrow(t0 + j));
            // SAFETY: every row of `ws` and `xs` holds `n` f32.
            let acc = unsafe { sums(ws, xs, n) };
            for (i, acc) in acc.iter().enumerate().take(nr) {
                for (j, &a) in acc.iter().enumerate() {
                    o[i * n_tok + t0 + j] = reduced(a, ws[i], xs[j]);
                }
            }
        }
        for t in whole..n_tok {
            // SAFETY: as above.
            let acc = unsafe { sums(ws, [xrow(t)], n) };
            for (i, [a]) in acc.iter().enumerate().take(nr) {
                o[i * n_tok + t] = reduced(*a, ws[i], xrow(t));
            }
        }
    }
}

/// A few tokens' dots against f16 rows (a decode's; a LoRA adapter's A),
/// each 16 elements widened in a register as they are read, in the 16
/// lanes `sums` keeps: the numbers of widening the row first, without the
/// round trip through memory.
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn f16_rows(w: &QMatrix, x: &[f32], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    let n = w.n_cols;
    let n16 = n / 16 * 16;
    // four rows a pass: four independent sums in flight
    for r0 in rows.clone().step_by(R) {
        let nr = R.min(rows.end - r0);
        let ws: [&[u8]; R] = core::array::from_fn(|i| w.row(r0 + i.min(nr - 1)));
        let mut tails = [[0.0f32; 16]; R];
        for (row, tail) in ws.iter().zip(tails.iter_mut()) {
            for (i, t) in tail.iter_mut().enumerate().take(n - n16) {
                *t = quant::f16_at(row, 2 * (n16 + i));
            }
        }
        for t in 0..n_tok {
            let xt = &x[t * n..(t + 1) * n];
            let mut acc = [_mm512_setzero_ps(); R];
            for i in (0..n16).step_by(16) {
                // SAFETY: `i + 16 <= n`: 16 f32 of `xt`, 32 bytes of each row.
                let xv = unsafe { _mm512_loadu_ps(xt.as_ptr().add(i)) };
                for (a, row) in acc.iter_mut().zip(ws) {
                    // SAFETY: as above.
                    let h = unsafe { _mm256_loadu_si256(row.as_ptr().add(2 * i) as *const __m256i) };
                    *a = _mm512_add_ps(*a, _mm512_mul_ps(_mm512_cvtph_ps(h), xv));
                }
            }
            for (i, (a, tail)) in acc.iter().zip(&tails).enumerate().take(nr) {
                out[(r0 - rows.start + i) * n_tok + t] = reduced(*a, &tail[..n - n16], &xt[n16..]);
            }
        }
    }
}

/// The 16 lane-strided sums of each row of `ws` times each of `xs` over
/// their whole 16-float steps, multiply then add.
///
/// # Safety
/// Every slice holds `n` f32.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
unsafe fn sums<const ROWS: usize, const TOKS: usize>(
    ws: [&[f32]; ROWS],
    xs: [&[f32]; TOKS],
    n: usize,
) -> [[__m512; TOKS]; ROWS] {
    let wp: [*const f32; ROWS] = ws.map(<[f32]>::as_ptr);
    let xp: [*const f32; TOKS] = xs.map(<[f32]>::as_ptr);
    let mut acc = [[_mm512_setzero_ps(); TOKS]; ROWS];
    let mut i = 0;
    while i + 16 <= n {
        // SAFETY: `i + 16 <= n`, within every row.
        let wv: [__m512; ROWS] = core::array::from_fn(|r| unsafe { _mm512_loadu_ps(wp[r].add(i)) });
        for t in 0..TOKS {
            // SAFETY: as above.
            let xv = unsafe { _mm512_loadu_ps(xp[t].add(i)) };
            for r in 0..ROWS {
                acc[r][t] = _mm512_add_ps(acc[r][t], _mm512_mul_ps(wv[r], xv));
            }
        }
        i += 16;
    }
    acc
}

/// One dot from its lane sums `a`: a ragged row's tail added into the
/// lanes, then the reference's fixed tree.
#[inline]
#[target_feature(enable = "avx512f,avx2,fma,f16c")]
fn reduced(a: __m512, w: &[f32], x: &[f32]) -> f32 {
    let n16 = w.len() / 16 * 16;
    if n16 == w.len() {
        let lo = _mm512_castps512_ps256(a);
        let hi = _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(a)));
        return reduce16(lo, hi);
    }
    let mut l = [0.0f32; 16];
    // SAFETY: `l` holds 16 f32.
    unsafe { _mm512_storeu_ps(l.as_mut_ptr(), a) };
    scalar::reduce16_tail(l, &w[n16..], &x[n16..])
}
