//! tern-threads: a `Parallel` over a persistent rayon pool: workers are started once and
//! reused for every parallel region (no per-call thread spawn). A small
//! region (decode) gives each worker one contiguous run of output chunks,
//! the calling thread taking the first; a large one (prefill) hands its
//! chunks out one at a time, so a worker slowed by anything else on the
//! machine takes fewer of them.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use tern_core::parallel::Parallel;

/// Output elements from which a region's chunks are handed out one by one
/// (prefill: 512 tokens × 896 rows is 458752; decode regions are rows only).
const DYNAMIC_MIN: usize = 1 << 16;

pub struct Threads {
    n: usize,
    pool: Option<rayon::ThreadPool>,
    /// Set: between the regions of a forward pass the other workers spin
    /// (`spinning`); the count of regions started so far.
    regions: Option<Arc<AtomicU64>>,
}

/// Loads of the region count a waiting worker makes before it gives up
/// and lets rayon put it to sleep (~1-2 ms: longer than the serial work
/// between two regions, shorter than a pause between requests).
const SPIN_ROUNDS: u32 = 1 << 20;

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

    /// Over a pool the caller built (wasm: threads started on workers by
    /// its spawn handler); `None` runs everything on the calling thread.
    pub fn from_pool(pool: Option<rayon::ThreadPool>) -> Threads {
        Threads { n: pool.as_ref().map_or(1, |p| p.current_num_threads()), pool, regions: None }
    }

    /// Keep the other workers awake between the regions of a forward pass:
    /// each waits for the next region in a job that spins on the region
    /// count. For wasm threads: there, rayon's idle workers fall asleep
    /// within microseconds (yielding is a no-op) and waking one through
    /// `memory.atomic.notify` takes longer than a decode region, so the
    /// calling worker ends up running every part itself.
    pub fn spinning(mut self) -> Threads {
        if self.pool.is_some() {
            self.regions = Some(Arc::new(AtomicU64::new(0)));
        }
        self
    }

    /// One spinning job per other worker, each until the next region
    /// starts (ending at once on the worker that posted it: it is the one
    /// that starts regions).
    fn keep_awake(&self) {
        if let (Some(pool), Some(regions)) = (&self.pool, &self.regions) {
            let seen = regions.load(Ordering::Acquire);
            let poster = rayon::current_thread_index();
            for _ in 1..self.n {
                let regions = regions.clone();
                pool.spawn(move || {
                    if poster.is_some() && rayon::current_thread_index() == poster {
                        return;
                    }
                    let mut rounds = 0;
                    while regions.load(Ordering::Acquire) == seen && rounds < SPIN_ROUNDS {
                        std::hint::spin_loop();
                        rounds += 1;
                    }
                });
            }
        }
    }

    /// A region starts: the spinning jobs end, their workers look for its parts.
    fn release(&self) {
        if let Some(regions) = &self.regions {
            regions.fetch_add(1, Ordering::AcqRel);
        }
    }
}

impl Parallel for Threads {
    fn n_workers(&self) -> usize {
        self.n
    }

    /// On a worker of the pool, regions hand work to the other workers
    /// directly (no handoff to and from the calling thread), and workers
    /// stay awake between regions that follow closely.
    fn install(&self, f: &mut (dyn FnMut() + Send)) {
        match &self.pool {
            Some(p) => p.install(|| {
                self.keep_awake();
                f();
                self.release();
            }),
            None => f(),
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
                if self.regions.is_some() && pool.current_thread_index().is_some() {
                    let counts = [AtomicUsize::new(0), AtomicUsize::new(0)];
                    rayon::scope(|s| spread(s, data, per, chunk_len, f, Some((self, &counts))));
                    self.keep_awake();
                } else {
                    pool.in_place_scope(|s| spread(s, data, per, chunk_len, f, None))
                }
            }
            _ => f(0, data),
        }
    }
}

/// Runs of `per` chunks to the other workers; the caller takes the first.
/// `spinning`: the pool and its two counts (parts started, parts done) —
/// the region is announced once its parts are posted (a worker that looked
/// before would find nothing and sleep), spinning jobs are queued behind
/// the parts (a worker done with its part waits in one for the next
/// region), and the caller, done with its own part, spins while every
/// other part is taken and running: waiting in rayon's scope would put it
/// to sleep, and its wake-up would outlast the part.
fn spread<'s>(
    s: &rayon::Scope<'s>,
    data: &'s mut [f32],
    per: usize,
    chunk_len: usize,
    f: &'s (dyn Fn(usize, &mut [f32]) + Sync),
    spinning: Option<(&Threads, &'s [AtomicUsize; 2])>,
) {
    let mut parts = data.chunks_mut(per * chunk_len).enumerate();
    let Some((_, mine)) = parts.next() else {
        return;
    };
    let mut posted = 0;
    for (g, part) in parts {
        let counts = spinning.map(|(_, c)| c);
        s.spawn(move |_| {
            if let Some([started, _]) = counts {
                started.fetch_add(1, Ordering::AcqRel);
            }
            f(g * per, part);
            if let Some([_, done]) = counts {
                done.fetch_add(1, Ordering::AcqRel);
            }
        });
        posted += 1;
    }
    if let Some((pool, _)) = spinning {
        pool.release();
        pool.keep_awake();
    }
    f(0, mine);
    if let Some((_, [started, done])) = spinning {
        // a part nobody has taken yet is left to the scope, which runs it here
        let mut rounds = 0;
        while started.load(Ordering::Acquire) == posted && done.load(Ordering::Acquire) < posted && rounds < SPIN_ROUNDS
        {
            std::hint::spin_loop();
            rounds += 1;
        }
    }
}
