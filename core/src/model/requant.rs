//! Quantizing float weights at load (an HF checkpoint's f32/bf16 matrices
//! to Q8_0), so they run on the integer fast path.

use alloc::string::String;
use alloc::vec::Vec;

use super::{Model, TensorRef};
use crate::backend::quant::{self, rows8, GgmlType};
use crate::error::{Error, Result};

/// What quantizing at load did, for `tern info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requantized {
    /// The type float weights became.
    pub to: GgmlType,
    /// Matrices converted, and those left as they were (rows not a whole
    /// number of blocks, or already quantized).
    pub converted: usize,
    /// Matrices left as they were.
    pub kept: usize,
    /// Bytes of the converted copies.
    pub bytes: usize,
}

/// Q5_0 matrices rewritten as Q8_0 (`Model::widen_q5_0`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Widened {
    /// Matrices rewritten.
    pub matrices: usize,
    /// Bytes of the Q8_0 copies.
    pub bytes: usize,
}

impl<B: AsRef<[u8]>> Model<B> {
    /// Convert every F32/F16/BF16 matrix whose rows are whole blocks to
    /// `to` (Q8_0), into one new buffer that `wrap` turns into a `B`.
    pub fn quantize(mut self, to: GgmlType, wrap: impl FnOnce(Vec<u8>) -> B) -> Result<(Model<B>, Requantized)> {
        let r = quantize_matrices(&mut self.bufs, &mut self.weights, to, wrap)?;
        Ok((self, r))
    }

    /// Rewrite every Q5_0 matrix as Q8_0 — the same numbers (a Q5_0 quant
    /// less 16 is the Q8_0 quant, the f16 scale is copied), so the same
    /// logits bit for bit on every path, at 34 bytes a block instead of 22.
    /// For a backend where unpacking five-bit quants costs more than
    /// reading bytes (SIMD128: Q5_0 at ~7 GB/s, Q8_0 at ~19). Only if the
    /// copies can be had and the model stays within `max_bytes`; else
    /// nothing is converted.
    pub fn widen_q5_0(mut self, max_bytes: usize, wrap: impl FnOnce(Vec<u8>) -> B) -> Result<(Model<B>, Widened)> {
        let q5 = |t: &super::TensorRef| t.ty == GgmlType::Q5_0;
        let (from, to) = (GgmlType::Q5_0.type_size(), GgmlType::Q8_0.type_size());
        let extra: usize = self.weights.matrices().filter(|t| q5(t)).map(|t| t.len / from * to).sum();
        let have = self.n_bytes();
        let fits = |out: &mut Vec<u8>| have + extra <= max_bytes && out.try_reserve_exact(extra).is_ok();
        let r = rewrite(
            &mut self.bufs,
            &mut self.weights,
            GgmlType::Q8_0,
            q5,
            fits,
            |_, src, out| {
                for b in src.chunks_exact(from) {
                    let u = quant::q5_0::unpack(b);
                    out.extend_from_slice(&b[..2]);
                    out.extend(u.q.iter().map(|&q| q as u8));
                }
                Ok(())
            },
            wrap,
        )?;
        Ok((self, Widened { matrices: r.matrices, bytes: r.bytes }))
    }

    /// Widen the f16 scales (and mins) of every 32-element block matrix to
    /// f32 beside the blocks (`quant::wide_scales`): for a backend that
    /// would otherwise convert them per block as it reads (SIMD128: a table
    /// lookup each). The same numbers, so the same logits; 4 or 8 bytes
    /// more per block of 4. Only if the model stays within `max_bytes` and
    /// the memory can be had; returns the bytes added.
    pub fn widen_scales(mut self, max_bytes: usize) -> (Model<B>, usize) {
        let per_block = |t: &super::TensorRef| match t.ty {
            GgmlType::Q4_1 | GgmlType::Q5_1 => 2,
            GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 => 1,
            _ => 0,
        };
        let n: usize =
            self.weights.matrices().map(|t| per_block(t) * t.n_rows * (t.n_cols / 32).next_multiple_of(4)).sum();
        if self.n_bytes() + 4 * n > max_bytes || self.scales.try_reserve_exact(n).is_err() {
            return (self, 0);
        }
        let bufs: Vec<&[u8]> = self.bufs.iter().map(AsRef::as_ref).collect();
        let scales = &mut self.scales;
        // (nothing here fails)
        let _ = self.weights.each_matrix_once(|t| {
            let data = &bufs[t.buf][t.start..t.start + t.len];
            if let Some(s) = quant::wide_scales(t.ty, data, t.n_cols, t.n_rows) {
                let at = scales.len();
                scales.extend_from_slice(&s);
                t.scales = at..scales.len();
            }
            Ok(())
        });
        let added = self.scales.len() * 4;
        (self, added)
    }

