//! aarch64 backends: `neon` (the baseline every aarch64 CPU has),
//! `dotprod` (`sdot`, where the CPU has it) and `i8mm` (`smmla` 2×2 tiles
//! for the legacy formats, with dotprod for the rest). `neon` and `dotprod`
//! run the same kernels, generic over the 8-bit dot. All equal the scalar
//! reference bit for bit.

mod attn;
mod dots;
mod exact;
mod matmul;
mod mmla;
mod unpack;

use core::ops::Range;

use tern_core::backend::{tiles, Acts, Cached, Kernels, QMatrix, Queries};

/// One aarch64 kernel set: its name, the CPU features it needs, and its
/// matmul compiled for them (a thin `#[target_feature]` wrapper over the
/// generic loop).
pub trait Variant: Copy + Send + Sync + 'static {
    /// The name `TERN_KERNELS` selects it by.
    const NAME: &'static str;
    /// Whether this CPU has its features.
    fn detected() -> bool;
    /// Rows `rows` of `w · x` into `out`.
    ///
    /// # Safety
    /// The CPU has the variant's features (`detected()` was true).
    unsafe fn matmul_rows(w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]);
}

/// An aarch64 backend: the variant's matmul, NEON attention.
#[derive(Clone, Copy)]
pub struct Backend<V: Variant>(V);

/// The baseline: NEON's widening multiplies for the 8-bit dots.
pub type Neon = Backend<NeonSet>;
/// `sdot` for the 8-bit dots.
pub type NeonDot = Backend<DotSet>;
/// `smmla` 2×2 tiles for the legacy formats, `sdot` for the rest.
pub type NeonI8mm = Backend<I8mmSet>;

impl<V: Variant + Default> Backend<V> {
    /// The backend, where the CPU has its features.
    pub fn new() -> Option<Self> {
        V::detected().then(|| Backend(V::default()))
    }
}

impl<V: Variant> Kernels for Backend<V> {
    fn name(&self) -> &'static str {
        V::NAME
    }
    fn matmul_rows(&self, w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
        // SAFETY: a `Backend<V>` exists only where `V::detected()` (`new`).
        unsafe { V::matmul_rows(w, x, n_tok, rows, out) }
    }
    fn attention_queries(&self, qs: Queries, kv: Cached, work: &mut [f32], out: &mut [f32]) {
        tiles::attention(&attn::Neon, qs, kv, work, out)
    }
}

/// NEON's widening multiplies.
#[derive(Clone, Copy, Default)]
pub struct NeonSet;
/// `sdot`.
#[derive(Clone, Copy, Default)]
pub struct DotSet;
/// `smmla`, and `sdot`.
#[derive(Clone, Copy, Default)]
pub struct I8mmSet;

impl Variant for NeonSet {
    const NAME: &'static str = "neon";
    fn detected() -> bool {
        true // every aarch64 CPU has NEON
    }
    #[target_feature(enable = "neon")]
    unsafe fn matmul_rows(w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
        matmul::matmul_rows::<dots::Plain>(w, x, n_tok, rows, out)
    }
}

impl Variant for DotSet {
    const NAME: &'static str = "dotprod";
    fn detected() -> bool {
        std::arch::is_aarch64_feature_detected!("dotprod")
    }
    #[target_feature(enable = "neon,dotprod")]
    unsafe fn matmul_rows(w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
        matmul::matmul_rows::<dots::Sdot>(w, x, n_tok, rows, out)
    }
}

impl Variant for I8mmSet {
    const NAME: &'static str = "i8mm";
    fn detected() -> bool {
        std::arch::is_aarch64_feature_detected!("dotprod") && std::arch::is_aarch64_feature_detected!("i8mm")
    }
    #[target_feature(enable = "neon,dotprod,i8mm")]
    unsafe fn matmul_rows(w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
        mmla::matmul_rows(w, x, n_tok, rows, out)
    }
}
