//! Loading a model from disk: a GGUF file, or an HF directory (config.json,
//! safetensors shards, tokenizer files), each file memory-mapped.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use memmap2::Mmap;
use tern_core::hf::{self, CheckpointInfo, GenerationDefaults, Index};
use tern_core::model::Requantized;
use tern_core::quant::GgmlType;
use tern_core::tokenizer::Tokenizer;
use tern_core::Model;

use crate::error::{Error, Result};

/// The bytes of a model: a mapped file, or weights made at load.
pub enum Buffer {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl AsRef<[u8]> for Buffer {
    fn as_ref(&self) -> &[u8] {
        match self {
            Buffer::Mapped(m) => m,
            Buffer::Owned(v) => v,
        }
    }
}

/// Where the model came from.
pub enum Format {
    Gguf { version: u32 },
    Hf(CheckpointInfo),
}

/// A model mapped from disk, with its tokenizer (if the files have one)
/// and generation defaults (HF `generation_config.json`).
pub struct Loaded {
    pub model: Model<Buffer>,
    pub tokenizer: Option<Tokenizer>,
    pub format: Format,
    pub defaults: GenerationDefaults,
    pub requantized: Option<Requantized>,
    pub load_time: Duration,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions {
    /// Quantize float weights to this block type at load (Q8_0).
    pub quantize: Option<GgmlType>,
}

impl Loaded {
    /// The tokenizer, or an error saying the model has none.
    pub fn tokenizer(&self) -> Result<&Tokenizer> {
        self.tokenizer.as_ref().ok_or_else(|| {
            Error::Core(tern_core::Error::Tokenizer {
                detail: "this model has no tokenizer (no tokenizer.json / GGUF vocabulary); give --prompt-ids".into(),
            })
        })
    }

    /// End-of-generation ids: the tokenizer's, else generation_config's.
    pub fn eog(&self) -> Vec<u32> {
        match &self.tokenizer {
            Some(t) => t.eog.clone(),
            None => self.defaults.eos_token_ids.clone(),
        }
    }
}

fn map(path: &Path) -> Result<Mmap> {
    let io = |source| Error::Io { path: path.to_path_buf(), source };
    let file = File::open(path).map_err(io)?;
    // SAFETY: the file is opened read-only and the map is never written;
    // like every mmap user we rely on the file not being truncated while
    // mapped (a model file in a cache folder is not modified in place).
    unsafe { Mmap::map(&file) }.map_err(io)
}

/// A small file of the directory, if present.
fn read_opt(dir: &Path, name: &str) -> Result<Option<Vec<u8>>> {
    let p = dir.join(name);
    match std::fs::read(&p) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(Error::Io { path: p, source }),
    }
}

/// Load a GGUF file or an HF model directory.
pub fn load_with(path: &Path, opts: &LoadOptions) -> Result<Loaded> {
    let t0 = Instant::now();
    let mut lm = if path.is_dir() { load_dir(path)? } else { load_gguf(path)? };
    if let Some(ty) = opts.quantize {
        let model = lm.model;
        let (m, r) = model.quantize(ty, Buffer::Owned)?;
        lm.model = m;
        lm.requantized = Some(r);
    }
    lm.load_time = t0.elapsed();
    Ok(lm)
}

pub fn load(path: &Path) -> Result<Loaded> {
    load_with(path, &LoadOptions::default())
}

fn load_gguf(path: &Path) -> Result<Loaded> {
    let (model, (tokenizer, version)) = Model::load_gguf_with(Buffer::Mapped(map(path)?), |g| {
        let tok = match g.get("tokenizer.ggml.model") {
            Some(_) => Some(Tokenizer::from_gguf(g)?),
            None => None,
        };
        Ok((tok, g.version))
    })?;
    Ok(Loaded {
        model,
        tokenizer,
        format: Format::Gguf { version },
        defaults: GenerationDefaults::default(),
        requantized: None,
        load_time: Duration::ZERO,
    })
}

fn load_dir(dir: &Path) -> Result<Loaded> {
    let need = |name: &str| -> Result<Vec<u8>> {
        read_opt(dir, name)?.ok_or_else(|| Error::Io {
            path: dir.join(name),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "a model directory needs it"),
        })
    };
    let config = need("config.json")?;
    let index = match read_opt(dir, hf::INDEX)? {
        Some(b) => Some(Index::parse(&b)?),
        None => None,
    };
    let mut names = hf::shard_files(index.as_ref());
    // shards lying beside the index that it does not name are reported
    if index.is_some() {
        let entries = std::fs::read_dir(dir).map_err(|source| Error::Io { path: dir.to_path_buf(), source })?;
        for name in entries.filter_map(|e| e.ok()?.file_name().into_string().ok()) {
            if is_shard_name(&name) && !names.contains(&name) {
                names.push(name);
            }
        }
    }
    let shards = names
        .into_iter()
        .map(|name| Ok((name.clone(), Buffer::Mapped(map(&dir.join(&name))?))))
        .collect::<Result<Vec<_>>>()?;
    let (mut model, info) = hf::load(&config, index.as_ref(), shards)?;
    if model.config.name.is_empty() {
        model.config.name = dir.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
    }
    let defaults = match read_opt(dir, "generation_config.json")? {
        Some(b) => GenerationDefaults::parse(&b)?,
        None => GenerationDefaults::default(),
    };
    let tokenizer = match read_opt(dir, "tokenizer.json")? {
        None => None,
        Some(json) => {
            let cfg = read_opt(dir, "tokenizer_config.json")?;
            let template = read_opt(dir, "chat_template.jinja")?
                .map(|b| String::from_utf8(b).map_err(|_| not_utf8(dir.join("chat_template.jinja"))))
                .transpose()?;
            let eos: Vec<u32> = defaults.eos_token_ids.iter().chain(&info.eos_token_ids).copied().collect();
            Some(Tokenizer::from_hf(&json, cfg.as_deref(), template.as_deref(), &eos)?)
        }
    };
    Ok(Loaded { model, tokenizer, format: Format::Hf(info), defaults, requantized: None, load_time: Duration::ZERO })
}

/// `model-00001-of-00003.safetensors`, as transformers names shards.
fn is_shard_name(name: &str) -> bool {
    let Some(mid) = name.strip_prefix("model-").and_then(|n| n.strip_suffix(".safetensors")) else { return false };
    let Some((a, b)) = mid.split_once("-of-") else { return false };
    !a.is_empty() && !b.is_empty() && (a.bytes().chain(b.bytes())).all(|c| c.is_ascii_digit())
}

fn not_utf8(path: PathBuf) -> Error {
    Error::Io { path, source: std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8") }
}
