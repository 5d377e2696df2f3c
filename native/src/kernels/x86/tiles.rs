//! AMX tile registers for int8 blocks of 32: the one configuration the
//! tile kernels use, loaded when a kernel call starts on a thread and
//! released when it ends (`Tiles`), so no tile state outlives a call or
//! passes between threads. The instructions are `asm!` (the AMX intrinsics
//! are not stable Rust): each wrapper names the tile it uses.
//!
//! Two sets, so that one block's product runs while the last one's sums
//! are used (`Set::Even`, `Set::Odd`):
//!
//! - `tmm0` / `tmm3`: C, 16 rows × 16 `i32` sums (a weight row by a token);
//! - `tmm1` / `tmm4`: A, 16 weight rows × 32 `i8` (one block of each row);
//! - `tmm2` / `tmm5`: B, one block of 16 tokens in the VNNI layout: 8 rows
//!   of 64 bytes, row k holding each token's bytes 4k..4k+4.
//!
//! `tdpbssd tmm0, tmm1, tmm2` is then one block's exact integer dot of
//! every weight row with every token (`tdpbusd` for unsigned weights).
//! `tmm6` (16 rows × 16 bytes) and `tmm7` (4 rows × 64) hold the halves
//! of a block for the formats with a scale per 16 elements.

use core::arch::asm;
use core::arch::x86_64::*;

use super::cpu::Amx;

/// Rows (weight rows, and tokens) a tile holds.
pub(super) const TILE_ROWS: usize = 16;
/// Bytes of one block of quants (the K of one tile product).
pub(super) const BLOCK: usize = 32;
/// Bytes of one token block in the VNNI layout (B).
pub(super) const B_BYTES: usize = TILE_ROWS * BLOCK;

/// 512 bytes for a tile (A: 16 rows of 32; B: 8 rows of 64), on a cache
/// line: a tile row straddling two lines loads at half the speed (9 → 23
/// cycles a tile, measured), and stores likewise (17 → 40).
#[derive(Clone, Copy)]
#[repr(C, align(64))]
pub(super) struct TileBytes(pub(super) [u8; B_BYTES]);

/// One C tile's sums, 16 rows of 16 `i32`, on a cache line.
#[repr(C, align(64))]
pub(super) struct TileSums(pub(super) [i32; TILE_ROWS * TILE_ROWS]);

/// The 64-byte tile configuration (palette 1).
#[repr(C, align(64))]
struct Config {
    palette: u8,
    start_row: u8,
    reserved: [u8; 14],
    /// Bytes per row of each tile register.
    colsb: [u16; 16],
    /// Rows of each tile register.
    rows: [u8; 16],
}

const CONFIG: Config = {
    let mut c = Config { palette: 1, start_row: 0, reserved: [0; 14], colsb: [0; 16], rows: [0; 16] };
    let mut set = 0;
    while set < 2 {
        // C: 16 × 16 i32
        c.colsb[3 * set] = 64;
        c.rows[3 * set] = TILE_ROWS as u8;
        // A: 16 × 32 i8
        c.colsb[3 * set + 1] = BLOCK as u16;
        c.rows[3 * set + 1] = TILE_ROWS as u8;
        // B: 8 × 64 i8
        c.colsb[3 * set + 2] = 64;
        c.rows[3 * set + 2] = (BLOCK / 4) as u8;
        set += 1;
    }
    // half products (16-element groups, either set's C): A 16 × 16 i8,
    // B 4 × 64 i8
    c.colsb[6] = (BLOCK / 2) as u16;
    c.rows[6] = TILE_ROWS as u8;
    c.colsb[7] = 64;
    c.rows[7] = (BLOCK / 8) as u8;
    c
};

/// Which set of tiles a product uses.
#[derive(Clone, Copy)]
pub(super) enum Set {
    /// `tmm0`, `tmm1`, `tmm2`.
    Even,
    /// `tmm3`, `tmm4`, `tmm5`.
    Odd,
}

/// One block's product on the tiles of a set: C zeroed, A loaded from
/// `a` at `stride`, B from `b`, C = A · B.
macro_rules! dot_on {
    ($op:literal, $c_t:literal, $a_t:literal, $b_t:literal, $a:expr, $stride:expr, $b:expr) => {
        asm!(
            concat!("tilezero ", $c_t),
            concat!("tileloadd ", $a_t, ", [{a} + {stride} * 1]"),
            concat!("tileloadd ", $b_t, ", [{b} + {sixty_four} * 1]"),
            concat!($op, " ", $c_t, ", ", $a_t, ", ", $b_t),
            a = in(reg) $a,
            stride = in(reg) $stride,
            b = in(reg) $b,
            sixty_four = in(reg) 64usize,
            options(nostack, readonly),
        )
    };
}

