//! Rotary position embedding: cos/sin tables per position, applied in place.

use super::parts::RopeStyle;

/// Fill `cs` with (cos, sin) of every rotated pair for each position:
/// `cs[t * n_rot + 2i] = cos(pos_t · scale · inv_freq_i) · attn`,
/// `... + 2i + 1] = sin(…) · attn`.
pub fn tables(inv_freq: &[f32], pos_scale: f32, attn: f32, positions: impl Iterator<Item = usize>, cs: &mut [f32]) {
    let half = inv_freq.len();
    for (t, pos) in positions.enumerate() {
        let p = pos as f32 * pos_scale;
        for (i, &f) in inv_freq.iter().enumerate() {
            let a = p * f;
            cs[t * 2 * half + 2 * i] = libm::cosf(a) * attn;
            cs[t * 2 * half + 2 * i + 1] = libm::sinf(a) * attn;
        }
    }
}

/// Rotate one head vector `x` (head_dim long) with one position's table.
pub fn apply(style: RopeStyle, n_rot: usize, cs: &[f32], x: &mut [f32]) {
    let half = n_rot / 2;
    for i in 0..half {
        let (cos, sin) = (cs[2 * i], cs[2 * i + 1]);
        let (a, b) = match style {
            RopeStyle::Adjacent => (2 * i, 2 * i + 1),
            RopeStyle::Neox => (i, i + half),
        };
        let (x0, x1) = (x[a], x[b]);
        x[a] = x0 * cos - x1 * sin;
        x[b] = x0 * sin + x1 * cos;
    }
}
