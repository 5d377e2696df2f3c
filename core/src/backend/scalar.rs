//! Reference kernels, written plainly. They define the numerics every other
//! backend reproduces bit for bit:
//! - quantized blocks: an exact integer dot per block, then floats combined
//!   per block in a fixed expression, accumulated block 0, 1, 2, ...;
//! - f32 reductions: 16 lane-strided partial sums (element i to lane i%16),
//!   then the fixed pairwise tree of `reduce16`;
//! - no fused multiply-add; `libm` for exp.

use core::ops::Range;

use super::{Acts, QMatrix};

/// The largest head the attention kernels take (checked at load).
pub const MAX_HEAD_DIM: usize = 512;
use crate::backend::quant::{self, BlockQ8K, BlockQ8_0, BlockQ8_1, GgmlType, QK8, QK_K};

/// Tokens processed together per weight block (bounded stack state).
const TOK_CHUNK: usize = 8;

/// The fixed pairwise tree over 16 lanes: (0+8, 1+9, ...), then 4, 2, 1.
#[inline]
pub fn reduce16(mut l: [f32; 16]) -> f32 {
    for w in [8, 4, 2, 1] {
        for j in 0..w {
            l[j] += l[j + w];
        }
    }
    l[0]
}

/// Accumulate `a[i] * b[i]` into lane `(base + i) % 16`.
#[inline]
fn lanes_mul_add(l: &mut [f32; 16], a: &[f32], b: &[f32]) {
    for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
        l[i % 16] += x * y;
    }
}

/// `Σ a[i] * b[i]` by the contract's 16-lane order.
#[inline]
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    let mut l = [0.0f32; 16];
    let n16 = a.len() / 16 * 16;
    for (ca, cb) in a[..n16].chunks_exact(16).zip(b[..n16].chunks_exact(16)) {
        lanes_mul_add(&mut l, ca, cb);
    }
    reduce16_tail(l, &a[n16..], &b[n16..])
}

/// The end of a dot in the contract's order, from its 16 lane sums `l`
/// over whole 16-element steps: the ragged tails' products (`a[i]·b[i]`
/// into lane i) added in, then the fixed tree. What a SIMD backend calls
/// after its vector loop.
#[inline]
pub fn reduce16_tail(mut l: [f32; 16], a: &[f32], b: &[f32]) -> f32 {
    lanes_mul_add(&mut l, a, b);
    reduce16(l)
}

/// `Σ a[i]` by the contract's 16-lane order.
#[inline]
pub fn sum_f32(a: &[f32]) -> f32 {
    let mut l = [0.0f32; 16];
    for (i, &x) in a.iter().enumerate() {
        l[i % 16] += x;
    }
    reduce16(l)
}

/// `out[t * stride + r] = src[r * n_src + t0 + t]` for `nt` tokens and
/// every row of `src` (rows of `n_src`): a matmul's results laid out by
/// token. In 8 × 8 tiles, so reads and writes both run along lines.
pub fn transpose(src: &[f32], n_src: usize, t0: usize, nt: usize, out: &mut [f32], stride: usize) {
    const B: usize = 8;
    let nr = src.len() / n_src;
    let (r8, tt8) = (nr / B * B, nt / B * B);
    for r in (0..r8).step_by(B) {
        let rows: [&[f32]; B] = core::array::from_fn(|i| &src[(r + i) * n_src + t0..][..nt]);
        for t in (0..tt8).step_by(B) {
            for j in 0..B {
                let o: &mut [f32; B] = (&mut out[(t + j) * stride + r..][..B]).try_into().expect("8 floats");
                *o = core::array::from_fn(|i| rows[i][t + j]);
            }
        }
    }
    // the ragged edges element by element
    for r in 0..nr {
        let from = if r < r8 { tt8 } else { 0 };
        for t in from..nt {
            out[t * stride + r] = src[r * n_src + t0 + t];
        }
    }
}

