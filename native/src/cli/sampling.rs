//! Sampling and stop options shared by `run` and `chat`.

use std::path::Path;

use tern::Result;
use tern_core::{Grammar, MAX_GRAMMAR_BYTES};
use tern_core::{Prompt, Request, Sampling};

#[derive(clap::Args, Clone)]
pub struct SamplingArgs {
    /// Tokens to generate
    #[arg(short = 'n', long, default_value_t = 256)]
    pub n_predict: usize,
    /// Temperature, 0 = greedy [default: the model's generation_config.json, else 0.8]
    #[arg(long)]
    pub temp: Option<f32>,
    /// [default: generation_config.json, else 40]
    #[arg(long)]
    pub top_k: Option<usize>,
    /// [default: generation_config.json, else 0.95]
    #[arg(long)]
    pub top_p: Option<f32>,
    /// [default: generation_config.json, else 0.05]
    #[arg(long)]
    pub min_p: Option<f32>,
    /// Locally typical sampling mass, 1 = off [default: generation_config.json, else 1]
    #[arg(long)]
    pub typical: Option<f32>,
    /// [default: generation_config.json's repetition_penalty, else 1]
    #[arg(long)]
    pub repeat_penalty: Option<f32>,
    #[arg(long, default_value_t = 0.0)]
    pub presence_penalty: f32,
    #[arg(long, default_value_t = 0.0)]
    pub frequency_penalty: f32,
    /// Window of recent tokens the penalties look at
    #[arg(long, default_value_t = 64)]
    pub repeat_last_n: usize,
    /// RNG seed [default: from the clock; printed with --json]
    #[arg(short, long)]
    pub seed: Option<u64>,
    /// Stop string (repeatable); never part of the output (llama.cpp's
    /// -r/--reverse-prompt)
    #[arg(long, short = 'r', visible_alias = "reverse-prompt")]
    pub stop: Vec<String>,
    /// Never sample end-of-generation tokens (their logits set to -inf, as
    /// llama.cpp's --ignore-eos does)
    #[arg(long)]
    pub ignore_eos: bool,
    /// Output valid against this JSON Schema (a file, or the schema itself)
    #[arg(long, value_name = "FILE|JSON", group = "constraint")]
    pub json_schema: Option<String>,
    /// With --json-schema: ignore the keywords llguidance cannot enforce
    /// (uniqueItems, not, if/then, unknown formats...) instead of refusing
    /// the schema; the rest is enforced (OpenAI's strict: false)
    #[arg(long, requires = "json_schema")]
    pub lenient: bool,
    /// Output derived from this grammar file (llama.cpp's GBNF, or Lark)
    #[arg(long, value_name = "FILE", group = "constraint")]
    pub grammar: Option<std::path::PathBuf>,
    /// Output matching this regular expression
    #[arg(long, value_name = "REGEX", group = "constraint")]
    pub regex: Option<String>,
}

/// A grammar or schema file's text, refused unread past the grammar limit.
fn read_source(f: &Path) -> Result<String> {
    super::files::read_text(f, MAX_GRAMMAR_BYTES as u64, "grammar file", "")
}

impl SamplingArgs {
    pub fn seed(&self) -> u64 {
        self.seed.unwrap_or_else(tern::clock_seed)
    }

    /// What the output must match, from `--json-schema`, `--grammar` or `--regex`.
    pub fn grammar(&self) -> Result<Option<Grammar>> {
        let schema = |g: Grammar| if self.lenient { g.lenient() } else { g };
        Ok(Some(match (&self.json_schema, &self.grammar, &self.regex) {
            (Some(s), _, _) if s.trim_start().starts_with('{') => schema(Grammar::json_schema(s)?),
            (Some(s), _, _) => schema(Grammar::json_schema(&read_source(Path::new(s))?)?),
            (_, Some(f), _) => Grammar::gbnf_or_lark(&read_source(f)?)?,
            (_, _, Some(rx)) => Grammar::regex(rx)?,
            _ => return Ok(None),
        }))
    }

    /// The sampler: llama.cpp's defaults, then the model's generation
    /// defaults, then what the command line sets.
    /// The request these flags make for `prompt` (`seed` the one drawn).
    pub fn request(&self, prompt: Prompt, seed: u64) -> Result<Request> {
        Ok(Request {
            sampling: Sampling {
                temperature: self.temp,
                top_k: self.top_k,
                top_p: self.top_p,
                min_p: self.min_p,
                typical_p: self.typical,
                repeat_penalty: self.repeat_penalty,
                presence_penalty: Some(self.presence_penalty),
                frequency_penalty: Some(self.frequency_penalty),
                repeat_last_n: Some(self.repeat_last_n),
                seed: Some(seed),
                logit_bias: Vec::new(),
            },
            max_tokens: Some(self.n_predict),
            stop: self.stop.clone(),
            ignore_eos: self.ignore_eos,
            grammar: self.grammar()?,
            ..Request::new(prompt)
        })
    }
}
