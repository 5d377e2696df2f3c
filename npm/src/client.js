// The engine behind a Worker: requests out, progress/events/results back.

import { TernError } from './errors.js';
import { isNode } from './runtime.js';
import { isFileMap } from './source.js';

/** Whether this platform has Workers (Node's worker_threads, or Web Workers). */
export const canUseWorker = () => isNode || typeof Worker !== 'undefined';

/** A source the Worker can receive: URLs as strings, maps' too. */
function cloneable(source) {
  if (source instanceof URL) return String(source);
  if (isFileMap(source)) {
    const entries = source instanceof Map ? [...source] : Object.entries(source);
    return new Map(entries.map(([k, v]) => [k, v instanceof URL ? String(v) : v]));
  }
  return source;
}

/**
 * Start a Worker and load `source` in it with request `op` ('load' or
 * 'loadEncoder'); `signal` aborts the download. Resolves with the worker
 * and what the load answered; on failure the worker is gone.
 */
export async function startInWorker(op, source, options, { onProgress, signal }) {
  const w = await WorkerEngine.start();
  const [id, done] = w.request({ op, source: cloneable(source), options }, { onProgress });
  const onAbort = () => w.cancel(id);
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return [w, await done];
  } catch (e) {
    w.terminate();
    throw signal?.aborted ? new TernError('aborted', 'loading was aborted') : e;
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}

export class WorkerEngine {
  #worker;
  #next = 1;
  #pending = new Map();
  #off;
  #lost = null;

  static async start() {
    const url = new URL('./worker.js', import.meta.url);
    let w;
    if (isNode) {
      const { Worker } = await import('node:worker_threads');
      w = new Worker(url);
    } else {
      w = new Worker(url, { type: 'module' });
    }
    const e = new WorkerEngine(w);
    await e.#ready;
    // Node: the idle worker does not keep the process alive (requests ref it).
    if (isNode) w.unref();
    return e;
  }

  #ready;

  constructor(worker) {
    this.#worker = worker;
    let ready, failed;
    this.#ready = new Promise((res, rej) => ((ready = res), (failed = rej)));
    const onMessage = (m) => {
      if (m.type === 'ready') return ready();
      const p = this.#pending.get(m.id);
      if (!p) return;
      if (m.type === 'progress') p.onProgress?.({ loaded: m.loaded, total: m.total, file: m.file });
      else if (m.type === 'event') p.onEvent?.(m.event);
      else {
        this.#pending.delete(m.id);
        if (m.type === 'error') {
          const e = new TernError(m.error.code, m.error.message);
          p.reject(e);
          if (e.code === 'model_lost') this.#lose(e);
        } else p.resolve(m.value);
      }
    };
    const onError = (err) => {
      const e = new TernError('worker_failed', `the tern worker failed: ${err?.message ?? err}`);
      failed(e);
      for (const p of this.#pending.values()) p.reject(e);
      this.#pending.clear();
    };
    if (isNode) {
      worker.on('message', onMessage);
      worker.on('error', onError);
      this.#off = () => worker.terminate();
    } else {
      worker.onmessage = (e) => onMessage(e.data);
      worker.onerror = (e) => onError(e.message ? e : new Error('worker error'));
      this.#off = () => worker.terminate();
    }
  }

  /**
   * The worker's instance trapped (`e`, a model_lost error): the worker
   * goes, and with it the instance's memory; every request after is `e`.
   */
  #lose(e) {
    this.#lost = e;
    for (const p of this.#pending.values()) p.reject(e);
    this.#pending.clear();
    this.#off();
  }

  /** The model_lost error, once the worker's instance trapped. */
  get lost() {
    return this.#lost;
  }

  /** Send a request; resolves with its result. Returns [id, promise]. */
  request(msg, { onProgress, onEvent } = {}) {
    const id = this.#next++;
    if (this.#lost) return [id, Promise.reject(this.#lost)];
    const promise = new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, onProgress, onEvent });
    });
    if (isNode && this.#pending.size === 1) this.#worker.ref();
    promise
      .finally(() => {
        if (isNode && this.#pending.size === 0) this.#worker.unref();
      })
      .catch(() => {});
    this.#worker.postMessage({ ...msg, id });
    return [id, promise];
  }

  cancel(target) {
    if (!this.#lost) this.#worker.postMessage({ op: 'cancel', target });
  }

  terminate() {
    this.#off();
  }
}
