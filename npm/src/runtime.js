// Where we run (Node, a browser window or worker), and the wasm module,
// instantiated once per thread: the threaded build (wasm threads on a pool
// of workers) where shared memory may be used — Node, and cross-origin
// isolated pages — and more than one thread is asked for; the
// single-thread build otherwise.

export const isNode = typeof process !== 'undefined' && !!process.versions?.node;
const isWindow = typeof window !== 'undefined' && typeof document !== 'undefined';

/** Whether this thread may run the threaded build (it blocks on atomics). */
export function canThread() {
  return (isNode || globalThis.crossOriginIsolated === true) && !isWindow;
}

/** Threads by default: the machine's cores. */
export async function defaultThreads() {
  if (isNode) return (await import('node:os')).availableParallelism();
  return globalThis.navigator?.hardwareConcurrency || 1;
}

let ready;

/**
 * The wasm module's exports, instantiated on first use with `threads`
 * threads (later calls get the same instance, whatever they ask).
 */
export function loadWasm({ threads = 1 } = {}) {
  ready ??= instantiate(threads);
  return ready;
}

async function bytesOf(url) {
  if (isNode) return (await import('node:fs/promises')).readFile(url);
  return fetch(url);
}

async function instantiate(threads) {
  const threaded = threads > 1 && canThread();
  const dir = threaded ? '../dist/threads/' : '../dist/';
  const glue = threaded ? await import('../dist/threads/tern_wasm.js') : await import('../dist/tern_wasm.js');
  const url = new URL(`${dir}tern_wasm_bg.wasm`, import.meta.url);
  const src = await bytesOf(url);
  const module = isNode ? await WebAssembly.compile(src) : await WebAssembly.compileStreaming(src);
  const exports = await glue.default({ module_or_path: module });
  if (threaded) {
    // the calling thread is one of the `threads` workers; the pool's are the rest
    const helpers = glue.init_pool(threads);
    await startThreads(helpers, module, exports.memory);
  }
  return glue;
}

/** Start `n` workers, each running one pool thread on the shared memory. */
async function startThreads(n, module, memory) {
  const url = new URL('./thread.js', import.meta.url);
  const started = [];
  for (let i = 0; i < n; i++) {
    started.push(
      new Promise(async (resolve, reject) => {
        if (isNode) {
          const { Worker } = await import('node:worker_threads');
          const w = new Worker(url);
          w.unref();
          w.once('message', resolve);
          w.once('error', reject);
          w.postMessage({ module, memory });
        } else {
          const w = new Worker(url, { type: 'module' });
          w.onmessage = resolve;
          w.onerror = (e) => reject(new Error(`pool worker: ${e.message}`));
          w.postMessage({ module, memory });
        }
      }),
    );
  }
  await Promise.all(started);
}

/** Give the event loop a turn (messages such as a cancel can arrive). */
export function yieldToEventLoop() {
  if (isNode) return new Promise((r) => setImmediate(r));
  return new Promise((r) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => {
      ch.port1.close();
      r();
    };
    ch.port2.postMessage(null);
  });
}
