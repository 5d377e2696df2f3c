//! Where a weight matrix is: a view (buffer, byte range, type, shape)
//! into a model's bytes.

use alloc::format;
use alloc::string::String;

use crate::backend::quant::GgmlType;

/// A 2-D tensor inside the model's buffers: `n_rows` rows of `n_cols`.
#[derive(Debug, Clone)]
pub struct TensorRef {
    /// The tensor's name in its file.
    pub name: String,
    /// Its type.
    pub ty: GgmlType,
    /// Which of the model's buffers (a GGUF file has one; an HF directory
    /// one per shard) and the byte range in it.
    pub buf: usize,
    /// Byte offset in the buffer.
    pub start: usize,
    /// Bytes.
    pub len: usize,
    /// Elements per row.
    pub n_cols: usize,
    /// Rows.
    pub n_rows: usize,
    /// Where its widened scales are in the model's (`Model::widen_scales`);
    /// empty: none.
    pub scales: core::ops::Range<usize>,
    /// Where its whole 8-row groups, interleaved (`quant::rows8`), are in
    /// the model's (`Model::repack_rows8`); empty: none.
    pub rows8: core::ops::Range<usize>,
}

impl TensorRef {
    /// Rows `r` of the matrix, as a matrix of its own (rows are whole
    /// blocks, so any range of them is a contiguous run of bytes).
    pub(crate) fn rows(&self, r: core::ops::Range<usize>) -> TensorRef {
        let row_bytes = if self.n_rows == 0 { 0 } else { self.len / self.n_rows };
        TensorRef {
            name: format!("{}[{}..{}]", self.name, r.start, r.end),
            start: self.start + r.start * row_bytes,
            len: r.len() * row_bytes,
            n_rows: r.len(),
            ..self.clone()
        }
    }
}
