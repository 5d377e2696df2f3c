//! The five K-quant formats unpacked for integer dots (their layouts are
//! core's `quant::q*_k` offsets): a super-block as 8
//! runs of 32 unsigned quants, each 16-group's scale, and the weights of
//! the activation group sums (`bsums`) that turn the unsigned dots into the
//! reference's: Q2_K/Q4_K/Q5_K their mins (the reference's `imin`), Q3_K
//! and Q6_K their scale times the quants' offset (4, 32), folded into
//! `isum` as the reference's signed quants would give it.

use core::arch::x86_64::*;

use tern_core::backend::quant::{q2_k, q3_k, q4_k, q5_k, q6_k, BlockQ8K, GgmlType};

use super::simd::{f16x8, load16_at, load32, load32_at as load, transpose8, ROWS};

pub(super) struct KBlock {
    /// run r: elements 32r..32r + 32, unsigned
    pub(super) q: [__m256i; 8],
    /// run r: 16-group 2r's scale in i16 lanes 0-7, 2r + 1's in lanes 8-15
    pub(super) mult: [__m256i; 8],
    /// 16-group g's bsum weight in i16 lane g
    pub(super) minw: __m256i,
    /// 16-group g's scale in i16 lane g
    pub(super) sc: __m256i,
}

/// A K-quant format's layout and unpacking.
pub(super) trait KQuant {
    const TYPE: GgmlType;
    /// Whether 16-groups 2r and 2r + 1 share a scale (one per 32-run).
    const RUN_SCALE: bool;
    /// The largest unsigned quant `unpack` gives.
    const U_MAX: i32;
    /// Byte offset of the f16 super-block scale `d`.
    const D_AT: usize;
    /// Byte offset of the f16 `dmin` for the formats with mins; `None`
    /// where `minw` undoes an offset instead (the update is then
    /// `(d·da)·(isum − imin)`, the reference's `− (0·da)·0` being a no-op).
    const DMIN_AT: Option<usize>;
    /// The super-block's quants and scales.
    ///
    /// # Safety
    /// The CPU has AVX2.
    unsafe fn unpack(b: &[u8]) -> KBlock;
}

pub(super) struct Q2K;
pub(super) struct Q3K;
pub(super) struct Q4K;
pub(super) struct Q5K;
pub(super) struct Q6K;

impl KQuant for Q2K {
    const TYPE: GgmlType = GgmlType::Q2_K;
    const U_MAX: i32 = 3;
    const RUN_SCALE: bool = false;
    const D_AT: usize = q2_k::D;
    const DMIN_AT: Option<usize> = Some(q2_k::DMIN);
    #[inline(always)]
    unsafe fn unpack(b: &[u8]) -> KBlock {
        // SAFETY: the caller guarantees AVX2 (the contract of `unpack`).
        unsafe { unpack_q2_k(b) }
    }
}

impl KQuant for Q3K {
    const TYPE: GgmlType = GgmlType::Q3_K;
    const U_MAX: i32 = 7;
    const RUN_SCALE: bool = false;
    const D_AT: usize = q3_k::D;
    const DMIN_AT: Option<usize> = None;
    #[inline(always)]
    unsafe fn unpack(b: &[u8]) -> KBlock {
        // SAFETY: the caller guarantees AVX2 (the contract of `unpack`).
        unsafe { unpack_q3_k(b) }
    }
}

impl KQuant for Q4K {
    const TYPE: GgmlType = GgmlType::Q4_K;
    const U_MAX: i32 = 15;
    const RUN_SCALE: bool = true;
    const D_AT: usize = q4_k::D;
    const DMIN_AT: Option<usize> = Some(q4_k::DMIN);
    #[inline(always)]
    unsafe fn unpack(b: &[u8]) -> KBlock {
        // SAFETY: the caller guarantees AVX2 (the contract of `unpack`).
        unsafe { unpack_q4_k(b) }
    }
}

impl KQuant for Q5K {
    const TYPE: GgmlType = GgmlType::Q5_K;
    const U_MAX: i32 = 31;
    const RUN_SCALE: bool = true;
    const D_AT: usize = q5_k::D;
    const DMIN_AT: Option<usize> = Some(q5_k::DMIN);
    #[inline(always)]
    unsafe fn unpack(b: &[u8]) -> KBlock {
        // SAFETY: the caller guarantees AVX2 (the contract of `unpack`).
        unsafe { unpack_q5_k(b) }
    }
}

impl KQuant for Q6K {
    const TYPE: GgmlType = GgmlType::Q6_K;
    const U_MAX: i32 = 63;
    const RUN_SCALE: bool = false;
    const D_AT: usize = q6_k::D;
    const DMIN_AT: Option<usize> = None;
    #[inline(always)]
    unsafe fn unpack(b: &[u8]) -> KBlock {
        // SAFETY: the caller guarantees AVX2 (the contract of `unpack`).
        unsafe { unpack_q6_k(b) }
    }
}

