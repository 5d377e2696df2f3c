//! LoRA adapters as a forward pass applies them: per layer and projection
//! a pair (A, B) and its scale, `y = W·x + s·B(A·x)`, held beside the
//! base (whose bytes are never written), and the set of adapters a
//! sequence runs with. `crate::lora` reads them from files and checks them
//! against the base.

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use super::config::Config;
use super::weights::{Ffn, TensorRef, Weights};
use crate::backend::quant::GgmlType;
use crate::backend::QMatrix;
use crate::error::{Error, Result};
use crate::hash::Fnv;

/// A projection an adapter may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Proj {
    /// Attention's query projection.
    Q,
    /// Key projection.
    K,
    /// Value projection.
    V,
    /// Attention's output projection.
    O,
    /// The MLP's gate projection.
    Gate,
    /// Its up projection.
    Up,
    /// Its down projection.
    Down,
}

impl Proj {
    /// Every projection, in the order a layer runs them.
    pub const ALL: [Proj; 7] = [Proj::Q, Proj::K, Proj::V, Proj::O, Proj::Gate, Proj::Up, Proj::Down];

    /// Its name in transformers' modules (`q_proj`, …).
    pub fn hf_name(self) -> &'static str {
        ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"][self as usize]
    }

    /// Its name in GGUF tensors (`attn_q`, …).
    pub fn gguf_name(self) -> &'static str {
        ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"][self as usize]
    }

    /// The base's matrix for it in layer `l`, if the layer has one of its
    /// own (a layer reading another's K/V has no K or V; an MoE layer no
    /// single MLP).
    pub(crate) fn of(self, w: &Weights, l: usize) -> Option<&TensorRef> {
        let lw = w.layers.get(l)?;
        let mlp = match &lw.ffn {
            Ffn::Dense(m) => Some(m),
            Ffn::Moe(_) => None,
        };
        match self {
            Proj::Q => Some(&lw.wq),
            Proj::K => lw.wk.as_ref(),
            Proj::V => lw.wv.as_ref(),
            Proj::O => Some(&lw.wo),
            Proj::Gate => mlp.map(|m| &m.gate),
            Proj::Up => mlp.map(|m| &m.up),
            Proj::Down => mlp.map(|m| &m.down),
        }
    }
}

/// A matrix of an adapter: rows of float elements in its bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mat {
    pub ty: GgmlType,
    pub start: usize,
    pub len: usize,
    pub n_rows: usize,
    pub n_cols: usize,
}

/// One projection's low-rank pair: `A` (rank × inputs), `B` stored
/// transposed (rank × outputs: `Kernels::lora_up` reads it so), and
/// `alpha / rank` (or `alpha / √rank`, rsLoRA).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pair {
    pub a: Mat,
    pub bt: Mat,
    pub scale: f32,
}

/// A LoRA adapter loaded for one base model (`crate::lora` reads them).
pub struct Adapter {
    pub(crate) name: String,
    /// FNV-1a of the files' bytes.
    pub(crate) hash: u64,
    /// The base it was checked against ([`Adapter::fingerprint`]).
    pub(crate) base: u64,
    pub(crate) rank: usize,
    pub(crate) alpha: f32,
    pub(crate) data: Vec<u8>,
    /// Per layer, per projection (`Proj as usize`), its pair.
    pub(crate) layers: Vec<[Option<Pair>; 7]>,
}

impl Adapter {
    /// Its name (the path it was loaded from, or the caller's).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Its identity: a hash of its files' bytes.
    pub fn hash(&self) -> u64 {
        self.hash
    }
    /// Its rank (the largest, if its pairs differ).
    pub fn rank(&self) -> usize {
        self.rank
    }
    /// Its alpha (0 for a GGUF file without one: its scale is then the
    /// caller's alone, as llama.cpp).
    pub fn alpha(&self) -> f32 {
        self.alpha
    }
    /// The projections it changes, in all layers.
    pub fn n_pairs(&self) -> usize {
        self.layers.iter().flatten().flatten().count()
    }
    /// Bytes its matrices hold.
    pub fn n_bytes(&self) -> usize {
        self.data.len()
    }

