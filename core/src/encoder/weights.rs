//! An encoder's weights bound by llama.cpp's `bert` tensor names (an HF
//! checkpoint's through `crate::tensors`' naming): views of the matrices,
//! the embeddings of positions and token types, biases and norms read.

use alloc::format;
use alloc::vec::Vec;

use super::config::EncoderConfig;
use crate::error::Result;
use crate::model::binder::Binder;
use crate::model::requant::Matrices;
use crate::model::TensorRef;
use crate::tensors::TensorDir;

/// A LayerNorm's scale and shift.
#[derive(Debug, Clone)]
pub struct Norm {
    /// Scale.
    pub w: Vec<f32>,
    /// Shift.
    pub b: Vec<f32>,
}

/// A linear layer: `x · Wᵀ + b`.
#[derive(Debug, Clone)]
pub struct Linear {
    /// The weight (`n_out` rows of `n_in`).
    pub w: TensorRef,
    /// The bias (`n_out`).
    pub b: Vec<f32>,
}

/// One post-norm BERT block.
#[derive(Debug, Clone)]
pub struct EncoderLayer {
    /// Query, key and value projections.
    pub q: Linear,
    /// Key projection.
    pub k: Linear,
    /// Value projection.
    pub v: Linear,
    /// Attention output projection.
    pub o: Linear,
    /// LayerNorm after the attention's residual add.
    pub attn_norm: Norm,
    /// Feed-forward up projection (GELU after it).
    pub up: Linear,
    /// Feed-forward down projection.
    pub down: Linear,
    /// LayerNorm after the feed-forward's residual add.
    pub out_norm: Norm,
}

/// All of an encoder's weights.
#[derive(Debug, Clone)]
pub struct EncoderWeights {
    /// Token embeddings (`n_vocab` rows).
    pub token_embd: TensorRef,
    /// Position embeddings (`n_pos` × `n_embd`), read.
    pub pos_embd: Vec<f32>,
    /// Token-type embeddings (`n_types` × `n_embd`), read.
    pub type_embd: Vec<f32>,
    /// LayerNorm of the summed embeddings.
    pub embd_norm: Norm,
    /// The blocks.
    pub layers: Vec<EncoderLayer>,
    /// A sequence classifier's pooler (`tanh(W·h[CLS] + b)`) and head.
    pub classifier: Option<(Linear, Linear)>,
}

impl EncoderWeights {
    /// Bind every tensor `c` needs (all problems in one report); with
    /// `read` off, only check. Tensors nothing uses are errors.
    pub(crate) fn bind(dir: &dyn TensorDir, c: &EncoderConfig, read: bool) -> Result<EncoderWeights> {
        let b = Binder::new(dir, "bert", read);
        let (e, ff) = (c.n_embd, c.n_ff);
        let linear = |name: &str, n_in: usize, n_out: usize| Linear {
            w: b.matrix(&format!("{name}.weight"), n_in, n_out),
            b: b.vector(&format!("{name}.bias"), n_out),
        };
        let norm =
            |name: &str| Norm { w: b.vector(&format!("{name}.weight"), e), b: b.vector(&format!("{name}.bias"), e) };
        let token_embd = b.matrix("token_embd.weight", e, c.n_vocab);
        let pos_embd = b.vector_of("position_embd.weight", e, c.n_pos);
        let type_embd = b.vector_of("token_types.weight", e, c.n_types);
        let embd_norm = norm("token_embd_norm");
        let layers = (0..c.n_layer)
            .map(|i| {
                let n = |s: &str| format!("blk.{i}.{s}");
                EncoderLayer {
                    q: linear(&n("attn_q"), e, e),
                    k: linear(&n("attn_k"), e, e),
                    v: linear(&n("attn_v"), e, e),
                    o: linear(&n("attn_output"), e, e),
                    attn_norm: norm(&n("attn_output_norm")),
                    up: linear(&n("ffn_up"), e, ff),
                    down: linear(&n("ffn_down"), ff, e),
                    out_norm: norm(&n("layer_output_norm")),
                }
            })
            .collect();
        let classifier = c.n_labels.map(|labels| (linear("cls", e, e), linear("cls.output", e, labels)));
        b.finish(true)?;
        Ok(EncoderWeights { token_embd, pos_embd, type_embd, embd_norm, layers, classifier })
    }

    /// Every matrix.
    pub fn matrices(&self) -> impl Iterator<Item = &TensorRef> {
        let layers = self.layers.iter().flat_map(|l| [&l.q.w, &l.k.w, &l.v.w, &l.o.w, &l.up.w, &l.down.w]);
        let head = self.classifier.iter().flat_map(|(p, h)| [&p.w, &h.w]);
        [&self.token_embd].into_iter().chain(layers).chain(head)
    }
}

impl Matrices for EncoderWeights {
    fn n_matrices(&self) -> usize {
        self.matrices().count()
    }
    fn each_matrix_once(&mut self, f: &mut dyn FnMut(&mut TensorRef) -> Result<()>) -> Result<()> {
        let layers = self
            .layers
            .iter_mut()
            .flat_map(|l| [&mut l.q.w, &mut l.k.w, &mut l.v.w, &mut l.o.w, &mut l.up.w, &mut l.down.w]);
        let head = self.classifier.iter_mut().flat_map(|(p, h)| [&mut p.w, &mut h.w]);
        [&mut self.token_embd].into_iter().chain(layers).chain(head).try_for_each(f)
    }
}
