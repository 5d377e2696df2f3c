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
    /// DRY repetition penalty multiplier, 0 = off (llama.cpp's)
    #[arg(long)]
    pub dry_multiplier: Option<f32>,
    /// DRY base [default: 1.75]
    #[arg(long)]
    pub dry_base: Option<f32>,
    /// The longest repeat DRY leaves alone [default: 2]
    #[arg(long)]
    pub dry_allowed_length: Option<usize>,
    /// Recent tokens DRY looks over, -1 = the whole context, 0 = off [default: 64]
    #[arg(long, allow_negative_numbers = true)]
    pub dry_penalty_last_n: Option<i64>,
    /// A DRY sequence breaker (repeatable; replaces the defaults "\n" ":" "\"" "*")
    #[arg(long)]
    pub dry_sequence_breaker: Vec<String>,
    /// XTC probability, 0 = off
    #[arg(long)]
    pub xtc_probability: Option<f32>,
    /// XTC threshold [default: 0.1; above 0.5 = off]
    #[arg(long)]
    pub xtc_threshold: Option<f32>,
    /// Sampler order, names separated by ';' (llama.cpp's: penalties;dry;top_k;typ_p;top_p;min_p;xtc;temperature)
    #[arg(long, group = "order")]
    pub samplers: Option<String>,
    /// Sampler order as letters (llama.cpp's: edkypmxt)
    #[arg(long, group = "order")]
    pub sampling_seq: Option<String>,
    /// Generate at least this many tokens
    #[arg(long, default_value_t = 0)]
    pub min_tokens: usize,
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

    /// `--samplers` or `--sampling-seq`, if given.
    fn order(&self) -> Result<Option<Vec<tern_core::Stage>>> {
        let order = match (&self.samplers, &self.sampling_seq) {
            (Some(names), _) => tern_core::Stage::order(&names.split(';').map(str::trim).collect::<Vec<_>>()),
            (_, Some(letters)) => tern_core::Stage::order_of_letters(letters),
            _ => return Ok(None),
        };
        Ok(Some(order?))
    }

    /// The request these flags make for `prompt` (`seed` the one drawn):
    /// over the model's generation defaults, over llama.cpp's.
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
                dry_multiplier: self.dry_multiplier,
                dry_base: self.dry_base,
                dry_allowed_length: self.dry_allowed_length,
                dry_penalty_last_n: self.dry_penalty_last_n,
                dry_sequence_breakers: Some(self.dry_sequence_breaker.clone()).filter(|b| !b.is_empty()),
                xtc_probability: self.xtc_probability,
                xtc_threshold: self.xtc_threshold,
                samplers: self.order()?,
            },
            min_tokens: self.min_tokens,
            max_tokens: Some(self.n_predict),
            stop: self.stop.clone(),
            ignore_eos: self.ignore_eos,
            grammar: self.grammar()?,
            ..Request::new(prompt)
        })
    }
}
