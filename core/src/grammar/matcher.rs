//! A compiled grammar as a generation [`Constraint`]: llguidance's matcher,
//! its mask widened to every end-of-generation token where the grammar may
//! end.

use alloc::vec::Vec;

use llguidance::{Matcher, TokenParser};

use super::grammar_err;
use crate::error::Result;
use crate::generate::{allows, Allowed, Constraint};

pub(super) struct GrammarConstraint {
    m: Matcher,
    /// This step's mask, once computed.
    mask: Vec<u32>,
    fresh: bool,
    /// End-of-generation ids; the first is the trie's end token.
    eog: Vec<u32>,
}

impl GrammarConstraint {
    /// The first step's mask is computed here, so a grammar that fails at
    /// once fails before generation starts.
    pub fn new(parser: TokenParser, eog: Vec<u32>) -> Result<GrammarConstraint> {
        let mut c = GrammarConstraint { m: Matcher::new(Ok(parser)), mask: Vec::new(), fresh: false, eog };
        if let Some(e) = c.m.get_error() {
            return Err(grammar_err(e));
        }
        c.compute()?;
        Ok(c)
    }

    fn compute(&mut self) -> Result<()> {
        let v = self.m.compute_mask().map_err(grammar_err)?;
        self.mask.clear();
        self.mask.extend_from_slice(v.as_slice());
        if allows(&self.mask, self.eog[0] as usize) {
            for &e in &self.eog[1..] {
                if let Some(w) = self.mask.get_mut(e as usize / 32) {
                    *w |= 1 << (e % 32);
                }
            }
        }
        self.fresh = true;
        Ok(())
    }
}

impl Constraint for GrammarConstraint {
    fn allowed(&mut self) -> Result<Allowed<'_>> {
        if self.m.is_stopped() {
            return Ok(Allowed::End(self.eog[0]));
        }
        if !self.fresh {
            self.compute()?;
        }
        let mut first = None;
        let mut n = 0;
        for (w, &word) in self.mask.iter().enumerate() {
            if word != 0 {
                n += word.count_ones();
                first = first.or(Some(w as u32 * 32 + word.trailing_zeros()));
                if n > 1 {
                    break;
                }
            }
        }
        Ok(match (n, first) {
            (0, _) | (_, None) => return Err(grammar_err("the grammar allows no token here")),
            (1, Some(id)) if self.eog.contains(&id) => Allowed::End(id),
            (1, Some(id)) => Allowed::Only(id),
            _ => Allowed::Mask(&self.mask),
        })
    }

    fn accept(&mut self, id: u32) -> Result<()> {
        self.fresh = false;
        if self.eog.contains(&id) {
            return Ok(()); // the generation ends with it
        }
        self.m.consume_token(id).map_err(grammar_err)
    }
}
