//! x86-64 backends: `Avx2` (AVX2, FMA, F16C), `Avx512` (adding AVX-512
//! BW/VL and VNNI) and `Amx` (adding AMX-TILE and AMX-INT8, granted by the
//! OS). Each is a capability token (`cpu.rs`): it exists only when the CPU
//! has the features, and every kernel entry takes one as its proof. `matmul` below is the one place that decides which kernel runs
//! which (activations, weight type, capability); the kernels are arranged
//! by role:
//!
//! - `simd`: helpers every kernel shares (loads, sums, transposes, tiles);
//! - `legacy` / `legacy_prefill` / `legacy_vnni` / `legacy_amx`: the
//!   32-element formats (IQ4_NL's table looked up with `vpshufb`), AVX2 /
//!   AVX2 prefill in 8-row tiles / VNNI / AMX tiles in prefill (`tiles`:
//!   the tile registers); `rows8`: Q4_0, Q5_0, Q8_0 and IQ4_NL from their 8-row
//!   interleaved copy made at load (VNNI);
//! - `kunpack`, `kquant` / `kquant_prefill` / `kquant_vnni` / `kquant_amx`:
//!   the K-quants' unpacking, their AVX2 kernels / AVX2 and VNNI prefill
//!   tiles / AMX tiles in prefill; `kquant_rows8`: Q4_K and Q6_K from their
//!   8-row interleaved copy (VNNI);
//! - `iq4_xs`: IQ4_XS, its table's values by the sign trick (AVX2), or
//!   plus 128 in `vpdpbusd` (AVX-512 VNNI), 8 rows at a time;
//! - `exact` / `exact512`: f32 activations (the oracle path), AVX2 / four
//!   rows by four tokens in AVX-512 registers;
//! - `attention`, `exp`: attention and the exponential (softmax, SiLU);
//! - `quantize`: the activations' 8-bit blocks in AVX-512;
//! - `reference`: core's scalar kernels compiled with AVX2 for the rest.
//!
//! Every kernel equals the scalar reference bit for bit (the conformance
//! suite checks each backend).

mod attention;
mod cpu;
mod exact;
mod exact512;
mod exp;
mod iq4_xs;
mod kquant;
mod kquant_amx;
mod kquant_prefill;
mod kquant_rows8;
mod kquant_vnni;
mod kunpack;
mod layout;
mod legacy;
mod legacy_amx;
mod legacy_prefill;
mod legacy_vnni;
mod lora;
mod quantize;
mod reference;
mod rows8;
mod simd;
mod tiles;

use core::ops::Range;

use tern_core::backend::quant::{BlockQ8K, BlockQ8_0, BlockQ8_1, GgmlType};
use tern_core::backend::{Acts, Cached, Kernels, QMatrix, Queries};

pub use cpu::{Amx, Avx2, Avx512};
use kunpack::{KQuant, Q2K, Q3K, Q4K, Q5K, Q6K};
use legacy::{Act32, Block32, Iq4Nl, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0};
use simd::PREFILL_TILE;

/// Which backend a call runs on.
#[derive(Clone, Copy)]
enum Cpu {
    Avx2(Avx2),
    Avx512(Avx512),
    Amx(Amx),
}

impl Cpu {
    fn avx2(self) -> Avx2 {
        match self {
            Cpu::Avx2(t) => t,
            Cpu::Avx512(t) => t.avx2(),
            Cpu::Amx(t) => t.avx512().avx2(),
        }
    }
    fn avx512(self) -> Option<Avx512> {
        match self {
            Cpu::Avx2(_) => None,
            Cpu::Avx512(t) => Some(t),
            Cpu::Amx(t) => Some(t.avx512()),
        }
    }
    fn amx(self) -> Option<Amx> {
        match self {
            Cpu::Amx(t) => Some(t),
            _ => None,
        }
    }
}

/// Fewest tokens for which the AMX kernels run (fewer stay on VNNI): the
/// measured crossover (bench/NOTES A3, Qwen Q4_K_M, 1 thread, every matmul
/// on tiles against VNNI): pp4 −40 %, pp8 −28 %, pp12 −13 %, pp16 equal,
/// pp24 +5 %.
const AMX_MIN_TOKENS: usize = 16;

/// Fewest tokens for a K-quant's 8-row VNNI tiles (fewer: AVX2's rows),
/// measured (`examples/small_batch`, 4864 columns, n tokens' time over
/// one's): Q6_K 4 tokens 1.50 → 1.20–1.42, 7: 1.88 → 1.55–1.61; Q4_K no
/// better below 8 (2 tokens 0.88 → 1.70).
fn kquant_vnni_min(ty: GgmlType) -> usize {
    match ty {
        GgmlType::Q6_K => 4,
        _ => PREFILL_TILE,
    }
}

