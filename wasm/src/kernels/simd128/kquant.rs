//! K-quant super-blocks (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, and IQ4_XS) against Q8_K
//! activations, one row at a time for `T` tokens (each super-block unpacked
//! once for all of them). Every format unpacks its 16 groups of 16 into
//! even/odd i16 lanes (the activations' eo16 order); each group's exact
//! integer dot is scaled and summed in i32 lanes (exact), an offset the
//! format stores its quants with is taken back through the activations'
//! group sums, and the reference's float expression follows per
//! super-block — bit for bit `scalar::matmul_rows`.

use core::arch::wasm32::*;
use core::ops::Range;

use tern_core::backend::quant::{iq4_nl, iq4_xs, q2_k, q3_k, q4_k, q5_k, q6_k, BlockQ8K, GgmlType, QK_K};
use tern_core::backend::QMatrix;

use super::v;

/// A K-quant format: size, scales, and its groups' quants.
trait KFormat {
    const BYTES: usize;
    /// Added to every stored quant by the format (Q6_K: 32; Q3_K: 4 where
    /// the high bit is clear, folded into `groups` as a high bit of 4).
    const OFFSET: i32;
    /// Whether it has mins (else `mn` is all 0 and `dmin` 0).
    const MINS: bool;
    /// Per group: scale and min; and the f16 `d`, `dmin`.
    fn scales(b: &[u8]) -> ([i32; 16], [i32; 16], f32, f32);
    /// `f(g, even, odd)` for the 16 groups (quants ≥ 0, before `OFFSET`).
    fn groups(b: &[u8], f: impl FnMut(usize, v128, v128));
}

struct Q2K;
struct Q3K;
struct Q4K;
struct Q5K;
struct Q6K;
struct Iq4Xs;

const M2: i16 = 0x03;
const M4: i16 = 0x0f;

/// The f16 at byte `at`, by the exact lookup table.
#[inline(always)]
fn f16(b: &[u8], at: usize) -> f32 {
    v::f16_table()[u16::from_le_bytes([b[at], b[at + 1]]) as usize]
}

/// Bit `k` of each byte of the lanes (even: low byte, odd: high byte) as
/// `1 << to`, in i16 lanes.
#[inline(always)]
fn bit(x: v128, k: u32, to: u32) -> [v128; 2] {
    let m = i16x8_splat(1 << to);
    let at = |p: u32| if p >= to { u16x8_shr(x, p - to) } else { i16x8_shl(x, to - p) };
    [v128_and(at(k), m), v128_and(at(8 + k), m)]
}

/// Bits `s..s + w` of each byte (w = 2 or 4): [even, odd].
#[inline(always)]
fn field(x: v128, s: u32, mask: i16) -> [v128; 2] {
    let m = i16x8_splat(mask);
    [v128_and(u16x8_shr(x, s), m), v128_and(u16x8_shr(x, 8 + s), m)]
}

impl KFormat for Q4K {
    const MINS: bool = true;
    const BYTES: usize = q4_k::BLOCK_BYTES;
    const OFFSET: i32 = 0;
    #[inline(always)]
    fn scales(b: &[u8]) -> ([i32; 16], [i32; 16], f32, f32) {
        let (mut sc, mut mn) = ([0; 16], [0; 16]);
        for j in 0..8 {
            let (c, m) = q4_k::scale_min(j, &b[q4_k::SCALES..q4_k::QS]);
            (sc[2 * j], sc[2 * j + 1], mn[2 * j], mn[2 * j + 1]) = (c as i32, c as i32, m as i32, m as i32);
        }
        (sc, mn, f16(b, q4_k::D), f16(b, q4_k::DMIN))
    }
    #[inline(always)]
    fn groups(b: &[u8], mut f: impl FnMut(usize, v128, v128)) {
        // bytes 16+32i..: low nibbles are elements 64i.., high 64i+32..
        // one loop (not unrolled: V8 would start every load at once and spill)
        for c in 0..8 {
            let (i, h) = (c / 2, c % 2);
            let x = v::load(b, q4_k::QS + 32 * i + 16 * h);
            let [e, o] = field(x, 0, M4);
            f(4 * i + h, e, o);
            let [e, o] = field(x, 4, M4);
            f(4 * i + 2 + h, e, o);
        }
    }
}

impl KFormat for Q5K {
    const MINS: bool = true;
    const BYTES: usize = q5_k::BLOCK_BYTES;
    const OFFSET: i32 = 0;
    #[inline(always)]
    fn scales(b: &[u8]) -> ([i32; 16], [i32; 16], f32, f32) {
        Q4K::scales(b)
    }
    #[inline(always)]
    fn groups(b: &[u8], mut f: impl FnMut(usize, v128, v128)) {
        // as Q4_K (quants at 48), the 5th bit of element 64i+l in bit 2i
        // of qh[l], of 64i+32+l in bit 2i+1
        for c in 0..8 {
            let (i, h) = (c / 2, c % 2);
            let x = v::load(b, q5_k::QS + 32 * i + 16 * h);
            let qh = v::load(b, q5_k::QH + 16 * h);
            let ([e, o], [he, ho]) = (field(x, 0, M4), bit(qh, 2 * i as u32, 4));
            f(4 * i + h, v128_or(e, he), v128_or(o, ho));
            let ([e, o], [he, ho]) = (field(x, 4, M4), bit(qh, 2 * i as u32 + 1, 4));
            f(4 * i + 2 + h, v128_or(e, he), v128_or(o, ho));
        }
    }
}

