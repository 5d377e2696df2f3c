//! Speculative decoding's drafts: a cheap guess at the next few tokens,
//! which the target model then checks in one forward pass
//! (`generate::speculate`). Two drafters: [`Ngram`], prompt lookup (the
//! tokens that followed the last few tokens' previous occurrence, in the
//! prompt or the output), and [`DraftModel`], a smaller model sharing the
//! target's vocabulary, greedy. [`Speculation`] sizes each draft by how
//! well the last ones did.

mod draft_model;
mod ngram;

use alloc::boxed::Box;
use alloc::vec::Vec;

pub use draft_model::DraftModel;
pub use ngram::Ngram;

use crate::error::{Error, Result};
use crate::model::{Engine, Session};

/// The longest draft one step may verify.
pub const MAX_DRAFT: usize = 64;

/// Shortest draft after a partly accepted one: on the edit benchmark a
/// draft of one token wastes the step's chance of two (bench/NOTES
/// "Issue 48", the step simulator: 1.72× → 1.75×).
const MIN_K: usize = 2;
/// Drafts with nothing taken, in a row, before drafting pauses: an edit
/// diverges for a token or two, then its source matches again (the
/// simulator: pausing from the third miss, not the first, 1.75× → 1.78×;
/// from the fourth with the n-gram drafts cut where their sources part,
/// bench/NOTES "Issue 48 (fourth steps)").
const GRACE: u32 = 3;

/// How far to speculate (llama.cpp's `--draft-max`, `--draft-min`,
/// `--draft-p-min`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpecConfig {
    /// At most this many drafted tokens per step (1..=[`MAX_DRAFT`]).
    pub n_max: usize,
    /// A draft shorter than this is not verified (plain decoding instead).
    pub n_min: usize,
    /// A draft model stops drafting at a token it gives less than this
    /// probability.
    pub p_min: f32,
}

impl Default for SpecConfig {
    fn default() -> SpecConfig {
        SpecConfig { n_max: 8, n_min: 0, p_min: 0.75 }
    }
}

impl SpecConfig {
    /// In range: `n_max` 1..=[`MAX_DRAFT`], `n_min` ≤ `n_max`, `p_min`
    /// in [0, 1]; else an error naming the field.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &str, what: alloc::string::String| Err(Error::InvalidField { field: field.into(), what });
        if !(1..=MAX_DRAFT).contains(&self.n_max) {
            return bad("speculative.n_max", alloc::format!("{} drafted tokens (1..={MAX_DRAFT})", self.n_max));
        }
        if self.n_min > self.n_max {
            return bad("speculative.n_min", alloc::format!("{} is more than n_max {}", self.n_min, self.n_max));
        }
        if !(0.0..=1.0).contains(&self.p_min) {
            return bad("speculative.p_min", alloc::format!("{} is outside [0, 1]", self.p_min));
        }
        Ok(())
    }
}

/// A request's speculation settings, each over the host's default
/// (llama-server's per-request `speculative.n_max`, `speculative.n_min`,
/// `speculative.p_min`); `n_max` 0 turns speculation off.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[cfg_attr(feature = "std", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "std", serde(default, deny_unknown_fields))]
pub struct Speculative {
    /// See [`SpecConfig::n_max`]; 0: do not speculate.
    pub n_max: Option<usize>,
    /// See [`SpecConfig::n_min`].
    pub n_min: Option<usize>,
    /// See [`SpecConfig::p_min`].
    pub p_min: Option<f32>,
}

impl Speculative {
    /// The settings over `base`, checked (None: `n_max` 0).
    pub fn over(&self, base: SpecConfig) -> Result<Option<SpecConfig>> {
        if self.n_max == Some(0) {
            return Ok(None);
        }
        let c = SpecConfig {
            n_max: self.n_max.unwrap_or(base.n_max),
            n_min: self.n_min.unwrap_or(base.n_min),
            p_min: self.p_min.unwrap_or(base.p_min),
        };
        c.validate().map(|()| Some(c))
    }
}

/// What a draft rests on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// A model's prediction, or a match of several tokens: a draft of it
    /// that misses says the next drafts may miss too.
    Firm,
    /// A guess (one token's earlier occurrence): its miss neither
    /// shortens nor pauses the drafts after it.
    Weak,
}

/// Proposes the tokens likely to come next.
pub trait Drafter: Send {
    /// Up to `max` tokens to follow `history` then `last` (the sequence so
    /// far: the session's tokens and the one about to be fed), into `out`
    /// (cleared first), and what they rest on. `engine` runs a draft
    /// model's passes.
    fn draft(
        &mut self,
        engine: &Engine,
        history: &[u32],
        last: u32,
        max: usize,
        out: &mut Vec<u32>,
    ) -> Result<Evidence>;
}

/// One sequence's speculation: its drafter and settings, and the draft
/// length, adapted to how many of the recent drafts were accepted.
pub struct Speculation {
    cfg: SpecConfig,
    drafter: Box<dyn Drafter>,
    /// The next draft's length.
    k: usize,
    /// Steps left to decode plainly after drafts that missed.
    rest: usize,
    /// Drafts in a row that had nothing accepted.
    misses: u32,
    /// What the last step's draft rested on.
    evidence: Evidence,
    /// The step's tokens: the one to feed, then the draft.
    fed: Vec<u32>,
}