/// Bytes of `x` shifted right by `n` (n < 8), then masked by `m`.
#[inline]
#[target_feature(enable = "avx2")]
fn srl_and(x: __m256i, n: i32, m: i8) -> __m256i {
    _mm256_and_si256(_mm256_srl_epi16(x, _mm_cvtsi32_si128(n)), _mm256_set1_epi8(m))
}

/// Runs' multipliers from the 16 group scales (i16 lanes).
#[inline]
#[target_feature(enable = "avx2")]
fn mults(sc: __m256i) -> [__m256i; 8] {
    let halves = [
        _mm256_broadcastsi128_si256(_mm256_castsi256_si128(sc)),
        _mm256_broadcastsi128_si256(_mm256_extracti128_si256::<1>(sc)),
    ];
    let mut m = [_mm256_setzero_si256(); 8];
    for (r, m) in m.iter_mut().enumerate() {
        // i16 lane 2r (mod 8) in the low half, 2r + 1 in the high half
        let (lo, hi) = ((4 * (r % 4)) as i8, (4 * (r % 4) + 2) as i8);
        let idx = _mm256_set_m128i(
            _mm_set1_epi16(i16::from_le_bytes([hi as u8, hi as u8 + 1])),
            _mm_set1_epi16(i16::from_le_bytes([lo as u8, lo as u8 + 1])),
        );
        *m = _mm256_shuffle_epi8(halves[r / 4], idx);
    }
    m
}

#[inline]
#[target_feature(enable = "avx2")]
fn unpack_q2_k(b: &[u8]) -> KBlock {
    let mut q = [_mm256_setzero_si256(); 8];
    for h in 0..2 {
        let x = load(b, q2_k::QS + 32 * h);
        for j in 0..4 {
            q[4 * h + j] = srl_and(x, 2 * j as i32, 3);
        }
    }
    let s = load16_at(b, q2_k::SCALES);
    let sc = _mm256_cvtepu8_epi16(_mm_and_si128(s, _mm_set1_epi8(0x0F)));
    let mn = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16::<4>(s), _mm_set1_epi8(0x0F)));
    KBlock { q, mult: mults(sc), minw: mn, sc }
}