impl KFormat for Q2K {
    const MINS: bool = true;
    const BYTES: usize = q2_k::BLOCK_BYTES;
    const OFFSET: i32 = 0;
    #[inline(always)]
    fn scales(b: &[u8]) -> ([i32; 16], [i32; 16], f32, f32) {
        let sc = core::array::from_fn(|g| (b[q2_k::SCALES + g] & 0x0f) as i32);
        let mn = core::array::from_fn(|g| (b[q2_k::SCALES + g] >> 4) as i32);
        (sc, mn, f16(b, q2_k::D), f16(b, q2_k::DMIN))
    }
    #[inline(always)]
    fn groups(b: &[u8], mut f: impl FnMut(usize, v128, v128)) {
        // element 128·half + 32·s + l: bits 2s of qs[32·half + l]
        for c in 0..4 {
            let (half, h) = (c / 2, c % 2);
            let x = v::load(b, q2_k::QS + 32 * half + 16 * h);
            for s in 0..4 {
                let [e, o] = field(x, 2 * s as u32, M2);
                f(8 * half + 2 * s + h, e, o);
            }
        }
    }
}

impl KFormat for Q3K {
    const MINS: bool = false;
    const BYTES: usize = q3_k::BLOCK_BYTES;
    const OFFSET: i32 = 4;
    #[inline(always)]
    fn scales(b: &[u8]) -> ([i32; 16], [i32; 16], f32, f32) {
        let s = &b[q3_k::SCALES..q3_k::D];
        let sc = core::array::from_fn(|g| {
            let lo = if g < 8 { s[g] & 0x0f } else { s[g - 8] >> 4 };
            let hi = (s[8 + g % 4] >> (2 * (g / 4))) & 3;
            (lo | (hi << 4)) as i32 - 32
        });
        (sc, [0; 16], f16(b, q3_k::D), 0.0)
    }
    #[inline(always)]
    fn groups(b: &[u8], mut f: impl FnMut(usize, v128, v128)) {
        // element 32k + l (k = 4·half + s): bits 2s of qs[32·half + l], less
        // 4 unless bit k of hmask[l] is set: stored here as the bit times 4
        for c in 0..4 {
            let (half, h) = (c / 2, c % 2);
            let x = v::load(b, q3_k::QS + 32 * half + 16 * h);
            let hm = v::load(b, q3_k::HMASK + 16 * h);
            for s in 0..4 {
                let k = 4 * half + s;
                let ([e, o], [he, ho]) = (field(x, 2 * s as u32, M2), bit(hm, k as u32, 2));
                f(2 * k + h, v128_or(e, he), v128_or(o, ho));
            }
        }
    }
}

impl KFormat for Q6K {
    const MINS: bool = false;
    const BYTES: usize = q6_k::BLOCK_BYTES;
    const OFFSET: i32 = 32;
    #[inline(always)]
    fn scales(b: &[u8]) -> ([i32; 16], [i32; 16], f32, f32) {
        (core::array::from_fn(|g| b[q6_k::SCALES + g] as i8 as i32), [0; 16], f16(b, q6_k::D), 0.0)
    }
    #[inline(always)]
    fn groups(b: &[u8], mut f: impl FnMut(usize, v128, v128)) {
        // element 128·half + l + 32·k: nibble of ql (k = 0, 2: low/high of
        // ql[l]; 1, 3: of ql[l + 32]), high bits 2k of qh[l]
        for c in 0..4 {
            let (half, l0) = (c / 2, 16 * (c % 2));
            {
                let ql = v::load(b, q6_k::QL + 64 * half + l0);
                let ql2 = v::load(b, q6_k::QL + 64 * half + l0 + 32);
                let qh = v::load(b, q6_k::QH + 32 * half + l0);
                let g0 = 8 * half + l0 / 16;
                for (k, (x, s)) in [(ql, 0), (ql2, 0), (ql, 4), (ql2, 4)].into_iter().enumerate() {
                    let ([e, o], [he, ho]) = (field(x, s, M4), field(qh, 2 * k as u32, M2));
                    f(g0 + 2 * k, v128_or(e, i16x8_shl(he, 4)), v128_or(o, i16x8_shl(ho, 4)));
                }
            }
        }
    }
}

