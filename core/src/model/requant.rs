//! Quantizing float weights at load (an HF checkpoint's f32/bf16 matrices
//! to Q8_0), so they run on the integer fast path.

use alloc::vec::Vec;

use super::Model;
use crate::error::{Error, Result};
use crate::quant::{self, GgmlType};

/// What quantizing at load did, for `tern info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requantized {
    pub to: GgmlType,
    /// Matrices converted, and those left as they were (rows not a whole
    /// number of blocks, or already quantized).
    pub converted: usize,
    pub kept: usize,
    pub bytes: usize,
}

impl<B: AsRef<[u8]>> Model<B> {
    /// Convert every F32/F16/BF16 matrix whose rows are whole blocks to
    /// `to` (Q8_0), into one new buffer that `wrap` turns into a `B`.
    pub fn quantize(mut self, to: GgmlType, wrap: impl FnOnce(Vec<u8>) -> B) -> Result<(Model<B>, Requantized)> {
        if to != GgmlType::Q8_0 {
            return Err(Error::Unsupported {
                what: alloc::format!("quantizing at load to {} (tern writes q8_0)", to.name()),
            });
        }
        let buf_index = self.bufs.len();
        let (mut out, mut converted, mut kept) = (Vec::new(), 0, 0);
        let mut row = Vec::new();
        let mut done: Vec<(usize, usize, super::TensorRef)> = Vec::new();
        let tied = self.weights.tied_output;
        let bufs: Vec<&[u8]> = self.bufs.iter().map(AsRef::as_ref).collect();
        for t in self.weights.matrices_mut() {
            let float = matches!(t.ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16);
            if !float || t.n_cols % 32 != 0 {
                kept += 1;
                continue;
            }
            // a tensor bound twice is converted once
            if let Some((_, _, q)) = done.iter().find(|(b, s, _)| *b == t.buf && *s == t.start) {
                *t = q.clone();
                continue;
            }
            let src = &bufs[t.buf][t.start..t.start + t.len];
            let row_bytes = t.len / t.n_rows;
            let start = out.len();
            row.resize(t.n_cols, 0.0);
            for r in src.chunks_exact(row_bytes) {
                quant::dequantize_row(t.ty, r, &mut row)?;
                quant::q8_0::quantize_row(&row, &mut out);
            }
            let (old_buf, old_start) = (t.buf, t.start);
            *t = super::TensorRef { ty: to, buf: buf_index, start, len: out.len() - start, ..t.clone() };
            done.push((old_buf, old_start, t.clone()));
            converted += 1;
        }
        if tied {
            self.weights.output = self.weights.token_embd.clone();
        }
        let bytes = out.len();
        self.bufs.push(wrap(out));
        Ok((self, Requantized { to, converted, kept, bytes }))
    }
}
