//! Weights bound by name: views (offset + type + shape) into the model bytes.
//! This is the one file that spells GGUF tensor names.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::config::Config;
use crate::error::{Error, Result};
use crate::gguf::{Gguf, TensorInfo};
use crate::quant::{self, GgmlType};

/// A 2-D tensor inside the model bytes: `n_rows` rows of `n_cols`.
#[derive(Debug, Clone)]
pub struct TensorRef {
    pub name: String,
    pub ty: GgmlType,
    /// Byte range in the model file.
    pub start: usize,
    pub len: usize,
    pub n_cols: usize,
    pub n_rows: usize,
}

#[derive(Debug, Clone)]
pub struct LayerWeights {
    pub attn_norm: Vec<f32>,
    pub wq: TensorRef,
    pub wk: TensorRef,
    pub wv: TensorRef,
    pub wo: TensorRef,
    pub bq: Option<Vec<f32>>,
    pub bk: Option<Vec<f32>>,
    pub bv: Option<Vec<f32>>,
    /// Qwen3: RMSNorm over each head of Q and K.
    pub q_norm: Option<Vec<f32>>,
    pub k_norm: Option<Vec<f32>>,
    pub ffn_norm: Vec<f32>,
    pub w_gate: TensorRef,
    pub w_up: TensorRef,
    pub w_down: TensorRef,
}

#[derive(Debug, Clone)]
pub struct Weights {
    pub token_embd: TensorRef,
    pub output_norm: Vec<f32>,
    /// The output head; `token_embd` itself when the model ties them.
    pub output: TensorRef,
    pub tied_output: bool,
    pub layers: Vec<LayerWeights>,
}

struct Binder<'g, 'a> {
    g: &'g Gguf<'a>,
    arch: &'static str,
}

impl<'a> Binder<'_, 'a> {
    fn find(&self, name: &str) -> Result<&TensorInfo<'a>> {
        self.g.tensor(name).ok_or_else(|| Error::MissingTensor { name: name.to_string() })
    }

    /// A matrix of exactly `[n_cols, n_rows]` whose type has a kernel.
    fn matrix(&self, name: &str, n_cols: usize, n_rows: usize) -> Result<TensorRef> {
        let t = self.find(name)?;
        let (c, r) = t.rows();
        if t.dims.len() > 2 || c != n_cols || r != n_rows {
            return Err(Error::TensorShape {
                tensor: name.to_string(),
                detail: format!("dims {:?}, expected [{n_cols}, {n_rows}]", t.dims),
            });
        }
        if !quant::is_supported(t.ty) {
            return Err(Error::UnsupportedTensorType {
                arch: self.arch.to_string(),
                tensor: name.to_string(),
                type_name: t.ty.name(),
            });
        }
        let start = self.g.data_offset as usize + t.offset as usize;
        Ok(TensorRef { name: name.to_string(), ty: t.ty, start, len: t.data.len(), n_cols, n_rows })
    }

    /// A vector of `n` values, converted to f32.
    fn vector(&self, name: &str, n: usize) -> Result<Vec<f32>> {
        let t = self.find(name)?;
        if t.n_elements() != n as u64 || t.dims[0] != n as u64 {
            return Err(Error::TensorShape {
                tensor: name.to_string(),
                detail: format!("dims {:?}, expected [{n}]", t.dims),
            });
        }
        if !matches!(t.ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16) {
            return Err(Error::UnsupportedTensorType {
                arch: self.arch.to_string(),
                tensor: name.to_string(),
                type_name: t.ty.name(),
            });
        }
        let mut v = vec![0.0f32; n];
        quant::dequantize_row(t.ty, t.data, &mut v)?;
        Ok(v)
    }

    fn opt_vector(&self, name: &str, n: usize) -> Result<Option<Vec<f32>>> {
        if self.g.tensor(name).is_none() {
            return Ok(None);
        }
        self.vector(name, n).map(Some)
    }
}

/// The vocabulary size, from the embedding's shape.
pub fn n_vocab(g: &Gguf) -> Result<usize> {
    let t = g.tensor("token_embd.weight").ok_or_else(|| Error::MissingTensor { name: "token_embd.weight".into() })?;
    Ok(t.rows().1)
}

/// Llama-3 style RoPE frequency factors, if the file has them.
pub fn rope_freq_factors(g: &Gguf) -> Result<Option<Vec<f32>>> {
    let Some(t) = g.tensor("rope_freqs.weight") else {
        return Ok(None);
    };
    let n = t.n_elements() as usize;
    let b = Binder { g, arch: "rope" };
    b.vector("rope_freqs.weight", n).map(Some)
}

impl Weights {
    pub fn bind(g: &Gguf, c: &Config) -> Result<Weights> {
        let b = Binder { g, arch: c.arch.name() };
        let (e, q, kv, ff) = (c.n_embd, c.q_dim(), c.kv_dim(), c.n_ff);
        let token_embd = b.matrix("token_embd.weight", e, c.n_vocab)?;
        let (output, tied_output) = match g.tensor("output.weight") {
            Some(_) => (b.matrix("output.weight", e, c.n_vocab)?, false),
            None => (token_embd.clone(), true),
        };
        let mut layers = Vec::with_capacity(c.n_layer);
        for i in 0..c.n_layer {
            let n = |s: &str| format!("blk.{i}.{s}");
            let qk_norm = |s: &str| -> Result<Option<Vec<f32>>> {
                let v = b.opt_vector(&n(s), c.head_dim)?;
                if c.arch == super::config::Arch::Qwen3 && v.is_none() {
                    return Err(Error::MissingTensor { name: n(s) });
                }
                Ok(v)
            };
            layers.push(LayerWeights {
                attn_norm: b.vector(&n("attn_norm.weight"), e)?,
                wq: b.matrix(&n("attn_q.weight"), e, q)?,
                wk: b.matrix(&n("attn_k.weight"), e, kv)?,
                wv: b.matrix(&n("attn_v.weight"), e, kv)?,
                wo: b.matrix(&n("attn_output.weight"), q, e)?,
                bq: b.opt_vector(&n("attn_q.bias"), q)?,
                bk: b.opt_vector(&n("attn_k.bias"), kv)?,
                bv: b.opt_vector(&n("attn_v.bias"), kv)?,
                q_norm: qk_norm("attn_q_norm.weight")?,
                k_norm: qk_norm("attn_k_norm.weight")?,
                ffn_norm: b.vector(&n("ffn_norm.weight"), e)?,
                w_gate: b.matrix(&n("ffn_gate.weight"), e, ff)?,
                w_up: b.matrix(&n("ffn_up.weight"), e, ff)?,
                w_down: b.matrix(&n("ffn_down.weight"), ff, e)?,
            });
        }
        Ok(Weights { token_embd, output_norm: b.vector("output_norm.weight", e)?, output, tied_output, layers })
    }

    /// Every matrix, for reporting.
    pub fn matrices(&self) -> impl Iterator<Item = &TensorRef> {
        let head = [&self.token_embd].into_iter().chain((!self.tied_output).then_some(&self.output));
        head.chain(self.layers.iter().flat_map(|l| [&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down]))
    }
}
