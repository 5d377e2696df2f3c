//! An embedding model as a directory holds it (sentence-transformers'
//! layout: config.json, model.safetensors, tokenizer.json, modules.json,
//! 1_Pooling/config.json, sentence_bert_config.json) or a GGUF: the encoder
//! (or a decoder pooled as an embedder), its tokenizer, its pooling and
//! its maximum input length; text in, vector out.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

use super::{Decoder, Encoder, EncoderConfig, Pooling, Seq};
use crate::error::{Error, Result};
use crate::model::Engine;
use crate::tokenizer::Tokenizer;

/// A (query, document) pair as a cross-encoder takes it: ids and token types.
pub type Pair = (Vec<u32>, Vec<u32>);

/// Inputs one call embeds at most.
pub(crate) const MAX_INPUTS: usize = 4096;

/// The network that turns ids into vectors.
pub enum Body<B> {
    /// A BERT encoder (pooled, or a cross-encoder's classifier).
    Encoder(Encoder<B>),
    /// A causal LM's final hidden states, pooled.
    Decoder(Decoder<B>),
}

/// A model with what it needs to embed text (or, a cross-encoder, to
/// score pairs of texts).
pub struct Embedder<B> {
    /// The model.
    pub body: Body<B>,
    /// Its tokenizer (WordPiece for BERT).
    pub tokenizer: Tokenizer,
    /// Tokens an input keeps (sentence-transformers' `max_seq_length`, else
    /// the model's positions); longer inputs are truncated.
    pub max_len: usize,
}

impl<B: AsRef<[u8]>> Embedder<B> {
    /// A directory whose files `take` hands over by name (None: absent).
    /// Without sentence-transformers' pooling description an embedding
    /// model is refused unless `pooling` says how to pool (a cross-encoder
    /// needs none). A config.json of a decoder (Qwen3, Llama, ...) makes a
    /// decoder embedder, which must have a pooling too.
    pub fn from_dir(take: &mut dyn FnMut(&str) -> Result<Option<B>>, pooling: Option<Pooling>) -> Result<Embedder<B>> {
        let config = need(take, "config.json")?;
        let pooling = match pooling {
            Some(p) => Some(p),
            None => match (take("modules.json")?, take("1_Pooling/config.json")?) {
                (Some(m), Some(p)) => Some(Pooling::from_sentence_transformers(m.as_ref(), p.as_ref())?),
                _ => None,
            },
        };
        let st_max = match take("sentence_bert_config.json")? {
            Some(b) => {
                let v: serde_json::Value = serde_json::from_slice(b.as_ref()).map_err(|e| Error::ModelFile {
                    file: "sentence_bert_config.json".into(),
                    field: "(file)".into(),
                    detail: e.to_string(),
                })?;
                v.get("max_seq_length").and_then(serde_json::Value::as_u64).map(|n| n as usize)
            }
            None => None,
        };
        let cross_encoder = match EncoderConfig::parse(config.as_ref()) {
            Ok(c) => c.n_labels.is_some(),
            Err(Error::UnsupportedArch { .. }) => return Self::decoder_dir(config, take, pooling, st_max),
            Err(_) => false, // Encoder::from_hf below reports it
        };
        if pooling.is_none() && !cross_encoder {
            return Err(no_pooling());
        }
        let tok_json = need(take, "tokenizer.json")?;
        let tok_config = take("tokenizer_config.json")?;
        let tokenizer = Tokenizer::from_hf(tok_json.as_ref(), tok_config.as_ref().map(AsRef::as_ref), None, &[])?;
        let weights = need(take, "model.safetensors")?;
        let encoder =
            Encoder::from_hf(config.as_ref(), None, vec![(String::from("model.safetensors"), weights)], pooling)?;
        if tokenizer.n_vocab() > encoder.config.n_vocab {
            return Err(Error::ModelFile {
                file: "tokenizer.json".into(),
                field: "(vocabulary)".into(),
                detail: format!("{} tokens, the model embeds {}", tokenizer.n_vocab(), encoder.config.n_vocab),
            });
        }
        // sentence-transformers' maximum, else the tokenizer's (as its
        // CrossEncoder takes it), else the model's positions
        let tok_max = tok_config.as_ref().and_then(|c| {
            let v: serde_json::Value = serde_json::from_slice(c.as_ref()).ok()?;
            v.get("model_max_length")?.as_u64().map(|n| n as usize)
        });
        let max_len = st_max.or(tok_max).unwrap_or(usize::MAX).clamp(2, encoder.config.n_pos);
        Ok(Embedder { body: Body::Encoder(encoder), tokenizer, max_len })
    }