impl KFormat for Iq4Xs {
    const MINS: bool = false;
    const BYTES: usize = iq4_xs::BLOCK_BYTES;
    // the table's values stored plus 128
    const OFFSET: i32 = 128;
    #[inline(always)]
    fn scales(b: &[u8]) -> ([i32; 16], [i32; 16], f32, f32) {
        (core::array::from_fn(|g| iq4_xs::scale(b, g / 2) as i32), [0; 16], f16(b, iq4_xs::D), 0.0)
    }
    #[inline(always)]
    fn groups(b: &[u8], mut f: impl FnMut(usize, v128, v128)) {
        let table = v::load(&iq4_nl::KVALUES_PLUS_128, 0);
        // run k's byte j: element 32k + j's index in its low nibble (group
        // 2k), 32k + 16 + j's in its high nibble (group 2k + 1)
        for k in 0..8 {
            let qs = v::load(b, iq4_xs::QS + 16 * k);
            let m4 = i8x16_splat(0x0f);
            for (h, idx) in [v128_and(qs, m4), u8x16_shr(qs, 4)].into_iter().enumerate() {
                let u = i8x16_swizzle(table, idx);
                f(2 * k + h, v128_and(u, i16x8_splat(0xff)), u16x8_shr(u, 8));
            }
        }
    }
}

/// One token's super-block: its 8-bit block and widened (eo16) quants.
type Act<'a> = (&'a BlockQ8K, &'a [i16]);

/// One super-block for each token: (Σ_g sc_g·dot_g, Σ_g mn_g·bsum_g), the
/// format's offset taken back.
#[inline(always)]
fn block<F: KFormat, const T: usize>(b: &[u8], sc: &[i32; 16], mn: &[i32; 16], a: [Act; T]) -> [(i32, i32); T] {
    let mut acc = [i32x4_splat(0); T];
    F::groups(b, |g, e, o| {
        let s = i32x4_splat(sc[g]);
        for t in 0..T {
            let aw = a[t].1;
            let d = i32x4_add(i32x4_dot_i16x8(e, v::load(aw, 16 * g)), i32x4_dot_i16x8(o, v::load(aw, 16 * g + 8)));
            acc[t] = i32x4_add(acc[t], i32x4_mul(d, s));
        }
    });
    core::array::from_fn(|t| {
        let bs = &a[t].0.bsums;
        let (mut off, mut imin) = (0i32, 0i32);
        for g in 0..16 {
            if F::OFFSET != 0 {
                off += sc[g] * bs[g] as i32;
            }
            if F::MINS {
                imin += mn[g] * bs[g] as i32;
            }
        }
        (v::hsum(acc[t]) - F::OFFSET * off, imin)
    })
}

/// `row · activations` of `T` tokens (`a[t]`: its blocks and widened quants).
#[inline(always)]
fn row<F: KFormat, const T: usize>(row: &[u8], a: [(&[BlockQ8K], &[i16]); T], nb: usize) -> [f32; T] {
    let mut acc = [0.0f32; T];
    for b in 0..nb {
        let blk = &row[b * F::BYTES..(b + 1) * F::BYTES];
        let act: [Act; T] = core::array::from_fn(|t| (&a[t].0[b], &a[t].1[b * QK_K..(b + 1) * QK_K]));
        let (sc, mn, d, dmin) = F::scales(blk);
        for (t, (isum, imin)) in block::<F, T>(blk, &sc, &mn, act).into_iter().enumerate() {
            let ad = act[t].0.d;
            acc[t] += (d * ad) * isum as f32 - (dmin * ad) * imin as f32;
        }
    }
    acc
}

/// Tokens a prefill tile takes at once (4 spilled).
const TILE: usize = 2;

/// Whether this module computes `ty`.
pub fn handles(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q2_K | GgmlType::Q3_K | GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q6_K | GgmlType::IQ4_XS)
}

/// Rows `rows` of `w` against all `n_tok` tokens (`a` their blocks, `aw`
/// their widened quants, token after token); `out` row-major by row.
pub fn rows(w: &QMatrix, a: &[BlockQ8K], aw: &[i16], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    match w.ty {
        GgmlType::Q2_K => rows_of::<Q2K>(w, a, aw, n_tok, rows, out),
        GgmlType::Q3_K => rows_of::<Q3K>(w, a, aw, n_tok, rows, out),
        GgmlType::Q4_K => rows_of::<Q4K>(w, a, aw, n_tok, rows, out),
        GgmlType::Q5_K => rows_of::<Q5K>(w, a, aw, n_tok, rows, out),
        GgmlType::IQ4_XS => rows_of::<Iq4Xs>(w, a, aw, n_tok, rows, out),
        _ => rows_of::<Q6K>(w, a, aw, n_tok, rows, out),
    }
}

fn rows_of<F: KFormat>(w: &QMatrix, a: &[BlockQ8K], aw: &[i16], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    let nb = w.n_cols / QK_K;
    let tok = |t: usize| (&a[t * nb..(t + 1) * nb], &aw[t * nb * QK_K..(t + 1) * nb * QK_K]);
    let full = n_tok / TILE * TILE;
    for (i, r) in rows.enumerate() {
        let o = &mut out[i * n_tok..(i + 1) * n_tok];
        for t0 in (0..full).step_by(TILE) {
            o[t0..t0 + TILE].copy_from_slice(&row::<F, TILE>(w.row(r), core::array::from_fn(|k| tok(t0 + k)), nb));
        }
        for t in full..n_tok {
            o[t] = row::<F, 1>(w.row(r), [tok(t)], nb)[0];
        }
    }
}
