//! tern-llm-threads: a `Parallel` over a persistent rayon pool: workers are
//! started once and reused for every parallel region (no per-call thread
//! spawn). The calling thread posts each region and works on it; the
//! pool's threads help, spinning between regions (`regions`). A small
//! region (decode) gives each worker one contiguous run of output chunks;
//! a large one (prefill) hands its chunks out one at a time, so a worker
//! slowed by anything else on the machine takes fewer of them.
#![warn(missing_docs)]

use std::sync::atomic::AtomicU32;
use std::sync::Arc;

use tern_core::backend::Parallel;

mod regions;
use regions::Regions;

/// Output elements from which a region's chunks are handed out one by one
/// (prefill: 512 tokens × 896 rows is 458752; decode regions are rows only).
const DYNAMIC_MIN: usize = 1 << 16;

/// A thread pool for the forward passes: a `Parallel` whose workers persist across regions.
pub struct Threads {
    n: usize,
    /// The helpers' pool and the regions they spin on (none: one worker).
    pool: Option<(rayon::ThreadPool, Arc<Regions>)>,
}

impl Threads {
    /// `n` workers on native threads; 0 means one per available core: the
    /// caller and `n - 1` pool threads spinning beside it
    /// ([`Threads::spinning_beside`]). A forward pass opens a few hundred
    /// regions, and waking sleeping rayon workers for each (rayon's own
    /// jobs, as this crate spread them before) cost Qwen2.5-0.5B's decode
    /// at 2 threads 18.2 → 15.8 ms a token (bench/NOTES "Issue 48 (fourth
    /// steps)").
    pub fn new(n: usize) -> Threads {
        let n = if n == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { n };
        if n == 1 {
            return Threads { n, pool: None };
        }
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(n - 1)
            .thread_name(|i| format!("tern-{i}"))
            .build()
            .expect("starting the thread pool");
        Threads::spinning_beside(pool)
    }

    /// The calling thread posts each region and works on it; `pool`'s
    /// threads help, spinning between regions (`regions` module) instead
    /// of waiting as rayon's jobs — whose idle workers fall asleep within
    /// microseconds (in wasm, yielding is a no-op and a wake-up through
    /// `memory.atomic.notify` outlasts a decode region). Workers: the
    /// pool's threads and the caller.
    pub fn spinning_beside(pool: rayon::ThreadPool) -> Threads {
        let n = pool.current_num_threads() + 1;
        Threads { n, pool: Some((pool, Arc::new(Regions::new(n)))) }
    }

    /// The flag to set (nonzero) when one of the pool's threads died
    /// without unwinding (a wasm trap on a pool worker). A caller waiting
    /// on that thread's part, and every later region, then panics — in
    /// wasm, a trap its JS can see — instead of spinning for ever. `None`
    /// with one worker (no pool).
    pub fn lost_flag(&self) -> Option<&AtomicU32> {
        self.pool.as_ref().map(|(_, r)| &r.lost)
    }
}

impl Parallel for Threads {
    fn n_workers(&self) -> usize {
        self.n
    }

    fn for_each_run(&self, data: &mut [f32], chunk_len: usize, f: &(dyn Fn(usize, &mut [f32]) + Sync)) {
        let chunk_len = chunk_len.max(1);
        let n_chunks = data.len().div_ceil(chunk_len);
        match &self.pool {
            Some((pool, regions)) if n_chunks > 1 => {
                // large regions: one chunk per task, taken as workers free
                // up; small ones: a fixed, contiguous run per worker
                let per = if data.len() >= DYNAMIC_MIN { 1 } else { n_chunks.div_ceil(self.n) };
                // (if another thread is posting a region: this one here)
                if !regions.run(pool, data, per, chunk_len, f) {
                    f(0, data)
                }
            }
            _ => f(0, data),
        }
    }
}

/// The README's examples, run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