/// Q3_K's 12 scale bytes → its 16 six-bit scales, a byte each (unsigned,
/// +32): the packing `q3_k::scale` reads, undone four bytes at a time.
#[inline(always)]
fn q3_k_scales(s: &[u8]) -> [u8; 16] {
    let w = |i: usize| u32::from_le_bytes([s[4 * i], s[4 * i + 1], s[4 * i + 2], s[4 * i + 3]]);
    let (w0, w1, w2) = (w(0), w(1), w(2));
    let (m4, m2) = (0x0f0f_0f0fu32, 0x0303_0303u32);
    let v = [
        (w0 & m4) | ((w2 & m2) << 4),
        (w1 & m4) | (((w2 >> 2) & m2) << 4),
        ((w0 >> 4) & m4) | (((w2 >> 4) & m2) << 4),
        ((w1 >> 4) & m4) | (((w2 >> 6) & m2) << 4),
    ];
    let mut o = [0u8; 16];
    for (i, v) in v.into_iter().enumerate() {
        o[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    o
}

#[inline]
#[target_feature(enable = "avx2")]
fn unpack_q3_k(b: &[u8]) -> KBlock {
    let hm = load(b, q3_k::HMASK);
    let mut q = [_mm256_setzero_si256(); 8];
    for h in 0..2 {
        let x = load(b, q3_k::QS + 32 * h);
        for j in 0..4 {
            let k = 4 * h + j;
            // q + 4: the low two bits, plus 4 where the high bit is set
            let hb = _mm256_slli_epi16::<2>(srl_and(hm, k as i32, 1));
            q[k] = _mm256_or_si256(srl_and(x, 2 * j as i32, 3), hb);
        }
    }
    let s = q3_k_scales(&b[q3_k::SCALES..q3_k::D]);
    // SAFETY: `s` has 16 bytes.
    let s = unsafe { _mm_loadu_si128(s.as_ptr() as *const __m128i) };
    let sc = _mm256_sub_epi16(_mm256_cvtepu8_epi16(s), _mm256_set1_epi16(32));
    // 4 × each scale undoes the +4 offset of the quants
    KBlock { q, mult: mults(sc), minw: _mm256_slli_epi16::<2>(sc), sc }
}

#[inline]
#[target_feature(enable = "avx2")]
fn unpack_q4_k(b: &[u8]) -> KBlock {
    let mut q = [_mm256_setzero_si256(); 8];
    for i in 0..4 {
        let x = load(b, q4_k::QS + 32 * i);
        q[2 * i] = _mm256_and_si256(x, _mm256_set1_epi8(0x0F));
        q[2 * i + 1] = _mm256_and_si256(_mm256_srli_epi16::<4>(x), _mm256_set1_epi8(0x0F));
    }
    let (mult, minw, sc) = q4_k_weights(&b[q4_k::SCALES..q4_k::QS]);
    KBlock { q, mult, minw, sc }
}

#[inline]
#[target_feature(enable = "avx2")]
fn unpack_q5_k(b: &[u8]) -> KBlock {
    let qh = load(b, q5_k::QH);
    let mut q = [_mm256_setzero_si256(); 8];
    for i in 0..4 {
        let x = load(b, q5_k::QS + 32 * i);
        let (h0, h1) = (srl_and(qh, 2 * i as i32, 1), srl_and(qh, 2 * i as i32 + 1, 1));
        q[2 * i] = _mm256_or_si256(_mm256_and_si256(x, _mm256_set1_epi8(0x0F)), _mm256_slli_epi16::<4>(h0));
        q[2 * i + 1] = _mm256_or_si256(srl_and(x, 4, 0x0F), _mm256_slli_epi16::<4>(h1));
    }
    let (mult, minw, sc) = q4_k_weights(&b[q5_k::SCALES..q5_k::QH]);
    KBlock { q, mult, minw, sc }
}

/// Q4_K's (and Q5_K's) scales and mins as run multipliers and bsum
/// weights: scale and min j cover 16-groups 2j and 2j + 1.
#[inline]
#[target_feature(enable = "avx2")]
fn q4_k_weights(s: &[u8]) -> ([__m256i; 8], __m256i, __m256i) {
    let sm = q4_k_scales(s);
    // SAFETY: `sm` has 16 bytes.
    let (sc, mn) = unsafe {
        (
            _mm_cvtepu8_epi16(_mm_loadl_epi64(sm.as_ptr() as *const __m128i)),
            _mm_cvtepu8_epi16(_mm_loadl_epi64(sm[8..].as_ptr() as *const __m128i)),
        )
    };
    let both = _mm256_broadcastsi128_si256(sc);
    let mut mult = [_mm256_setzero_si256(); 8];
    for (j, m) in mult.iter_mut().enumerate() {
        // scale j (i16 lane j) in every lane
        *m = _mm256_shuffle_epi8(both, _mm256_set1_epi16((((2 * j + 1) << 8) | (2 * j)) as i16));
    }
    (mult, twice(mn), twice(sc))
}

/// Eight i16 → sixteen, each twice.
#[inline]
#[target_feature(enable = "avx2")]
fn twice(x: __m128i) -> __m256i {
    _mm256_set_m128i(_mm_unpackhi_epi16(x, x), _mm_unpacklo_epi16(x, x))
}

/// Q4_K's 12 scale bytes → its 8 scales, then its 8 mins, a byte each: the
/// packing `q4_k::scale_min` reads, undone four bytes at a time.
#[inline(always)]
fn q4_k_scales(s: &[u8]) -> [u8; 16] {
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
fn unpack_q6_k(b: &[u8]) -> KBlock {
    let mut q = [_mm256_setzero_si256(); 8];
    let (m4, m2) = (_mm256_set1_epi8(0x0F), _mm256_set1_epi8(0x03));
    for h in 0..2 {
        let (ql0, ql1, qh) = (load(b, q6_k::QL + 64 * h), load(b, q6_k::QL + 64 * h + 32), load(b, q6_k::QH + 32 * h));
        let hb = |s: __m256i| _mm256_slli_epi16::<4>(_mm256_and_si256(s, m2));
        q[4 * h] = _mm256_or_si256(_mm256_and_si256(ql0, m4), hb(qh));
        q[4 * h + 1] = _mm256_or_si256(_mm256_and_si256(ql1, m4), hb(_mm256_srli_epi16::<2>(qh)));
        q[4 * h + 2] =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16::<4>(ql0), m4), hb(_mm256_srli_epi16::<4>(qh)));
        q[4 * h + 3] =
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16::<4>(ql1), m4), hb(_mm256_srli_epi16::<6>(qh)));
    }
    let sc = load16_at(b, q6_k::SCALES);
    let both = _mm256_broadcastsi128_si256(sc);
    let mut mult = [_mm256_setzero_si256(); 8];
    for (k, m) in mult.iter_mut().enumerate() {
        // scale 2k in the low lane, 2k + 1 in the high one, sign-extended
        // from (s << 8 | s)
        let idx = _mm256_set_m128i(_mm_set1_epi8(2 * k as i8 + 1), _mm_set1_epi8(2 * k as i8));
        *m = _mm256_srai_epi16::<8>(_mm256_shuffle_epi8(both, idx));
    }
    // 32 × each scale undoes the +32 offset of the quants
    let sc = _mm256_cvtepi8_epi16(sc);
    KBlock { q, mult, minw: _mm256_slli_epi16::<5>(sc), sc }
}

