//! A `Parallel` over a persistent rayon pool: workers are started once and
//! reused for every parallel region (no per-call thread spawn); the output
//! chunks are handed out by work stealing.

use rayon::prelude::*;
use tern_core::parallel::Parallel;

pub struct Threads {
    n: usize,
    pool: Option<rayon::ThreadPool>,
}

impl Threads {
    /// `n` workers; 0 means one per available core.
    pub fn new(n: usize) -> Threads {
        let n = if n == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { n };
        let pool = (n > 1).then(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(n)
                .thread_name(|i| format!("tern-{i}"))
                .build()
                .expect("starting the thread pool")
        });
        Threads { n, pool }
    }
}

impl Parallel for Threads {
    fn n_workers(&self) -> usize {
        self.n
    }

    fn for_each_chunk(&self, data: &mut [f32], chunk_len: usize, f: &(dyn Fn(usize, &mut [f32]) + Sync)) {
        let chunk_len = chunk_len.max(1);
        match &self.pool {
            Some(pool) if data.len() > chunk_len => {
                pool.install(|| data.par_chunks_mut(chunk_len).enumerate().for_each(|(i, c)| f(i, c)))
            }
            _ => data.chunks_mut(chunk_len).enumerate().for_each(|(i, c)| f(i, c)),
        }
    }
}
