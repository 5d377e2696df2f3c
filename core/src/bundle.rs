//! A model as its files give it: the weights, the tokenizer (if the files
//! have one), the chat template and the generation defaults — loaded the
//! same way whoever holds the bytes (the native loader maps files, the
//! wasm one receives them from JavaScript).

use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;

use crate::chat::ChatTemplate;
use crate::error::{Error, Result};
use crate::generate::Vocab;
use crate::grammar::{GrammarCompiler, LazyCompiler};
use crate::hf::{self, CheckpointInfo, GenerationDefaults};
use crate::model::{Adapter, Applied, Model};
use crate::tokenizer::Tokenizer;

/// Which format the model came in.
#[derive(Debug, Clone)]
pub enum Source {
    /// A GGUF file.
    Gguf {
        /// Its GGUF version.
        version: u32,
    },
    /// An HF transformers directory (config.json, safetensors shards).
    Hf(CheckpointInfo),
}

/// A loaded model and everything loaded beside it.
pub struct Bundle<B> {
    /// The weights and configuration.
    pub model: Model<B>,
    /// None when the files have no vocabulary (the model then runs on ids).
    pub tokenizer: Option<Tokenizer>,
    /// Sampling defaults and end ids from `generation_config.json` (none
    /// for GGUF).
    pub defaults: GenerationDefaults,
    /// Which format the files were.
    pub source: Source,
    /// LoRA adapters loaded beside it, by id (their index), each at its
    /// default scale: what a request that lists none runs with.
    pub adapters: Vec<Applied>,
    /// The compiled chat template, or why there is none.
    template: core::result::Result<ChatTemplate, Error>,
    /// The grammar compiler, once a constrained generation asked for it.
    grammar: LazyCompiler,
}

impl<B: AsRef<[u8]>> Bundle<B> {
    /// A GGUF file held in `bytes`.
    pub fn gguf(bytes: B) -> Result<Bundle<B>> {
        let (model, (tokenizer, version)) = Model::load_gguf_with(bytes, |g| {
            let tok = match g.get("tokenizer.ggml.model") {
                Some(_) => Some(Tokenizer::from_gguf(g)?),
                None => None,
            };
            Ok((tok, g.version))
        })?;
        Ok(Self::new(model, tokenizer, GenerationDefaults::default(), Source::Gguf { version }))
    }

    /// An HF directory whose files `take` hands over by name (None: absent;
    /// each is asked for once); `present` lists every file the directory
    /// has (see `hf::load_dir`).
    pub fn hf_dir(take: &mut dyn FnMut(&str) -> Result<Option<B>>, present: &[String]) -> Result<Bundle<B>> {
        let h = hf::load_dir(take, present)?;
        Ok(Self::new(h.model, h.tokenizer, h.defaults, Source::Hf(h.info)))
    }

    fn new(model: Model<B>, tokenizer: Option<Tokenizer>, defaults: GenerationDefaults, source: Source) -> Self {
        let template = match &tokenizer {
            Some(t) => ChatTemplate::of(t),
            None => Err(Error::Template { detail: "the model has no tokenizer, so no chat template".into() }),
        };
        Bundle { model, tokenizer, defaults, source, template, grammar: LazyCompiler::default(), adapters: Vec::new() }
    }

    /// Keep `adapter` (loaded for this model) beside it at default scale
    /// `scale`; its id.
    pub fn add_adapter(&mut self, adapter: Arc<Adapter>, scale: f32) -> Result<usize> {
        self.model.check_adapter(&adapter)?;
        crate::model::check_scale(&adapter, scale)?;
        self.adapters.push(Applied { adapter, scale });
        Ok(self.adapters.len() - 1)
    }

    /// The tokenizer, or an error saying the model has none.
    pub fn tokenizer(&self) -> Result<&Tokenizer> {
        self.tokenizer.as_ref().ok_or_else(|| Error::Tokenizer {
            detail: "this model has no tokenizer (no tokenizer.json / GGUF vocabulary); give token ids".into(),
        })
    }

    /// The chat template, or why there is none (absent, or it did not
    /// compile).
    pub fn template(&self) -> Result<&ChatTemplate> {
        self.template.as_ref().map_err(Clone::clone)
    }

    /// Use `source` as the chat template instead of the files' own (as
    /// llama.cpp's `--chat-template-file`); an error if it does not
    /// compile or the model has no tokenizer.
    pub fn set_chat_template(&mut self, source: &str) -> Result<()> {
        self.template = Ok(ChatTemplate::with_source(self.tokenizer()?, source)?);
        Ok(())
    }

    /// The grammar compiler for this model's vocabulary, built on first use
    /// (about half a second for a 150k-token vocabulary; then shared).
    pub fn grammar(&self) -> Result<&GrammarCompiler> {
        self.grammar.get(self.tokenizer()?, self.model.config.n_vocab)
    }

    /// End-of-generation ids: the tokenizer's, else generation_config's.
    pub fn eog(&self) -> Vec<u32> {
        match &self.tokenizer {
            Some(t) => t.eog.clone(),
            None => self.defaults.eos_token_ids.clone(),
        }
    }

    /// What generation reads of the vocabulary: the tokenizer's, or — a
    /// model without one runs on ids — no text and the end ids of
    /// generation_config.json.
    pub fn vocab(&self) -> BundleVocab<'_> {
        match &self.tokenizer {
            Some(t) => BundleVocab::Tokenizer(t),
            None => BundleVocab::IdsOnly(&self.defaults.eos_token_ids),
        }
    }

    /// The bundle with its model rewritten by `f` (quantized or widened
    /// at load), and what `f` reported.
    pub fn map_model<T>(self, f: impl FnOnce(Model<B>) -> Result<(Model<B>, T)>) -> Result<(Bundle<B>, T)> {
        let Bundle { model, tokenizer, defaults, source, template, grammar, adapters } = self;
        let (model, t) = f(model)?;
        Ok((Bundle { model, tokenizer, defaults, source, template, grammar, adapters }, t))
    }
}

/// A bundle's vocabulary as generation reads it (`Bundle::vocab`).
#[derive(Clone, Copy)]
pub enum BundleVocab<'a> {
    /// The model's tokenizer.
    Tokenizer(&'a Tokenizer),
    /// No tokenizer: tokens have no text; these ids end generation.
    IdsOnly(&'a [u32]),
}

impl Vocab for BundleVocab<'_> {
    fn token_bytes(&self, id: u32) -> &[u8] {
        match self {
            BundleVocab::Tokenizer(t) => t.token_bytes(id),
            BundleVocab::IdsOnly(_) => &[],
        }
    }
    fn is_eog(&self, id: u32) -> bool {
        match self {
            BundleVocab::Tokenizer(t) => t.is_eog(id),
            BundleVocab::IdsOnly(eog) => eog.contains(&id),
        }
    }
}