    /// A decoder's HF directory (config.json already taken), pooled.
    fn decoder_dir(
        config: B,
        take: &mut dyn FnMut(&str) -> Result<Option<B>>,
        pooling: Option<Pooling>,
        st_max: Option<usize>,
    ) -> Result<Embedder<B>> {
        let pooling = pooling.ok_or_else(no_pooling)?;
        let mut config = Some(config);
        let mut take_again = |name: &str| if name == "config.json" { Ok(config.take()) } else { take(name) };
        let h = crate::hf::load_dir(&mut take_again, &[])?;
        let tokenizer = h.tokenizer.ok_or_else(|| Error::ModelFile {
            file: "tokenizer.json".into(),
            field: "(file)".into(),
            detail: "missing from the model directory".into(),
        })?;
        Ok(Self::decoder(h.model, tokenizer, pooling, st_max))
    }

    fn decoder(model: crate::model::Model<B>, tokenizer: Tokenizer, pooling: Pooling, max: Option<usize>) -> Self {
        let max_len = max.unwrap_or(usize::MAX).clamp(2, model.config.n_ctx_train.max(2));
        Embedder { body: Body::Decoder(Decoder { model, pooling }), tokenizer, max_len }
    }

    /// A GGUF held in `bytes`: a `bert` encoder (llama.cpp's conventions)
    /// or a decoder, pooled as `pooling` says, else as the file says
    /// (`*.pooling_type`); inputs keep up to the model's positions (GGUF
    /// records no shorter maximum).
    pub fn from_gguf(bytes: B, pooling: Option<Pooling>) -> Result<Embedder<B>> {
        let (tokenizer, arch) = {
            let g = crate::gguf::Gguf::parse(bytes.as_ref())?;
            (Tokenizer::from_gguf(&g)?, g.get_str("general.architecture")?.map(String::from))
        };
        if arch.as_deref() != Some("bert") {
            let (model, pooling) =
                crate::model::Model::load_gguf_with(bytes, |g| Ok(pooling.or(Pooling::from_gguf(g)?)))?;
            let pooling = pooling.ok_or_else(no_pooling)?;
            return Ok(Self::decoder(model, tokenizer, pooling, None));
        }
        let encoder = Encoder::from_gguf(bytes, pooling)?;
        if encoder.pooling.is_none() && encoder.weights.classifier.is_none() {
            return Err(Error::Unsupported {
                what: "embeddings from a GGUF without bert.pooling_type: choose a pooling".into(),
            });
        }
        let max_len = encoder.config.n_pos;
        Ok(Embedder { body: Body::Encoder(encoder), tokenizer, max_len })
    }

    /// Float matrices converted to `to` (Q8_0) at load, each new buffer
    /// held by `wrap`: the integer path, at a small cost in accuracy.
    pub fn quantize(self, to: crate::backend::quant::GgmlType, wrap: impl FnOnce(Vec<u8>) -> B) -> Result<Embedder<B>> {
        let body = match self.body {
            Body::Encoder(enc) => Body::Encoder(enc.quantize(to, wrap)?.0),
            Body::Decoder(dec) => Body::Decoder(Decoder { model: dec.model.quantize(to, wrap)?.0, ..dec }),
        };
        Ok(Embedder { body, ..self })
    }

    /// The BERT encoder (an error naming the model otherwise: pairs are
    /// scored by a cross-encoder).
    pub fn encoder(&self) -> Result<&Encoder<B>> {
        match &self.body {
            Body::Encoder(enc) => Ok(enc),
            Body::Decoder(_) => Err(Error::Unsupported {
                what:
                    "reranking with a decoder embedding model (a cross-encoder reranks: BertForSequenceClassification)"
                        .into(),
            }),
        }
    }