/// `out = W · x` for `rows` (as `scalar::matmul_rows`): the kernel for
/// these activations, this weight type and this CPU.
fn matmul(cpu: Cpu, w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    use GgmlType as T;
    let avx2 = cpu.avx2();
    match (x, w.ty) {
        (Acts::F32(a), _) => match cpu.avx512() {
            Some(t) => exact512::matmul_rows(t, w, a, n_tok, rows, out),
            None => exact::matmul_rows(avx2, w, a, n_tok, rows, out),
        },
        (Acts::Q8_0(a), T::Q4_0) => offset_format::<Q4_0>(cpu, w, x, a, n_tok, rows, out),
        (Acts::Q8_0(a), T::Q5_0) => offset_format::<Q5_0>(cpu, w, x, a, n_tok, rows, out),
        (Acts::Q8_0(a), T::Q8_0) => offset_format::<Q8_0>(cpu, w, x, a, n_tok, rows, out),
        (Acts::Q8_0(a), T::IQ4_NL) => offset_format::<Iq4Nl>(cpu, w, x, a, n_tok, rows, out),
        // VNNI measured no better for the formats with a min (SmolLM2 pp
        // 308-355 vs 324-331 tok/s, by build): AVX2 for both backends
        (Acts::Q8_1(a), T::Q4_1) => legacy_avx2::<Q4_1, _>(avx2, w, x, a, n_tok, rows, out),
        (Acts::Q8_1(a), T::Q5_1) => legacy_avx2::<Q5_1, _>(avx2, w, x, a, n_tok, rows, out),
        (Acts::Q8K(a), T::Q2_K) => k_quant::<Q2K>(cpu, w, a, n_tok, rows, out),
        (Acts::Q8K(a), T::Q3_K) => k_quant::<Q3K>(cpu, w, a, n_tok, rows, out),
        (Acts::Q8K(a), T::Q4_K) => k_quant::<Q4K>(cpu, w, a, n_tok, rows, out),
        (Acts::Q8K(a), T::Q5_K) => k_quant::<Q5K>(cpu, w, a, n_tok, rows, out),
        (Acts::Q8K(a), T::Q6_K) => k_quant::<Q6K>(cpu, w, a, n_tok, rows, out),
        (Acts::Q8K(a), T::IQ4_XS) => match cpu.avx512() {
            Some(vnni) => iq4_xs::matmul_rows_vnni(vnni, w, a, n_tok, rows, out),
            None => iq4_xs::matmul_rows(avx2, w, a, n_tok, rows, out),
        },
        _ => reference::matmul_rows(avx2, w, x, n_tok, rows, out),
    }
}

/// A 32-element format without a min that has an interleaved copy at
/// load (Q4_0, Q5_0, Q8_0, IQ4_NL): with AVX-512 from the copy where the model
/// has one (Qwen pp128 +20 % for VNNI), but not where AMX tiles take a
/// prefill; else as `file_format`.
fn offset_format<T: rows8::Interleaved>(
    cpu: Cpu,
    w: &QMatrix,
    x: Acts,
    a: &[BlockQ8_0],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
) {
    let tiles = cpu.amx().is_some() && n_tok >= AMX_MIN_TOKENS;
    match cpu.avx512() {
        Some(vnni) if !tiles && !w.rows8.is_empty() => rows8::matmul_rows::<T>(vnni, w, x, a, n_tok, rows, out),
        _ => file_format::<T>(cpu, w, x, a, n_tok, rows, out),
    }
}

/// A 32-element format without a min from the file's blocks: AMX tiles in prefill if granted, VNNI if the CPU
/// has it, else AVX2 (prefill in 8-row tiles first).
fn file_format<T: Block32>(
    cpu: Cpu,
    w: &QMatrix,
    x: Acts,
    a: &[BlockQ8_0],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
) {
    match (cpu.amx(), cpu.avx512()) {
        (Some(amx), _) if n_tok >= AMX_MIN_TOKENS => legacy_amx::matmul_rows::<T>(amx, w, a, n_tok, rows, out),
        (_, Some(vnni)) => legacy_vnni::matmul_rows::<T>(vnni, w, x, a, n_tok, rows, out),
        (_, None) => legacy_avx2::<T, _>(cpu.avx2(), w, x, a, n_tok, rows, out),
    }
}

