//! tern: native inference. Loads GGUF models by mmap, runs them with the
//! kernels of `tern-core` on a thread pool, and backs the `tern` CLI.

pub mod error;
pub mod kernels;
pub mod models;

use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

pub use error::{Error, Result};
use memmap2::Mmap;
pub use tern_core;
use tern_core::kernels::{Kernels, Scalar};
use tern_core::tokenizer::Tokenizer;
use tern_core::{Engine, Model};
pub use tern_threads::Threads;

/// A model mapped from disk, with its tokenizer.
pub struct Loaded {
    pub model: Model<Mmap>,
    pub tokenizer: Tokenizer,
    pub load_time: Duration,
}

/// Map `path` and load the model and tokenizer it holds.
pub fn load(path: &Path) -> Result<Loaded> {
    let t0 = Instant::now();
    let io = |source| Error::Io { path: path.to_path_buf(), source };
    let file = File::open(path).map_err(io)?;
    // SAFETY: the file is opened read-only and the map is never written;
    // like every mmap user we rely on the file not being truncated while
    // mapped (a model file in a cache folder is not modified in place).
    let map = unsafe { Mmap::map(&file) }.map_err(io)?;
    let (model, tokenizer) = Model::load_gguf_with(map, Tokenizer::from_gguf)?;
    Ok(Loaded { model, tokenizer, load_time: t0.elapsed() })
}

/// The kernels this process uses (see `kernels::select`); the scalar
/// reference if `TERN_KERNELS` names a backend this CPU lacks — `engine`
/// callers that must not fall back use `kernels::select` directly.
pub fn kernels() -> &'static dyn Kernels {
    kernels::select().unwrap_or(&Scalar)
}

/// Nanoseconds since the first call: the clock given to generators.
pub fn clock() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

/// An engine over the given thread pool.
pub fn engine(par: &Threads, exact: bool) -> Engine<'_> {
    Engine { kernels: kernels(), par, exact }
}
