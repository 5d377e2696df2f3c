//! The 32-element formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL) with AVX2,
//! four weight rows at a time: each block's exact i32 dot per row, then the
//! per-row float update `acc + ((dw · da) · isum [+ m · s])` lane-wise on
//! four rows — the scalar reference's expression and order, so the results
//! are its bits. The formats' unpacking (`Block32`) is shared with the
//! VNNI kernels (`legacy_vnni`).

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::backend::quant::{iq4_nl, q4_0, q4_1, q5_0, q5_1, q8_0, BlockQ8_0, BlockQ8_1, QK8};
use tern_core::backend::{Acts, QMatrix};

use super::cpu::Avx2;
use super::simd::{
    each_group4, f16x4, hsum4, load16_at, load32, load32_at, prefetch, tiles, to_array, PREFETCH, R, TILE,
};

/// A legacy format: its block's quants as 32 unsigned bytes `u`, the
/// weight being `u - OFFSET` (times the scale, plus the min).
pub(super) trait Block32 {
    const BYTES: usize;
    /// 0 for the formats with a min (Q4_1, Q5_1); Q8_0 is stored signed
    /// and read as `q ^ 0x80 = q + 128`.
    const OFFSET: i8;
    /// Byte offset of the f16 scale `d`, and of the min `m` (formats with
    /// one).
    const D_AT: usize;
    const M_AT: usize;
    /// The block's 32 quants as unsigned bytes.
    ///
    /// # Safety
    /// The CPU has AVX2.
    unsafe fn unsigned(b: &[u8]) -> __m256i;
    /// The same with AVX-512 BW/VL at hand.
    ///
    /// # Safety
    /// The CPU has AVX2 and AVX-512 BW/VL.
    #[inline(always)]
    unsafe fn unsigned_512(b: &[u8]) -> __m256i {
        // SAFETY: the caller's guarantee includes AVX2.
        unsafe { Self::unsigned(b) }
    }
}

pub(super) struct Q4_0;
pub(super) struct Q4_1;
pub(super) struct Q5_0;
pub(super) struct Q5_1;
pub(super) struct Q8_0;
pub(super) struct Iq4Nl;

/// 16 packed bytes → 32 nibbles: low nibbles then high nibbles.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn nibbles(b: &[u8], at: usize) -> __m256i {
    let x = _mm256_broadcastsi128_si256(load16_at(b, at));
    // the upper copy shifted down a nibble
    let x = _mm256_srlv_epi64(x, _mm256_set_epi64x(4, 4, 0, 0));
    _mm256_and_si256(x, _mm256_set1_epi8(0x0F))
}

/// 32 bits → 32 bytes, 0xFF where the bit is set (ggml's bytes_from_bits_32).
#[inline]
#[target_feature(enable = "avx2")]
fn bits_to_bytes(x: u32) -> __m256i {
    let shuf = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
    let bytes = _mm256_shuffle_epi8(_mm256_set1_epi32(x as i32), shuf);
    let bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe));
    _mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1))
}

/// `u + 16` in the bytes whose bit of `qh` is set (ggml's fifth bit).
#[inline]
#[target_feature(enable = "avx512bw,avx512vl")]
pub(super) fn add_fifth_bits(u: __m256i, qh: u32) -> __m256i {
    _mm256_mask_add_epi8(u, qh, u, _mm256_set1_epi8(0x10))
}

/// Nibbles plus a fifth bit from `qh`, with AVX2.
#[inline]
#[target_feature(enable = "avx2")]
fn five_bits(b: &[u8], qs: usize, qh: u32) -> __m256i {
    _mm256_or_si256(nibbles(b, qs), _mm256_and_si256(bits_to_bytes(qh), _mm256_set1_epi8(0x10)))
}

pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Block32 for Q4_0 {
    const BYTES: usize = q4_0::BLOCK_BYTES;
    const OFFSET: i8 = 8;
    const D_AT: usize = q4_0::D;
    const M_AT: usize = q4_0::D;
    #[inline(always)]
    unsafe fn unsigned(b: &[u8]) -> __m256i {
        // SAFETY: the caller guarantees AVX2 (the contract of `unsigned`).
        unsafe { nibbles(b, q4_0::QS) }
    }
}