/// The reference matmul: `out[(r - rows.start) * n_tok + t] = W[r] · x[t]`, block by block in
/// order.
#[inline]
pub fn matmul_rows(w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    let n_rows = rows.len();
    debug_assert_eq!(out.len(), n_rows * n_tok);
    for (r, o) in rows.zip(out.chunks_exact_mut(n_tok)) {
        let row = w.row(r);
        for t0 in (0..n_tok).step_by(TOK_CHUNK) {
            let toks = t0..(t0 + TOK_CHUNK).min(n_tok);
            let o = &mut o[toks.clone()];
            match x {
                Acts::F32(x) => row_f32(w.ty, row, w.n_cols, x, toks, o),
                Acts::Q8_0(a) => row_q8_0(w.ty, row, w.n_cols / QK8, a, toks, o),
                Acts::Q8_1(a) => row_q8_1(w.ty, row, w.n_cols / QK8, a, toks, o),
                Acts::Q8K(a) => row_q8_k(w.ty, row, w.n_cols / QK_K, a, toks, o),
            }
        }
    }
}

/// Exact path: each weight block dequantized to f32, then 16-lane dots.
#[inline]
fn row_f32(ty: GgmlType, row: &[u8], n: usize, x: &[f32], toks: Range<usize>, out: &mut [f32]) {
    let (bs, ts) = ty.block();
    // Float types have 1-element "blocks": take them 256 at a time.
    let step = if bs == 1 { QK_K.min(n) } else { bs };
    let mut lanes = [[0.0f32; 16]; TOK_CHUNK];
    let mut wbuf = [0.0f32; QK_K];
    for c0 in (0..n).step_by(step) {
        let len = step.min(n - c0);
        let bytes = &row[c0 / bs * ts..(c0 + len) / bs * ts];
        let wb = &mut wbuf[..len];
        // The row was validated at load: its type and length always fit.
        if quant::dequantize_row(ty, bytes, wb).is_err() {
            unreachable!("row type checked at load");
        }
        for (l, t) in lanes.iter_mut().zip(toks.clone()) {
            let xs = &x[t * n + c0..t * n + c0 + len];
            // c0 is a multiple of 16 (blocks are 32/256, float steps 256),
            // so lane i%16 of the block is lane (c0+i)%16 of the row.
            lanes_mul_add(l, wb, xs);
        }
    }
    for (o, l) in out.iter_mut().zip(lanes) {
        *o = reduce16(l);
    }
}

#[inline]
fn row_q8_0(ty: GgmlType, row: &[u8], nb: usize, a: &[BlockQ8_0], toks: Range<usize>, out: &mut [f32]) {
    let ts = ty.type_size();
    let mut acc = [0.0f32; TOK_CHUNK];
    for b in 0..nb {
        let Some(u) = quant::unpack_32(ty, &row[b * ts..(b + 1) * ts]) else { unreachable!() };
        for (s, t) in acc.iter_mut().zip(toks.clone()) {
            *s += quant::dot_32_q8_0(&u, &a[t * nb + b]);
        }
    }
    out.copy_from_slice(&acc[..out.len()]);
}

#[inline]
fn row_q8_1(ty: GgmlType, row: &[u8], nb: usize, a: &[BlockQ8_1], toks: Range<usize>, out: &mut [f32]) {
    let ts = ty.type_size();
    let mut acc = [0.0f32; TOK_CHUNK];
    for b in 0..nb {
        let Some(u) = quant::unpack_32(ty, &row[b * ts..(b + 1) * ts]) else { unreachable!() };
        for (s, t) in acc.iter_mut().zip(toks.clone()) {
            *s += quant::dot_32_q8_1(&u, &a[t * nb + b]);
        }
    }
    out.copy_from_slice(&acc[..out.len()]);
}

