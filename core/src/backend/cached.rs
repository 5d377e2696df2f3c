//! Cached keys and values as attention reads them: position by position,
//! from one dense run of rows or from a sequence's table of KV blocks.
//!
//! A [`KvBlock`] holds [`KV_BLOCK`] positions of every paged layer, K and
//! V: layer l's rows are `[l · KV_BLOCK · row ..][.. KV_BLOCK · row]`
//! of each, position after position. A sequence's cache is a table of
//! blocks (block b holds positions `b · KV_BLOCK ..`), so sequences can
//! share a prefix's blocks and a cache grows a block at a time. Whatever
//! the layout, a kernel visits positions in order and reads the same
//! numbers: the layout never changes a bit.
//!
//! Rows are f32, f16 or Q8_0 blocks (`quant::q8_0`'s layout: 32 elements
//! to a block, `x = d · q`). Both narrow types widen to f32 exactly (an
//! f16 is an f32; `q · d` of an i8 and an f16 needs at most 18 bits), so a
//! kernel that widens a row, however it does, then does the f32
//! arithmetic gets the same bits as the reference.

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::ops::Range;

use half::f16;

use crate::backend::quant::{q8_0, quantize_q8_0, BlockQ8_0, QK8};

/// Element type of the cached K and V rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum KvType {
    /// Half the memory and bandwidth; rows rounded to nearest even once,
    /// when written.
    #[default]
    F16,
    /// The same f16-rounded values, kept widened to f32: attention reads
    /// them without widening at every step (wasm: no f16 conversion
    /// instruction), for twice F16's memory. Identical logits to F16.
    F16Wide,
    /// Keeps K/V exactly as computed (the oracle-parity path).
    F32,
    /// Q8_0 blocks, as llama.cpp's `--cache-type-k/v q8_0`: 34 bytes per
    /// 32 elements, 53% of F16's memory. Each 32 elements of a row (a head
    /// holds whole blocks: its dimension is a multiple of 32) are quantized
    /// once, when written, as Q8_0 weights are; attention widens them to
    /// f32 exactly.
    Q8_0,
}

impl KvType {
    /// The type's name (`f32`, `f16`, `q8_0`).
    pub fn name(self) -> &'static str {
        match self {
            KvType::F16 => "f16",
            KvType::F16Wide => "f16-wide",
            KvType::F32 => "f32",
            KvType::Q8_0 => "q8_0",
        }
    }
    /// The type named `s`.
    pub fn parse(s: &str) -> Option<KvType> {
        [KvType::F16, KvType::F16Wide, KvType::F32, KvType::Q8_0].into_iter().find(|t| t.name() == s)
    }
    /// Bytes of `n` elements (for Q8_0, of the `n / 32` blocks they fill).
    pub fn bytes(self, n: usize) -> usize {
        match self {
            KvType::F16 => 2 * n,
            KvType::F16Wide | KvType::F32 => 4 * n,
            KvType::Q8_0 => n / QK8 * q8_0::BLOCK_BYTES,
        }
    }
    /// Whether rows whose heads are `head_dim` long, in rows of `row`
    /// elements, can be stored as this type (Q8_0: a head must hold whole
    /// blocks).
    pub fn fits(self, head_dim: usize, row: usize) -> bool {
        self != KvType::Q8_0 || (head_dim.is_multiple_of(QK8) && row.is_multiple_of(QK8))
    }
}

/// Positions per KV block.
pub const KV_BLOCK: usize = 256;
const SHIFT: u32 = KV_BLOCK.trailing_zeros();

/// Cached K or V rows, as stored: positions × a row stride.
#[derive(Clone, Copy, Debug)]
pub enum KvRows<'a> {
    /// An f32 cache.
    F32(&'a [f32]),
    /// An f16 cache.
    F16(&'a [f16]),
    /// A Q8_0 cache: blocks of 32 elements, element 0 the first block's
    /// first.
    Q8_0(&'a [u8]),
}

impl<'a> KvRows<'a> {
    /// The rows from element `off` on (for Q8_0, a block's first).
    #[inline]
    pub fn from(self, off: usize) -> KvRows<'a> {
        match self {
            KvRows::F32(x) => KvRows::F32(&x[off..]),
            KvRows::F16(x) => KvRows::F16(&x[off..]),
            KvRows::Q8_0(x) => {
                debug_assert!(off.is_multiple_of(QK8), "a Q8_0 row starts at a block");
                KvRows::Q8_0(&x[off / QK8 * q8_0::BLOCK_BYTES..])
            }
        }
    }
    /// The first `n` elements (for Q8_0, whole blocks).
    pub fn first(self, n: usize) -> KvRows<'a> {
        match self {
            KvRows::F32(x) => KvRows::F32(&x[..n]),
            KvRows::F16(x) => KvRows::F16(&x[..n]),
            KvRows::Q8_0(x) => KvRows::Q8_0(&x[..KvType::Q8_0.bytes(n)]),
        }
    }
    /// Elements `r` as f32 (f16 and Q8_0 widen exactly).
    pub fn read(&self, r: Range<usize>, out: &mut [f32]) {
        match self {
            KvRows::F32(x) => out.copy_from_slice(&x[r]),
            KvRows::F16(x) => {
                for (o, h) in out.iter_mut().zip(&x[r]) {
                    *o = h.to_f32();
                }
            }
            KvRows::Q8_0(x) => {
                for (o, e) in out.iter_mut().zip(r) {
                    let (d, q) = q8_0_at(x, e);
                    *o = q as f32 * d;
                }
            }
        }
    }
}

