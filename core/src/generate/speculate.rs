//! Verifying a draft: the target has run the pending token and the
//! drafted ones in one forward pass (one logits row each); each row is
//! sampled in turn with the speculative rule (`Sequence::verify`) until a
//! draft token is not taken or the sequence ends. The cache then drops
//! the rejected drafts' positions. The RNG needs no rollback: only rows
//! that produce a token draw from it, in the order plain decoding would
//! draw for those tokens, so a seed reproduces a speculative run.

use super::sequence::{Sampled, Sequence};
use super::Vocab;
use crate::error::Result;
use crate::model::Session;

/// What a verified step leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    /// The last token taken, still to be fed; None when the sequence ended.
    pub next: Option<u32>,
    /// Drafted tokens taken.
    pub accepted: usize,
}

/// Verify `drafts`, whose positions the session holds last, after the
/// token fed before them: `rows` has one logits row per fed token
/// (`drafts.len() + 1`). Each token taken goes to `emit`, in order; the
/// session keeps the positions of the tokens taken but the last.
pub fn verify(
    seq: &mut Sequence,
    session: &mut Session,
    rows: &[f32],
    drafts: &[u32],
    vocab: &dyn Vocab,
    mut emit: impl FnMut(Sampled),
) -> Result<Verified> {
    let m = drafts.len();
    let nv = rows.len() / (m + 1);
    let base = session.n_past() - m;
    for i in 0..=m {
        let row = &rows[i * nv..(i + 1) * nv];
        let (s, taken) = match drafts.get(i) {
            Some(&d) => seq.verify(session, row, base + i, d, vocab)?,
            None => (seq.sample(session, Some(row), vocab)?, false),
        };
        let (id, ended) = (s.id, s.end.is_some());
        let accepted = i + taken as usize;
        if ended || !taken {
            seq.count_drafts(m, accepted);
            let mut s = s;
            if let Some(r) = s.end.as_mut() {
                // (the result was made before this step was counted)
                r.usage.draft_tokens += m;
                r.usage.accepted_draft_tokens += accepted;
            }
            if session.truncate(base + i) < base + i {
                return Err(crate::Error::InvalidArgument {
                    what: alloc::format!("a draft of {m} tokens: more than this session's cache can take back"),
                });
            }
            emit(s);
            return Ok(Verified { next: (!ended).then_some(id), accepted });
        }
        emit(s);
    }
    unreachable!("the last row takes no draft")
}
