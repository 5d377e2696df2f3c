//! One conformance harness for every backend: each kernel against the
//! scalar reference on deterministic pseudo-random data — every weight type,
//! several row lengths and token counts, odd lengths for f32 tails,
//! unaligned slices — asserting bit equality. Returns the first mismatch.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

use half::f16;

use super::{
    scalar, tiles, Acts, BlockRows, Cached, Kernels, KvBlock, KvRows, KvType, QMatrix, Queries, Scalar, Score, KV_BLOCK,
};
use crate::backend::quant::{self, BlockQ8K, BlockQ8_0, BlockQ8_1, GgmlType, QK8, QK_K};

struct Rand(u64);
impl Rand {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn f32(&mut self, scale: f32) -> f32 {
        ((self.next() % 20001) as f32 / 10000.0 - 1.0) * scale
    }
}

/// Random weights of `ty`: random bytes, valid finite scales.
fn weights(r: &mut Rand, ty: GgmlType, n_cols: usize, n_rows: usize) -> Vec<u8> {
    let n = n_cols * n_rows;
    match ty {
        GgmlType::F32 => (0..n).flat_map(|_| r.f32(1.0).to_le_bytes()).collect(),
        GgmlType::F16 => (0..n).flat_map(|_| f16::from_f32(r.f32(1.0)).to_le_bytes()).collect(),
        GgmlType::BF16 => (0..n).flat_map(|_| half::bf16::from_f32(r.f32(1.0)).to_le_bytes()).collect(),
        _ => {
            let (bs, ts) = ty.block();
            let mut b: Vec<u8> = (0..n / bs * ts).map(|_| r.next() as u8).collect();
            for blk in b.chunks_exact_mut(ts) {
                for &o in quant::f16_fields(ty) {
                    blk[o..o + 2].copy_from_slice(&f16::from_f32(r.f32(0.05)).to_le_bytes());
                }
            }
            b
        }
    }
}

fn same(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits())
}