/// A 32-element format with AVX2 alone (and, for all backends, the formats
/// with a min, Q4_1 and Q5_1): prefill in 8-row tiles first, then (and for
/// decode) 4-row ones.
fn legacy_avx2<T: Block32, A: Act32>(
    avx2: Avx2,
    w: &QMatrix,
    x: Acts,
    a: &[A],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
) {
    let done =
        if n_tok >= PREFILL_TILE { legacy_prefill::groups8::<T, A>(avx2, w, a, n_tok, rows.clone(), out) } else { 0 };
    let (rows, out) = (rows.start + done..rows.end, &mut out[done * n_tok..]);
    legacy::matmul_rows::<T, A>(avx2, w, x, a, n_tok, rows, out)
}

/// A K-quant: prefill on AMX tiles where granted; else with AVX-512 from
/// the 8-row interleaved copy where the model has one (the rows outside
/// whole groups as below); else from the file's blocks (`k_quant_file`).
fn k_quant<K: KQuant>(cpu: Cpu, w: &QMatrix, a: &[BlockQ8K], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    if let Some(amx) = cpu.amx().filter(|_| n_tok >= AMX_MIN_TOKENS) {
        return kquant_amx::matmul_rows::<K>(amx, w, a, n_tok, rows, out);
    }
    match cpu.avx512() {
        Some(t) if !w.rows8.is_empty() => {
            let file = |rows: Range<usize>, out: &mut [f32]| k_quant_file::<K>(cpu, w, a, n_tok, rows, out);
            rows8::by_groups(rows, n_tok, out, file, |gs, out| {
                if !kquant_rows8::matmul_groups(t, w, a, n_tok, gs.clone(), out) {
                    file(gs.start * simd::ROWS..gs.end * simd::ROWS, out)
                }
            })
        }
        _ => k_quant_file::<K>(cpu, w, a, n_tok, rows, out),
    }
}

/// A K-quant from the file's blocks: with AVX-512 in 8-row VNNI tiles,
/// then 4-row tiles of 8 tokens; with AVX2 alone in 8-row tiles, then
/// 4-row ones; decode always AVX2's rows (measured: Qwen tg 1 thread 38
/// vs 28 tok/s with the 4-token tiles).
fn k_quant_file<K: KQuant>(cpu: Cpu, w: &QMatrix, a: &[BlockQ8K], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    match cpu.avx512() {
        Some(t) if n_tok >= kquant_vnni_min(w.ty) => {
            let done = kquant_vnni::groups8::<K>(t, w, a, n_tok, rows.clone(), out);
            let (rows, out) = (rows.start + done..rows.end, &mut out[done * n_tok..]);
            kquant::matmul_rows_prefill::<K>(t, w, a, n_tok, rows, out)
        }
        None if n_tok >= PREFILL_TILE => {
            let done = kquant_prefill::groups8::<K>(cpu.avx2(), w, a, n_tok, rows.clone(), out);
            let (rows, out) = (rows.start + done..rows.end, &mut out[done * n_tok..]);
            kquant::matmul_rows::<K>(cpu.avx2(), w, a, n_tok, rows, out)
        }
        _ => kquant::matmul_rows::<K>(cpu.avx2(), w, a, n_tok, rows, out),
    }
}

impl Kernels for Avx2 {
    fn name(&self) -> &'static str {
        "avx2"
    }
    fn matmul_rows(&self, w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
        matmul(Cpu::Avx2(*self), w, x, n_tok, rows, out)
    }
    fn transpose(&self, src: &[f32], n_src: usize, t0: usize, nt: usize, out: &mut [f32], stride: usize) {
        layout::transpose(*self, src, n_src, t0, nt, out, stride)
    }
    fn quantize_q8_0(&self, x: &[f32], out: &mut [BlockQ8_0]) {
        reference::quantize_q8_0(*self, x, out)
    }
    fn quantize_q8_1(&self, x: &[f32], out: &mut [BlockQ8_1]) {
        reference::quantize_q8_1(*self, x, out)
    }
    fn quantize_q8_k(&self, x: &[f32], out: &mut [BlockQ8K]) {
        reference::quantize_q8_k(*self, x, out)
    }
    fn rms_norm(&self, x: &[f32], w: &[f32], eps: f32, o: &mut [f32]) {
        reference::rms_norm(*self, x, w, eps, o)
    }
    fn attention_queries(&self, qs: Queries, kv: Cached, work: &mut [f32], out: &mut [f32]) {
        attention::attention_queries(*self, qs, kv, work, out)
    }
    fn lora_up(&self, bt: &QMatrix, cols: Range<usize>, mid: &[f32], scale: f32, out: &mut [f32]) {
        lora::lora_up(*self, bt, cols, mid, scale, out)
    }
    fn swiglu(&self, g: &mut [f32], u: &[f32]) {
        exp::swiglu(*self, g, u)
    }
    fn geglu(&self, g: &mut [f32], u: &[f32]) {
        exp::geglu(*self, g, u)
    }
}

