//! tern: native inference. Loads GGUF files and HF directories by mmap, runs them with the
//! kernels of `tern-core` on a thread pool, and backs the `tern` CLI.

pub mod error;
pub mod kernels;
pub mod limits;
pub mod load;
mod model;
#[cfg(feature = "serve")]
pub mod serve;

use std::time::Instant;

pub use error::{Error, Result};
pub use load::{load, load_with, Buffer, IdsOnly, LoadOptions, Loaded};
pub use model::{Chat, Model, Options, Reply, Stream};
pub use tern_core;
pub use tern_core::generate::{Event, GenerationResult};
use tern_core::backend::{Kernels, Scalar};
use tern_core::Engine;
pub use tern_threads::Threads;

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

/// A seed for when none is given: the clock's nanoseconds.
pub fn clock_seed() -> u64 {
    std::time::UNIX_EPOCH.elapsed().map_or(0, |d| d.as_nanos() as u64)
}

/// An engine over the given thread pool.
pub fn engine(par: &Threads, exact: bool) -> Engine<'_> {
    Engine { kernels: kernels(), par, exact }
}