/// Check `k` against the scalar reference; Err names the first mismatch.
pub fn check(k: &dyn Kernels) -> Result<(), String> {
    quantizers(k)?;
    transposes(k)?;
    lora_ups(k)?;
    let mut r = Rand(0x9E37_79B9_7F4A_7C15);
    let s = Scalar;
    for ty in super::KERNEL_TYPES {
        // float rows may have any length: ragged ones too (and a LoRA
        // adapter's B, whose rows are its rank: 1, 4, 8, 16, 64)
        // (576: a row of 18 blocks of 32, its last group of four partial;
        // 544: an odd number of blocks, 17)
        let widths: &[usize] = match ty.block().0 {
            1 => &[1, 4, 7, 8, 16, 64, 200, 256, 1536],
            32 => &[256, 512, 544, 576, 1536],
            _ => &[256, 512, 1536],
        };
        for &n_cols in widths {
            // 37 rows: two tiles of 16 (AMX's) and 5 over; 9 elsewhere
            let n_rows = if n_cols == 512 { 37 } else { 9 };
            let w = weights(&mut r, ty, n_cols, n_rows);
            // the blocks' scales read from the blocks, and widened beside
            // them; the 8-row groups interleaved, for a backend that reads them
            let wide = quant::wide_scales(ty, &w, n_cols, n_rows).unwrap_or_default();
            let mut rows8 = Vec::new();
            if k.reads_rows8(ty) && !quant::rows8::pack(ty, &w, n_cols, n_rows, &mut rows8) {
                return Err(format!("{}: reads rows8 for {}, which has no such layout", k.name(), ty.name()));
            }
            let mut forms = vec![(&[][..], &[][..])];
            if !wide.is_empty() {
                forms.push((&wide[..], &[][..]));
            }
            if !rows8.is_empty() {
                forms.push((&[][..], &rows8[..]));
            }
            for (scales, rows8) in forms {
                let m = QMatrix { ty, data: &w, n_cols, n_rows, scales, rows8 };
                for &n_tok in &[1usize, 2, 3, 4, 5, 8, 11, 16, 75] {
                    let x: Vec<f32> = (0..n_tok * n_cols).map(|i| r.f32(if i % 13 == 0 { 8.0 } else { 1.0 })).collect();
                    let mut q0 = vec![BlockQ8_0::ZERO; n_tok * n_cols / QK8];
                    let mut q1 = vec![BlockQ8_1::ZERO; n_tok * n_cols / QK8];
                    let mut qk = vec![BlockQ8K::ZERO; n_tok * n_cols / QK_K];
                    let (mut e0, mut e1, mut ek) = (q0.clone(), q1.clone(), qk.clone());
                    // no 8-bit activations for ragged rows
                    if n_cols % QK8 != 0 {
                        (q0, q1, e0, e1) = (vec![], vec![], vec![], vec![]);
                    }
                    if n_cols % QK_K != 0 {
                        (qk, ek) = (vec![], vec![]);
                    }
                    k.quantize_q8_0(&x, &mut q0);
                    s.quantize_q8_0(&x, &mut e0);
                    k.quantize_q8_1(&x, &mut q1);
                    s.quantize_q8_1(&x, &mut e1);
                    k.quantize_q8_k(&x, &mut qk);
                    s.quantize_q8_k(&x, &mut ek);
                    if q0 != e0 || q1 != e1 || qk != ek {
                        return Err(format!("{}: 8-bit quantization of {n_tok}×{n_cols} differs", k.name()));
                    }
                    let mut acts = vec![Acts::F32(&x)];
                    match ty.vec_dot_type() {
                        Some(GgmlType::Q8_0) => acts.push(Acts::Q8_0(&q0)),
                        Some(GgmlType::Q8_1) => acts.push(Acts::Q8_1(&q1)),
                        Some(GgmlType::Q8_K) => acts.push(Acts::Q8K(&qk)),
                        _ => {}
                    }
                    for a in acts {
                        // all rows, and a range not starting at 0
                        for rows in [0..n_rows, 2..7, 3..n_rows] {
                            let mut got = vec![0.0f32; rows.len() * n_tok];
                            let mut want = got.clone();
                            k.matmul_rows(&m, a, n_tok, rows.clone(), &mut got);
                            scalar::matmul_rows(&m, a, n_tok, rows.clone(), &mut want);
                            if !same(&got, &want) {
                                let kind = if matches!(a, Acts::F32(_)) { "f32" } else { "q8" };
                                return Err(format!(
                                "{}: matmul {} × {kind}{}, {n_cols} cols, {n_tok} tokens, rows {rows:?}: {got:?} != {want:?}",
                                k.name(),
                                ty.name(),
                                match (scales.is_empty(), rows8.is_empty()) {
                                    (false, _) => " (widened scales)",
                                    (_, false) => " (8-row groups interleaved)",
                                    _ => "",
                                }
                            ));
                            }
                        }
                    }
                }
            }
        }
    }
    // f32 kernels: odd lengths and unaligned starts
    for &n in &[1usize, 7, 16, 17, 64, 100, 896] {
        let buf: Vec<f32> = (0..n + 5).map(|_| r.f32(3.0)).collect();
        let (x, w) = (&buf[1..n + 1], &buf[3..n + 3]);
        let (mut a, mut b) = (vec![0.0; n], vec![0.0; n]);
        k.rms_norm(x, w, 1e-6, &mut a);
        s.rms_norm(x, w, 1e-6, &mut b);
        if !same(&a, &b) {
            return Err(format!("{}: rms_norm of {n}", k.name()));
        }
        let (mut g1, mut g2) = (x.to_vec(), x.to_vec());
        k.swiglu(&mut g1, w);
        s.swiglu(&mut g2, w);
        if !same(&g1, &g2) {
            return Err(format!("{}: swiglu of {n}", k.name()));
        }
        let (mut g1, mut g2) = (x.to_vec(), x.to_vec());
        k.geglu(&mut g1, w);
        s.geglu(&mut g2, w);
        if !same(&g1, &g2) {
            return Err(format!("{}: geglu of {n}", k.name()));
        }
        let bias = &buf[2..n + 2];
        k.layer_norm(x, w, bias, 1e-12, &mut a);
        s.layer_norm(x, w, bias, 1e-12, &mut b);
        if !same(&a, &b) {
            return Err(format!("{}: layer_norm of {n}", k.name()));
        }
        let (mut g1, mut g2) = (x.to_vec(), x.to_vec());
        k.gelu(&mut g1);
        s.gelu(&mut g2);
        if !same(&g1, &g2) {
            return Err(format!("{}: gelu of {n}", k.name()));
        }
    }
    // swiglu over every branch of exp: both signs of tiny, ±0.5 ln2,
    // ±1.5 ln2, the under/overflow edges, subnormal results, ±inf, NaN, a
    // sweep of [−110, 110] and random bit patterns
    let mut g: Vec<f32> = vec![
        0.0,
        -0.0,
        1e-10,
        -1e-10,
        6.1e-5,
        -6.1e-5,
        0.3465,
        -0.3465,
        0.3466,
        -0.3466,
        1.0397,
        -1.0397,
        1.0398,
        -1.0398,
        87.33,
        -87.33,
        87.34,
        -87.34,
        88.72,
        -88.72,
        88.73,
        -88.73,
        89.0,
        -89.0,
        103.97,
        -103.97,
        103.98,
        -103.98,
        150.0,
        -150.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        1e-40,
        -1e-40,
        f32::MAX,
        f32::MIN,
    ];
    g.extend((0..4400).map(|i| -110.0 + i as f32 * 0.05));
    g.extend((0..4000).map(|_| f32::from_bits(r.next() as u32)));
    // (geglu: its exp's argument is a cubic of g, so the same sweep also
    // crosses every branch, at other g)
    let u: Vec<f32> = g.iter().map(|_| r.f32(2.0)).collect();
    type Act = fn(&dyn Kernels, &mut [f32], &[f32]);
    let acts: [(&str, Act); 2] = [("swiglu", |k, g, u| k.swiglu(g, u)), ("geglu", |k, g, u| k.geglu(g, u))];
    for (name, act) in acts {
        let (mut g1, mut g2) = (g.clone(), g.clone());
        act(k, &mut g1, &u);
        act(&s, &mut g2, &u);
        if let Some(i) = (0..g.len()).find(|&i| g1[i].to_bits() != g2[i].to_bits()) {
            return Err(format!(
                "{}: {name}({:e} = {:#x}) = {:e}, reference {:e}",
                k.name(),
                g[i],
                g[i].to_bits(),
                g1[i],
                g2[i]
            ));
        }
    }
    // attention over f32 and f16 caches, dense and in blocks (the rows in a
    // block's second layer); rows start at an odd offset, as a KV head past
    // the first does. Q8_0 caches (heads of whole blocks: the offset is
    // the row's last head's) against the reference over their rows widened
    // to f32, which must give the same bits.
    // (head sizes: whole 16-lane registers, a tail of 8, of 2; 256 in two
    // passes of a kernel's registers)
    for &(hd, n_kv, stride) in &[
        (64usize, 1usize, 64usize),
        (64, 37, 128),
        (128, 300, 256),
        (80, 5, 160),
        (18, 9, 36),
        (72, 9, 144),
        (256, 7, 256),
    ] {
        let off = stride - hd + 1;
        let q: Vec<f32> = (0..hd).map(|_| r.f32(1.0)).collect();
        let kc: Vec<f32> = (0..off + n_kv * stride).map(|_| r.f32(2.0)).collect();
        let vc: Vec<f32> = (0..off + n_kv * stride).map(|_| r.f32(1.0)).collect();
        let (kh, vh): (Vec<_>, Vec<_>) =
            kc.iter().zip(&vc).map(|(&a, &b)| (f16::from_f32(a), f16::from_f32(b))).unzip();
        // plain scores, and softcapped ones (Gemma 2) at a cap they exceed
        let scores = [Score::scaled(0.125), Score { scale: 0.125, softcap: Some(0.5) }];
        let b32 = paged(&kc, &vc, (off, stride, hd, n_kv), f32::NAN, BlockRows::F32);
        let b16 = paged(&kh, &vh, (off, stride, hd, n_kv), f16::NAN, BlockRows::F16);
        let rows = [
            ("f32", Cached::dense(KvRows::F32(&kc).from(off), KvRows::F32(&vc).from(off), stride)),
            ("f16", Cached::dense(KvRows::F16(&kh).from(off), KvRows::F16(&vh).from(off), stride)),
        ];
        let mut layouts: Vec<_> = rows
            .into_iter()
            .flat_map(|(kind, dense)| {
                let blocks = if kind == "f32" { &b32 } else { &b16 };
                [(kind, "dense", dense, dense), (kind, "paged", Cached::paged(blocks, 1, hd + 2).head(1), dense)]
            })
            .collect();
        let q8 = q8_rows(&kc, &vc, (stride - hd, stride, hd, n_kv));
        if let Some((qk, qv, wk, wv, blocks)) = &q8 {
            let (o8, row) = (stride - hd, hd + QK8);
            let wide = Cached::dense(KvRows::F32(wk).from(o8), KvRows::F32(wv).from(o8), stride);
            let dense = Cached::dense(qk.rows().from(o8), qv.rows().from(o8), stride);
            layouts.push(("q8_0", "dense", dense, wide));
            layouts.push(("q8_0", "paged", Cached::paged(blocks, 1, row).head(QK8), wide));
        }
        for ((kind, layout, kv, dense), score) in layouts.into_iter().flat_map(|r| scores.map(|s| (r, s))) {
            let kind = format!("{layout} {kind}");
            let (mut s1, mut s2) = (vec![0.0; tiles::work_len(hd, 41)], vec![0.0; tiles::work_len(hd, 41)]);
            let (mut o1, mut o2) = (vec![0.0; hd], vec![0.0; hd]);
            k.attention_head(&q, kv, n_kv, score, &mut s1, &mut o1);
            s.attention_head(&q, dense, n_kv, score, &mut s2, &mut o2);
            if !same(&o1, &o2) {
                return Err(format!("{}: attention head_dim {hd} over {n_kv} {kind} rows, {score:?}", k.name()));
            }
            // the rows from position 5 on (a sliding window's view): its
            // tiles straddle KV blocks
            if n_kv > 40 {
                k.attention_head(&q, kv.from(5), n_kv - 5, score, &mut s1, &mut o1);
                s.attention_head(&q, dense.from(5), n_kv - 5, score, &mut s2, &mut o2);
                if !same(&o1, &o2) {
                    return Err(format!("{}: attention head_dim {hd} over {kind} rows 5..{n_kv}, {score:?}", k.name()));
                }
            }
            // a run of queries over the same rows, each seeing a prefix (as a
            // prefill's causal mask gives), against the reference per query
            // (3: a decode step's group of query heads; 9 and 41: a
            // prompt's, the tiles' rows shared by queries that see
            // different numbers of them)
            for n_q in [3, 9, 41] {
                let qs: Vec<f32> = (0..n_q * (hd + 3)).map(|_| r.f32(1.0)).collect();
                let seen: Vec<usize> = (0..n_q).map(|j| (n_kv - j.min(n_kv - 1) * n_kv / n_q).max(1)).collect();
                let (mut o1, mut o2) = (vec![0.0; n_q * hd], vec![0.0; n_q * hd]);
                k.attention_queries(Queries { q: &qs, stride: hd + 3, n_kv: &seen, score }, kv, &mut s1, &mut o1);
                for (j, o) in o2.chunks_exact_mut(hd).enumerate() {
                    s.attention_head(&qs[j * (hd + 3)..j * (hd + 3) + hd], dense, seen[j], score, &mut s2, o);
                }
                if !same(&o1, &o2) {
                    return Err(format!(
                        "{}: attention of {n_q} queries, head_dim {hd}, over {seen:?} {kind} rows, {score:?}",
                        k.name()
                    ));
                }
            }
        }
    }
    Ok(())
}