/// The types whose 8-row interleaved copy the VNNI kernels read.
fn reads_rows8(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 | GgmlType::IQ4_NL) || kquant_rows8::reads(ty)
}

impl Kernels for Avx512 {
    fn name(&self) -> &'static str {
        "avx512"
    }
    fn reads_rows8(&self, ty: GgmlType) -> bool {
        reads_rows8(ty)
    }
    fn matmul_rows(&self, w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
        matmul(Cpu::Avx512(*self), w, x, n_tok, rows, out)
    }
    fn transpose(&self, src: &[f32], n_src: usize, t0: usize, nt: usize, out: &mut [f32], stride: usize) {
        layout::transpose(self.avx2(), src, n_src, t0, nt, out, stride)
    }
    fn quantize_q8_0(&self, x: &[f32], out: &mut [BlockQ8_0]) {
        quantize::rows_q8_0(*self, x, out)
    }
    fn quantize_q8_1(&self, x: &[f32], out: &mut [BlockQ8_1]) {
        quantize::rows_q8_1(*self, x, out)
    }
    fn quantize_q8_k(&self, x: &[f32], out: &mut [BlockQ8K]) {
        quantize::rows_q8_k(*self, x, out)
    }
    fn rms_norm(&self, x: &[f32], w: &[f32], eps: f32, o: &mut [f32]) {
        reference::rms_norm(self.avx2(), x, w, eps, o)
    }
    fn attention_queries(&self, qs: Queries, kv: Cached, work: &mut [f32], out: &mut [f32]) {
        attention::attention_queries(self.avx2(), qs, kv, work, out)
    }
    fn lora_up(&self, bt: &QMatrix, cols: Range<usize>, mid: &[f32], scale: f32, out: &mut [f32]) {
        lora::lora_up(self.avx2(), bt, cols, mid, scale, out)
    }
    fn swiglu(&self, g: &mut [f32], u: &[f32]) {
        exp::swiglu(self.avx2(), g, u)
    }
    fn geglu(&self, g: &mut [f32], u: &[f32]) {
        exp::geglu(self.avx2(), g, u)
    }
}

/// AVX-512's kernels, with AMX tiles for the matmuls that have them.
impl Kernels for Amx {
    fn name(&self) -> &'static str {
        "amx"
    }
    fn reads_rows8(&self, ty: GgmlType) -> bool {
        reads_rows8(ty)
    }
    fn matmul_rows(&self, w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
        matmul(Cpu::Amx(*self), w, x, n_tok, rows, out)
    }
    fn transpose(&self, src: &[f32], n_src: usize, t0: usize, nt: usize, out: &mut [f32], stride: usize) {
        self.avx512().transpose(src, n_src, t0, nt, out, stride)
    }
    fn quantize_q8_0(&self, x: &[f32], out: &mut [BlockQ8_0]) {
        self.avx512().quantize_q8_0(x, out)
    }
    fn quantize_q8_1(&self, x: &[f32], out: &mut [BlockQ8_1]) {
        self.avx512().quantize_q8_1(x, out)
    }
    fn quantize_q8_k(&self, x: &[f32], out: &mut [BlockQ8K]) {
        self.avx512().quantize_q8_k(x, out)
    }
    fn rms_norm(&self, x: &[f32], w: &[f32], eps: f32, o: &mut [f32]) {
        self.avx512().rms_norm(x, w, eps, o)
    }
    fn attention_queries(&self, qs: Queries, kv: Cached, work: &mut [f32], out: &mut [f32]) {
        self.avx512().attention_queries(qs, kv, work, out)
    }
    fn lora_up(&self, bt: &QMatrix, cols: Range<usize>, mid: &[f32], scale: f32, out: &mut [f32]) {
        self.avx512().lora_up(bt, cols, mid, scale, out)
    }
    fn swiglu(&self, g: &mut [f32], u: &[f32]) {
        self.avx512().swiglu(g, u)
    }
    fn geglu(&self, g: &mut [f32], u: &[f32]) {
        self.avx512().geglu(g, u)
    }
}
