//! A draft model for speculative decoding (`--model-draft`): loaded beside
//! the target, checked to share its vocabulary token for token, and
//! turned into a drafter for each sequence.

use std::ops::Deref;
use std::path::Path;
use std::sync::Arc;

use tern_core::{DraftModel, Drafter, KvType, Model};

use crate::{Buffer, Loaded, Result};

/// A loaded draft model, shared by the sequences that draft with it.
#[derive(Clone)]
pub struct Draft(Arc<Loaded>);

impl std::fmt::Debug for Draft {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Draft({} bytes)", self.0.model.n_bytes())
    }
}

impl Deref for Draft {
    type Target = Model<Buffer>;
    fn deref(&self) -> &Model<Buffer> {
        &self.0.model
    }
}

impl Draft {
    /// Load the draft at `path` for `target`: an error naming the first
    /// token whose text differs (the drafts would be other tokens' ids),
    /// a warning on stderr when the draft is not smaller than the target
    /// (it then costs as much as it saves).
    pub fn load(path: &Path, target: &Loaded) -> Result<Draft> {
        let draft = crate::load(path)?;
        Draft::check(&draft, target)?;
        Ok(Draft(Arc::new(draft)))
    }

    /// `draft` beside `target`: see [`Draft::load`].
    pub fn check(draft: &Loaded, target: &Loaded) -> Result<()> {
        let none = |which: &str| invalid(format!("the {which} model has no vocabulary to compare"));
        let d = draft.tokenizer().map_err(|_| none("draft"))?;
        let t = target.tokenizer().map_err(|_| none("target"))?;
        let rows = draft.model.config.n_vocab.min(target.model.config.n_vocab);
        if let Some((id, dt, tt)) = d.first_difference(t, rows) {
            return Err(invalid(format!(
                "the draft model's vocabulary differs from the target's at token {id}: {dt:?} in the draft, {tt:?} in the target"
            )));
        }
        if draft.model.n_bytes() >= target.model.n_bytes() {
            eprintln!(
                "tern: warning: the draft model ({:.0} MiB) is not smaller than the target ({:.0} MiB): drafting costs about what it saves",
                draft.model.n_bytes() as f64 / 1048576.0,
                target.model.n_bytes() as f64 / 1048576.0
            );
        }
        Ok(())
    }

    /// A drafter for one sequence: its own session of `n_ctx` positions,
    /// stopping at a token drafted with less than `p_min` probability.
    pub fn drafter(&self, n_ctx: usize, p_min: f32) -> Box<dyn Drafter> {
        let (n_batch, _) = Draft::session_shape(n_ctx);
        Box::new(DraftModel::new(self.clone(), n_ctx, n_batch, p_min))
    }

    /// The step size and KV element type of a drafter's session of
    /// `n_ctx` positions (what its memory is counted from).
    pub(crate) fn session_shape(n_ctx: usize) -> (usize, KvType) {
        (512.min(n_ctx.max(1)), KvType::F16)
    }

    /// Bytes of its weights mapped from its files.
    #[cfg(feature = "serve")]
    pub(crate) fn mapped_bytes(&self) -> u64 {
        crate::limits::mapped_bytes(&self.0)
    }
}

fn invalid(what: String) -> crate::Error {
    crate::Error::Core(tern_core::Error::InvalidArgument { what })
}