/// The first `n` dense rows (position t's head at `off + t · stride`)
/// copied into KV blocks of two layers of rows of `hd + 2`: position t's
/// head in layer 1 at element 1 of its row (the first layer and the rest
/// of each row hold NaN, which a kernel reading outside the head shows).
fn paged<T: Copy>(
    k: &[T],
    v: &[T],
    (off, stride, hd, n): (usize, usize, usize, usize),
    nan: T,
    rows: fn(Vec<T>) -> BlockRows,
) -> Vec<Arc<KvBlock>> {
    let row = hd + 2;
    (0..n.div_ceil(KV_BLOCK))
        .map(|b| {
            let mut kb = vec![nan; 2 * KV_BLOCK * row];
            let mut vb = kb.clone();
            for p in 0..KV_BLOCK.min(n - b * KV_BLOCK) {
                let (src, dst) = (off + (b * KV_BLOCK + p) * stride, (KV_BLOCK + p) * row + 1);
                kb[dst..dst + hd].copy_from_slice(&k[src..src + hd]);
                vb[dst..dst + hd].copy_from_slice(&v[src..src + hd]);
            }
            Arc::new(KvBlock { k: rows(kb), v: rows(vb) })
        })
        .collect()
}

/// Rows as Q8_0 (when heads hold whole blocks): K and V dense (position
/// t's head at `off + t · stride`), the same widened to f32, and in KV
/// blocks of two layers of rows of `hd + 32` (position t's head in layer 1
/// from element 32 of its row).
#[allow(clippy::type_complexity)]
fn q8_rows(
    k: &[f32],
    v: &[f32],
    (off, stride, hd, n): (usize, usize, usize, usize),
) -> Option<(BlockRows, BlockRows, Vec<f32>, Vec<f32>, Vec<Arc<KvBlock>>)> {
    if !KvType::Q8_0.fits(hd, stride) || !off.is_multiple_of(QK8) {
        return None;
    }
    let len = off + n * stride;
    let q8 = |x: &[f32]| {
        let mut r = BlockRows::zeros(len, KvType::Q8_0);
        r.write(0, &x[..len], |s| s);
        let mut wide = vec![0.0; len];
        r.rows().read(0..len, &mut wide);
        (r, wide)
    };
    let ((qk, wk), (qv, wv)) = (q8(k), q8(v));
    let row = hd + QK8;
    let blocks = (0..n.div_ceil(KV_BLOCK))
        .map(|b| {
            let mut block = KvBlock::new(2, row, KvType::Q8_0);
            for p in 0..KV_BLOCK.min(n - b * KV_BLOCK) {
                let (src, dst) = (off + (b * KV_BLOCK + p) * stride, (KV_BLOCK + p) * row + QK8);
                block.k.write(dst, &k[src..src + hd], |s| s);
                block.v.write(dst, &v[src..src + hd], |s| s);
            }
            Arc::new(block)
        })
        .collect();
    Some((qk, qv, wk, wv, blocks))
}

