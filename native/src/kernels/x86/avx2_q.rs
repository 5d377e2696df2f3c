//! AVX2 integer block dots for the quantized path, four weight rows at a
//! time: each block's exact i32 dot per row, then the per-row float update
//! `acc = acc + ((dw * da) * isum [+ m * s | − (dmin * da) * imin])` done
//! lane-wise on four rows — the scalar reference's expression and order, so
//! results are bit-identical to it. Other types and tail rows go to the
//! reference (compiled with AVX2 by the caller).

use core::arch::x86_64::*;
use core::ops::Range;

use tern_core::kernels::{scalar, Acts, QMatrix};
use tern_core::quant::{f16_at, BlockQ8K, BlockQ8_0, BlockQ8_1, GgmlType, QK8, QK_K};

const R: usize = 4;

/// The f16 at byte `o` of each of the four rows, as four f32 (exact). A
/// macro so it is always inlined into the (F16C) kernel using it.
macro_rules! f16x4 {
    ($rws:expr, $o:expr) => {{
        let (rws, o): (&[&[u8]; R], usize) = ($rws, $o);
        let h = |i: usize| i16::from_le_bytes([rws[i][o], rws[i][o + 1]]);
        _mm_cvtph_ps(_mm_setr_epi16(h(0), h(1), h(2), h(3), 0, 0, 0, 0))
    }};
}

