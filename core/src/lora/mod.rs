//! LoRA adapters from files: a PEFT directory (`adapter_config.json` and
//! `adapter_model.safetensors`) or a llama.cpp GGUF LoRA file, read and
//! checked against the base they are loaded for — its architecture, every
//! target's shape, the rank's bounds, a finite alpha, each mismatch named —
//! into an [`Adapter`] held beside the base (whose bytes are never
//! written). What tern cannot apply (DoRA, trained biases, whole modules,
//! embedding or expert adapters, aLoRA) is refused by name; nothing is
//! applied halfway.

mod bind;
mod gguf;
#[cfg(feature = "std")]
mod peft;

use alloc::string::String;

use crate::backend::quant::GgmlType;
use crate::error::{Error, Result};
use crate::model::{Adapter, Model, Proj};

/// The largest rank an adapter may have (and never past its matrices'
/// smaller side).
pub const MAX_RANK: usize = 4096;

impl Adapter {
    /// An adapter from a llama.cpp GGUF LoRA file (`general.type =
    /// adapter`, `adapter.type = lora`), checked against `base`; `name`
    /// names it in errors and listings.
    pub fn from_gguf<B: AsRef<[u8]>>(bytes: &[u8], name: &str, base: &Model<B>) -> Result<Adapter> {
        let (found, meta) = gguf::read(bytes, name, base)?;
        bind::bind(found, meta, base)
    }

    /// An adapter from a PEFT directory's two files (`adapter_config.json`,
    /// `adapter_model.safetensors`), checked against `base`.
    #[cfg(feature = "std")]
    pub fn from_peft<B: AsRef<[u8]>>(config: &[u8], tensors: &[u8], name: &str, base: &Model<B>) -> Result<Adapter> {
        let (found, meta) = peft::read(config, tensors, name)?;
        bind::bind(found, meta, base)
    }
}

/// Which of a pair a tensor is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    /// `A`: rank × inputs.
    A,
    /// `B`: outputs × rank.
    B,
}

/// One matrix of a file: where it goes, its element type, its shape
/// (row-major: `n_rows` rows of `n_cols`) and bytes.
struct Found<'a> {
    name: String,
    layer: usize,
    proj: Proj,
    side: Side,
    ty: GgmlType,
    n_rows: usize,
    n_cols: usize,
    data: &'a [u8],
}

/// What a file says of the whole adapter.
struct Meta {
    name: String,
    /// FNV-1a of the files' bytes.
    hash: u64,
    /// None: the scale is the caller's alone (a GGUF file without alpha).
    alpha: Option<f32>,
    /// The rank the file declares (PEFT's `r`), which every pair must have.
    rank: Option<usize>,
    /// rsLoRA: `alpha / √r` instead of `alpha / r`.
    rslora: bool,
    /// Its Q/K rows in llama.cpp's order for rotating adjacent pairs (a
    /// GGUF Llama's), not transformers'.
    adjacent_rows: bool,
}

fn bad(adapter: &str, what: impl Into<String>) -> Error {
    Error::Adapter { adapter: adapter.into(), what: what.into() }
}

/// The element types an adapter's matrices may have.
fn float_type(ty: GgmlType) -> bool {
    matches!(ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16)
}