/// The scale and quant of element `e` of Q8_0 rows.
#[inline(always)]
pub fn q8_0_at(x: &[u8], e: usize) -> (f32, i8) {
    let b = &x[e / QK8 * q8_0::BLOCK_BYTES..];
    (f16::from_le_bytes([b[q8_0::D], b[q8_0::D + 1]]).to_f32(), b[q8_0::QS + e % QK8] as i8)
}

/// The elements of a block's K or V rows.
#[derive(Clone, Debug)]
pub enum BlockRows {
    /// f16 elements.
    F16(Vec<f16>),
    /// f32 elements.
    F32(Vec<f32>),
    /// Q8_0 blocks' bytes.
    Q8_0(Vec<u8>),
}

impl BlockRows {
    /// `n` zeros of type `ty` (a multiple of 32 for Q8_0).
    pub fn zeros(n: usize, ty: KvType) -> BlockRows {
        match ty {
            KvType::F16 => BlockRows::F16(vec![f16::ZERO; n]),
            KvType::F16Wide | KvType::F32 => BlockRows::F32(vec![0.0; n]),
            KvType::Q8_0 => BlockRows::Q8_0(vec![0; ty.bytes(n)]),
        }
    }
    /// Bytes of the elements.
    pub fn bytes(&self) -> usize {
        match self {
            BlockRows::F16(x) => 2 * x.len(),
            BlockRows::F32(x) => 4 * x.len(),
            BlockRows::Q8_0(x) => x.len(),
        }
    }
    /// Elements `at..at + x.len()` set to `x`: rounded to nearest even
    /// when f16, as `round` gives them when f32, quantized each 32 when
    /// Q8_0 (`at` and `x.len()` multiples of 32).
    pub fn write(&mut self, at: usize, x: &[f32], round: fn(f32) -> f32) {
        match self {
            BlockRows::F16(d) => d[at..at + x.len()].iter_mut().zip(x).for_each(|(d, &s)| *d = f16::from_f32(s)),
            BlockRows::F32(d) => d[at..at + x.len()].iter_mut().zip(x).for_each(|(d, &s)| *d = round(s)),
            BlockRows::Q8_0(d) => {
                let mut b = BlockQ8_0::ZERO;
                let out = d[KvType::Q8_0.bytes(at)..].chunks_exact_mut(q8_0::BLOCK_BYTES);
                for (c, out) in x.chunks_exact(QK8).zip(out) {
                    quantize_q8_0(c, &mut b);
                    q8_0::store(&b, out);
                }
            }
        }
    }
    /// Elements `r` as cached rows.
    pub fn slice(&self, r: Range<usize>) -> KvRows<'_> {
        match self {
            BlockRows::F16(x) => KvRows::F16(&x[r]),
            BlockRows::F32(x) => KvRows::F32(&x[r]),
            BlockRows::Q8_0(x) => KvRows::Q8_0(&x[KvType::Q8_0.bytes(r.start)..KvType::Q8_0.bytes(r.end)]),
        }
    }
    /// The elements as cached rows.
    #[inline(always)]
    pub fn rows(&self) -> KvRows<'_> {
        match self {
            BlockRows::F16(x) => KvRows::F16(x),
            BlockRows::F32(x) => KvRows::F32(x),
            BlockRows::Q8_0(x) => KvRows::Q8_0(x),
        }
    }
}

/// [`KV_BLOCK`] positions of every paged layer's K and V rows.
#[derive(Clone, Debug)]
pub struct KvBlock {
    /// The keys.
    pub k: BlockRows,
    /// The values.
    pub v: BlockRows,
}

impl KvBlock {
    /// A zeroed block of `n_layers` layers of rows of `row` elements of
    /// type `ty`.
    pub fn new(n_layers: usize, row: usize, ty: KvType) -> KvBlock {
        let n = n_layers * KV_BLOCK * row;
        KvBlock { k: BlockRows::zeros(n, ty), v: BlockRows::zeros(n, ty) }
    }
    /// Bytes of K and V.
    pub fn bytes(&self) -> usize {
        self.k.bytes() + self.v.bytes()
    }
}

