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
//! every weight row with every token.

use core::arch::asm;

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
    ($c_t:literal, $a_t:literal, $b_t:literal, $a:expr, $stride:expr, $b:expr) => {
        asm!(
            concat!("tilezero ", $c_t),
            concat!("tileloadd ", $a_t, ", [{a} + {stride} * 1]"),
            concat!("tileloadd ", $b_t, ", [{b} + {sixty_four} * 1]"),
            concat!("tdpbssd ", $c_t, ", ", $a_t, ", ", $b_t),
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
                Set::Even => dot_on!("tmm0", "tmm1", "tmm2", a, stride, b),
                Set::Odd => dot_on!("tmm3", "tmm4", "tmm5", a, stride, b),
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
