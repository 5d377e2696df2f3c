//! Speculative decoding's flags, shared by `run`, `chat`, `bench` and
//! `serve` (llama.cpp's names).

use tern::{Draft, Loaded, Result};
use tern_core::{Drafter, Speculative, MAX_DRAFT};

use super::files::invalid;

/// The drafter `--spec` names.
#[derive(clap::ValueEnum, Clone, Copy, PartialEq, Eq, Debug)]
pub enum SpecType {
    /// Prompt lookup: what followed the last tokens earlier in the text
    #[value(alias = "ngram-simple")]
    Ngram,
}

#[derive(clap::Args, Clone, Default)]
pub struct SpecArgs {
    /// Speculative decoding with n-gram (prompt lookup) drafts: several
    /// tokens per forward pass where the output repeats the input
    #[arg(long, value_enum, visible_alias = "spec-type", value_name = "ngram")]
    pub spec: Option<SpecType>,
    /// Speculative decoding with this draft model (a file, directory or
    /// reference, as -m; its vocabulary must be the target's)
    /// (llama.cpp's -md)
    #[arg(long = "model-draft", visible_alias = "spec-draft-model", value_name = "REF")]
    pub model_draft: Option<String>,
    /// Most tokens drafted per step [default: 8]
    #[arg(long, visible_aliases = ["draft", "draft-n", "spec-draft-n-max"], value_name = "N")]
    pub draft_max: Option<usize>,
    /// Fewest drafted tokens worth verifying [default: 0]
    #[arg(long, visible_aliases = ["draft-n-min", "spec-draft-n-min"], value_name = "N")]
    pub draft_min: Option<usize>,
    /// A draft model stops at a token it gives less probability [default: 0.75]
    #[arg(long, visible_alias = "spec-draft-p-min", value_name = "P")]
    pub draft_p_min: Option<f32>,
}

impl SpecArgs {
    /// Whether any drafting is asked for.
    pub fn on(&self) -> bool {
        self.spec.is_some() || self.model_draft.is_some()
    }

    /// The request's speculation settings (None: plain decoding), the
    /// flags checked by their names.
    pub fn speculative(&self) -> Result<Option<Speculative>> {
        if !self.on() {
            if self.draft_max.is_some() || self.draft_min.is_some() || self.draft_p_min.is_some() {
                return Err(invalid(
                    "--draft-max, --draft-min and --draft-p-min need --spec ngram or --model-draft".into(),
                ));
            }
            return Ok(None);
        }
        if let Some(n) = self.draft_max.filter(|n| !(1..=MAX_DRAFT).contains(n)) {
            return Err(invalid(format!("--draft-max {n}: a draft holds 1 to {MAX_DRAFT} tokens")));
        }
        let max = self.draft_max.unwrap_or(tern_core::SpecConfig::default().n_max);
        if let Some(n) = self.draft_min.filter(|&n| n > max) {
            return Err(invalid(format!("--draft-min {n} is more than --draft-max {max}")));
        }
        if let Some(p) = self.draft_p_min.filter(|p| !(0.0..=1.0).contains(p)) {
            return Err(invalid(format!("--draft-p-min {p}: a probability, in [0, 1]")));
        }
        Ok(Some(Speculative { n_max: self.draft_max, n_min: self.draft_min, p_min: self.draft_p_min }))
    }

    /// The draft model, loaded and checked against `target`, if one is named.
    pub fn draft(&self, load: &super::LoadArgs, target: &Loaded) -> Result<Option<Draft>> {
        let Some(r) = &self.model_draft else { return Ok(None) };
        let path = load.clone().with_model(Some(r.clone())).model_path()?;
        Draft::load(&path, target).map(Some)
    }

    /// A sequence's drafter: the draft model's (in a session of `n_ctx`
    /// positions), else None (n-gram lookup).
    pub fn drafter(&self, draft: Option<&Draft>, n_ctx: usize) -> Option<Box<dyn Drafter>> {
        let p_min = self.draft_p_min.unwrap_or(tern_core::SpecConfig::default().p_min);
        draft.map(|d| d.drafter(n_ctx, p_min))
    }
}