#[inline]
fn row_q8_k(ty: GgmlType, row: &[u8], nb: usize, a: &[BlockQ8K], toks: Range<usize>, out: &mut [f32]) {
    let ts = ty.type_size();
    let mut acc = [0.0f32; TOK_CHUNK];
    for b in 0..nb {
        let Some(u) = quant::unpack_k(ty, &row[b * ts..(b + 1) * ts]) else { unreachable!() };
        for (s, t) in acc.iter_mut().zip(toks.clone()) {
            *s += quant::dot_k_q8_k(&u, &a[t * nb + b]);
        }
    }
    out.copy_from_slice(&acc[..out.len()]);
}

/// A LoRA adapter's B step over outputs `cols`: `out[t] += scale ·
/// Σ_k mid[t][k] · bt[k][cols]` for each token t (`out`: the tokens' rows
/// of `cols.len()`), `bt` being Bᵀ (rank rows of the outputs, f32, f16 or
/// bf16) and `mid` the tokens' `A·x` (rank each). For each output the
/// rank's products are added in order from zero (multiply, then add), the
/// sum scaled, then added to `out` — so every lane of a SIMD version is
/// this order, whatever its width.
pub fn lora_up(bt: &QMatrix, cols: Range<usize>, mid: &[f32], scale: f32, out: &mut [f32]) {
    lora_up_with(bt, cols, mid, scale, out, &mut |ty, src, dst| {
        if quant::dequantize_row(ty, src, dst).is_err() {
            unreachable!("an adapter's matrices are float, checked at load");
        }
    })
}

/// A run of a row's elements into f32: `widen(type, bytes, out)`.
pub type Widen<'a> = &'a mut dyn FnMut(GgmlType, &[u8], &mut [f32]);

/// Outputs a pass of [`lora_up_with`] sums at a time.
const LORA_CHUNK: usize = 256;

/// [`lora_up`] with `widen(ty, bytes, out)` turning a run of a row's
/// elements into f32 (a backend's own conversion; the numbers are
/// exact either way).
#[inline(always)]
pub fn lora_up_with(bt: &QMatrix, cols: Range<usize>, mid: &[f32], scale: f32, out: &mut [f32], widen: Widen) {
    let (r, n) = (bt.n_rows, cols.len());
    let es = bt.row_bytes() / bt.n_cols.max(1);
    let (mut acc, mut row) = ([0.0f32; LORA_CHUNK], [0.0f32; LORA_CHUNK]);
    for (m, o) in mid.chunks_exact(r).zip(out.chunks_exact_mut(n)) {
        for c0 in (0..n).step_by(LORA_CHUNK) {
            let len = LORA_CHUNK.min(n - c0);
            let (acc, row) = (&mut acc[..len], &mut row[..len]);
            acc.fill(0.0);
            let at = cols.start + c0;
            for (k, &mk) in m.iter().enumerate() {
                widen(bt.ty, &bt.row(k)[at * es..(at + len) * es], row);
                for (a, &w) in acc.iter_mut().zip(row.iter()) {
                    *a += mk * w;
                }
            }
            for (o, &a) in o[c0..c0 + len].iter_mut().zip(acc.iter()) {
                *o += scale * a;
            }
        }
    }
}

/// Each 32 values of `x` into a Q8_0 block.
#[inline]
pub fn quantize_rows_q8_0(x: &[f32], out: &mut [BlockQ8_0]) {
    for (c, b) in x.chunks_exact(QK8).zip(out) {
        quant::quantize_q8_0(c, b);
    }
}

/// Each 32 values of `x` into a Q8_1 block.
#[inline]
pub fn quantize_rows_q8_1(x: &[f32], out: &mut [BlockQ8_1]) {
    for (c, b) in x.chunks_exact(QK8).zip(out) {
        quant::quantize_q8_1(c, b);
    }
}

/// Each 256 values of `x` into a Q8_K super-block.
#[inline]
pub fn quantize_rows_q8_k(x: &[f32], out: &mut [BlockQ8K]) {
    for (c, b) in x.chunks_exact(QK_K).zip(out) {
        quant::quantize_q8_k(c, b);
    }
}

