// One pool thread of the threaded build, run on a pool worker. If it traps
// (a wasm RuntimeError: its instance's state is no longer to be trusted),
// the pool's lost flag is set straight in the shared memory, so the thread
// waiting on this one's part traps too (and its caller sees model_lost)
// instead of spinning for ever.

/**
 * Run `glue`'s pool thread on this worker; on a throw, set the lost flag
 * in `memory` (a `WebAssembly.Memory` or its buffer) and rethrow.
 */
export function runHelper(glue, memory) {
  // read before running: after a trap nothing is asked of the instance
  const flag = glue.pool_lost_flag();
  try {
    glue.run_thread();
  } catch (e) {
    if (flag !== 0) {
      const words = new Int32Array(memory.buffer ?? memory);
      Atomics.store(words, flag >>> 2, 1);
      Atomics.notify(words, flag >>> 2);
    }
    throw e;
  }
}
