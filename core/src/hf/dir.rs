//! An HF model directory as a set of named files, whoever reads them (the
//! native loader maps them from disk, the wasm one receives them from JS).

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use super::{shard_files, CheckpointInfo, GenerationDefaults, Index, INDEX};
use crate::error::{Error, Result};
use crate::model::Model;
use crate::tokenizer::Tokenizer;

/// A model loaded from an HF directory.
pub struct HfModel<B> {
    /// The model.
    pub model: Model<B>,
    /// None when the directory has no `tokenizer.json`.
    pub tokenizer: Option<Tokenizer>,
    /// generation_config.json's sampling defaults.
    pub defaults: GenerationDefaults,
    /// What the checkpoint was.
    pub info: CheckpointInfo,
}

/// `model-00001-of-00003.safetensors`, as transformers names shards.
pub(crate) fn is_shard_name(name: &str) -> bool {
    let Some(mid) = name.strip_prefix("model-").and_then(|n| n.strip_suffix(".safetensors")) else { return false };
    let Some((a, b)) = mid.split_once("-of-") else { return false };
    !a.is_empty() && !b.is_empty() && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())
}

fn utf8(file: &str, b: &[u8]) -> Result<String> {
    core::str::from_utf8(b).map(str::to_string).map_err(|_| Error::ModelFile {
        file: file.into(),
        field: "(file)".into(),
        detail: "not UTF-8".into(),
    })
}

/// Load the directory whose files `take` hands over by name (None: absent;
/// each is asked for once). `present` lists every file name the directory
/// has, so that shards the index does not name are reported.
pub fn load_dir<B: AsRef<[u8]>>(
    take: &mut dyn FnMut(&str) -> Result<Option<B>>,
    present: &[String],
) -> Result<HfModel<B>> {
    let need = |name: &str, b: Option<B>| -> Result<B> {
        b.ok_or_else(|| Error::ModelFile {
            file: name.into(),
            field: "(file)".into(),
            detail: "not found; a model directory needs it".into(),
        })
    };
    let config = need("config.json", take("config.json")?)?;
    let index = match take(INDEX)? {
        Some(b) => Some(Index::parse(b.as_ref())?),
        None => None,
    };
    let mut names = shard_files(index.as_ref());
    if index.is_some() {
        for p in present {
            if is_shard_name(p) && !names.contains(p) {
                names.push(p.clone());
            }
        }
    }
    let shards = names.into_iter().map(|n| Ok((n.clone(), need(&n, take(&n)?)?))).collect::<Result<Vec<_>>>()?;
    let (model, info) = super::load(config.as_ref(), index.as_ref(), shards)?;
    let defaults = match take("generation_config.json")? {
        Some(b) => GenerationDefaults::parse(b.as_ref())?,
        None => GenerationDefaults::default(),
    };
    let tokenizer = match take("tokenizer.json")? {
        None => None,
        Some(json) => {
            let cfg = take("tokenizer_config.json")?;
            let template = match take("chat_template.jinja")? {
                Some(b) => Some(utf8("chat_template.jinja", b.as_ref())?),
                None => None,
            };
            let eos: Vec<u32> = defaults.eos_token_ids.iter().chain(&info.eos_token_ids).copied().collect();
            let cfg = cfg.as_ref().map(AsRef::as_ref);
            let tok = Tokenizer::from_hf(json.as_ref(), cfg, template.as_deref(), &eos)?;
            tok.check_fits(model.config.n_vocab)?;
            Some(tok)
        }
    };
    Ok(HfModel { model, tokenizer, defaults, info })
}
