//! Loading a model from disk: a GGUF file, or an HF directory (config.json,
//! safetensors shards, tokenizer files), each file memory-mapped.

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

use memmap2::Mmap;
use tern_core::backend::quant::GgmlType;
use tern_core::Bundle;
use tern_core::Requantized;

use crate::error::{Error, Result};

/// The bytes of a model: a mapped file, or weights made at load.
pub enum Buffer {
    /// A memory-mapped file.
    Mapped(Mmap),
    /// Bytes made at load (quantized weights, small files).
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

/// A model mapped from disk: core's `Bundle` (model, tokenizer, chat
/// template, generation defaults; its fields read through this), and how
/// the load went.
pub struct Loaded {
    /// The model, tokenizer, chat template and defaults.
    pub bundle: Bundle<Buffer>,
    /// What quantizing at load did, if asked.
    pub requantized: Option<Requantized>,
    /// Bytes of the weights' copy in the kernels' own layout, made at load
    /// (8 rows interleaved, `Model::repack_rows8`); 0: none.
    pub repacked: usize,
    /// How long loading took.
    pub load_time: Duration,
}

impl std::ops::Deref for Loaded {
    type Target = Bundle<Buffer>;
    fn deref(&self) -> &Bundle<Buffer> {
        &self.bundle
    }
}

impl std::ops::DerefMut for Loaded {
    fn deref_mut(&mut self) -> &mut Bundle<Buffer> {
        &mut self.bundle
    }
}

/// How to load.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadOptions {
    /// Quantize float weights to this block type at load (Q8_0).
    pub quantize: Option<GgmlType>,
    /// Keep the weights as the file lays them out only: no copy in the
    /// kernels' own layout (llama.cpp's `--no-repack`), which the AVX-512
    /// kernels otherwise read for Q4_0, Q5_0, Q8_0, Q4_K and Q6_K (faster
    /// in decode and for a few tokens at a time: speculative decoding's
    /// verify steps).
    pub no_repack: bool,
}

pub(crate) fn map(path: &Path) -> Result<Mmap> {
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
    let bundle = if path.is_dir() { load_dir(path)? } else { Bundle::gguf(Buffer::Mapped(map(path)?))? };
    let (bundle, requantized) = match opts.quantize {
        Some(ty) => {
            let (b, r) = bundle.map_model(|m| m.quantize(ty, Buffer::Owned))?;
            (b, Some(r))
        }
        None => (bundle, None),
    };
    let kernels = crate::kernels::select()?;
    let (bundle, repacked) = match opts.no_repack {
        true => (bundle, 0),
        false => {
            // the copy only where the memory is plainly there: half of what is free
            let room = usize::try_from(crate::limits::available_memory() / 2).unwrap_or(usize::MAX);
            let max = bundle.model.n_bytes().saturating_add(room);
            // a mixture's experts on their first use instead: a mapped file
            // stays mapped, and only the experts tokens choose are read
            bundle.map_model(|m| {
                let (mut m, n) = m.repack_rows8(|ty| kernels.reads_rows8(ty), max);
                m.repack_experts_lazily(|ty| kernels.reads_rows8(ty));
                Ok((m, n))
            })?
        }
    };
    Ok(Loaded { bundle, requantized, repacked, load_time: t0.elapsed() })
}

/// Load a GGUF file or an HF model directory as it is.
pub fn load(path: &Path) -> Result<Loaded> {
    load_with(path, &LoadOptions::default())
}

/// A model directory's files, handed over by name: weights mapped, the
/// small JSON and template files read.
pub(crate) struct DirFiles<'a> {
    dir: &'a Path,
    /// Every file at its top level.
    pub present: Vec<String>,
}

impl<'a> DirFiles<'a> {
    pub(crate) fn open(dir: &'a Path) -> Result<DirFiles<'a>> {
        let entries = std::fs::read_dir(dir).map_err(|source| Error::Io { path: dir.to_path_buf(), source })?;
        let present = entries.filter_map(|e| e.ok()?.file_name().into_string().ok()).collect();
        Ok(DirFiles { dir, present })
    }

    /// The file `name` (a path under the directory), None if absent.
    pub(crate) fn take(&self, name: &str) -> tern_core::Result<Option<Buffer>> {
        let io = |path: &Path, e: std::io::Error| tern_core::Error::ModelFile {
            file: path.display().to_string(),
            field: "(file)".into(),
            detail: e.to_string(),
        };
        let p = self.dir.join(name);
        let here = match name.contains('/') {
            false => self.present.iter().any(|f| f == name),
            true => p.is_file(),
        };
        if !here {
            return Ok(None);
        }
        if name.ends_with(".safetensors") {
            let m = map(&p).map_err(|e| match e {
                Error::Io { source, .. } => io(&p, source),
                other => tern_core::Error::InvalidArgument { what: other.to_string() },
            })?;
            Ok(Some(Buffer::Mapped(m)))
        } else {
            std::fs::read(&p).map(|b| Some(Buffer::Owned(b))).map_err(|e| io(&p, e))
        }
    }
}

fn load_dir(dir: &Path) -> Result<Bundle<Buffer>> {
    let files = DirFiles::open(dir)?;
    let mut take = |name: &str| files.take(name);
    let mut b = Bundle::hf_dir(&mut take, &files.present)?;
    if b.model.config.name.is_empty() {
        b.model.config.name = dir.file_name().map_or(String::new(), |n| n.to_string_lossy().into_owned());
    }
    Ok(b)
}