impl Block32 for Q4_1 {
    const BYTES: usize = q4_1::BLOCK_BYTES;
    const OFFSET: i8 = 0;
    const D_AT: usize = q4_1::D;
    const M_AT: usize = q4_1::M;
    #[inline(always)]
    unsafe fn unsigned(b: &[u8]) -> __m256i {
        // SAFETY: the caller guarantees AVX2 (the contract of `unsigned`).
        unsafe { nibbles(b, q4_1::QS) }
    }
}

impl Block32 for Q5_0 {
    const BYTES: usize = q5_0::BLOCK_BYTES;
    const OFFSET: i8 = 16;
    const D_AT: usize = q5_0::D;
    const M_AT: usize = q5_0::D;
    #[inline(always)]
    unsafe fn unsigned(b: &[u8]) -> __m256i {
        // SAFETY: the caller guarantees AVX2 (the contract of `unsigned`).
        unsafe { five_bits(b, q5_0::QS, u32_at(b, q5_0::QH)) }
    }
    #[inline(always)]
    unsafe fn unsigned_512(b: &[u8]) -> __m256i {
        // SAFETY: the caller guarantees AVX-512 BW/VL (the contract of
        // `unsigned_512`).
        unsafe { add_fifth_bits(nibbles(b, q5_0::QS), u32_at(b, q5_0::QH)) }
    }
}

impl Block32 for Q5_1 {
    const BYTES: usize = q5_1::BLOCK_BYTES;
    const OFFSET: i8 = 0;
    const D_AT: usize = q5_1::D;
    const M_AT: usize = q5_1::M;
    #[inline(always)]
    unsafe fn unsigned(b: &[u8]) -> __m256i {
        // SAFETY: the caller guarantees AVX2 (the contract of `unsigned`).
        unsafe { five_bits(b, q5_1::QS, u32_at(b, q5_1::QH)) }
    }
    #[inline(always)]
    unsafe fn unsigned_512(b: &[u8]) -> __m256i {
        // SAFETY: the caller guarantees AVX-512 BW/VL (the contract of
        // `unsigned_512`).
        unsafe { add_fifth_bits(nibbles(b, q5_1::QS), u32_at(b, q5_1::QH)) }
    }
}

impl Block32 for Q8_0 {
    const BYTES: usize = q8_0::BLOCK_BYTES;
    const OFFSET: i8 = -128;
    const D_AT: usize = q8_0::D;
    const M_AT: usize = q8_0::D;
    #[inline(always)]
    unsafe fn unsigned(b: &[u8]) -> __m256i {
        // SAFETY: the caller guarantees AVX2 (the contract of `unsigned`).
        unsafe { _mm256_xor_si256(load32_at(b, q8_0::QS), _mm256_set1_epi8(-128)) }
    }
}

impl Block32 for Iq4Nl {
    const BYTES: usize = iq4_nl::BLOCK_BYTES;
    // its values, signed bytes, go as Q8_0's do (read plus 128)
    const OFFSET: i8 = -128;
    const D_AT: usize = iq4_nl::D;
    const M_AT: usize = iq4_nl::D;
    #[inline(always)]
    unsafe fn unsigned(b: &[u8]) -> __m256i {
        // SAFETY: the caller guarantees AVX2 (the contract of `unsigned`);
        // the table has 16 bytes.
        unsafe {
            let table =
                _mm256_broadcastsi128_si256(_mm_loadu_si128(iq4_nl::KVALUES_PLUS_128.as_ptr() as *const __m128i));
            _mm256_shuffle_epi8(table, nibbles(b, iq4_nl::QS))
        }
    }
}

/// An 8-bit activation block paired with 32-element weights: Q8_0, or Q8_1
/// whose sum term `m * s` the formats with a min add.
pub(super) trait Act32 {
    fn qs(&self) -> &[i8; QK8];
    fn d(&self) -> f32;
    /// `t + m * s` for Q8_1; `t` for Q8_0 (which has no such term).
    fn with_offset(&self, t: __m128, m: __m128) -> __m128;
    /// The same on 8 rows.
    ///
    /// # Safety
    /// The CPU has AVX.
    unsafe fn with_offset8(&self, t: __m256, m: __m256) -> __m256;
}

