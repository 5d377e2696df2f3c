// The engine on the thread that owns the wasm instance (a Worker, or the
// caller's thread with { worker: false }): load, tokenize, and run
// generations step by step, yielding to the event loop between tokens.

import { TernError } from './errors.js';
import { defaultThreads, isLost, loadWasm, yieldToEventLoop } from './runtime.js';
import { readSource } from './source.js';
import { guard, guardAsync } from './trap.js';

// The longest context a model takes (core's MAX_CTX).
const MAX_CTX = 2 ** 24;

/**
 * A context size as native checks it: an integer 1..=MAX_CTX, or 0 for the
 * model's default. (A number passed to wasm as is would wrap modulo 2^32:
 * 2**32 + 512 became 512 positions.)
 */
function checkContextSize(n) {
  if (!Number.isSafeInteger(n) || n < 0 || n > MAX_CTX)
    throw new TernError('invalid_argument', `context size ${n} (1..=${MAX_CTX}; 0: the model's default)`);
  return n;
}

/**
 * Options with a number that is not finite are refused, naming it (JSON
 * would carry NaN or Infinity as null, which reads as absent).
 */
function checkNumbers(opts) {
  for (const [k, v] of Object.entries(opts)) {
    if (typeof v === 'number' && !Number.isFinite(v))
      throw new TernError('invalid_argument', `option ${k}: expected a finite number, not ${v}`);
  }
}

export class LocalEngine {
  #wasm;
  #model;
  #running = null;

  constructor(wasm, model) {
    this.#wasm = wasm;
    this.#model = model;
  }

  /** Load a model: see `loadModel` in index.js for the options. */
  static async load(source, { onProgress, cache, signal, contextSize = 0, exact = false, threads, widen = true } = {}) {
    checkContextSize(contextSize);
    const wasm = await loadWasm({ threads: threads ?? (await defaultThreads()) });
    const t0 = performance.now();
    const call = (f) => guard(wasm, 'model', f);
    const loader = await guardAsync(wasm, 'model', () => readSource(wasm, source, { onProgress, cache, signal }));
    const fromCache = !!loader.fromCache;
    const model = call(() => loader.finish(widen));
    call(() => model.configure(contextSize, exact));
    // a URL being stored in the Cache API: done before the model is handed out
    const cacheError = (await loader.stored) ?? null;
    const e = new LocalEngine(wasm, model);
    e.loadMs = performance.now() - t0;
    e.fromCache = fromCache;
    e.cacheError = cacheError;
    return e;
  }

  /** Run `f` on this model's instance (see trap.js). */
  #call(f) {
    return guard(this.#wasm, 'model', f);
  }

