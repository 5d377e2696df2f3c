//! AVX2 integer block dots for the quantized path, four weight rows at a
//! time: each block's exact i32 dot per row, then the per-row float update
//! `acc = acc + ((dw * da) * isum [+ m * s | − (dmin * da) * imin])` done
//! lane-wise on four rows — the scalar reference's expression and order, so
//! results are bit-identical to it. Other types and tail rows go to the
//! reference (compiled with AVX2 by the caller).

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::kernels::{scalar, Acts, QMatrix};
use tern_core::quant::{BlockQ8_0, BlockQ8_1, GgmlType, QK8};

pub(super) const R: usize = 4;

/// The f16 at byte `o` of each of the four rows, as four f32 (exact). A
/// macro so it is always inlined into the (F16C) kernel using it.
macro_rules! f16x4 {
    ($rws:expr, $o:expr) => {{
        let (rws, o): (&[&[u8]; R], usize) = ($rws, $o);
        let h = |i: usize| i16::from_le_bytes([rws[i][o], rws[i][o + 1]]);
        _mm_cvtph_ps(_mm_setr_epi16(h(0), h(1), h(2), h(3), 0, 0, 0, 0))
    }};
}
pub(super) use f16x4;

/// Sum each of four 8×i32 vectors: [Σa, Σb, Σc, Σd].
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn hsum4(a: __m256i, b: __m256i, c: __m256i, d: __m256i) -> __m128i {
    let ab = _mm256_hadd_epi32(a, b);
    let cd = _mm256_hadd_epi32(c, d);
    let s = _mm256_hadd_epi32(ab, cd);
    _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256::<1>(s))
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

/// 16 packed bytes → 32 nibbles: low nibbles then high nibbles.
#[inline]
#[target_feature(enable = "avx2")]
fn nibbles(p: &[u8]) -> __m256i {
    // SAFETY: `p` has at least 16 bytes (callers pass a block's qs).
    let x = unsafe { _mm256_broadcastsi128_si256(_mm_loadu_si128(p.as_ptr() as *const __m128i)) };
    // the upper copy shifted down a nibble
    let x = _mm256_srlv_epi64(x, _mm256_set_epi64x(4, 4, 0, 0));
    _mm256_and_si256(x, _mm256_set1_epi8(0x0F))
}

/// `u + 16` in the bytes whose bit of `qh` is set (ggml's fifth bit).
#[inline]
#[target_feature(enable = "avx512bw,avx512vl")]
fn add_fifth_bits(u: __m256i, qh: u32) -> __m256i {
    _mm256_mask_add_epi8(u, qh, u, _mm256_set1_epi8(0x10))
}

#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn load32(p: &[i8]) -> __m256i {
    debug_assert!(p.len() >= 32);
    // SAFETY: `p` has at least 32 bytes (a block's quants).
    unsafe { _mm256_loadu_si256(p.as_ptr() as *const __m256i) }
}

/// A legacy 32-element format: its block's quants as 32 unsigned bytes
/// `u`, the weight being `u - OFFSET` (times the scale, plus the min).
pub(super) trait Block32 {
    const BYTES: usize;
    /// 0 for the formats with a min (Q4_1, Q5_1); Q8_0 is stored signed
    /// and read as `q ^ 0x80 = q + 128`.
    const OFFSET: i8;
    /// Offset of the f16 min (`m`), for the offset formats.
    const M_AT: usize = 2;
    fn unsigned(b: &[u8]) -> __m256i;
    /// The same with AVX-512 BW/VL at hand.
    #[inline(always)]
    fn unsigned_512(b: &[u8]) -> __m256i {
        Self::unsigned(b)
    }
}

pub(super) struct Q4_0;
struct Q4_1;
pub(super) struct Q5_0;
struct Q5_1;
pub(super) struct Q8_0;

impl Block32 for Q4_0 {
    const BYTES: usize = 18;
    const OFFSET: i8 = 8;
    #[inline(always)]
    fn unsigned(b: &[u8]) -> __m256i {
        // SAFETY: callers hold AVX2 (every caller is an AVX2 target_feature fn).
        unsafe { nibbles(&b[2..18]) }
    }
}

impl Block32 for Q4_1 {
    const BYTES: usize = 20;
    const OFFSET: i8 = 0;
    #[inline(always)]
    fn unsigned(b: &[u8]) -> __m256i {
        // SAFETY: callers hold AVX2.
        unsafe { nibbles(&b[4..20]) }
    }
}