/// The reference RMSNorm: `o = (x · 1/rms(x)) · w`, the sum of squares by the contract's 16-lane
/// dot.
#[inline]
pub fn rms_norm(x: &[f32], w: &[f32], eps: f32, o: &mut [f32]) {
    let ss = dot_f32(x, x);
    let scale = 1.0 / libm::sqrtf(ss / x.len() as f32 + eps);
    for ((o, &x), &w) in o.iter_mut().zip(x).zip(w) {
        *o = (x * scale) * w;
    }
}

/// The reference LayerNorm: `o = (x − mean) / √(var + eps) · w + b`, the
/// sums by the contract's 16-lane dot (BERT's norms, with bias).
#[inline]
pub fn layer_norm(x: &[f32], w: &[f32], b: &[f32], eps: f32, o: &mut [f32]) {
    let n = x.len() as f32;
    let ones = [1.0f32; 16];
    let mean = x.chunks(16).map(|c| dot_f32(c, &ones[..c.len()])).sum::<f32>() / n;
    for (o, &x) in o.iter_mut().zip(x) {
        *o = x - mean;
    }
    let var = dot_f32(o, o) / n;
    let scale = 1.0 / libm::sqrtf(var + eps);
    for ((o, &w), &b) in o.iter_mut().zip(w).zip(b) {
        *o = (*o * scale) * w + b;
    }
}

/// GELU, erf form (BERT's `gelu`): `x/2 · (1 + erf(x/√2))`, in place.
#[inline]
pub fn gelu(x: &mut [f32]) {
    for x in x {
        *x = 0.5 * *x * (1.0 + libm::erff(*x * core::f32::consts::FRAC_1_SQRT_2));
    }
}

/// `o[i] += p · x[i]`, element by element (multiply, then add).
#[inline]
pub fn axpy(o: &mut [f32], p: f32, x: &[f32]) {
    for (o, &x) in o.iter_mut().zip(x) {
        *o += p * x;
    }
}

/// `s = exp(s - max)` in place.
#[inline]
pub fn exp_shifted(scores: &mut [f32], max: f32) {
    for s in scores.iter_mut() {
        *s = libm::expf(*s - max);
    }
}

/// `c · tanh(x / c)`: Gemma 2's softcap of attention scores and logits.
#[inline]
pub fn softcap(x: f32, c: f32) -> f32 {
    c * libm::tanhf(x / c)
}

/// `x · sigmoid(x)`, as `x / (1 + exp(−x))`.
#[inline]
pub fn silu(x: f32) -> f32 {
    x / (1.0 + libm::expf(-x))
}

/// `g = silu(g) · u`, element by element.
#[inline]
pub fn swiglu(g: &mut [f32], u: &[f32]) {
    for (g, &u) in g.iter_mut().zip(u) {
        *g = silu(*g) * u;
    }
}

/// GELU, tanh form: `x/2 · (1 + tanh(√(2/π) (x + 0.044715 x³)))`, computed
/// as `x / (1 + exp(−z))` with `z = 2√(2/π) · x · (1 + 0.044715 x²)` (the
/// same value: `(1 + tanh(y))/2 = 1/(1 + exp(−2y))`), so it shares silu's
/// exp.
#[inline]
pub fn gelu_tanh(x: f32) -> f32 {
    let z = TWO_SQRT_2_OVER_PI * x * (1.0 + GELU_C * x * x);
    x / (1.0 + libm::expf(-z))
}

/// 2√(2/π), rounded to f32.
pub const TWO_SQRT_2_OVER_PI: f32 = 1.595_769_2;
/// The cubic's coefficient in GELU's tanh form.
pub const GELU_C: f32 = 0.044715;

/// `g = gelu_tanh(g) · u`, element by element.
#[inline]
pub fn geglu(g: &mut [f32], u: &[f32]) {
    for (g, &u) in g.iter_mut().zip(u) {
        *g = gelu_tanh(*g) * u;
    }
}