/// The tile registers of this thread, configured for one kernel call.
pub(super) struct Tiles(());

impl Tiles {
    /// Load the configuration on this thread.
    pub(super) fn new(_: Amx) -> Tiles {
        // SAFETY: the token proves the CPU has AMX-TILE and the OS granted
        // the tile state; CONFIG is a valid palette-1 configuration
        // (64-byte aligned, every used tile within 16 rows × 64 bytes).
        unsafe { asm!("ldtilecfg [{}]", in(reg) &CONFIG, options(nostack, readonly)) };
        Tiles(())
    }

    /// Start one block's sums on `set`'s tiles: C = A · B, A 16 weight
    /// rows of 32 bytes from `a` (row i at `a + i·stride`), B one token
    /// block in the VNNI layout. The AMX unit runs its instructions in
    /// order, so a product is started before the last one's sums are
    /// stored (`store`): the store then overlaps this product.
    #[inline(always)]
    pub(super) fn dot(&mut self, set: Set, a: &[u8], stride: usize, b: &TileBytes) {
        assert!(stride >= BLOCK && a.len() >= (TILE_ROWS - 1) * stride + BLOCK);
        let (a, b) = (a.as_ptr(), b.0.as_ptr());
        // SAFETY: the tiles are configured (`self` exists only after
        // ldtilecfg); A reads 16 rows of 32 bytes at `stride` within `a`
        // (asserted), B 8 rows of 64 bytes of `b`.
        unsafe {
            match set {
                Set::Even => dot_on!("tdpbssd", "tmm0", "tmm1", "tmm2", a, stride, b),
                Set::Odd => dot_on!("tdpbssd", "tmm3", "tmm4", "tmm5", a, stride, b),
            }
        };
    }

    /// As `dot`, A's bytes unsigned (`tdpbusd`: u8 weights × i8 tokens).
    #[inline(always)]
    pub(super) fn dot_u(&mut self, set: Set, a: &[u8], stride: usize, b: &TileBytes) {
        assert!(stride >= BLOCK && a.len() >= (TILE_ROWS - 1) * stride + BLOCK);
        let (a, b) = (a.as_ptr(), b.0.as_ptr());
        // SAFETY: as `dot`'s.
        unsafe {
            match set {
                Set::Even => dot_on!("tdpbusd", "tmm0", "tmm1", "tmm2", a, stride, b),
                Set::Odd => dot_on!("tdpbusd", "tmm3", "tmm4", "tmm5", a, stride, b),
            }
        };
    }

    /// A half product into `set`'s C (`tdpbusd`, 16 elements): A 16 rows
    /// of 16 unsigned bytes from `a` at `stride`, B 4 rows of 64 bytes from
    /// `b` (half of a block's VNNI layout).
    #[inline(always)]
    pub(super) fn dot16_u(&mut self, set: Set, a: &[u8], stride: usize, b: &[u8]) {
        assert!(stride >= BLOCK / 2 && a.len() >= (TILE_ROWS - 1) * stride + BLOCK / 2 && b.len() >= B_BYTES / 2);
        let (a, b) = (a.as_ptr(), b.as_ptr());
        // SAFETY: the tiles are configured; A reads 16 rows of 16 bytes at
        // `stride` within `a`, B 4 rows of 64 bytes of `b` (asserted).
        unsafe {
            match set {
                Set::Even => dot_on!("tdpbusd", "tmm0", "tmm6", "tmm7", a, stride, b),
                Set::Odd => dot_on!("tdpbusd", "tmm3", "tmm6", "tmm7", a, stride, b),
            }
        };
    }

    /// `set`'s sums (C) as 16 rows of 16 `i32` into `c`.
    #[inline(always)]
    pub(super) fn store(&mut self, set: Set, c: &mut TileSums) {
        let c = c.0.as_mut_ptr();
        // SAFETY: the tiles are configured; C stores 16 rows of 64 bytes,
        // the 1024 of `c`.
        unsafe {
            match set {
                Set::Even => {
                    asm!("tilestored [{c} + {s} * 1], tmm0", c = in(reg) c, s = in(reg) 64usize, options(nostack))
                }
                Set::Odd => {
                    asm!("tilestored [{c} + {s} * 1], tmm3", c = in(reg) c, s = in(reg) 64usize, options(nostack))
                }
            }
        };
    }
}