impl Block32 for Q5_0 {
    const BYTES: usize = 22;
    const OFFSET: i8 = 16;
    #[inline(always)]
    fn unsigned(b: &[u8]) -> __m256i {
        let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
        // SAFETY: callers hold AVX2.
        unsafe { _mm256_or_si256(nibbles(&b[6..22]), _mm256_and_si256(bits_to_bytes(qh), _mm256_set1_epi8(0x10))) }
    }
    #[inline(always)]
    fn unsigned_512(b: &[u8]) -> __m256i {
        let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
        // SAFETY: callers hold AVX-512 BW/VL.
        unsafe { add_fifth_bits(nibbles(&b[6..22]), qh) }
    }
}

impl Block32 for Q5_1 {
    const BYTES: usize = 24;
    const OFFSET: i8 = 0;
    #[inline(always)]
    fn unsigned(b: &[u8]) -> __m256i {
        let qh = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        // SAFETY: callers hold AVX2.
        unsafe { _mm256_or_si256(nibbles(&b[8..24]), _mm256_and_si256(bits_to_bytes(qh), _mm256_set1_epi8(0x10))) }
    }
    #[inline(always)]
    fn unsigned_512(b: &[u8]) -> __m256i {
        let qh = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        // SAFETY: callers hold AVX-512 BW/VL.
        unsafe { add_fifth_bits(nibbles(&b[8..24]), qh) }
    }
}

impl Block32 for Q8_0 {
    const BYTES: usize = 34;
    const OFFSET: i8 = -128;
    #[inline(always)]
    fn unsigned(b: &[u8]) -> __m256i {
        // SAFETY: a Q8_0 block has 32 quant bytes after its scale; AVX is held.
        unsafe { _mm256_xor_si256(_mm256_loadu_si256(b[2..34].as_ptr() as *const __m256i), _mm256_set1_epi8(-128)) }
    }
}

/// How far ahead in each row to prefetch (bytes).
pub(super) const PREFETCH: usize = 8192;

/// Hint the cache to fetch byte `o` of each row (a hint only: addresses
/// past a row's end are never dereferenced).
#[inline(always)]
pub(super) fn prefetch4(rws: &[&[u8]; R], o: usize) {
    for r in rws {
        let p = r.as_ptr().wrapping_add(o) as *const i8;
        // SAFETY: prefetch never faults and reads nothing observable.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(p) };
    }
}

/// AVX2: the block's signed weights (sign trick in the dot) or, for the
/// formats with a min, its unsigned quants.
#[inline(always)]
fn weights_avx2<T: Block32>(b: &[u8]) -> __m256i {
    let u = T::unsigned(b);
    // SAFETY: only reached from AVX2 target_feature functions. (Q8_0's
    // offset −128 wraps back: (q ^ 0x80) − 0x80 = q.)
    unsafe {
        if T::OFFSET == 0 {
            u
        } else {
            _mm256_sub_epi8(u, _mm256_set1_epi8(T::OFFSET))
        }
    }
}

/// AVX2 needs no per-token term.
#[inline(always)]
fn no_corr<T: Block32>(_: __m256i) {}