/// (Σ_run mult · (quants · activations), Σ_g minw_g · bsum_g), each as 8
/// partial i32 sums. All exact integers.
#[inline]
#[target_feature(enable = "avx2")]
pub(super) fn kdot(kb: &KBlock, a: &BlockQ8K) -> (__m256i, __m256i) {
    let mut acc = _mm256_setzero_si256();
    for r in 0..8 {
        let p = _mm256_maddubs_epi16(kb.q[r], load32(&a.qs[32 * r..]));
        acc = _mm256_add_epi32(acc, _mm256_madd_epi16(p, kb.mult[r]));
    }
    // SAFETY: `bsums` holds 16 i16.
    let bs = unsafe { _mm256_loadu_si256(a.bsums.as_ptr() as *const __m256i) };
    (acc, _mm256_madd_epi16(bs, kb.minw))
}

/// One super-block of 8 rows, laid out across the rows.
pub(super) struct Across {
    /// run r (32 quants), 4-byte group k: lane i = row i's bytes
    pub(super) q: [[__m256i; 8]; 8],
    /// 16-group g: lane i = row i's scale
    pub(super) mult: [__m256i; 16],
    /// 16-groups 2p and 2p + 1: lane i = row i's two bsum weights (i16)
    pub(super) minw: [__m256i; 8],
    pub(super) d: __m256,
    pub(super) dmin: __m256,
}

#[inline]
#[target_feature(enable = "avx2,f16c")]
pub(super) fn across<K: KQuant>(rws: &[&[u8]; ROWS], o: usize) -> Across {
    let ts = K::TYPE.type_size();
    let mut runs = [[_mm256_setzero_si256(); ROWS]; 8];
    let (mut minw, mut sc_lo, mut sc_hi) =
        ([_mm256_setzero_si256(); ROWS], [_mm256_setzero_si256(); ROWS], [_mm256_setzero_si256(); ROWS]);
    for i in 0..ROWS {
        // SAFETY: this fn enables AVX2.
        let kb = unsafe { K::unpack(&rws[i][o..o + ts]) };
        for (run, q) in runs.iter_mut().zip(kb.q) {
            run[i] = q;
        }
        // i32 lane p of `minw` is the i16 pair of 16-groups 2p, 2p + 1
        minw[i] = kb.minw;
        sc_lo[i] = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(kb.sc));
        sc_hi[i] = _mm256_cvtepi16_epi32(_mm256_extracti128_si256::<1>(kb.sc));
    }
    let mut q = [[_mm256_setzero_si256(); 8]; 8];
    for (q, run) in q.iter_mut().zip(&runs) {
        *q = transpose8(run);
    }
    let (lo, hi) = (transpose8(&sc_lo), transpose8(&sc_hi));
    let mut mult = [_mm256_setzero_si256(); 16];
    mult[..8].copy_from_slice(&lo);
    mult[8..].copy_from_slice(&hi);
    Across {
        q,
        mult,
        minw: transpose8(&minw),
        d: f16x8!(rws, o + K::D_AT),
        dmin: match K::DMIN_AT {
            Some(m) => f16x8!(rws, o + m),
            None => _mm256_setzero_ps(),
        },
    }
}

impl Across {
    /// The reference's float update of this super-block for one token
    /// (scale `da`), 8 rows at once: `(d·da)·isum − (dmin·da)·imin`, or
    /// `(d·da)·(isum − imin)` for the formats without mins (the
    /// reference's `− (0·da)·0` changes nothing).
    #[inline]
    #[target_feature(enable = "avx2")]
    pub(super) fn update<K: KQuant>(&self, da: f32, isum: __m256i, imin: __m256i) -> __m256 {
        let da = _mm256_set1_ps(da);
        if K::DMIN_AT.is_some() {
            let s = _mm256_mul_ps(_mm256_mul_ps(self.d, da), _mm256_cvtepi32_ps(isum));
            _mm256_sub_ps(s, _mm256_mul_ps(_mm256_mul_ps(self.dmin, da), _mm256_cvtepi32_ps(imin)))
        } else {
            _mm256_mul_ps(_mm256_mul_ps(self.d, da), _mm256_cvtepi32_ps(_mm256_sub_epi32(isum, imin)))
        }
    }
}
