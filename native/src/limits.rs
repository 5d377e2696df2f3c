//! Sizes from a command line or a request, checked against this machine
//! before anything is allocated or started for them.

use tern_core::KvType;

use crate::{Error, Loaded, Result};

/// More threads than this is a typo, not a configuration.
pub const MAX_THREADS: usize = 1024;

/// Bytes of memory the kernel says are available (`MemAvailable`); when
/// it cannot say, a bound no machine reaches (only overflow is refused).
pub fn available_memory() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kb = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:")?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok());
    kb.map_or(1 << 50, |kb| kb * 1024)
}

/// A thread count: 0 (all cores) or 1..=MAX_THREADS.
pub fn check_threads(n: usize) -> Result<usize> {
    if n > MAX_THREADS {
        return Err(invalid(format!("{n} threads (at most {MAX_THREADS}; 0 = one per core)")));
    }
    Ok(n)
}

/// `n_seqs` sessions of `n_ctx` positions must fit in available memory.
pub fn check_sessions(lm: &Loaded, n_seqs: usize, n_ctx: usize, n_batch: usize, kv: KvType) -> Result<()> {
    Ok(lm.model.check_sessions(n_seqs, n_ctx, n_batch, kv, available_memory())?)
}

/// An `InvalidArgument` error saying `what`.
pub fn invalid(what: String) -> Error {
    Error::Core(tern_core::Error::InvalidArgument { what })
}