#[derive(Clone, Copy, Debug)]
enum Layout<'a> {
    /// Position t's rows at element `t · stride`.
    Dense { k: KvRows<'a>, v: KvRows<'a> },
    /// Position t's rows in block `(t0 + t) / KV_BLOCK` at element
    /// `layer + (t0 + t) % KV_BLOCK · stride`.
    Paged { blocks: &'a [Arc<KvBlock>], layer: usize, t0: usize },
}

/// One layer's cached keys and values as attention reads them: position
/// t's key is `key(t)[..hd]`, its value `value(t)[..hd]`.
#[derive(Clone, Copy, Debug)]
pub struct Cached<'a> {
    layout: Layout<'a>,
    /// Element of a row where the head's elements start.
    at: usize,
    /// Elements from one position's row to the next.
    stride: usize,
}

impl<'a> Cached<'a> {
    /// Rows one after another: position t's at element `t · stride`.
    pub fn dense(k: KvRows<'a>, v: KvRows<'a>, stride: usize) -> Cached<'a> {
        Cached { layout: Layout::Dense { k, v }, at: 0, stride }
    }
    /// Layer `layer` (its index among a block's layers) of a table of
    /// blocks whose rows have `row` elements.
    pub fn paged(blocks: &'a [Arc<KvBlock>], layer: usize, row: usize) -> Cached<'a> {
        Cached { layout: Layout::Paged { blocks, layer: layer * KV_BLOCK * row, t0: 0 }, at: 0, stride: row }
    }
    /// The same rows from element `at` of each row on (a KV head's).
    #[inline]
    pub fn head(self, at: usize) -> Cached<'a> {
        Cached { at: self.at + at, ..self }
    }
    /// The rows from position `t` on.
    #[inline]
    pub fn from(self, t: usize) -> Cached<'a> {
        let layout = match self.layout {
            Layout::Dense { k, v } => Layout::Dense { k: k.from(t * self.stride), v: v.from(t * self.stride) },
            Layout::Paged { blocks, layer, t0 } => Layout::Paged { blocks, layer, t0: t0 + t },
        };
        Cached { layout, ..self }
    }
    /// Elements from one position's row to the next, inside a run.
    #[inline]
    pub fn stride(&self) -> usize {
        self.stride
    }
    /// Positions `0..n` as runs of rows one after another: each
    /// `(t, len, k, v)` has positions `t..t + len`, position t + i's key
    /// at `k[i · stride()..]` and value at `v[i · stride()..]`. (One run
    /// when dense; a block's rows at a time when paged.) Kernels walk runs
    /// so a row costs what it did in one dense run.
    #[inline(always)]
    pub fn runs(&self, n: usize) -> Runs<'a> {
        Runs { kv: *self, t: 0, n }
    }
    /// Whether the rows are f32 (not f16 or Q8_0, which widen).
    pub fn is_f32(&self) -> bool {
        match self.layout {
            Layout::Dense { k, .. } => matches!(k, KvRows::F32(_)),
            Layout::Paged { blocks, .. } => blocks.first().is_none_or(|b| matches!(b.k, BlockRows::F32(_))),
        }
    }
    /// Position t's key: its head's elements from index 0.
    #[inline]
    pub fn key(&self, t: usize) -> KvRows<'a> {
        self.row(t, false)
    }
    /// Position t's value: its head's elements from index 0.
    #[inline]
    pub fn value(&self, t: usize) -> KvRows<'a> {
        self.row(t, true)
    }
    /// The run of rows from position t to the end of its block (or of
    /// the rows), at most `n` positions long.
    #[inline(always)]
    fn run(&self, t: usize, n: usize) -> (usize, KvRows<'a>, KvRows<'a>) {
        match self.layout {
            Layout::Dense { k, v } => {
                let at = t * self.stride + self.at;
                (n, k.from(at), v.from(at))
            }
            Layout::Paged { blocks, layer, t0 } => {
                let p = t0 + t;
                let (b, i) = (&blocks[p >> SHIFT], p & (KV_BLOCK - 1));
                let at = layer + i * self.stride + self.at;
                ((KV_BLOCK - i).min(n), b.k.rows().from(at), b.v.rows().from(at))
            }
        }
    }
    #[inline]
    fn row(&self, t: usize, value: bool) -> KvRows<'a> {
        let (_, k, v) = self.run(t, 1);
        if value {
            v
        } else {
            k
        }
    }
}

/// The runs of [`Cached::runs`].
#[derive(Clone, Copy, Debug)]
pub struct Runs<'a> {
    kv: Cached<'a>,
    t: usize,
    n: usize,
}

impl<'a> Iterator for Runs<'a> {
    type Item = (usize, usize, KvRows<'a>, KvRows<'a>);
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.t >= self.n {
            return None;
        }
        let (len, k, v) = self.kv.run(self.t, self.n - self.t);
        let t = self.t;
        self.t += len;
        Some((t, len, k, v))
    }
}