  info() {
    return {
      ...JSON.parse(this.#call(() => this.#model.info())),
      threads: this.#call(() => this.#wasm.pool_threads()),
      threaded: this.#call(() => this.#wasm.threaded()),
      loadMs: this.loadMs,
      fromCache: this.fromCache,
      cacheError: this.cacheError,
    };
  }

  encode(text, { addSpecial = true } = {}) {
    return Array.from(this.#call(() => this.#model.encode(String(text), addSpecial)));
  }

  decode(ids) {
    return this.#call(() => this.#model.decode(Uint32Array.from(ids)));
  }

  applyChatTemplate(messages, { addGenerationPrompt = true, tools, toolChoice, chatTemplateKwargs, reasoningEffort } = {}) {
    const opts = JSON.stringify({ tools, toolChoice, chatTemplateKwargs, reasoningEffort });
    return this.#call(() => this.#model.render_chat(JSON.stringify(messages), addGenerationPrompt, opts));
  }

  /** Bytes of wasm memory this instance holds (model, cache, scratch). */
  memoryBytes() {
    return this.#call(() => this.#wasm.memory_bytes());
  }

  /**
   * The prompt ids for a `generate` prompt (text or ids) or `chat` messages.
   * Control-token strings typed into messages are text, unless
   * `contentSpecials`. A chat's `tools` are rendered by the template.
   */
  promptIds(kind, input, options = {}) {
    const { contentSpecials = false, tools, toolChoice, parallelToolCalls } = options;
    const { chatTemplateKwargs, reasoningEffort, reasoningFormat } = options;
    if (kind === 'chat') {
      if (!Array.isArray(input))
        throw new TernError('invalid_argument', 'messages must be an array of { role, content }');
      const opts = JSON.stringify({ tools, toolChoice, parallelToolCalls, chatTemplateKwargs, reasoningEffort, reasoningFormat });
      return Array.from(this.#call(() => this.#model.encode_chat(JSON.stringify(input), true, !!contentSpecials, opts)));
    }
    if (tools !== undefined || toolChoice !== undefined)
      throw new TernError('invalid_argument', 'tools are an option of chat, not of generate');
    if (kind === 'infill') {
      const { prefix, suffix } = input;
      if (typeof prefix !== 'string' || typeof suffix !== 'string')
        throw new TernError('invalid_argument', 'infill takes a prefix and a suffix, both strings');
      return Array.from(this.#call(() => this.#model.encode_infill(prefix, suffix)));
    }
    for (const k of ['chatTemplateKwargs', 'reasoningEffort', 'reasoningFormat'])
      if (options[k] !== undefined) throw new TernError('invalid_argument', `${k} is an option of chat, not of generate`);
    if (Array.isArray(input) || input instanceof Uint32Array) return Array.from(input);
    if (typeof input !== 'string')
      throw new TernError('invalid_argument', 'prompt must be a string or an array of token ids');
    return this.encode(input, { addSpecial: true });
  }

  /**
   * Generate after `ids`: yields `{ type: 'token', id, text }` events, then
   * `{ type: 'done', ... }`. `cancelled()` is polled between tokens.
   */
  async *run(ids, options = {}, cancelled = () => false) {
    if (this.#running) throw new TernError('invalid_argument', 'a generation is already running on this model');
    const { signal, onToken, contentSpecials, ...opts } = options;
    checkNumbers(opts);
    if (opts.seed === undefined && opts.temperature !== 0) opts.seed = Math.floor(Math.random() * 2 ** 52);
    const token = {};
    this.#running = token;
    try {
      this.#call(() => this.#model.begin(Uint32Array.from(ids), JSON.stringify(opts)));
      for (;;) {
        if (cancelled()) {
          const ev = this.#call(() => this.#model.cancel());
          if (ev) yield { ...JSON.parse(ev), seed: opts.seed ?? null, promptIds: ids };
          return;
        }
        const ev = this.#call(() => this.#model.step());
        if (ev === undefined) return;
        const e = JSON.parse(ev);
        if (e.type === 'done') {
          yield { ...e, seed: opts.seed ?? null, promptIds: ids };
          return;
        }
        yield e;
        await yieldToEventLoop();
      }
    } finally {
      if (this.#running === token) {
        this.#running = null;
        if (!isLost(this.#wasm)) this.#call(() => this.#model.cancel());
      }
    }
  }

  /** A KV cache of `n` positions (0: the default), emptied; the new info. */
  setContextSize(n) {
    if (this.#running) throw new TernError('invalid_argument', 'cannot resize the context during a generation');
    this.#call(() => this.#model.configure(checkContextSize(n), this.info().exact));
    return this.info();
  }

  /**
   * Load a LoRA adapter for this model: a GGUF LoRA file (URL, path, bytes,
   * Blob) or a PEFT directory (a map of its two files, or in Node a
   * directory path); its id. Generations whose options list no `adapters`
   * run it at `scale` (default 0: only when listed).
   */
  async loadAdapter(source, { scale = 0, name } = {}) {
    if (this.#running) throw new TernError('invalid_argument', 'cannot load an adapter during a generation');
    if (typeof scale !== 'number' || !Number.isFinite(scale))
      throw new TernError('invalid_argument', `adapter scale: expected a finite number, not ${scale}`);
    const label = name ?? (typeof source === 'string' ? source : 'adapter');
    const loader = await guardAsync(this.#wasm, 'model', () => readSource(this.#wasm, source, {}));
    return this.#call(() => loader.into_adapter(this.#model, String(label), scale));
  }

  /** Forget the cached tokens. */
  reset() {
    this.#call(() => this.#model.reset());
  }

  /** Free the model (on a lost instance there is nothing to free: it goes with the instance). */
  dispose() {
    if (this.#model && !isLost(this.#wasm)) this.#call(() => this.#model.free());
    this.#model = null;
  }
}