impl Speculation {
    /// Speculate with `drafter` as `cfg` says.
    pub fn new(cfg: SpecConfig, drafter: Box<dyn Drafter>) -> Speculation {
        Speculation { k: cfg.n_max, cfg, drafter, rest: 0, misses: 0, evidence: Evidence::Firm, fed: Vec::new() }
    }

    /// The tokens the next step of `session` feeds: `last`, then a draft
    /// of at most `room` tokens to follow it (none when the draft is
    /// shorter than `n_min`, or while backing off after misses), cut
    /// where it would not fit the session (its context, the step its
    /// cache can take back) or names a token past `n_vocab`.
    pub fn step(
        &mut self,
        engine: &Engine,
        session: &Session,
        last: u32,
        room: usize,
        n_vocab: usize,
    ) -> Result<&[u32]> {
        let history = session.tokens();
        let mut draft = core::mem::take(&mut self.fed);
        draft.clear();
        let fits = session.n_ctx().saturating_sub(history.len() + 1).min(session.max_step().saturating_sub(1));
        let max = self.k.min(room).min(fits);
        if self.rest > 0 {
            self.rest -= 1;
        } else if max > 0 {
            match self.drafter.draft(engine, history, last, max, &mut draft) {
                Ok(evidence) => self.evidence = evidence,
                Err(e) => {
                    // (the step still feeds `last`)
                    draft.clear();
                    draft.push(last);
                    self.fed = draft;
                    return Err(e);
                }
            }
            draft.truncate(max);
            if let Some(i) = draft.iter().position(|&id| id as usize >= n_vocab) {
                draft.truncate(i);
            }
            if draft.len() < self.cfg.n_min.max(1) {
                draft.clear();
            }
        }
        draft.insert(0, last);
        self.fed = draft;
        Ok(&self.fed)
    }

    /// The last step's tokens: the one to feed, then its draft.
    pub fn fed(&self) -> &[u32] {
        &self.fed
    }

    /// How the last step's draft of `drafted` tokens did: `accepted` of
    /// them were taken. A fully accepted draft doubles the next one's
    /// length (up to `n_max`); a partly accepted one sets it to one past
    /// what was taken, or half the last length if more, and never below
    /// `MIN_K`; a run of drafts with nothing taken pauses drafting from its
    /// `GRACE + 1`-th miss, for 1, 3, 7 … 63 steps, so text the drafter
    /// cannot guess costs little. A [`Evidence::Weak`] draft's miss
    /// changes nothing.
    pub fn record(&mut self, drafted: usize, accepted: usize) {
        if drafted == 0 || (accepted == 0 && self.evidence == Evidence::Weak) {
            return;
        }
        let floor = self.cfg.n_min.max(1);
        let k = if accepted == drafted { self.k * 2 } else { (accepted + 1).max(self.k / 2).max(MIN_K) };
        self.k = k.clamp(floor, self.cfg.n_max);
        if accepted == 0 {
            self.misses = (self.misses + 1).min(GRACE + 6);
            self.rest = (1 << self.misses.saturating_sub(GRACE)) - 1;
        } else {
            self.misses = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(n_max: usize) -> Speculation {
        Speculation::new(SpecConfig { n_max, ..SpecConfig::default() }, Box::new(Ngram))
    }

    #[test]
    fn draft_length_follows_acceptance() {
        let mut s = spec(8);
        s.record(8, 3);
        assert_eq!(s.k, 4, "one past the taken, or half the last length");
        s.record(4, 0);
        assert_eq!(s.k, MIN_K, "never below MIN_K");
        s.record(2, 2);
        s.record(4, 4);
        assert_eq!(s.k, 8, "a fully taken draft doubles the next, up to n_max");
        s.record(8, 8);
        assert_eq!(s.k, 8);
        let mut one = spec(1);
        one.record(1, 0);
        assert_eq!(one.k, 1, "n_max bounds the floor");
    }

    #[test]
    fn misses_in_a_row_pause_after_the_grace() {
        let mut s = spec(8);
        let pauses: Vec<usize> = (0..10)
            .map(|_| {
                s.record(2, 0);
                s.rest
            })
            .collect();
        assert_eq!(pauses, [0, 0, 0, 1, 3, 7, 15, 31, 63, 63]);
        s.record(2, 1);
        s.record(2, 0);
        assert_eq!(s.rest, 0, "a hit ends the run: the next miss is in the grace again");
        s.record(0, 0);
        assert_eq!(s.misses, 1, "no draft, nothing learned");
    }

    #[test]
    fn a_weak_drafts_miss_changes_nothing() {
        let mut s = spec(8);
        s.record(8, 3);
        s.evidence = Evidence::Weak;
        for _ in 0..8 {
            s.record(4, 0);
        }
        assert_eq!((s.k, s.misses, s.rest), (4, 0, 0));
        s.record(4, 4);
        assert_eq!(s.k, 8, "its hits count as any draft's");
    }
}