impl Act32 for BlockQ8_0 {
    fn qs(&self) -> &[i8; QK8] {
        &self.qs
    }
    fn d(&self) -> f32 {
        self.d
    }
    #[inline(always)]
    fn with_offset(&self, t: __m128, _: __m128) -> __m128 {
        t
    }
    #[inline(always)]
    unsafe fn with_offset8(&self, t: __m256, _: __m256) -> __m256 {
        t
    }
}

impl Act32 for BlockQ8_1 {
    fn qs(&self) -> &[i8; QK8] {
        &self.qs
    }
    fn d(&self) -> f32 {
        self.d
    }
    #[inline(always)]
    fn with_offset(&self, t: __m128, m: __m128) -> __m128 {
        // SAFETY: SSE, which every x86-64 CPU has.
        unsafe { _mm_add_ps(t, _mm_mul_ps(m, _mm_set1_ps(self.s))) }
    }
    #[inline(always)]
    unsafe fn with_offset8(&self, t: __m256, m: __m256) -> __m256 {
        // SAFETY: the caller guarantees AVX (the contract of `with_offset8`).
        unsafe { _mm256_add_ps(t, _mm256_mul_ps(m, _mm256_set1_ps(self.s))) }
    }
}

/// How a kernel set takes a 32-element block's exact dot: the weights
/// unpacked once per block, a per-token correction computed once per
/// token and block, and the dot of weights and activations.
pub(super) trait Dot32 {
    /// The per-token correction (none for AVX2's sign trick).
    type Corr: Copy;
    /// A row's block, unpacked for `dot`.
    ///
    /// # Safety
    /// The CPU has the implementor's features.
    unsafe fn weights<T: Block32>(b: &[u8]) -> __m256i;
    /// The correction of activations `a`.
    ///
    /// # Safety
    /// As `weights`.
    unsafe fn corr<T: Block32>(a: __m256i) -> Self::Corr;
    /// The exact dot of `w` with `a`, as 8 partial i32 sums.
    ///
    /// # Safety
    /// As `weights`.
    unsafe fn dot<T: Block32>(w: __m256i, a: __m256i, c: Self::Corr) -> __m256i;
}

/// Four rows × up to `NT` tokens (`t0..t0 + nt`) of a legacy format:
/// the one loop, compiled for each kernel set's features by its thin
/// wrapper (`rows_avx2` here, `legacy_vnni::rows_vnni`). Each (row,
/// token) accumulates its blocks in order, as the reference.
///
/// # Safety
/// The CPU has AVX2, FMA, F16C and what `D` needs.
#[inline(always)]
pub(super) unsafe fn rows_32<D: Dot32, T: Block32, A: Act32, const NT: usize>(
    rws: &[&[u8]; R],
    a: &[A],
    nb: usize,
    t0: usize,
    nt: usize,
) -> [[f32; 4]; NT] {
    let ts = T::BYTES;
    // SAFETY: SSE is baseline on x86-64.
    let mut acc = unsafe { [_mm_setzero_ps(); NT] };
    for b in 0..nb {
        let o = b * ts;
        // SAFETY: the caller guarantees AVX2, FMA, F16C and what `D`
        // needs; each unpacked slice is one whole block of a row.
        unsafe {
            prefetch(rws, o + PREFETCH);
            let w = [
                D::weights::<T>(&rws[0][o..o + ts]),
                D::weights::<T>(&rws[1][o..o + ts]),
                D::weights::<T>(&rws[2][o..o + ts]),
                D::weights::<T>(&rws[3][o..o + ts]),
            ];
            let dw = f16x4!(rws, o + T::D_AT);
            // the rows' mins, for the formats that have them
            let m = if T::OFFSET == 0 { f16x4!(rws, o + T::M_AT) } else { _mm_setzero_ps() };
            for (j, acc) in acc.iter_mut().enumerate().take(nt) {
                let ab = &a[(t0 + j) * nb + b];
                let av = load32(ab.qs());
                let c = D::corr::<T>(av);
                let p = [
                    D::dot::<T>(w[0], av, c),
                    D::dot::<T>(w[1], av, c),
                    D::dot::<T>(w[2], av, c),
                    D::dot::<T>(w[3], av, c),
                ];
                let isum = _mm_cvtepi32_ps(hsum4(p[0], p[1], p[2], p[3]));
                let t = _mm_mul_ps(_mm_mul_ps(dw, _mm_set1_ps(ab.d())), isum);
                let t = ab.with_offset(t, m);
                *acc = _mm_add_ps(*acc, t);
            }
        }
    }
    // SAFETY: the caller guarantees AVX2.
    unsafe { acc.map(|v| to_array(v)) }
}

