//! Loading a model from disk: a GGUF file, or an HF directory (config.json,
//! safetensors shards, tokenizer files), each file memory-mapped.

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

use memmap2::Mmap;
use tern_core::hf::{self, CheckpointInfo, GenerationDefaults};
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
    let io = |path: &Path, e: std::io::Error| tern_core::Error::ModelFile {
        file: path.display().to_string(),
        field: "(file)".into(),
        detail: e.to_string(),
    };
    let entries = std::fs::read_dir(dir).map_err(|source| Error::Io { path: dir.to_path_buf(), source })?;
    let present: Vec<String> = entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
    // weights are mapped, the small JSON and template files read
    let mut take = |name: &str| -> tern_core::Result<Option<Buffer>> {
        if !present.iter().any(|p| p == name) {
            return Ok(None);
        }
        let p = dir.join(name);
        if name.ends_with(".safetensors") {
            let m = map(&p).map_err(|e| match e {
                Error::Io { source, .. } => io(&p, source),
                other => tern_core::Error::InvalidArgument { what: other.to_string() },
            })?;
            Ok(Some(Buffer::Mapped(m)))
        } else {
            std::fs::read(&p).map(|b| Some(Buffer::Owned(b))).map_err(|e| io(&p, e))
        }
    };
    let mut h = hf::load_dir(&mut take, &present)?;
    if h.model.config.name.is_empty() {
        h.model.config.name = dir.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
    }
    Ok(Loaded {
        model: h.model,
        tokenizer: h.tokenizer,
        format: Format::Hf(h.info),
        defaults: h.defaults,
        requantized: None,
        load_time: Duration::ZERO,
    })
}

/// The vocabulary of a model without a tokenizer: it runs on ids, with no
/// text; its end ids come from generation_config.json.
pub struct IdsOnly<'a>(pub &'a [u32]);

impl tern_core::generate::Vocab for IdsOnly<'_> {
    fn token_bytes(&self, _: u32) -> &[u8] {
        &[]
    }
    fn is_eog(&self, id: u32) -> bool {
        self.0.contains(&id)
    }
}
