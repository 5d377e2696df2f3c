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

use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use core::ops::Range;

use half::f16;

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
}

impl<'a> KvRows<'a> {
    /// The rows from element `off` on.
    #[inline]
    pub fn from(self, off: usize) -> KvRows<'a> {
        match self {
            KvRows::F32(x) => KvRows::F32(&x[off..]),
            KvRows::F16(x) => KvRows::F16(&x[off..]),
        }
    }
    /// Elements `r` as f32 (f16 widens exactly).
    pub fn read(&self, r: Range<usize>, out: &mut [f32]) {
        match self {
            KvRows::F32(x) => out.copy_from_slice(&x[r]),
            KvRows::F16(x) => {
                for (o, h) in out.iter_mut().zip(&x[r]) {
                    *o = h.to_f32();
                }
            }
        }
    }
}

/// The elements of a block's K or V rows.
#[derive(Clone, Debug)]
pub enum BlockRows {
    /// f16 elements.
    F16(Vec<f16>),
    /// f32 elements.
    F32(Vec<f32>),
}

impl BlockRows {
    /// `n` zeros, f16 or f32.
    pub fn zeros(n: usize, f16: bool) -> BlockRows {
        if f16 {
            BlockRows::F16(vec![f16::ZERO; n])
        } else {
            BlockRows::F32(vec![0.0; n])
        }
    }
    /// Bytes of the elements.
    pub fn bytes(&self) -> usize {
        match self {
            BlockRows::F16(x) => 2 * x.len(),
            BlockRows::F32(x) => 4 * x.len(),
        }
    }
    /// Elements `at..at + x.len()` set to `x`: rounded to nearest even
    /// when f16, as `round` gives them when f32.
    pub fn write(&mut self, at: usize, x: &[f32], round: fn(f32) -> f32) {
        match self {
            BlockRows::F16(d) => d[at..at + x.len()].iter_mut().zip(x).for_each(|(d, &s)| *d = f16::from_f32(s)),
            BlockRows::F32(d) => d[at..at + x.len()].iter_mut().zip(x).for_each(|(d, &s)| *d = round(s)),
        }
    }
    /// Elements `r` as cached rows.
    pub fn slice(&self, r: Range<usize>) -> KvRows<'_> {
        match self {
            BlockRows::F16(x) => KvRows::F16(&x[r]),
            BlockRows::F32(x) => KvRows::F32(&x[r]),
        }
    }
    /// The elements as cached rows.
    #[inline(always)]
    pub fn rows(&self) -> KvRows<'_> {
        match self {
            BlockRows::F16(x) => KvRows::F16(x),
            BlockRows::F32(x) => KvRows::F32(x),
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
    /// A zeroed block of `n_layers` layers of rows of `row` elements, in
    /// f16 or f32.
    pub fn new(n_layers: usize, row: usize, f16: bool) -> KvBlock {
        let n = n_layers * KV_BLOCK * row;
        KvBlock { k: BlockRows::zeros(n, f16), v: BlockRows::zeros(n, f16) }
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
    /// Whether the rows are f16.
    pub fn is_f16(&self) -> bool {
        match self.layout {
            Layout::Dense { k, .. } => matches!(k, KvRows::F16(_)),
            Layout::Paged { blocks, .. } => blocks.first().is_some_and(|b| matches!(b.k, BlockRows::F16(_))),
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