    /// Layer `l`'s pair for `p`, as the kernels take it: A, Bᵀ, `alpha / r`.
    pub(crate) fn pair(&self, l: usize, p: Proj) -> Option<(QMatrix<'_>, QMatrix<'_>, f32)> {
        let pair = self.layers.get(l)?[p as usize]?;
        Some((self.matrix(pair.a), self.matrix(pair.bt), pair.scale))
    }

    fn matrix(&self, m: Mat) -> QMatrix<'_> {
        QMatrix {
            ty: m.ty,
            data: &self.data[m.start..m.start + m.len],
            n_cols: m.n_cols,
            n_rows: m.n_rows,
            scales: &[],
            rows8: &[],
        }
    }

    /// What an adapter must match of a base: its architecture, its row
    /// order, the shape of every projection it could change.
    pub(crate) fn fingerprint(c: &Config, w: &Weights) -> u64 {
        let mut h = Fnv::new(0).bytes(c.arch.name().as_bytes()).u64(c.n_layer as u64).u64(c.rope_style as u64);
        for l in 0..c.n_layer {
            for p in Proj::ALL {
                let (rows, cols) = p.of(w, l).map_or((0, 0), |t| (t.n_rows, t.n_cols));
                h = h.u64(rows as u64).u64(cols as u64);
            }
        }
        h.finish()
    }
}

impl core::fmt::Debug for Adapter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Adapter")
            .field("name", &self.name)
            .field("hash", &format_args!("{:016x}", self.hash))
            .field("rank", &self.rank)
            .field("alpha", &self.alpha)
            .field("pairs", &self.n_pairs())
            .finish()
    }
}

/// The most adapters one sequence runs with.
pub const MAX_ADAPTERS: usize = 8;

/// The largest scale an adapter may be applied at (either sign).
pub const MAX_SCALE: f32 = 1000.0;

/// An adapter at a scale (the caller's, times the adapter's own
/// `alpha / r`).
#[derive(Clone, Debug)]
pub struct Applied {
    /// The adapter.
    pub adapter: Arc<Adapter>,
    /// The caller's scale.
    pub scale: f32,
}

/// The adapters a sequence runs with, in the order their deltas add up;
/// its [`AdapterSet::key`] keys the sequence's KV in prefix caches.
#[derive(Clone, Debug, Default)]
pub struct AdapterSet {
    list: Vec<Applied>,
    key: u64,
}

impl AdapterSet {
    /// No adapters: the base model.
    pub fn new() -> AdapterSet {
        AdapterSet::default()
    }

    /// This set and `adapter` at `scale` after it. A scale of 0 leaves
    /// the set as it is (the base's numbers, bit for bit); a scale that is
    /// not finite or past [`MAX_SCALE`], or more than [`MAX_ADAPTERS`],
    /// is an error.
    pub fn with(mut self, adapter: Arc<Adapter>, scale: f32) -> Result<AdapterSet> {
        check_scale(&adapter, scale)?;
        if scale == 0.0 {
            return Ok(self);
        }
        if self.list.len() == MAX_ADAPTERS {
            return Err(Error::InvalidArgument {
                what: alloc::format!("more than {MAX_ADAPTERS} LoRA adapters for one sequence"),
            });
        }
        self.key = Fnv::new(self.key).u64(adapter.hash).u32(scale.to_bits()).finish();
        self.list.push(Applied { adapter, scale });
        Ok(self)
    }

    /// The adapters, in order.
    pub fn list(&self) -> &[Applied] {
        &self.list
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Its identity: the adapters' hashes and scales, in order (0: none).
    pub fn key(&self) -> u64 {
        self.key
    }
}

/// An error unless `scale` is one `a` may be applied at: finite, within
/// ±[`MAX_SCALE`].
pub(crate) fn check_scale(a: &Adapter, scale: f32) -> Result<()> {
    if scale.is_finite() && scale.abs() <= MAX_SCALE {
        return Ok(());
    }
    Err(Error::InvalidArgument {
        what: alloc::format!("LoRA scale {scale} for {} (finite, within ±{MAX_SCALE})", a.name),
    })
}

impl PartialEq for AdapterSet {
    fn eq(&self, other: &AdapterSet) -> bool {
        self.key == other.key
    }
}
