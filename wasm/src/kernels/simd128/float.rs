//! f32 kernels: the contract's 16-lane dot (lanes 0-3, 4-7, 8-11, 12-15 as
//! four vectors, the tail and the `reduce16` tree as in the reference) and
//! elementwise updates, which are the same arithmetic four lanes at a time.

use core::arch::wasm32::*;

use core::ops::Range;

use tern_core::backend::quant::{q8_0, QK8};
use tern_core::backend::{q8_0_at, scalar, KvRows};

use super::v;

/// `Σ a[i]·b[i]` in the contract's order.
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n16 = a.len() / 16 * 16;
    let mut l = [f32x4_splat(0.0); 4];
    for i in (0..n16).step_by(16) {
        for (k, lk) in l.iter_mut().enumerate() {
            *lk = f32x4_add(*lk, f32x4_mul(v::load(a, i + 4 * k), v::load(b, i + 4 * k)));
        }
    }
    lanes_done(l, &a[n16..], &b[n16..])
}

/// A dot from its 16 lane sums `l` over whole 16-float steps: the ragged
/// tails' products (`a`, `b`: fewer than 16) added into their lanes, then
/// the contract's tree.
#[inline(always)]
pub fn lanes_done(l: [v128; 4], a: &[f32], b: &[f32]) -> f32 {
    if a.is_empty() {
        return v::reduce16(l);
    }
    let mut lanes = [0.0f32; 16];
    for (k, lk) in l.iter().enumerate() {
        v::store(&mut lanes, 4 * k, *lk);
    }
    scalar::reduce16_tail(lanes, a, b)
}

/// `o = x / rms(x) * w`.
#[inline]
pub fn rms_norm(x: &[f32], w: &[f32], eps: f32, o: &mut [f32]) {
    let ss = dot(x, x);
    let scale = 1.0 / (ss / x.len() as f32 + eps).sqrt();
    let n4 = x.len() / 4 * 4;
    let sv = f32x4_splat(scale);
    for i in (0..n4).step_by(4) {
        v::store(o, i, f32x4_mul(f32x4_mul(v::load(x, i), sv), v::load(w, i)));
    }
    for i in n4..x.len() {
        o[i] = (x[i] * scale) * w[i];
    }
}

/// Cached rows `r` widened to f32, as `KvRows::read` (f16 by the exact
/// SIMD widening, eight at a time; Q8_0 as `q · d`, exact too).
#[inline]
pub fn read(rows: &KvRows, r: Range<usize>, out: &mut [f32]) {
    match rows {
        KvRows::F32(_) => rows.read(r, out),
        KvRows::Q8_0(x) => {
            // whole 8s inside a block: widened i8 → i32 → f32, times the scale
            let mut e = r.start;
            for o in out[..r.len()].chunks_mut(8) {
                if o.len() == 8 && e % QK8 <= QK8 - 8 {
                    let (d, _) = q8_0_at(x, e);
                    let at = e / QK8 * q8_0::BLOCK_BYTES + q8_0::QS + e % QK8;
                    let q = i16x8_extend_low_i8x16(v::load64(x, at));
                    let dv = f32x4_splat(d);
                    v::store(o, 0, f32x4_mul(f32x4_convert_i32x4(i32x4_extend_low_i16x8(q)), dv));
                    v::store(o, 4, f32x4_mul(f32x4_convert_i32x4(i32x4_extend_high_i16x8(q)), dv));
                } else {
                    rows.read(e..e + o.len(), o);
                }
                e += o.len();
            }
        }
        KvRows::F16(x) => {
            let x = &x[r];
            let n8 = x.len() / 8 * 8;
            let bits: &[u16] = half::slice::HalfFloatSliceExt::reinterpret_cast(x);
            for i in (0..n8).step_by(8) {
                let h = v::load(bits, i);
                v::store(out, i, v::f16_to_f32(u32x4_extend_low_u16x8(h)));
                v::store(out, i + 4, v::f16_to_f32(u32x4_extend_high_u16x8(h)));
            }
            for (o, h) in out[n8..].iter_mut().zip(&x[n8..]) {
                *o = h.to_f32();
            }
        }
    }
}