/// AVX2's dot: the sign trick, no correction.
pub(super) struct Avx2Dot;

impl Dot32 for Avx2Dot {
    type Corr = ();
    #[inline(always)]
    unsafe fn weights<T: Block32>(b: &[u8]) -> __m256i {
        // SAFETY: the caller guarantees AVX2.
        unsafe { weights_avx2::<T>(b) }
    }
    #[inline(always)]
    unsafe fn corr<T: Block32>(_: __m256i) {}
    #[inline(always)]
    unsafe fn dot<T: Block32>(w: __m256i, a: __m256i, _: ()) -> __m256i {
        // SAFETY: the caller guarantees AVX2.
        unsafe { dot32::<T>(w, a, ()) }
    }
}

/// `rows_32` with AVX2.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) fn rows_avx2<T: Block32, A: Act32, const NT: usize>(
    rws: &[&[u8]; R],
    a: &[A],
    nb: usize,
    t0: usize,
    nt: usize,
) -> [[f32; 4]; NT] {
    // SAFETY: this fn's features are the ones rows_32 and Avx2Dot need.
    unsafe { rows_32::<Avx2Dot, T, A, NT>(rws, a, nb, t0, nt) }
}

/// AVX2: the block's signed weights (sign trick in the dot) or, for the
/// formats with a min, its unsigned quants.
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn weights_avx2<T: Block32>(b: &[u8]) -> __m256i {
    // SAFETY: the caller guarantees AVX2. (Q8_0's offset −128 wraps back:
    // (q ^ 0x80) − 0x80 = q.)
    unsafe {
        let u = T::unsigned(b);
        if T::OFFSET == 0 {
            u
        } else {
            _mm256_sub_epi8(u, _mm256_set1_epi8(T::OFFSET))
        }
    }
}

/// AVX2: exact dot of 32 weights with 32 activations, as 8 partial i32 sums.
///
/// # Safety
/// The CPU has AVX2.
#[inline(always)]
unsafe fn dot32<T: Block32>(w: __m256i, a: __m256i, _: ()) -> __m256i {
    // SAFETY: the caller guarantees AVX2.
    unsafe { dot32_avx2(w, T::OFFSET != 0, a) }
}

#[inline]
#[target_feature(enable = "avx2")]
fn dot32_avx2(w: __m256i, signed: bool, a: __m256i) -> __m256i {
    let p = if signed {
        _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(a, w))
    } else {
        _mm256_maddubs_epi16(w, a)
    };
    _mm256_madd_epi16(p, _mm256_set1_epi16(1))
}

/// As `scalar::matmul_rows` for format `T` with activations `A`: four
/// rows at a time, decode (one token) in tiles of one.
pub(super) fn matmul_rows<T: Block32, A: Act32>(
    _: Avx2,
    w: &QMatrix,
    x: Acts,
    a: &[A],
    n_tok: usize,
    rows: Range<usize>,
    out: &mut [f32],
) {
    // SAFETY: the token proves AVX2, FMA and F16C.
    unsafe { groups::<T, A>(w, x, a, n_tok, rows, out) }
}

#[target_feature(enable = "avx2,fma,f16c")]
fn groups<T: Block32, A: Act32>(w: &QMatrix, x: Acts, a: &[A], n_tok: usize, rows: Range<usize>, out: &mut [f32]) {
    let nb = w.n_cols / QK8;
    each_group4(w, x, n_tok, rows, out, |rws, out| {
        if n_tok == 1 {
            tiles::<1>(n_tok, out, |t0, nt| rows_avx2::<T, A, 1>(rws, a, nb, t0, nt))
        } else {
            tiles::<TILE>(n_tok, out, |t0, nt| rows_avx2::<T, A, TILE>(rws, a, nb, t0, nt))
        }
    })
}