/// AVX2: exact dot of 32 weights with 32 activations, as 8 partial i32 sums.
#[inline(always)]
fn dot32<T: Block32>(w: __m256i, a: __m256i, _: ()) -> __m256i {
    // SAFETY: only reached from AVX2 target_feature functions.
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

/// Whether this module has a kernel for `ty` with these activations.
pub fn handles(ty: GgmlType, x: &Acts) -> bool {
    matches!(
        (ty, x),
        (GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0, Acts::Q8_0(_))
            | (GgmlType::Q4_1 | GgmlType::Q5_1, Acts::Q8_1(_))
            | (GgmlType::Q2_K | GgmlType::Q3_K | GgmlType::Q4_K | GgmlType::Q5_K | GgmlType::Q6_K, Acts::Q8K(_))
    )
}

/// As `scalar::matmul_rows`, for the types `handles` accepts.
/// `vnni`: the caller's CPU has AVX-512 VL and VNNI (legacy formats then
/// take `vpdpbusd`).
#[target_feature(enable = "avx2,fma,f16c")]
pub fn matmul_rows(w: &QMatrix, x: Acts, n_tok: usize, rows: Range<usize>, out: &mut [f32], vnni: bool) {
    let nb = w.n_cols / QK8;
    // the wide tiles pay off in prefill; decode (a few tokens) keeps the
    // narrow ones (measured: Qwen tg 1 thread 38 vs 28 tok/s)
    let wide = vnni && n_tok >= VNNI_TILE;
    // decode of the formats without a min: 8 short rows at a time; eight
    // long rows are eight distant streams (Q8_0 at 2048 columns: 10 GB/s
    // in 8-row groups, 25-30 in 4-row ones; at 896 columns they are even)
    let short_rows = vnni && n_tok == 1 && w.row_bytes() <= SHORT_ROW;
    // prefill (and decode of short rows): 8 rows at a time first
    // SAFETY: `vnni` says the CPU has AVX-512 F/BW/VL and VNNI.
    let done = match x {
        // SAFETY: as above.
        Acts::Q8K(a) if wide => unsafe { super::vnni8_k::matmul_rows(w, a, n_tok, rows.clone(), out) },
        _ if wide || short_rows => unsafe { super::vnni8::matmul_rows(w, x, n_tok, rows.clone(), out) },
        _ => 0,
    };
    let (rows, out) = (rows.start + done..rows.end, &mut out[done * n_tok..]);
    if let Acts::Q8K(a) = x {
        // `wide` implies AVX-512 F/BW/VL, as avx2_k needs
        return super::avx2_k::matmul_rows(w, a, n_tok, rows, out, wide);
    }
    let n_full = rows.len() / R * R;
    for g in 0..n_full / R {
        let r0 = rows.start + g * R;
        let rws = [w.row(r0), w.row(r0 + 1), w.row(r0 + 2), w.row(r0 + 3)];
        let out = &mut out[g * R * n_tok..(g + 1) * R * n_tok];
        macro_rules! legacy {
            ($t:ty, $a:expr) => {
                if wide && <$t as Block32>::OFFSET != 0 {
                    // SAFETY: `vnni` says the CPU has these features.
                    tiles::<VNNI_TILE>(n_tok, out, |t0, nt| unsafe {
                        rows_32_vnni::<$t, _, VNNI_TILE>(&rws, $a, nb, t0, nt)
                    })
                } else if vnni && <$t as Block32>::OFFSET != 0 && n_tok == 1 {
                    // decode: one-token tiles, no loop over tile slots (Q4_1
                    // alone 18 → 23 GB/s with the AVX2 kernel below)
                    // SAFETY: as above.
                    tiles::<1>(n_tok, out, |t0, nt| unsafe { rows_32_vnni::<$t, _, 1>(&rws, $a, nb, t0, nt) })
                } else if vnni && <$t as Block32>::OFFSET != 0 {
                    // SAFETY: as above.
                    tiles::<TILE>(n_tok, out, |t0, nt| unsafe { rows_32_vnni::<$t, _, TILE>(&rws, $a, nb, t0, nt) })
                } else if n_tok == 1 {
                    tiles::<1>(n_tok, out, |t0, nt| rows_32_avx2::<$t, _, 1>(&rws, $a, nb, t0, nt))
                } else {
                    tiles::<TILE>(n_tok, out, |t0, nt| rows_32_avx2::<$t, _, TILE>(&rws, $a, nb, t0, nt))
                }
            };
        }
        match (w.ty, x) {
            (GgmlType::Q4_0, Acts::Q8_0(a)) => legacy!(Q4_0, a),
            (GgmlType::Q5_0, Acts::Q8_0(a)) => legacy!(Q5_0, a),
            (_, Acts::Q8_0(a)) => legacy!(Q8_0, a),
            (GgmlType::Q4_1, Acts::Q8_1(a)) => legacy!(Q4_1, a),
            (_, Acts::Q8_1(a)) => legacy!(Q5_1, a),
            _ => unreachable!("`handles` admits only these"),
        }
    }
    if n_full < rows.len() {
        let tail = rows.start + n_full..rows.end;
        scalar::matmul_rows(w, x, n_tok, tail, &mut out[n_full * n_tok..]);
    }
}

/// Run `tile(t0, nt)` over the tokens in tiles of `NT` and lay its
/// [token][row] results out as `out[row * n_tok + token]` (four rows).
#[inline(always)]
pub(super) fn tiles<const NT: usize>(
    n_tok: usize,
    out: &mut [f32],
    mut tile: impl FnMut(usize, usize) -> [[f32; 4]; NT],
) {
    for t0 in (0..n_tok).step_by(NT) {
        let nt = NT.min(n_tok - t0);
        for (j, acc) in tile(t0, nt).into_iter().take(nt).enumerate() {
            for (i, v) in acc.into_iter().enumerate() {
                out[i * n_tok + t0 + j] = v;
            }
        }
    }
}

#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn to_array(v: __m128) -> [f32; 4] {
    let mut o = [0.0f32; 4];
    // SAFETY: `o` holds four f32.
    unsafe { _mm_storeu_ps(o.as_mut_ptr(), v) };
    o
}

/// An 8-bit activation block paired with 32-element weights: Q8_0, or Q8_1
/// whose sum term `m * s` the offset formats add.
trait Act32 {
    fn qs(&self) -> &[i8; QK8];
    fn d(&self) -> f32;
    /// `t + m * s` for Q8_1; `t` for Q8_0 (which has no offset term).
    fn with_offset(&self, t: __m128, m: __m128) -> __m128;
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
        // SAFETY: only reached from AVX2 target_feature functions.
        unsafe { _mm_add_ps(t, _mm_mul_ps(m, _mm_set1_ps(self.s))) }
    }
}

