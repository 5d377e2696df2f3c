//! SIMD128 inner loops of tiled attention (`tiles::attention`, whose order
//! they keep): scores by the contract's 16-lane dot and tree, libm's exp
//! four lanes at a time (`exp.rs`), and each output element accumulating
//! p·v over a tile's positions in order, 32 elements in registers across
//! the tile.

use core::arch::wasm32::*;

use tern_core::backend::tiles::{self, TileOps};
use tern_core::backend::KvRows;

use super::v;

/// The tile loops in SIMD128.
pub struct Simd128;

impl TileOps for Simd128 {
    #[inline]
    fn dots(&self, q: &[f32], rows: &[f32], st: usize, s: &mut [f32]) {
        let hd = q.len();
        if hd % 16 != 0 {
            return tiles::Plain.dots(q, rows, st, s);
        }
        for (i, s) in s.iter_mut().enumerate() {
            let k = &rows[i * st..i * st + hd];
            let mut l = [f32x4_splat(0.0); 4];
            for c in (0..hd).step_by(16) {
                for (j, lj) in l.iter_mut().enumerate() {
                    *lj = f32x4_add(*lj, f32x4_mul(v::load(q, c + 4 * j), v::load(k, c + 4 * j)));
                }
            }
            *s = v::reduce16(l);
        }
    }

    #[inline]
    fn exp_shifted(&self, s: &mut [f32], m: f32) {
        super::exp::exp_shifted(s, m)
    }

    #[inline]
    fn accumulate(&self, o: &mut [f32], p: &[f32], rows: &[f32], st: usize) {
        let hd = o.len();
        let n4 = hd / 4 * 4;
        for e0 in (0..n4).step_by(32) {
            let nv = (n4 - e0).min(32) / 4;
            let mut acc = [f32x4_splat(0.0); 8];
            for (j, a) in acc[..nv].iter_mut().enumerate() {
                *a = v::load(o, e0 + 4 * j);
            }
            for (i, &p) in p.iter().enumerate() {
                let w = f32x4_splat(p);
                let row = &rows[i * st + e0..];
                for (j, a) in acc[..nv].iter_mut().enumerate() {
                    *a = f32x4_add(*a, f32x4_mul(w, v::load(row, 4 * j)));
                }
            }
            for (j, a) in acc[..nv].iter().enumerate() {
                v::store(o, e0 + 4 * j, *a);
            }
        }
        if n4 < hd {
            for (i, &p) in p.iter().enumerate() {
                tern_core::backend::scalar::axpy(&mut o[n4..], p, &rows[i * st + n4..i * st + hd]);
            }
        }
    }

    #[inline]
    fn widen(&self, x: KvRows, st: usize, len: usize, hd: usize, out: &mut [f32]) {
        for (i, o) in out[..len * hd].chunks_exact_mut(hd).enumerate() {
            super::float::read(&x, i * st..i * st + hd, o);
        }
    }
}
