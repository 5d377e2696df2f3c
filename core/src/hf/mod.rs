//! HuggingFace model directories: `config.json`, safetensors weights (one
//! file or shards with an index), `generation_config.json`; the tokenizer
//! files are read by `crate::tokenizer`. No I/O here: the caller hands in
//! each file's bytes (memory maps natively, buffers in wasm).

pub mod config;
mod dir;
pub(crate) mod fields;
pub mod generation;
pub(crate) mod rope;
pub mod shards;
#[cfg(test)]
mod tests;
pub(crate) mod window;

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

pub use config::HfConfig;
pub use dir::{load_dir, HfModel};
pub use generation::GenerationDefaults;
use shards::SINGLE;
pub use shards::{Index, Shards, INDEX};

use crate::error::{Error, Result};
use crate::model::{Model, Weights};
use crate::tensors::TensorDir;

/// What a loaded checkpoint was, for reporting.
#[derive(Debug, Clone)]
pub struct CheckpointInfo {
    /// config.json's `architectures[0]`.
    pub architecture: String,
    /// The shard files.
    pub shards: Vec<String>,
    /// Tensors per saved dtype.
    pub dtypes: BTreeMap<String, usize>,
    /// End-of-sequence ids.
    pub eos_token_ids: Vec<u32>,
    /// The parts of a multimodal checkpoint not loaded (tern runs its text
    /// stack): `model.vision_tower`, `model.audio_tower`, ….
    pub not_loaded: Vec<String>,
}

/// The shard files to open: the index's, else `model.safetensors`.
pub(crate) fn shard_files(index: Option<&Index>) -> Vec<String> {
    match index {
        Some(ix) => ix.files().into_iter().map(String::from).collect(),
        None => alloc::vec![SINGLE.into()],
    }
}

/// `e`'s problems added to `into` (a report of several, or one).
pub(crate) fn flatten(e: Error, into: &mut Vec<Error>) {
    match e {
        Error::Tensors { problems } => into.extend(problems),
        e => into.push(e),
    }
}

/// The parts (a tensor name's first two components) of the tensors the
/// language model leaves out: a multimodal checkpoint's towers.
fn not_loaded(dir: &dyn TensorDir) -> Vec<String> {
    let naming = dir.naming();
    let mut parts = alloc::collections::BTreeSet::new();
    for name in dir.names().into_iter().filter(|n| naming.ignorable(n) && !n.ends_with(".inv_freq")) {
        let end = name.match_indices('.').nth(1).map_or(name.len(), |(i, _)| i);
        parts.insert(String::from(&name[..end]));
    }
    parts.into_iter().collect()
}

/// Load a checkpoint: parse `config.json`, read every shard's header,
/// check shards, index, config and the tensors the architecture needs
/// against each other (all problems in one report) before any tensor is
/// read, then bind. `shards` are (file name, bytes), as `shard_files` lists.
pub fn load<B: AsRef<[u8]>>(
    config_json: &[u8],
    index: Option<&Index>,
    shards: Vec<(String, B)>,
) -> Result<(Model<B>, CheckpointInfo)> {
    let hc = HfConfig::parse(config_json)?;
    hc.config.check_fits(true, shards.iter().map(|s| s.1.as_ref().len() as u64).sum())?;
    let (weights, info) = {
        let views: Vec<(&str, &[u8])> = shards.iter().map(|(n, b)| (n.as_str(), b.as_ref())).collect();
        let (dir, mut problems) = Shards::read(&views, index, hc.dtype)?;
        let dir = dir.family_names(hc.config.arch.family().hf_tensors);
        if let Err(e) = Weights::check(&dir, &hc.config, hc.expect) {
            flatten(e, &mut problems);
        }
        match problems.len() {
            0 => {}
            1 => return Err(problems.remove(0)),
            _ => return Err(Error::Tensors { problems }),
        }
        let info = CheckpointInfo {
            architecture: hc.architecture.clone(),
            shards: shards.iter().map(|s| s.0.clone()).collect(),
            dtypes: dir.dtypes(),
            eos_token_ids: hc.eos_token_ids.clone(),
            not_loaded: not_loaded(&dir),
        };
        (Weights::bind(&dir, &hc.config, hc.expect)?, info)
    };
    let bufs = shards.into_iter().map(|s| s.1).collect();
    Ok((Model::from_parts(bufs, hc.config, weights)?, info))
}
