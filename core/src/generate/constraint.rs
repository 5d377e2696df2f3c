//! A constraint on the tokens that may come next — a grammar, a JSON
//! Schema, a regular expression: the sequence asks it before each sampling
//! step and tells it each token taken. The engine behind it (llguidance,
//! in [`crate::grammar`]) stays out of generation.

use alloc::vec::Vec;

use crate::error::Result;

/// What may come next.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Allowed<'a> {
    /// Only this token: it is taken without a sampling draw.
    Only(u32),
    /// The tokens whose bit is set (bit `id % 32` of word `id / 32`).
    Mask(&'a [u32]),
    /// Nothing more: the generation ends (`stop`) with this
    /// end-of-generation token, as if the model had sampled it.
    End(u32),
    /// Any token (a lazy grammar not yet engaged).
    Any,
}

/// Decides which tokens may come next, step by step.
pub trait Constraint: Send {
    /// The tokens allowed at this step.
    fn allowed(&mut self) -> Result<Allowed<'_>>;
    /// `id` was taken (one of the allowed): advance past it.
    fn accept(&mut self, id: u32) -> Result<()>;
}

/// Whether `mask` (the layout of [`Allowed::Mask`]) allows token `id`
/// (ids past the mask are not allowed).
pub fn allows(mask: &[u32], id: usize) -> bool {
    mask.get(id / 32).is_some_and(|w| w >> (id % 32) & 1 == 1)
}

/// `logits` with every token `mask` does not allow set to −∞, into `out`.
pub(crate) fn mask_logits(logits: &[f32], mask: &[u32], out: &mut Vec<f32>) {
    out.clear();
    out.extend(logits.iter().enumerate().map(|(i, &l)| if allows(mask, i) { l } else { f32::NEG_INFINITY }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_tokens_go_to_minus_infinity() {
        let mut out = Vec::new();
        // tokens 1 and 33 allowed; 40 is past the mask
        mask_logits(&[0.5; 41], &[0b10, 0b10], &mut out);
        let kept: Vec<usize> = out.iter().enumerate().filter(|(_, l)| l.is_finite()).map(|(i, _)| i).collect();
        assert_eq!(kept, [1, 33]);
    }
}
