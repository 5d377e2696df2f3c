//! Experts' matrices interleaved 8 rows at a time (`quant::rows8`) on
//! their first use by a decode step, not at load: a mapped mixture's
//! experts are read only when a token chooses them (once more then, to be
//! packed), and the packed copy holds only the experts that were chosen.
//! The same numbers as the file's blocks, so the same logits.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;

use super::weights::{Ffn, TensorRef, Weights};
use super::{ExpertPart as Which, Model};
use crate::backend::quant::{rows8, GgmlType};
use crate::parallel::Parallel;

/// One slot per expert matrix — (layer, expert, gate/up/down) — whose type
/// the kernels read interleaved.
pub(crate) struct LazyRows8 {
    n_expert: usize,
    slots: Vec<Option<OnceLock<Vec<u8>>>>,
    packed: AtomicUsize,
}

impl LazyRows8 {
    /// Slots for every expert matrix of `w` whose type `reads` accepts;
    /// None for a model without experts (or none of a type read so).
    pub(crate) fn new(w: &Weights, reads: impl Fn(GgmlType) -> bool) -> Option<LazyRows8> {
        let (mut n_expert, mut slots) = (0, Vec::new());
        for l in &w.layers {
            let Ffn::Moe(x) = &l.ffn else { return None };
            n_expert = x.experts.len();
            for e in &x.experts {
                for t in [&e.gate, &e.up, &e.down] {
                    let fits = rows8::matrix_bytes(t.ty, t.n_cols, t.n_rows).is_some_and(|b| b > 0);
                    slots.push((reads(t.ty) && t.rows8.is_empty() && fits).then(OnceLock::new));
                }
            }
        }
        slots.iter().any(Option::is_some).then(|| LazyRows8 { n_expert, slots, packed: AtomicUsize::new(0) })
    }

    /// The interleaved rows of layer `l`'s expert `x`'s matrix `w` (its
    /// bytes `data`): packed now if `pack` and they are not yet; empty if
    /// there are none (the file's layout is read).
    pub(crate) fn rows<'a>(&'a self, l: usize, x: usize, w: Which, t: &TensorRef, data: &[u8], pack: bool) -> &'a [u8] {
        let Some(Some(slot)) = self.slots.get((l * self.n_expert + x) * 3 + w as usize) else { return &[] };
        if !pack {
            return slot.get().map_or(&[], Vec::as_slice);
        }
        slot.get_or_init(|| {
            let mut out = Vec::new();
            if !rows8::pack(t.ty, data, t.n_cols, t.n_rows, &mut out) {
                out = Vec::new();
            }
            self.packed.fetch_add(out.len(), Relaxed);
            out
        })
    }

    /// Pack each of `todo` — (layer, expert, part, matrix, its bytes) —
    /// that is not yet, shared among the workers.
    /// (`data` gives a matrix's bytes; nothing is allocated when all are.)
    pub(crate) fn pack<'d>(
        &self,
        par: &dyn Parallel,
        todo: &[(usize, usize, Which, &TensorRef)],
        data: &(dyn Fn(&TensorRef) -> &'d [u8] + Sync),
    ) {
        if !todo.iter().any(|(l, x, w, _)| self.wants(*l, *x, *w)) {
            return;
        }
        let todo: Vec<_> = todo.iter().filter(|(l, x, w, _)| self.wants(*l, *x, *w)).collect();
        // (one chunk of this scratch per matrix: the runner hands out indices)
        let mut index = alloc::vec![0.0f32; todo.len()];
        par.for_each_chunk(&mut index, 1, &|i, _| {
            let (l, x, w, t) = *todo[i];
            self.rows(l, x, w, t, data(t), true);
        });
    }

    /// Whether matrix (l, x, w) is to be packed and is not yet.
    fn wants(&self, l: usize, x: usize, w: Which) -> bool {
        matches!(self.slots.get((l * self.n_expert + x) * 3 + w as usize), Some(Some(s)) if s.get().is_none())
    }

    /// Bytes packed so far.
    pub(crate) fn bytes(&self) -> usize {
        self.packed.load(Relaxed)
    }
}

impl<B: AsRef<[u8]>> Model<B> {
    /// Interleave each expert's 8-row groups (as `repack_rows8` does the
    /// other matrices) on its first use by a decode step, for the types
    /// `reads` accepts: nothing is read or held at load, and only the
    /// experts tokens choose are packed. Returns whether any expert will be.
    pub fn repack_experts_lazily(&mut self, reads: impl Fn(GgmlType) -> bool) -> bool {
        self.lazy_rows8 = LazyRows8::new(&self.weights, reads);
        self.lazy_rows8.is_some()
    }

    /// Interleave every expert now (as their first uses would), shared
    /// among `par`'s workers: a benchmark's warm-up, to time the steady
    /// state.
    pub fn repack_experts_now(&self, par: &dyn Parallel) {
        let Some(lazy) = &self.lazy_rows8 else { return };
        let bufs: Vec<&[u8]> = self.bufs.iter().map(AsRef::as_ref).collect();
        let todo: Vec<_> = self
            .weights
            .layers
            .iter()
            .enumerate()
            .filter_map(|(l, w)| if let Ffn::Moe(x) = &w.ffn { Some((l, x)) } else { None })
            .flat_map(|(l, x)| {
                x.experts.iter().enumerate().flat_map(move |(i, w)| {
                    [(&w.gate, Which::Gate), (&w.up, Which::Up), (&w.down, Which::Down)].map(|(t, p)| (l, i, p, t))
                })
            })
            .collect();
        lazy.pack(par, &todo, &|t: &TensorRef| &bufs[t.buf][t.start..t.start + t.len]);
    }

    /// Bytes of experts packed so far (`repack_experts_lazily`).
    pub fn experts_repacked_bytes(&self) -> usize {
        self.lazy_rows8.as_ref().map_or(0, |l| l.bytes())
    }
}
