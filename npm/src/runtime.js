// Where we run (Node, a browser window or worker), and the wasm module,
// instantiated once per thread: the threaded build (wasm threads on a pool
// of workers) where shared memory may be used — Node, and cross-origin
// isolated pages — and more than one thread is asked for; the
// single-thread build otherwise. An instance that trapped is dropped
// (`dropWasm`): the next load instantiates the module afresh.

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
// the resolved instance `ready` holds, and how many this thread has made
let current = null;
let made = 0;
// instances that trapped: their memory is no longer to be trusted
const lost = new WeakSet();
// each threaded instance's pool workers
const pools = new WeakMap();
// the compiled module of each build, compiled once
const compiled = new Map();

/**
 * The wasm module's exports, instantiated on first use with `threads`
 * threads (later calls get the same instance, whatever they ask, until it
 * is dropped).
 */
export function loadWasm({ threads = 1 } = {}) {
  ready ??= instantiate(threads, made++).then(
    (glue) => (current = glue),
    (e) => {
      ready = undefined;
      throw e;
    },
  );
  return ready;
}

/** Whether `glue`'s instance trapped and was dropped. */
export function isLost(glue) {
  return lost.has(glue);
}

/**
 * Drop `glue`'s instance after a trap: whatever uses it is lost, its pool
 * workers stop, and the next `loadWasm` instantiates the module afresh.
 * (Its memory is freed when nothing refers to the glue any more; a worker
 * that held it is terminated instead.)
 */
export function dropWasm(glue) {
  lost.add(glue);
  if (current === glue) {
    current = null;
    ready = undefined;
  }
  for (const w of pools.get(glue) ?? []) w.terminate();
  pools.delete(glue);
}

async function bytesOf(url) {
  if (isNode) return (await import('node:fs/promises')).readFile(url);
  return fetch(url);
}

function compile(dir) {
  if (!compiled.has(dir)) {
    const url = new URL(`${dir}tern_wasm_bg.wasm`, import.meta.url);
    const module = bytesOf(url).then((src) => (isNode ? WebAssembly.compile(src) : WebAssembly.compileStreaming(src)));
    module.catch(() => compiled.delete(dir));
    compiled.set(dir, module);
  }
  return compiled.get(dir);
}

/**
 * The glue module for the `n`th instance on this thread: the first is the
 * plain import (what bundlers follow); a later one, after a trap, is a
 * fresh copy of the glue (its own module record, so its own instance).
 */
async function importGlue(threaded, n) {
  if (n === 0) return threaded ? import('../dist/threads/tern_wasm.js') : import('../dist/tern_wasm.js');
  const url = new URL(threaded ? '../dist/threads/tern_wasm.js' : '../dist/tern_wasm.js', import.meta.url);
  return import(`${url.href}?instance=${n}`);
}

async function instantiate(threads, n) {
  const threaded = threads > 1 && canThread();
  const module = await compile(threaded ? '../dist/threads/' : '../dist/');
  const glue = await importGlue(threaded, n);
  const exports = await glue.default({ module_or_path: module });
  if (threaded) {
    // the calling thread is one of the `threads` workers; the pool's are the rest
    const helpers = glue.init_pool(threads);
    pools.set(glue, await startThreads(helpers, module, exports.memory));
  }
  return glue;
}

/** Start `n` workers, each running one pool thread on the shared memory; the workers. */
async function startThreads(n, module, memory) {
  const url = new URL('./thread.js', import.meta.url);
  const started = [];
  const workers = [];
  for (let i = 0; i < n; i++) {
    started.push(
      new Promise(async (resolve, reject) => {
        if (isNode) {
          const { Worker } = await import('node:worker_threads');
          const w = new Worker(url);
          workers.push(w);
          w.unref();
          w.once('message', resolve);
          w.once('error', reject);
          w.postMessage({ module, memory });
        } else {
          const w = new Worker(url, { type: 'module' });
          workers.push(w);
          w.onmessage = resolve;
          w.onerror = (e) => reject(new Error(`pool worker: ${e.message}`));
          w.postMessage({ module, memory });
        }
      }),
    );
  }
  await Promise.all(started);
  return workers;
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