/// Sum each of four 8×i32 vectors: [Σa, Σb, Σc, Σd].
#[inline]
#[target_feature(enable = "avx2")]
fn hsum4(a: __m256i, b: __m256i, c: __m256i, d: __m256i) -> __m128i {
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
fn prefetch4(rws: &[&[u8]; R], o: usize) {
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
            | (GgmlType::Q4_K | GgmlType::Q6_K, Acts::Q8K(_))
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
    // prefill (and the formats without a min at decode): 8 rows at a time first
    // SAFETY: `vnni` says the CPU has AVX-512 F/BW/VL and VNNI.
    let done = match x {
        // SAFETY: as above.
        Acts::Q8K(a) if wide => unsafe { super::vnni8_k::matmul_rows(w, a, n_tok, rows.clone(), out) },
        _ if wide || (vnni && n_tok == 1) => unsafe { super::vnni8::matmul_rows(w, x, n_tok, rows.clone(), out) },
        _ => 0,
    };
    let (rows, out) = (rows.start + done..rows.end, &mut out[done * n_tok..]);
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
                } else if vnni && <$t as Block32>::OFFSET != 0 {
                    // SAFETY: as above.
                    tiles::<TILE>(n_tok, out, |t0, nt| unsafe { rows_32_vnni::<$t, _, TILE>(&rws, $a, nb, t0, nt) })
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
            (_, Acts::Q8K(a)) if n_tok == 1 => {
                for (i, o) in out.iter_mut().enumerate() {
                    *o = row_k_decode(w.ty, rws[i], a, w.n_cols / QK_K);
                }
            }
            (_, Acts::Q8K(a)) if wide => {
                // SAFETY: `vnni` implies AVX-512 F/BW/VL (the backend checks them all).
                tiles::<VNNI_TILE>(n_tok, out, |t0, nt| unsafe {
                    rows_k_avx512::<VNNI_TILE>(w.ty, &rws, a, w.n_cols / QK_K, t0, nt)
                })
            }
            (_, Acts::Q8K(a)) => {
                tiles::<TILE>(n_tok, out, |t0, nt| rows_k_avx2::<TILE>(w.ty, &rws, a, w.n_cols / QK_K, t0, nt))
            }
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
fn tiles<const NT: usize>(n_tok: usize, out: &mut [f32], mut tile: impl FnMut(usize, usize) -> [[f32; 4]; NT]) {
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
const TILE: usize = 4;
const VNNI_TILE: usize = 8;

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

/// A K-quant super-block unpacked for the dot: 8 runs of 32 unsigned
/// quants, each run's i16 scale multipliers (one per 16-group), and the
/// per-group weights of the activation group sums (Q4_K: its mins; Q6_K:
/// 32 × its scales, undoing the +32 offset of its quants).
pub(super) struct KBlock {
    pub(super) q: [__m256i; 8],
    mult: [__m256i; 8],
    minw: __m256i,
}

#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn unpack_q4_k(b: &[u8]) -> KBlock {
    let mut kb =
        KBlock { q: [_mm256_setzero_si256(); 8], mult: [_mm256_setzero_si256(); 8], minw: _mm256_setzero_si256() };
    for i in 0..4 {
        // SAFETY: 32 bytes at 16 + 32i are inside the 144-byte block.
        let q = unsafe { _mm256_loadu_si256(b[16 + 32 * i..].as_ptr() as *const __m256i) };
        kb.q[2 * i] = _mm256_and_si256(q, _mm256_set1_epi8(0x0F));
        kb.q[2 * i + 1] = _mm256_and_si256(_mm256_srli_epi16::<4>(q), _mm256_set1_epi8(0x0F));
    }
    let sm = q4_k_scales(&b[4..16]);
    // SAFETY: `sm` has 16 bytes.
    let (sc, mn) = unsafe {
        (
            _mm_cvtepu8_epi16(_mm_loadl_epi64(sm.as_ptr() as *const __m128i)),
            _mm_cvtepu8_epi16(_mm_loadl_epi64(sm[8..].as_ptr() as *const __m128i)),
        )
    };
    let sc = _mm256_broadcastsi128_si256(sc);
    for j in 0..8 {
        // scale j (i16 lane j) in every lane
        kb.mult[j] = _mm256_shuffle_epi8(sc, _mm256_set1_epi16((((2 * j + 1) << 8) | (2 * j)) as i16));
    }
    // each min weighs two 16-groups
    kb.minw = _mm256_set_m128i(_mm_unpackhi_epi16(mn, mn), _mm_unpacklo_epi16(mn, mn));
    kb
}

/// Q4_K's 12 scale bytes → its 8 scales, then its 8 mins, a byte each: the
/// packing `q4_k::scale_min` reads, undone four bytes at a time.
#[inline(always)]
pub(super) fn q4_k_scales(s: &[u8]) -> [u8; 16] {
    let w = |i: usize| u32::from_le_bytes([s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]]);
    let (w0, w1, w2) = (w(0), w(1), w(2));
    let (m6, m4, m2) = (0x3f3f_3f3fu32, 0x0f0f_0f0fu32, 0x0303_0303u32);
    let sc_lo = w0 & m6;
    let sc_hi = (w2 & m4) | (((w0 >> 6) & m2) << 4);
    let mn_lo = w1 & m6;
    let mn_hi = ((w2 >> 4) & m4) | (((w1 >> 6) & m2) << 4);
    let mut o = [0u8; 16];
    for (i, v) in [sc_lo, sc_hi, mn_lo, mn_hi].into_iter().enumerate() {
        o[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    o
}

#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn unpack_q6_k(b: &[u8]) -> KBlock {
    let mut kb =
        KBlock { q: [_mm256_setzero_si256(); 8], mult: [_mm256_setzero_si256(); 8], minw: _mm256_setzero_si256() };
    let (m4, m2) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(0x03));
    for h in 0..2 {
        // SAFETY: 64 bytes of ql at 64h and 32 bytes of qh at 128 + 32h lie in the 210-byte block.
        let (ql0, ql1, qh) = unsafe {
            (
                _mm256_loadu_si256(b[64 * h..].as_ptr() as *const __m256i),
                _mm256_loadu_si256(b[64 * h + 32..].as_ptr() as *const __m256i),
                _mm256_loadu_si256(b[128 + 32 * h..].as_ptr() as *const __m256i),
            )
        };
        let hb = |s: __m256i| _mm256_slli_epi16::<4>(_mm256_and_si256(s, m2));
        kb.q[4 * h] = _mm256_or_si256(_mm256_and_si256(ql0, m4), hb(qh));
        kb.q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), hb(_mm256_srli_epi16::<2>(qh)));
        kb.q[4 * h + 2] =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16::<4>(ql0), m4), hb(_mm256_srli_epi16::<4>(qh)));
        kb.q[4 * h + 3] =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16::<4>(ql1), m4), hb(_mm256_srli_epi16::<6>(qh)));
    }
    // SAFETY: the 16 scale bytes at 192 lie in the 210-byte block.
    let sc = unsafe { _mm_loadu_si128(b[192..].as_ptr() as *const __m128i) };
    let both = _mm256_broadcastsi128_si256(sc);
    for k in 0..8 {
        // scale 2k in the low lane, 2k + 1 in the high one, sign-extended
        // from (s << 8 | s)
        let idx = _mm256_set_m128i(_mm_set1_epi8(2 * k as i8 + 1), _mm_set1_epi8(2 * k as i8));
        kb.mult[k] = _mm256_srai_epi16::<8>(_mm256_shuffle_epi8(both, idx));
    }
    // 32 × each scale undoes the +32 offset of the quants
    kb.minw = _mm256_slli_epi16::<5>(_mm256_cvtepi8_epi16(sc));
    kb
}

