//! tern-llm-threads: a `Parallel` over a persistent rayon pool: workers are started once and
//! reused for every parallel region (no per-call thread spawn). A small
//! region (decode) gives each worker one contiguous run of output chunks,
//! the calling thread taking the first; a large one (prefill) hands its
//! chunks out one at a time, so a worker slowed by anything else on the
//! machine takes fewer of them.
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
    pool: Option<rayon::ThreadPool>,
    /// Set: regions are spread by spinning helpers (`spinning`).
    regions: Option<Arc<Regions>>,
}

impl Threads {
    /// `n` workers on native threads; 0 means one per available core.
    pub fn new(n: usize) -> Threads {
        let n = if n == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { n };
        let pool = (n > 1).then(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(|i| format!("tern-{i}"))
                .build()
                .expect("starting the thread pool")
        });
        Threads { n, pool, regions: None }
    }

    /// The calling thread posts each region and works on it; the pool's
    /// threads help, spinning between regions (`regions` module) instead
    /// of waiting as rayon's jobs. For wasm threads: there, rayon's idle
    /// workers fall asleep within microseconds (yielding is a no-op) and a
    /// wake-up through `memory.atomic.notify` outlasts a decode region —
    /// and handing each forward pass to a pool thread and back cost two.
    /// Workers: the pool's threads and the caller.
    pub fn spinning_beside(pool: rayon::ThreadPool) -> Threads {
        let n = pool.current_num_threads() + 1;
        Threads { n, pool: Some(pool), regions: Some(Arc::new(Regions::new(n))) }
    }

    /// For a pool [spinning beside](Threads::spinning_beside) its caller:
    /// the flag to set (nonzero) when one of its threads died without
    /// unwinding (a wasm trap on a pool worker). A caller waiting on that
    /// thread's part, and every later region, then panics — in wasm, a
    /// trap its JS can see — instead of spinning for ever. `None` for
    /// rayon's own pools (a panic there unwinds to the caller).
    pub fn lost_flag(&self) -> Option<&AtomicU32> {
        self.regions.as_deref().map(|r| &r.lost)
    }
}

impl Parallel for Threads {
    fn n_workers(&self) -> usize {
        self.n
    }

    /// On a worker of the pool, regions hand work to the other workers
    /// directly (no handoff to and from the calling thread); spinning
    /// beside the caller, the caller is that worker.
    fn install(&self, f: &mut (dyn FnMut() + Send)) {
        match &self.pool {
            Some(p) if self.regions.is_none() => p.install(f),
            _ => f(),
        }
    }

    fn for_each_run(&self, data: &mut [f32], chunk_len: usize, f: &(dyn Fn(usize, &mut [f32]) + Sync)) {
        let chunk_len = chunk_len.max(1);
        let n_chunks = data.len().div_ceil(chunk_len);
        match &self.pool {
            Some(pool) if n_chunks > 1 => {
                // large regions: one chunk per task, taken as workers free
                // up; small ones: a fixed, contiguous run per worker
                let per = if data.len() >= DYNAMIC_MIN { 1 } else { n_chunks.div_ceil(self.n) };
                match &self.regions {
                    // (if another thread is posting a region: this one here)
                    Some(r) => {
                        if !r.run(pool, data, per, chunk_len, f) {
                            f(0, data)
                        }
                    }
                    None => pool.in_place_scope(|s| spread(s, data, per, chunk_len, f)),
                }
            }
            _ => f(0, data),
        }
    }
}

/// Runs of `per` chunks to the other workers; the caller takes the first.
fn spread<'s>(
    s: &rayon::Scope<'s>,
    data: &'s mut [f32],
    per: usize,
    chunk_len: usize,
    f: &'s (dyn Fn(usize, &mut [f32]) + Sync),
) {
    let mut parts = data.chunks_mut(per * chunk_len).enumerate();
    let Some((_, mine)) = parts.next() else {
        return;
    };
    for (g, part) in parts {
        s.spawn(move |_| f(g * per, part));
    }
    f(0, mine);
}

/// The README's examples, run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
