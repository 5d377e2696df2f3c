// tern-llm: run a local GGUF model in the browser or in Node.
//
//   import { loadModel } from 'tern-llm';
//   const model = await loadModel(url, { onProgress: (p) => ... });
//   for await (const ev of model.chat([{ role: 'user', content: 'Hi' }])) ...
//
// By default the model runs in a Worker (Web Worker or Node worker_threads)
// so the page or process stays responsive; { worker: false } runs it on the
// calling thread.

import { LocalEngine } from './engine.js';
import { TernError } from './errors.js';
import { canUseWorker, startInWorker } from './client.js';
import { resolveReference } from './hub.js';

export { TernError };
export { loadEncoder, TernEncoder } from './encoder.js';

/**
 * Load a model: a GGUF file from a URL, a path (Node), bytes or a Blob/File;
 * an HF directory as a map of file names to any of those (or, in Node, a
 * directory path); or a HuggingFace hub reference (`owner/repo:Q4_K_M`,
 * `owner/repo/file.gguf`, `owner/repo`), resolved with the hub's API
 * (`hubEndpoint`) to its download URLs.
 */
export async function loadModel(source, options = {}) {
  source = await resolveReference(source, options);
  const {
    worker = canUseWorker(),
    onProgress,
    signal,
    cache = false,
    contextSize = 0,
    exact = false,
    threads,
    widen = true,
  } = options;
  signal?.throwIfAborted();
  if (!worker) {
    const e = await LocalEngine.load(source, { onProgress, cache, signal, contextSize, exact, threads, widen });
    return new TernModel(new LocalBackend(e), e.info());
  }
  const [w, info] = await startInWorker('load', source, { cache, contextSize, exact, threads, widen }, { onProgress, signal });
  return new TernModel(new RemoteBackend(w), info);
}

export class TernModel {
  #b;

  constructor(backend, info) {
    this.#b = backend;
    /** What the model is: architecture, sizes, special tokens, template, load time. */
    this.info = info;
  }

  encode(text, options) {
    return this.#b.call('encode', text, options);
  }

  decode(ids) {
    return this.#b.call('decode', Array.from(ids));
  }

  applyChatTemplate(messages, options) {
    return this.#b.call('applyChatTemplate', messages, options);
  }

  /** Bytes of wasm memory in use (model, KV cache, scratch). */
  memoryBytes() {
    return this.#b.call('memoryBytes');
  }

  /** Resize the KV cache to `n` positions (emptying it). */
  async setContextSize(n) {
    this.info = await this.#b.call('setContextSize', n);
    return this.info;
  }

  /**
   * Load a LoRA adapter for this model — a GGUF LoRA file (URL, path, bytes,
   * Blob) or a PEFT directory (a map `{ 'adapter_config.json': …,
   * 'adapter_model.safetensors': … }`, or in Node its path) — checked
   * against it (every mismatch an error naming it); resolves to its id.
   * A generation runs the adapters its `adapters` option lists
   * (`[{ id, scale }]`), else each at its `scale` here (default 0).
   */
  loadAdapter(source, options = {}) {
    return this.#b.call('loadAdapter', source, options);
  }

  /** Forget the cached prefix (the next generation prefills everything). */
  reset() {
    return this.#b.call('reset');
  }

  /** Continue `prompt` (text, or token ids). */
  generate(prompt, options = {}) {
    return new Generation(this.#b, 'generate', prompt, options);
  }

  /** Reply to `messages` ({ role, content }[]) with the model's chat template. */
  chat(messages, options = {}) {
    return new Generation(this.#b, 'chat', messages, options);
  }

  /** Fill in the code between `prefix` and `suffix` (a code model's FIM tokens). */
  infill(prefix, suffix, options = {}) {
    return new Generation(this.#b, 'infill', { prefix, suffix }, options);
  }

  dispose() {
    return this.#b.dispose();
  }
}

/**
 * A running generation: an async iterable of `{ type: 'token', id, text }`
 * events ending with `{ type: 'done', ... }`; `result` resolves to that
 * last event; `text()` to the whole text. Cancel with `options.signal`.
 */
export class Generation {
  #queue = [];
  #wake = null;
  #ended = false;
  #error = null;

  constructor(backend, kind, input, options) {
    const { signal, ...opts } = options;
    this.result = new Promise((resolve, reject) => {
      if (signal?.aborted) {
        reject(new TernError('aborted', 'generation was aborted before it started'));
        return;
      }
      backend
        .run(kind, input, opts, signal, (ev) => {
          if (ev.type === 'done') resolve(ev);
          this.#push(ev);
        })
        .then(() => this.#end(null))
        .catch((e) => {
          reject(e);
          this.#end(e);
        });
    });
    this.result.catch(() => {});
  }

  #push(ev) {
    this.#queue.push(ev);
    this.#wake?.();
  }

  #end(err) {
    this.#ended = true;
    this.#error = err;
    this.#wake?.();
  }

  async *[Symbol.asyncIterator]() {
    for (;;) {
      if (this.#queue.length) {
        yield this.#queue.shift();
        continue;
      }
      if (this.#ended) {
        if (this.#error) throw this.#error;
        return;
      }
      await new Promise((r) => (this.#wake = r));
      this.#wake = null;
    }
  }

  async text() {
    return (await this.result).text;
  }
}

class LocalBackend {
  constructor(engine) {
    this.e = engine;
  }
  async call(method, ...args) {
    return this.e[method](...args);
  }
  async run(kind, input, opts, signal, onEvent) {
    const ids = this.e.promptIds(kind, input, opts);
    for await (const ev of this.e.run(ids, opts, () => !!signal?.aborted)) onEvent(ev);
  }
  async dispose() {
    this.e.dispose();
  }
}

class RemoteBackend {
  constructor(worker) {
    this.w = worker;
  }
  async call(method, ...args) {
    return this.w.request({ op: 'call', method, args })[1];
  }
  async run(kind, input, opts, signal, onEvent) {
    const [id, done] = this.w.request({ op: 'run', kind, input, options: opts }, { onEvent });
    const onAbort = () => this.w.cancel(id);
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      await done;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }
  async dispose() {
    // a lost worker is gone already, and the model with it
    if (!this.w.lost) await this.w.request({ op: 'dispose' })[1];
    this.w.terminate();
  }
}