/// (Σ_run mult · (quants · activations), Σ_g minw_g · bsum_g), each as 8
/// partial i32 sums. All exact integers.
#[inline]
#[target_feature(enable = "avx2")]
fn kdot(kb: &KBlock, a: &BlockQ8K) -> (__m256i, __m256i) {
    let mut acc = _mm256_setzero_si256();
    for r in 0..8 {
        let p = _mm256_maddubs_epi16(kb.q[r], load32(&a.qs[32 * r..]));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, kb.mult[r]));
    }
    // SAFETY: `bsums` holds 16 i16.
    let bs = unsafe { _mm256_loadu_si256(a.bsums.as_ptr() as *const __m256i) };
    (acc, _mm256_madd_epi16(bs, kb.minw))
}

/// Decode: one row of Q4_K or Q6_K against one token, row after row so the
/// weights stream through memory in order (four interleaved long rows
/// defeat the hardware prefetcher: Q6_K ran at ~10 GB/s).
#[target_feature(enable = "avx2,fma,f16c")]
fn row_k_decode(ty: GgmlType, row: &[u8], a: &[BlockQ8K], nb: usize) -> f32 {
    let ts = ty.type_size();
    let q4 = ty == GgmlType::Q4_K;
    let mut acc = 0.0f32;
    for (b, ab) in a.iter().enumerate().take(nb) {
        let blk = &row[b * ts..(b + 1) * ts];
        let kb = if q4 { unpack_q4_k(blk) } else { unpack_q6_k(blk) };
        let (vs, vm) = kdot(&kb, ab);
        let s = hsum4(vs, vm, vs, vm);
        let (isum, imin) = (_mm_extract_epi32::<0>(s), _mm_extract_epi32::<1>(s));
        acc += if q4 {
            (f16_at(blk, 0) * ab.d) * isum as f32 - (f16_at(blk, 2) * ab.d) * imin as f32
        } else {
            // Q6_K has no mins: the reference's `− (0 · da) · 0` changes nothing
            (f16_at(blk, 208) * ab.d) * (isum - imin) as f32
        };
    }
    acc
}

/// Four rows × up to `NT` tokens of Q4_K or Q6_K.
macro_rules! rows_k {
    ($name:ident, $features:literal) => {
        #[target_feature(enable = $features)]
        fn $name<const NT: usize>(
            ty: GgmlType,
            rws: &[&[u8]; R],
            a: &[BlockQ8K],
            nb: usize,
            t0: usize,
            nt: usize,
        ) -> [[f32; 4]; NT] {
            let ts = ty.type_size();
            let q4 = ty == GgmlType::Q4_K;
            let mut acc = [_mm_setzero_ps(); NT];
            for b in 0..nb {
                let o = b * ts;
                prefetch4(rws, o + PREFETCH);
                let kb = if q4 {
                    [
                        unpack_q4_k(&rws[0][o..o + ts]),
                        unpack_q4_k(&rws[1][o..o + ts]),
                        unpack_q4_k(&rws[2][o..o + ts]),
                        unpack_q4_k(&rws[3][o..o + ts]),
                    ]
                } else {
                    [
                        unpack_q6_k(&rws[0][o..o + ts]),
                        unpack_q6_k(&rws[1][o..o + ts]),
                        unpack_q6_k(&rws[2][o..o + ts]),
                        unpack_q6_k(&rws[3][o..o + ts]),
                    ]
                };
                let d = f16x4!(rws, if q4 { o } else { o + 208 });
                let dmin = f16x4!(rws, o + 2);
                for (j, acc) in acc.iter_mut().enumerate().take(nt) {
                    let ab = &a[(t0 + j) * nb + b];
                    let r = [kdot(&kb[0], ab), kdot(&kb[1], ab), kdot(&kb[2], ab), kdot(&kb[3], ab)];
                    let isum = hsum4(r[0].0, r[1].0, r[2].0, r[3].0);
                    let imin = hsum4(r[0].1, r[1].1, r[2].1, r[3].1);
                    let da = _mm_set1_ps(ab.d);
                    let t = if q4 {
                        let x = _mm_mul_ps(_mm_mul_ps(d, da), _mm_cvtepi32_ps(isum));
                        _mm_sub_ps(x, _mm_mul_ps(_mm_mul_ps(dmin, da), _mm_cvtepi32_ps(imin)))
                    } else {
                        // Q6_K has no mins: the reference's `− (0 · da) · 0` changes nothing
                        _mm_mul_ps(_mm_mul_ps(d, da), _mm_cvtepi32_ps(_mm_sub_epi32(isum, imin)))
                    };
                    *acc = _mm_add_ps(*acc, t);
                }
            }
            acc.map(|v| to_array(v))
        }
    };
}

rows_k!(rows_k_avx2, "avx2,fma,f16c");
rows_k!(rows_k_avx512, "avx2,fma,f16c,avx512f,avx512bw,avx512vl");