/// `transpose` on whole 8 × 8 tiles and ragged edges, from a token offset,
/// into a column block of wider rows.
/// A LoRA adapter's B step over float types, ranks 1 to 64, ragged
/// output widths, several tokens, scales of either sign.
fn lora_ups(k: &dyn Kernels) -> Result<(), String> {
    let mut r = Rand(0x4C6F_5241);
    for ty in [GgmlType::F32, GgmlType::F16, GgmlType::BF16] {
        for rank in [1usize, 4, 8, 16, 64] {
            for n_out in [7usize, 64, 200, 576] {
                let bt = weights(&mut r, ty, n_out, rank);
                let m = QMatrix { ty, data: &bt, n_cols: n_out, n_rows: rank, scales: &[], rows8: &[] };
                // all outputs, and a ragged range inside them
                for cols in [0..n_out, 3..n_out.min(133)] {
                    for (n_tok, scale) in [(1usize, 1.5f32), (3, -0.25), (17, 2.0)] {
                        let mid: Vec<f32> = (0..n_tok * rank).map(|_| r.f32(1.0)).collect();
                        let base: Vec<f32> = (0..n_tok * cols.len()).map(|_| r.f32(4.0)).collect();
                        let (mut got, mut want) = (base.clone(), base);
                        k.lora_up(&m, cols.clone(), &mid, scale, &mut got);
                        scalar::lora_up(&m, cols.clone(), &mid, scale, &mut want);
                        if !same(&got, &want) {
                            return Err(format!(
                                "{}: lora_up {} rank {rank} × {n_out}, outputs {cols:?}, {n_tok} tokens differs",
                                k.name(),
                                ty.name()
                            ));
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

fn transposes(k: &dyn Kernels) -> Result<(), String> {
    for (nr, n_src, t0, nt, stride) in
        // (the last two: a verify step's — one token of two, the last
        // one's rows; three tokens of three)
        [
            (16, 16, 0, 16, 16),
            (19, 37, 5, 13, 23),
            (130, 64, 0, 64, 200),
            (3, 9, 2, 7, 3),
            (24, 9, 3, 4, 30),
            (40, 2, 1, 1, 40),
            (17, 3, 0, 3, 17),
        ]
    {
        let src: Vec<f32> = (0..nr * n_src).map(|i| i as f32).collect();
        let mut got = vec![-1.0f32; nt * stride];
        let mut want = got.clone();
        k.transpose(&src, n_src, t0, nt, &mut got, stride);
        scalar::transpose(&src, n_src, t0, nt, &mut want, stride);
        if !same(&got, &want) {
            return Err(format!(
                "{}: transpose of {nr}×{n_src} from {t0} ({nt} tokens, stride {stride}) differs",
                k.name()
            ));
        }
    }
    Ok(())
}

/// The 8-bit quantizers on blocks the random ones never make: all zeros,
/// -0.0, rounding ties (amax 127, so each `x · 1/d` is `x`), a NaN, an
/// infinity, a tiny block; compared bit for bit (NaN scales included).
fn quantizers(k: &dyn Kernels) -> Result<(), String> {
    // ties: amax 127, so d = 1 and each quant is `x` rounded, half to even
    let tie = |i: usize| if i.is_multiple_of(QK8) { 127.0 } else { (i % QK8) as f32 - 16.5 + (i / QK8) as f32 * 4.0 };
    let special: [fn(usize) -> f32; 6] = [
        |_| 0.0,
        |i| if i % 3 == 0 { -0.0 } else { 0.0 },
        |i| if i == 7 { 127.0 } else { (i % 64) as f32 * 0.5 - 16.0 },
        |i| if i == 5 { f32::NAN } else { i as f32 },
        |i| if i == 9 { f32::NEG_INFINITY } else { i as f32 * 0.25 },
        |i| i as f32 * 1e-40,
    ];
    let mut x: Vec<f32> = (0..QK_K).map(tie).collect();
    for f in special {
        x.extend((0..QK8).map(f));
    }
    x.resize(x.len().next_multiple_of(QK_K), 1.0);
    let x = &x[..];
    let s = Scalar;
    let bits = |d: f32, qs: &[i8]| (d.to_bits(), qs.to_vec());
    let (mut a0, mut e0) = (vec![BlockQ8_0::ZERO; x.len() / QK8], vec![BlockQ8_0::ZERO; x.len() / QK8]);
    let (mut a1, mut e1) = (vec![BlockQ8_1::ZERO; x.len() / QK8], vec![BlockQ8_1::ZERO; x.len() / QK8]);
    let (mut ak, mut ek) = (vec![BlockQ8K::ZERO; x.len() / QK_K], vec![BlockQ8K::ZERO; x.len() / QK_K]);
    k.quantize_q8_0(x, &mut a0);
    s.quantize_q8_0(x, &mut e0);
    k.quantize_q8_1(x, &mut a1);
    s.quantize_q8_1(x, &mut e1);
    k.quantize_q8_k(x, &mut ak);
    s.quantize_q8_k(x, &mut ek);
    for (i, (a, e)) in a0.iter().zip(&e0).enumerate() {
        if bits(a.d, &a.qs) != bits(e.d, &e.qs) {
            return Err(format!("{}: Q8_0 quantization of special block {i}: {a:?} != {e:?}", k.name()));
        }
    }
    for (i, (a, e)) in a1.iter().zip(&e1).enumerate() {
        if bits(a.d, &a.qs) != bits(e.d, &e.qs) || a.s.to_bits() != e.s.to_bits() {
            return Err(format!("{}: Q8_1 quantization of special block {i}: {a:?} != {e:?}", k.name()));
        }
    }
    for (i, (a, e)) in ak.iter().zip(&ek).enumerate() {
        if bits(a.d, &a.qs) != bits(e.d, &e.qs) || a.bsums != e.bsums {
            return Err(format!("{}: Q8_K quantization of special block {i}: {a:?} != {e:?}", k.name()));
        }
    }
    Ok(())
}

/// A vector `expf` against libm's (the reference's `exp_shifted`), bit for
/// bit: `f` turns each run of `lanes` values into their exp in place. On
/// every f32 in the ranges where e_expf.c branches (around 0.5 and 1.5
/// ln2, 80-105, the tiny edge; both signs), every 61st bit pattern
/// elsewhere, the infinities, NaNs and zeros.
pub fn check_expf(lanes: usize, f: impl Fn(&mut [f32])) -> Result<(), String> {
    let dense = [(0x3eb0_0000u32, 0x3f86_0000u32), (0x42a0_0000, 0x42d2_0000), (0x38f0_0000, 0x3910_0000)];
    let mut xs: Vec<u32> = (0..=u32::MAX / 61).map(|i| i * 61).collect();
    for (a, b) in dense {
        xs.extend(a..b);
        xs.extend((a..b).map(|x| x | 0x8000_0000));
    }
    xs.extend([0x7f80_0000, 0xff80_0000, 0x7fc0_0000, 0xffc0_0001, 0, 0x8000_0000]);
    for c in xs.chunks(lanes * 1024) {
        let x: Vec<f32> = c.iter().map(|&b| f32::from_bits(b)).collect();
        let mut want = x.clone();
        scalar::exp_shifted(&mut want, 0.0);
        let mut got = x.clone();
        for g in got.chunks_exact_mut(lanes) {
            f(g);
        }
        for i in 0..x.len() / lanes * lanes {
            if got[i].to_bits() != want[i].to_bits() {
                return Err(format!("expf({:e} = {:#x}) = {:e}, libm {:e}", x[i], c[i], got[i], want[i]));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[test]
fn scalar_conforms_to_itself() {
    check(&Scalar).unwrap();
}