/// Tokens per tile: each weight block is unpacked once per tile. The VNNI
/// kernel has registers to spare (AVX-512's 32) for a wider tile. It is
/// used for the formats without a min (Q4_0, Q5_0, Q8_0: Qwen pp128 +20 %);
/// for Q4_1/Q5_1 it measured no better than AVX2 (SmolLM2 308-355 vs
/// 324-331 tok/s, by build), so those stay on AVX2.
pub(super) const TILE: usize = 4;
/// Longest row (bytes) the 8-row VNNI decode takes.
const SHORT_ROW: usize = 1024;
pub(super) const VNNI_TILE: usize = 8;

/// Four rows × up to `TILE` tokens (`t0..t0 + nt`) of a legacy format.
/// Each (row, token) accumulates its blocks in order, as the reference.
/// `$weights(block)` unpacks a row's block; `$dot(w, a, c)` is its exact
/// dot with activations `a`, `c` being `$corr(a)`, computed once per token.
macro_rules! rows_32 {
    ($name:ident, $features:literal, $weights:ident, $corr:ident, $dot:ident) => {
        #[target_feature(enable = $features)]
        fn $name<T: Block32, A: Act32, const NT: usize>(
            rws: &[&[u8]; R],
            a: &[A],
            nb: usize,
            t0: usize,
            nt: usize,
        ) -> [[f32; 4]; NT] {
            let ts = T::BYTES;
            let mut acc = [_mm_setzero_ps(); NT];
            for b in 0..nb {
                let o = b * ts;
                prefetch4(rws, o + PREFETCH);
                let w = [
                    $weights::<T>(&rws[0][o..o + ts]),
                    $weights::<T>(&rws[1][o..o + ts]),
                    $weights::<T>(&rws[2][o..o + ts]),
                    $weights::<T>(&rws[3][o..o + ts]),
                ];
                let dw = f16x4!(rws, o);
                // the rows' mins, for the formats that have them
                let m = if T::OFFSET == 0 { f16x4!(rws, o + T::M_AT) } else { _mm_setzero_ps() };
                for (j, acc) in acc.iter_mut().enumerate().take(nt) {
                    let ab = &a[(t0 + j) * nb + b];
                    let av = load32(ab.qs());
                    let c = $corr::<T>(av);
                    let p = [
                        $dot::<T>(w[0], av, c),
                        $dot::<T>(w[1], av, c),
                        $dot::<T>(w[2], av, c),
                        $dot::<T>(w[3], av, c),
                    ];
                    let isum = _mm_cvtepi32_ps(hsum4(p[0], p[1], p[2], p[3]));
                    let t = _mm_mul_ps(_mm_mul_ps(dw, _mm_set1_ps(ab.d())), isum);
                    let t = ab.with_offset(t, m);
                    *acc = _mm_add_ps(*acc, t);
                }
            }
            acc.map(|v| to_array(v))
        }
    };
}

rows_32!(rows_32_avx2, "avx2,fma,f16c", weights_avx2, no_corr, dot32);
rows_32!(rows_32_vnni, "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni", weights_vnni, corr_vnni, dot32_vnni);

/// VNNI: unsigned quants straight into `vpdpbusd` (u8 × i8).
#[inline(always)]
pub(super) fn weights_vnni<T: Block32>(b: &[u8]) -> __m256i {
    T::unsigned_512(b)
}

/// VNNI: `OFFSET · Σ a` as 8 partial sums, once per token and block.
#[inline(always)]
pub(super) fn corr_vnni<T: Block32>(a: __m256i) -> __m256i {
    // SAFETY: only reached from VNNI target_feature functions.
    unsafe { corr_vnni_imp(T::OFFSET, a) }
}

#[inline]
#[target_feature(enable = "avx2,avx512vl,avx512vnni")]
fn corr_vnni_imp(offset: i8, a: __m256i) -> __m256i {
    if offset == 0 {
        return _mm256_setzero_si256();
    }
    _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(offset), a)
}

/// VNNI: `Σ u·a − OFFSET·Σ a`, the same exact integers as the AVX2 dot.
#[inline(always)]
pub(super) fn dot32_vnni<T: Block32>(u: __m256i, a: __m256i, c: __m256i) -> __m256i {
    // SAFETY: only reached from VNNI target_feature functions.
    unsafe { dot32_vnni_imp(u, a, c) }
}

#[inline]
#[target_feature(enable = "avx2,avx512vl,avx512vnni")]
fn dot32_vnni_imp(u: __m256i, a: __m256i, c: __m256i) -> __m256i {
    _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), u, a), c)
}