    /// Interleave the whole 8-row groups of every matrix whose type `reads`
    /// accepts (of those with the layout: Q4_0, Q5_0, Q8_0, Q4_K, Q6_K) beside the
    /// blocks (`quant::rows8`), for a backend whose kernels read it
    /// (`Kernels::reads_rows8`). The same numbers, so the same logits.
    /// Only if the model stays within `max_bytes` and the memory can be
    /// had; returns the bytes added.
    /// An embedding table that is not also the head (and Gemma 3n's
    /// per-layer table) is only looked up by row, never multiplied: it stays
    /// as it is; so do experts (a decode step reads only the ones it chose,
    /// which repacking them at load would defeat).
    pub fn repack_rows8(mut self, reads: impl Fn(GgmlType) -> bool, max_bytes: usize) -> (Model<B>, usize) {
        let w = &self.weights;
        let embd = (!w.tied_output).then(|| w.token_embd.name.clone());
        let lookup_only: Vec<String> =
            embd.into_iter().chain(w.gemma3n.as_ref().map(|g| g.per_layer_embd.name.clone())).collect();
        let size = |t: &TensorRef| match reads(t.ty) && !lookup_only.contains(&t.name) {
            true => rows8::matrix_bytes(t.ty, t.n_cols, t.n_rows).unwrap_or(0),
            false => 0,
        };
        // experts stay as mapped: repacking would read every one at load
        let n: usize = self.weights.matrices_of(false).map(size).sum();
        if n == 0 || self.n_bytes() + n > max_bytes || self.rows8.try_reserve_exact(n).is_err() {
            return (self, 0);
        }
        let bufs: Vec<&[u8]> = self.bufs.iter().map(AsRef::as_ref).collect();
        let out = &mut self.rows8;
        // (nothing here fails)
        let _ = self.weights.each_once(false, &mut |t| {
            let at = out.len();
            if size(t) > 0 && rows8::pack(t.ty, &bufs[t.buf][t.start..t.start + t.len], t.n_cols, t.n_rows, out) {
                t.rows8 = at..out.len();
            }
            Ok(())
        });
        let added = self.rows8.len();
        (self, added)
    }
}

/// Weights whose matrices a rewrite visits: each once (a tensor bound
/// twice, as a tied head, is visited once and its copies follow).
pub(crate) trait Matrices {
    /// How many.
    fn n_matrices(&self) -> usize;
    /// `f` on each, once.
    fn each_matrix_once(&mut self, f: &mut dyn FnMut(&mut TensorRef) -> Result<()>) -> Result<()>;
}

/// The matrices `pick` selects rewritten row by row by `row` (source row
/// bytes to the end of the new buffer) as type `to`, in one new buffer
/// pushed onto `bufs`; none if `ready` (given the empty buffer) says no.
pub(crate) fn rewrite<B: AsRef<[u8]>>(
    bufs: &mut Vec<B>,
    weights: &mut dyn Matrices,
    to: GgmlType,
    pick: impl Fn(&TensorRef) -> bool,
    ready: impl FnOnce(&mut Vec<u8>) -> bool,
    mut row: impl FnMut(&TensorRef, &[u8], &mut Vec<u8>) -> Result<()>,
    wrap: impl FnOnce(Vec<u8>) -> B,
) -> Result<Rewritten> {
    let mut out = Vec::new();
    let n = weights.n_matrices();
    if !ready(&mut out) {
        return Ok(Rewritten { matrices: 0, kept: n, bytes: 0 });
    }
    let buf_index = bufs.len();
    let (mut matrices, mut kept) = (0, 0);
    {
        let views: Vec<&[u8]> = bufs.iter().map(AsRef::as_ref).collect();
        weights.each_matrix_once(&mut |t| {
            if !pick(t) {
                kept += 1;
                return Ok(());
            }
            let src = &views[t.buf][t.start..t.start + t.len];
            let start = out.len();
            for r in src.chunks_exact(t.len / t.n_rows) {
                row(t, r, &mut out)?;
            }
            let len = out.len() - start;
            *t = TensorRef { ty: to, buf: buf_index, start, len, scales: 0..0, rows8: 0..0, ..t.clone() };
            matrices += 1;
            Ok(())
        })?;
    }
    let bytes = out.len();
    if matrices > 0 {
        bufs.push(wrap(out));
    }
    Ok(Rewritten { matrices, kept, bytes })
}

/// Every F32/F16/BF16 matrix whose rows are whole blocks converted to `to`
/// (Q8_0), into one new buffer that `wrap` turns into a `B`.
pub(crate) fn quantize_matrices<B: AsRef<[u8]>>(
    bufs: &mut Vec<B>,
    weights: &mut dyn Matrices,
    to: GgmlType,
    wrap: impl FnOnce(Vec<u8>) -> B,
) -> Result<Requantized> {
    if to != GgmlType::Q8_0 {
        return Err(Error::Unsupported {
            what: alloc::format!("quantizing at load to {} (tern writes q8_0)", to.name()),
        });
    }
    let float = |t: &TensorRef| matches!(t.ty, GgmlType::F32 | GgmlType::F16 | GgmlType::BF16);
    let mut f32_row = Vec::new();
    let r = rewrite(
        bufs,
        weights,
        to,
        |t| float(t) && t.n_cols % 32 == 0,
        |_| true,
        |t, src, out| {
            f32_row.resize(t.n_cols, 0.0);
            quant::dequantize_row(t.ty, src, &mut f32_row)?;
            quant::q8_0::quantize_row(&f32_row, out);
            Ok(())
        },
        wrap,
    )?;
    Ok(Requantized { to, converted: r.matrices, kept: r.kept, bytes: r.bytes })
}

pub(crate) struct Rewritten {
    matrices: usize,
    kept: usize,
    bytes: usize,
}
