//! Fill-in-the-middle: a code model's prompt for the text between a
//! prefix and a suffix (llama-server's `/infill`, OpenAI's `suffix`), in
//! the prefix-suffix-middle order code models are trained on, with the
//! model's own FIM tokens — found by their strings as llama.cpp finds
//! them (Qwen2.5-Coder's `<|fim_prefix|>`, StarCoder's `<fim_prefix>`,
//! CodeLlama's `<PRE>`, DeepSeek-Coder's `<｜fim▁begin｜>`, CodeGemma's
//! `<|fim_prefix|>`…) — and, where the model has them, the repository
//! tokens that put other files (`input_extra`) before it.

use alloc::string::String;
use alloc::vec::Vec;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::tokenizer::Tokenizer;

const PRE: [&str; 8] = [
    "<|fim_prefix|>",
    "<fim-prefix>",
    "<fim_prefix>",
    "<PRE>",
    "▁<PRE>",
    "<｜fim▁begin｜>",
    "<|fim▁begin|>",
    "<|code_prefix|>",
];
const SUF: [&str; 8] = [
    "<|fim_suffix|>",
    "<fim-suffix>",
    "<fim_suffix>",
    "<SUF>",
    "▁<SUF>",
    "<｜fim▁hole｜>",
    "<|fim▁hole|>",
    "<|code_suffix|>",
];
const MID: [&str; 8] = [
    "<|fim_middle|>",
    "<fim-middle>",
    "<fim_middle>",
    "<MID>",
    "▁<MID>",
    "<｜fim▁end｜>",
    "<|fim▁end|>",
    "<|code_middle|>",
];
const REPO: [&str; 2] = ["<|repo_name|>", "<repo_name>"];
const FILE_SEP: [&str; 2] = ["<|file_sep|>", "<file_sep>"];

/// The most files `extra` may give.
pub const MAX_EXTRA_FILES: usize = 64;

/// What to fill in: the text before and after the gap, other files of the
/// project for context, and the start of the middle if already typed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Infill {
    /// The text before the gap.
    pub prefix: String,
    /// The text after it.
    pub suffix: String,
    /// Other files (llama-server's `input_extra`), before the file.
    #[serde(default)]
    pub extra: Vec<ExtraFile>,
    /// The middle's first words, if any (llama-server's `prompt`).
    #[serde(default)]
    pub middle: String,
}

/// A file given for context.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtraFile {
    /// Its name.
    pub filename: String,
    /// Its text.
    pub text: String,
}

/// A model's FIM tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FimTokens {
    /// Before the prefix.
    pub prefix: u32,
    /// Before the suffix.
    pub suffix: u32,
    /// Before the middle, which the model writes.
    pub middle: u32,
    /// Before a repository's name, and between files (both or neither).
    pub repo: Option<(u32, u32)>,
}

impl FimTokens {
    /// The tokenizer's FIM tokens, or an error naming the ones it lacks.
    pub fn of(tok: &Tokenizer) -> Result<FimTokens> {
        let find = |names: &[&str]| names.iter().find_map(|n| tok.token_id(n));
        let (pre, suf, mid) = (find(&PRE), find(&SUF), find(&MID));
        match (pre, suf, mid) {
            (Some(prefix), Some(suffix), Some(middle)) => {
                let repo = find(&REPO).zip(find(&FILE_SEP));
                Ok(FimTokens { prefix, suffix, middle, repo })
            }
            _ => {
                let missing: Vec<&str> = [(pre, "prefix"), (suf, "suffix"), (mid, "middle")]
                    .iter()
                    .filter(|(id, _)| id.is_none())
                    .map(|(_, n)| *n)
                    .collect();
                Err(Error::Unsupported {
                    what: alloc::format!(
                        "fill-in-the-middle with this model: its vocabulary has no FIM {} token (such as {}, {}, {})",
                        missing.join(", "),
                        PRE[0],
                        SUF[0],
                        MID[0]
                    ),
                })
            }
        }
    }
}

impl Infill {
    /// The prompt's ids: BOS if the model adds one, the other files (with
    /// the repository tokens, if the model has them), then prefix,
    /// suffix, middle. Their text is text: a FIM token's string typed
    /// into the code stays characters.
    pub fn ids(&self, tok: &Tokenizer) -> Result<Vec<u32>> {
        if self.extra.len() > MAX_EXTRA_FILES {
            return Err(Error::InvalidField {
                field: "extra".into(),
                what: alloc::format!("{} files (at most {MAX_EXTRA_FILES})", self.extra.len()),
            });
        }
        let fim = FimTokens::of(tok)?;
        let mut esc = tok.escaper();
        let mut text = |s: &str| -> Result<Vec<u32>> {
            let e = esc.escape(s);
            esc.encode(&e, false)
        };
        let mut ids = Vec::new();
        if let (true, Some(bos)) = (tok.add_bos, tok.bos) {
            ids.push(bos);
        }
        if let (Some((repo, sep)), false) = (fim.repo, self.extra.is_empty()) {
            // Qwen2.5-Coder's repository form: <|repo_name|>name\n, then
            // <|file_sep|>path\ntext for each file
            ids.push(repo);
            ids.extend(text("project\n")?);
            for f in &self.extra {
                ids.push(sep);
                ids.extend(text(&alloc::format!("{}\n{}", f.filename, f.text))?);
            }
            ids.push(sep);
        } else {
            for f in &self.extra {
                ids.extend(text(&f.text)?);
            }
        }
        ids.push(fim.prefix);
        ids.extend(text(&self.prefix)?);
        ids.push(fim.suffix);
        ids.extend(text(&self.suffix)?);
        ids.push(fim.middle);
        ids.extend(text(&self.middle)?);
        Ok(ids)
    }
}