impl Drop for Tiles {
    fn drop(&mut self) {
        // SAFETY: releasing the tile state is always allowed once granted.
        unsafe { asm!("tilerelease", options(nostack, nomem)) };
    }
}

/// 16 rows of 32 signed bytes (`row(i)`, zeros where `None`) in the VNNI
/// layout of a B tile: row k holds each source row's bytes 4k..4k+4, row
/// i's at 4·i.
///
/// The sources' 8 words are a 16 × 8 matrix of `u32` whose transpose is
/// the layout: rows i and i + 8 share a register (one in each half), and
/// each half is transposed as an 8 × 8 matrix, so row k comes out as
/// sources 0..8 then 8..16.
#[inline]
#[target_feature(enable = "avx2,avx512f,avx512bw,avx512vl")]
pub(super) fn vnni_layout<'a>(row: impl Fn(usize) -> Option<&'a [i8; 32]>) -> TileBytes {
    let quants = |i: usize| -> __m256i {
        match row(i) {
            // SAFETY: 32 bytes, the 32 of the row.
            Some(q) => unsafe { _mm256_loadu_si256(q.as_ptr().cast()) },
            None => _mm256_setzero_si256(),
        }
    };
    let r: [__m512i; 8] =
        core::array::from_fn(|i| _mm512_inserti64x4::<1>(_mm512_castsi256_si512(quants(i)), quants(i + 8)));
    let t = |x: usize, y: usize, hi: bool| {
        if hi {
            _mm512_unpackhi_epi32(r[x], r[y])
        } else {
            _mm512_unpacklo_epi32(r[x], r[y])
        }
    };
    let (t0, t1, t2, t3) = (t(0, 1, false), t(0, 1, true), t(2, 3, false), t(2, 3, true));
    let (t4, t5, t6, t7) = (t(4, 5, false), t(4, 5, true), t(6, 7, false), t(6, 7, true));
    let u = [
        _mm512_unpacklo_epi64(t0, t2),
        _mm512_unpackhi_epi64(t0, t2),
        _mm512_unpacklo_epi64(t1, t3),
        _mm512_unpackhi_epi64(t1, t3),
        _mm512_unpacklo_epi64(t4, t6),
        _mm512_unpackhi_epi64(t4, t6),
        _mm512_unpacklo_epi64(t5, t7),
        _mm512_unpackhi_epi64(t5, t7),
    ];
    // words k (u[k]'s 128-bit lanes 0 and 2, beside u[k + 4]'s) and k + 4
    // (lanes 1 and 3)
    let lo = _mm512_set_epi64(13, 12, 5, 4, 9, 8, 1, 0);
    let hi = _mm512_set_epi64(15, 14, 7, 6, 11, 10, 3, 2);
    let mut out = TileBytes([0; B_BYTES]);
    for k in 0..4 {
        let row_k = _mm512_permutex2var_epi64(u[k], lo, u[k + 4]);
        let row_k4 = _mm512_permutex2var_epi64(u[k], hi, u[k + 4]);
        let (dst, dst4) = out.0.split_at_mut((k + 4) * 64);
        // SAFETY: 64 bytes into each of rows k and k + 4 of the 512.
        unsafe {
            _mm512_storeu_si512(dst[k * 64..].as_mut_ptr().cast(), row_k);
            _mm512_storeu_si512(dst4.as_mut_ptr().cast(), row_k4);
        }
    }
    out
}

/// The first `nr` of 16 rows' sums, each 16 tokens from token `t0` (fewer
/// at the end), into `out` (row i's token t at `i·n_tok + t`).
#[inline]
#[target_feature(enable = "avx512f")]
pub(super) fn store_sums(acc: &[__m512; TILE_ROWS], nr: usize, out: &mut [f32], n_tok: usize, t0: usize) {
    let nt = TILE_ROWS.min(n_tok - t0);
    let mask: __mmask16 = ((1u32 << nt) - 1) as u16;
    for (i, acc) in acc.iter().enumerate().take(nr) {
        let o = &mut out[i * n_tok + t0..][..nt];
        // SAFETY: the mask writes the first `nt` floats, all in `o`.
        unsafe { _mm512_mask_storeu_ps(o.as_mut_ptr(), mask, *acc) };
    }
}
