//! The threaded build's pool: rayon threads that run on workers the JS side
//! starts. `init_pool(n)` builds the pool, its spawn handler keeping each
//! thread's start in a queue; each worker, once it has instantiated this
//! module on the shared memory, calls `run_thread()`, which takes one and
//! runs it (for the life of the worker). The forward pass runs on the
//! calling thread, which posts its parallel regions to the pool's threads
//! spinning beside it (tern-llm-threads' `spinning_beside`).

use std::sync::{Mutex, OnceLock};

use tern_core::{backend::Parallel, backend::Serial};
use tern_threads::Threads;
use wasm_bindgen::prelude::*;

use crate::errors::js_error;

static STARTS: Mutex<Vec<rayon::ThreadBuilder>> = Mutex::new(Vec::new());
static POOL: OnceLock<Threads> = OnceLock::new();

/// Make `n` workers: the calling thread, which runs the forward passes,
/// and a pool of `n - 1` helper threads (once per instance). Returns how
/// many pool threads the JS side must start, each on a worker that calls
/// `run_thread`. 0 or 1: no pool.
#[wasm_bindgen]
pub fn init_pool(n: usize) -> Result<usize, JsValue> {
    if POOL.get().is_some() {
        return Err(js_error("invalid_argument", "the thread pool is already started"));
    }
    if n < 2 {
        let _ = POOL.set(Threads::new(1));
        return Ok(0);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n - 1)
        .spawn_handler(|t| {
            STARTS.lock().unwrap_or_else(|e| e.into_inner()).push(t);
            Ok(())
        })
        .build()
        .map_err(|e| js_error("error", &format!("thread pool: {e}")))?;
    let _ = POOL.set(Threads::spinning_beside(pool));
    Ok(n - 1)
}

/// Run one pool thread on the calling worker (returns when the pool ends).
#[wasm_bindgen]
pub fn run_thread() -> Result<(), JsValue> {
    let t = STARTS.lock().unwrap_or_else(|e| e.into_inner()).pop();
    let t = t.ok_or_else(|| js_error("error", "no pool thread is waiting to start"))?;
    t.run();
    Ok(())
}

/// Where, in the shared memory, the pool's lost flag is (a byte offset,
/// 4-aligned; 0: no pool). A pool worker whose thread traps stores 1 there
/// (`Atomics.store`), without calling into the instance again: the thread
/// waiting on its part then traps too, instead of spinning for ever.
#[wasm_bindgen]
pub fn pool_lost_flag() -> u32 {
    POOL.get().and_then(Threads::lost_flag).map_or(0, |f| f as *const _ as usize as u32)
}

/// The pool forward passes run on (serial until `init_pool`).
pub fn pool() -> &'static dyn Parallel {
    match POOL.get() {
        Some(t) => t,
        None => &Serial,
    }
}