    /// The architecture's name: `bert`, or the decoder's (`qwen3`, ...).
    pub fn arch(&self) -> &'static str {
        match &self.body {
            Body::Encoder(_) => "bert",
            Body::Decoder(dec) => dec.model.config.arch.name(),
        }
    }

    /// Width of the vectors.
    pub fn dim(&self) -> usize {
        match &self.body {
            Body::Encoder(enc) => enc.config.n_embd,
            Body::Decoder(dec) => dec.model.config.n_embd,
        }
    }

    /// Token ids the model embeds (an id past them is an error).
    pub fn n_vocab(&self) -> usize {
        match &self.body {
            Body::Encoder(enc) => enc.config.n_vocab,
            Body::Decoder(dec) => dec.model.config.n_vocab,
        }
    }

    /// Whether `ids` is an input the model takes: 1..=`max_len` ids, each
    /// in its vocabulary.
    pub fn check_ids(&self, ids: &[u32]) -> Result<()> {
        match &self.body {
            Body::Encoder(enc) => enc.check_input(&Seq { ids, types: None }),
            Body::Decoder(dec) => dec.check_input(ids, self.max_len),
        }
    }

    /// The pooled vector of each input of ids (each checked as
    /// [`Embedder::check_ids`] says).
    pub fn embed_ids(&self, e: &Engine, inputs: &[&[u32]]) -> Result<Vec<Vec<f32>>> {
        check_count(inputs.len())?;
        match &self.body {
            Body::Encoder(enc) => enc.embed(e, inputs),
            Body::Decoder(dec) => dec.embed(e, inputs, self.max_len),
        }
    }

    /// The model's input for `text`: its ids with the tokenizer's special
    /// tokens, the text's own truncated so that all fit in `max_len` (a
    /// special token it appends, BERT's `[SEP]`, stays last), as HF's
    /// tokenizer truncates.
    pub fn input(&self, text: &str) -> Result<Vec<u32>> {
        let mut ids = self.tokenizer.encode(text, true)?;
        if ids.len() > self.max_len {
            let kept = ids.split_off(ids.len() - usize::from(self.tokenizer.append.is_some()));
            ids.truncate(self.max_len - kept.len());
            ids.extend(kept);
        }
        Ok(ids)
    }

    /// One vector per text; an empty list, more than 4096 texts,
    /// or a text of no tokens is an error naming it.
    pub fn embed(&self, e: &Engine, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        check_count(texts.len())?;
        let inputs = texts.iter().map(|t| self.input(t)).collect::<Result<Vec<_>>>()?;
        let refs: Vec<&[u32]> = inputs.iter().map(Vec::as_slice).collect();
        self.embed_ids(e, &refs)
    }

    /// A cross-encoder's relevance score (its one logit) of each document
    /// for `query`, in the documents' order; each pair truncated to
    /// `max_len` tokens, the longer text first.
    pub fn rerank(&self, e: &Engine, query: &str, documents: &[&str]) -> Result<Vec<f32>> {
        self.score(e, &self.pairs(query, documents)?)
    }

    /// The model's input for each (query, document) pair: ids and token
    /// types; an error if the model does not rerank or the count is out of
    /// bounds.
    pub fn pairs(&self, query: &str, documents: &[&str]) -> Result<Vec<Pair>> {
        check_count(documents.len())?;
        match self.encoder()?.config.n_labels {
            Some(1) => {}
            Some(n) => {
                return Err(Error::Unsupported {
                    what: format!("reranking with a classifier of {n} labels (a reranker has one)"),
                })
            }
            None => {
                return Err(Error::Unsupported {
                    what: "reranking with an embedding model (a cross-encoder reranks: BertForSequenceClassification)"
                        .into(),
                })
            }
        }
        documents.iter().map(|d| self.tokenizer.encode_pair(query, d, self.max_len)).collect()
    }

    /// The one logit of each pair [`Embedder::pairs`] made.
    pub fn score(&self, e: &Engine, pairs: &[Pair]) -> Result<Vec<f32>> {
        let seqs: Vec<Seq> = pairs.iter().map(|(ids, types)| Seq { ids, types: Some(types) }).collect();
        Ok(self.encoder()?.classify(e, &seqs)?.into_iter().map(|l| l[0]).collect())
    }
}

fn no_pooling() -> Error {
    Error::Unsupported {
        what: "embeddings from a model that does not say how to pool (no sentence-transformers modules.json and 1_Pooling/config.json, no *.pooling_type): choose a pooling".into(),
    }
}

/// A file the directory must have.
fn need<B>(take: &mut dyn FnMut(&str) -> Result<Option<B>>, name: &str) -> Result<B> {
    take(name)?.ok_or_else(|| Error::ModelFile {
        file: name.into(),
        field: "(file)".into(),
        detail: "missing from the model directory".into(),
    })
}

/// A request's number of inputs: 1..=4096.
pub fn check_count(n: usize) -> Result<()> {
    match n {
        0 => Err(Error::InvalidArgument { what: "no inputs to embed".into() }),
        n if n > MAX_INPUTS => {
            Err(Error::InvalidArgument { what: format!("{n} inputs in one call (at most {MAX_INPUTS})") })
        }
        _ => Ok(()),
    }
}
