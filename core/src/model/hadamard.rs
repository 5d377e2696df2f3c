//! The Walsh–Hadamard rotation a Q8_0 KV cache stores its rows in, as
//! llama.cpp does for quantized caches (its `attn_rot_k`/`attn_rot_v`).
//!
//! A few channels of a key can be far larger than the rest (Qwen2.5's),
//! and a 32-element block quantized by its largest value then rounds the
//! others away. Rotating each head by an orthonormal Hadamard matrix H
//! spreads every channel over all of them first. Scores are unchanged,
//! as (Hq)·(Hk) = q·k, so queries turn with the keys; H is symmetric and
//! its own inverse, so values are stored as Hv and the attention output
//! Σ p·Hv = H(Σ p·v) turns back by H again.
//!
//! The rotation runs in the model's own code, in one fixed order of f32
//! operations, so every backend gets the same bits.

use super::config::Config;
use crate::backend::KvType;

/// Rotation block sizes of a cache's keys (and queries) and values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation {
    /// Keys and queries: the largest power of two dividing the head.
    pub k: usize,
    /// Values: 64.
    pub v: usize,
}

/// Smallest block rotated (llama.cpp's: a head must be a multiple of it).
const MIN_BLOCK: usize = 64;

impl Rotation {
    /// The rotation of a cache of `ty` rows for this model: Q8_0 rows of
    /// heads a multiple of 64 long; none otherwise.
    pub fn of(c: &Config, ty: KvType) -> Option<Rotation> {
        let hd = c.head_dim;
        (ty == KvType::Q8_0 && hd > 0 && hd.is_multiple_of(MIN_BLOCK))
            .then(|| Rotation { k: 1 << hd.trailing_zeros(), v: MIN_BLOCK })
    }
}

/// `x ← H x / √n` on each `n`-element block of `x` (`n` a power of two;
/// H Sylvester's ±1 matrix): the butterflies of the fast transform, then
/// the scale.
pub fn rotate(x: &mut [f32], n: usize) {
    let scale = 1.0 / libm::sqrtf(n as f32);
    for b in x.chunks_exact_mut(n) {
        let mut h = 1;
        while h < n {
            for i in (0..n).step_by(2 * h) {
                for j in i..i + h {
                    let (a, c) = (b[j], b[j + h]);
                    (b[j], b[j + h]) = (a + c, a - c);
                }
            }
            h *= 2;
        }
        b.iter_mut().for_each(|v| *v *= scale);
    }
}

#[cfg(test)]
mod tests {
    use super::rotate;

    #[test]
    fn rotating_twice_gives_the_row_back_and_keeps_dots() {
        let x: alloc::vec::Vec<f32> = (0..256).map(|i| ((i * 37 % 101) as f32 - 50.0) / 7.0).collect();
        let y: alloc::vec::Vec<f32> = (0..256).map(|i| ((i * 53 % 89) as f32 - 44.0) / 5.0).collect();
        for n in [64, 128, 256] {
            let (mut a, mut b) = (x.clone(), y.clone());
            rotate(&mut a, n);
            rotate(&mut b, n);
            let dot = |p: &[f32], q: &[f32]| p.iter().zip(q).map(|(a, b)| (a * b) as f64).sum::<f64>();
            assert!((dot(&a, &b) - dot(&x, &y)).abs() < 1e-3 * dot(&x, &x).sqrt() * dot(&y, &y).sqrt());
            assert!(a.iter().zip(&x).any(|(a, x)| (a - x).abs() > 0.1), "a rotation moves the row");
            rotate(&mut a, n);
            assert!(a.iter().zip(&x).all(|(a, x)| (a - x).abs() < 1e-5 * (1.0 + x.abs())));
        }
        // an outlier channel spreads over the whole block
        let mut one = [0.0f32; 64];
        one[5] = 8.0;
        rotate(&mut one, 64);
        assert!(one.iter().all(|v| v.abs() == 1.0));
    }
}
