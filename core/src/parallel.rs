//! How work is split across threads. Kernels compute ranges of output rows;
//! a `Parallel` runs a closure over disjoint chunks of an output buffer.
//! Core provides the serial runner; native provides a threaded one.

/// A runner of parallel regions (core's `Serial`, tern-llm-threads' pool).
pub trait Parallel: Sync {
    /// Workers available (used to size chunks).
    fn n_workers(&self) -> usize;

    /// Call `f(first, run)` for runs of whole `chunk_len`-sized chunks that
    /// together cover `data` once (`first`: the index of the run's first
    /// chunk; the last chunk may be shorter), in any order, possibly
    /// concurrently. How many adjacent chunks a run holds is the runner's
    /// choice: a worker's whole share, or one chunk at a time.
    fn for_each_run(&self, data: &mut [f32], chunk_len: usize, f: &(dyn Fn(usize, &mut [f32]) + Sync));

    /// Call `f(i, chunk)` for every `chunk_len`-sized chunk `i` of `data`
    /// (the last may be shorter), in any order, possibly concurrently.
    fn for_each_chunk(&self, data: &mut [f32], chunk_len: usize, f: &(dyn Fn(usize, &mut [f32]) + Sync)) {
        let chunk_len = chunk_len.max(1);
        self.for_each_run(data, chunk_len, &|first, run| {
            for (j, c) in run.chunks_mut(chunk_len).enumerate() {
                f(first + j, c);
            }
        });
    }

    /// Run `f`, which opens many parallel regions (a forward pass), in the
    /// place they are cheapest to open from (a threaded runner: one of its
    /// own workers).
    fn install(&self, f: &mut (dyn FnMut() + Send)) {
        f()
    }
}

/// Everything on the calling thread, as one run.
pub struct Serial;

impl Parallel for Serial {
    fn n_workers(&self) -> usize {
        1
    }
    fn for_each_run(&self, data: &mut [f32], _chunk_len: usize, f: &(dyn Fn(usize, &mut [f32]) + Sync)) {
        f(0, data);
    }
}
