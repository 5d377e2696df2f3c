//! A `Parallel` over OS threads: chunks are split into contiguous groups,
//! one per worker; the calling thread takes the first group.
//! (Scoped threads per call; a persistent pool is the next step.)

use tern_core::parallel::Parallel;

pub struct Threads {
    n: usize,
}

impl Threads {
    /// `n` workers; 0 means one per available core.
    pub fn new(n: usize) -> Threads {
        let n = if n == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { n };
        Threads { n }
    }
}

impl Parallel for Threads {
    fn n_workers(&self) -> usize {
        self.n
    }

    fn for_each_chunk(&self, data: &mut [f32], chunk_len: usize, f: &(dyn Fn(usize, &mut [f32]) + Sync)) {
        let chunk_len = chunk_len.max(1);
        let n_chunks = data.len().div_ceil(chunk_len);
        let per_worker = n_chunks.div_ceil(self.n).max(1);
        if self.n == 1 || n_chunks <= 1 {
            for (i, c) in data.chunks_mut(chunk_len).enumerate() {
                f(i, c);
            }
            return;
        }
        std::thread::scope(|s| {
            let mut groups = data.chunks_mut(per_worker * chunk_len).enumerate();
            let own = groups.next();
            for (g, group) in groups {
                s.spawn(move || {
                    for (i, c) in group.chunks_mut(chunk_len).enumerate() {
                        f(g * per_worker + i, c);
                    }
                });
            }
            if let Some((_, group)) = own {
                for (i, c) in group.chunks_mut(chunk_len).enumerate() {
                    f(i, c);
                }
            }
        });
    }
}
