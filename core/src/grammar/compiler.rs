//! One model's grammar compiler: llguidance's parser factory over the
//! model's vocabulary (built once — about half a second for a 150k
//! vocabulary), compiling each request's [`Grammar`] into a constraint.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

use llguidance::api::{ParserLimits, TopLevelGrammar};
use llguidance::ParserFactory;
use serde_json::{json, Value};

use super::lazy::{LazyConstraint, Thinking, Trigger};
use super::matcher::GrammarConstraint;
use super::vocab::token_env;
use super::{grammar_err, Grammar};
use crate::error::{Error, Result};
use crate::generate::Constraint;
use crate::tokenizer::Tokenizer;

/// Compiles grammars for one model's vocabulary; share it (`Arc`) across
/// requests.
pub struct GrammarCompiler {
    factory: ParserFactory,
    /// The end-of-generation tokens, the trie's end token first.
    eog: Vec<u32>,
}

/// JSON as the model writes it under a schema: `", "` and `": "` between
/// items and keys, no other whitespace (flexible whitespace lets a small
/// model pad with newlines until the length limit) — unless the schema's
/// own `x-guidance` options say otherwise.
fn json_options(mut schema: Value) -> Value {
    if let Some(o) = schema.as_object_mut() {
        if let Some(x) = o.entry("x-guidance").or_insert_with(|| json!({})).as_object_mut() {
            let compact = [
                ("whitespace_flexible", json!(false)),
                ("item_separator", json!(", ")),
                ("key_separator", json!(": ")),
            ];
            for (k, v) in compact {
                x.entry(k).or_insert(v);
            }
        }
    }
    schema
}

impl GrammarCompiler {
    /// A compiler for `tok`'s vocabulary over `n_vocab` logits.
    pub fn new(tok: &Tokenizer, n_vocab: usize) -> Result<GrammarCompiler> {
        let eos = tok.eos.or(tok.eog.first().copied()).ok_or_else(|| Error::Unsupported {
            what: "constrained output for a vocabulary without an end-of-sequence token".into(),
        })?;
        let mut eog = Vec::from([eos]);
        eog.extend(tok.eog.iter().filter(|&&e| e != eos));
        let env = token_env(tok, n_vocab, eos);
        let mut factory = ParserFactory::new_simple(&env).map_err(grammar_err)?;
        factory.quiet();
        // llguidance's limits, but for the lexer's states (each 1-2 kB):
        // at most ~200 MB however large the schema; errors without the
        // whole grammar in them
        *factory.limits_mut() = ParserLimits { max_lexer_states: 100_000, verbose_errors: false, ..Default::default() };
        Ok(GrammarCompiler { factory, eog })
    }

    /// Compile `g`: an error naming what is wrong (a schema keyword
    /// llguidance does not support, a regex or grammar that does not parse,
    /// a limit exceeded, nesting deeper than
    /// [`MAX_GRAMMAR_DEPTH`](super::MAX_GRAMMAR_DEPTH)) before
    /// any token is generated.
    pub fn compile(&self, g: &Grammar) -> Result<Box<dyn Constraint>> {
        super::shape::check(g)?;
        match g {
            Grammar::JsonSchema(v) => self.check_patterns(v)?,
            Grammar::Lark(src) => super::shape::lark_schemas(src).iter().try_for_each(|v| self.check_patterns(v))?,
            _ => {}
        }
        let top = match g {
            Grammar::JsonObject => TopLevelGrammar::from_json_schema(json_options(json!({"type": "object"}))),
            Grammar::JsonSchema(v) => TopLevelGrammar::from_json_schema(json_options(v.clone())),
            Grammar::Regex(rx) => TopLevelGrammar::from_regex(rx),
            Grammar::Lark(src) => TopLevelGrammar::from_lark(src.clone()),
        };
        let parser = self.factory.create_parser(top).map_err(grammar_err)?;
        Ok(Box::new(GrammarConstraint::new(parser, self.eog.clone())?))
    }

    /// Compile `g` as a lazy grammar: the output is free until one of
    /// `triggers` shows, and `g` holds it from the trigger's first byte
    /// (so `g` spells the trigger); a thinking block (`think`) is not
    /// watched. Compile errors come now, as for [`GrammarCompiler::compile`].
    pub fn compile_lazy(
        &self,
        g: &Grammar,
        triggers: Vec<Trigger>,
        think: Option<Thinking>,
    ) -> Result<Box<dyn Constraint>> {
        let inner = self.compile(g)?;
        Ok(Box::new(LazyConstraint::new(inner, triggers, self.factory.tok_env().clone(), think)))
    }

    /// Each `pattern` (and `patternProperties` key) of a schema compiled
    /// as a regex on its own: llguidance builds a string's regex only when
    /// the string is reached, so one past its limits (`(.{0,1000}){0,1000}`)
    /// would fail after the first tokens. Only a limit is an error here;
    /// any other complaint is the schema compiler's to make.
    fn check_patterns(&self, schema: &Value) -> Result<()> {
        let mut patterns = Vec::new();
        collect_patterns(schema, &mut patterns);
        for p in patterns {
            let rx = p.strip_prefix('^').unwrap_or(p);
            let rx = rx.strip_suffix('$').filter(|r| !r.ends_with('\\')).unwrap_or(rx);
            // (the regex's lexer is built with its first mask)
            let parser = self.factory.create_parser(TopLevelGrammar::from_regex(rx)).map_err(grammar_err);
            if let Err(e) = parser.and_then(|p| GrammarConstraint::new(p, self.eog.clone())) {
                let e = alloc::format!("{e}");
                if e.contains("too many") || e.contains("limit") {
                    let e = e.lines().next().unwrap_or("");
                    return Err(grammar_err(alloc::format!(
                        "the schema's pattern {p:?} is past llguidance's limits: {e}"
                    )));
                }
            }
        }
        Ok(())
    }
}

/// Every `pattern` string and `patternProperties` key in a schema (its
/// depth is bounded before this is called).
fn collect_patterns<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("pattern", Value::String(p)) => out.push(p),
                    ("patternProperties", Value::Object(props)) => out.extend(props.keys().map(String::as_str)),
                    _ => {}
                }
                collect_patterns(x, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_patterns(x, out)),
        _ => {}
    }
}

/// A compiler built on first use (about half a second for a 150k-token
/// vocabulary) and then shared: the one cache of `Bundle::grammar` and of
/// the bindings.
#[derive(Default)]
pub struct LazyCompiler(std::sync::OnceLock<GrammarCompiler>);

impl LazyCompiler {
    /// The compiler for `tok`'s vocabulary over `n_vocab` logits, built
    /// now if it was not yet (always for the same tokenizer).
    pub fn get(&self, tok: &Tokenizer, n_vocab: usize) -> Result<&GrammarCompiler> {
        if let Some(g) = self.0.get() {
            return Ok(g);
        }
        let g = GrammarCompiler::new(tok, n_vocab)?;
        Ok(self.0.get_or_init(|| g))
    }
}
