//! How work is split across threads. Kernels compute ranges of output rows;
//! a `Parallel` runs a closure over disjoint chunks of an output buffer.
//! Core provides the serial runner; native provides a threaded one.

pub trait Parallel: Sync {
    /// Workers available (used to size chunks).
    fn n_workers(&self) -> usize;

    /// Call `f(i, chunk)` for every `chunk_len`-sized chunk `i` of `data`
    /// (the last may be shorter), in any order, possibly concurrently.
    fn for_each_chunk(&self, data: &mut [f32], chunk_len: usize, f: &(dyn Fn(usize, &mut [f32]) + Sync));

    /// Run `f`, which opens many parallel regions (a forward pass), in the
    /// place they are cheapest to open from (a threaded runner: one of its
    /// own workers).
    fn install(&self, f: &mut (dyn FnMut() + Send)) {
        f()
    }
}

/// Everything on the calling thread.
pub struct Serial;

impl Parallel for Serial {
    fn n_workers(&self) -> usize {
        1
    }
    fn for_each_chunk(&self, data: &mut [f32], chunk_len: usize, f: &(dyn Fn(usize, &mut [f32]) + Sync)) {
        for (i, c) in data.chunks_mut(chunk_len.max(1)).enumerate() {
            f(i, c);
        }
    }
}
