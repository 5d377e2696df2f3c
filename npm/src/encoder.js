// Encoders: embedding models and cross-encoders (BERT: a sentence-
// transformers directory as a file map, or a `bert` GGUF; a decoder pooled
// as its files or `pooling` say). Like generation, they run in a Worker by
// default ({ worker: false }: on the calling thread), in the same wasm
// build, and give the native build's vectors bit for bit.

import { canUseWorker, startInWorker } from './client.js';
import { TernError } from './errors.js';
import { resolveReference } from './hub.js';
import { defaultThreads, isLost, loadWasm } from './runtime.js';
import { readSource } from './source.js';
import { guard, guardAsync } from './trap.js';

const POOLINGS = ['mean', 'cls', 'last'];

/**
 * Load an encoder: a GGUF (URL, path, bytes, Blob) or a
 * sentence-transformers directory as a map of file names to sources (in
 * Node, a directory path too). `pooling` ('mean', 'cls' or 'last')
 * overrides the model's own: a decoder embedder whose files name none.
 */
export async function loadEncoder(source, options = {}) {
  source = await resolveReference(source, options);
  const { worker = canUseWorker(), onProgress, cache = false, signal, threads, pooling } = options;
  if (pooling !== undefined && !POOLINGS.includes(pooling))
    throw new TernError('invalid_argument', `pooling must be one of ${POOLINGS.join(', ')}`);
  signal?.throwIfAborted();
  if (!worker) {
    const e = await LocalEncoder.load(source, { onProgress, cache, signal, threads, pooling });
    return new TernEncoder(e, e.info());
  }
  const [w, info] = await startInWorker('loadEncoder', source, { cache, threads, pooling }, { onProgress, signal });
  return new TernEncoder(new RemoteEncoder(w), info);
}

/** The wasm encoder on the thread that owns the instance. */
export class LocalEncoder {
  #wasm;
  #e;

  constructor(wasm, e) {
    this.#wasm = wasm;
    this.#e = e;
  }

  static async load(source, { onProgress, cache, signal, threads, pooling }) {
    const wasm = await loadWasm({ threads: threads ?? (await defaultThreads()) });
    const loader = await guardAsync(wasm, 'encoder', () => readSource(wasm, source, { onProgress, cache, signal }));
    return new LocalEncoder(wasm, guard(wasm, 'encoder', () => loader.finish_encoder(pooling)));
  }

  /** Run `f` on this encoder's instance (see trap.js). */
  #call(f) {
    return guard(this.#wasm, 'encoder', f);
  }

  info() {
    return this.#call(() => ({ dim: this.#e.dim(), maxLength: this.#e.max_len(), reranks: this.#e.reranks() }));
  }

  /** One Float32Array per text. */
  embed(texts) {
    const flat = this.#call(() => this.#e.embed(texts));
    const dim = this.#call(() => this.#e.dim());
    return texts.map((_, i) => flat.slice(i * dim, (i + 1) * dim));
  }

  /** One score per document, in their order. */
  rerank(query, documents) {
    return this.#call(() => this.#e.rerank(query, documents));
  }

  /** Free the encoder (on a lost instance it goes with the instance). */
  dispose() {
    if (this.#e && !isLost(this.#wasm)) this.#call(() => this.#e.free());
    this.#e = null;
  }
}

class RemoteEncoder {
  constructor(worker) {
    this.w = worker;
  }
  embed(texts) {
    return this.w.request({ op: 'embed', texts })[1];
  }
  rerank(query, documents) {
    return this.w.request({ op: 'rerank', query, documents })[1];
  }
  dispose() {
    if (this.w.lost) return this.w.terminate();
    this.w.request({ op: 'dispose' })[1].finally(() => this.w.terminate());
  }
}

const strings = (what, list) => {
  if (!Array.isArray(list) || list.some((t) => typeof t !== 'string'))
    throw new TernError('invalid_argument', `${what} must be an array of strings`);
  return list;
};

export class TernEncoder {
  #b;

  constructor(backend, info) {
    this.#b = backend;
    /** Width of the vectors. */
    this.dim = info.dim;
    /** Tokens an input keeps (longer ones are truncated). */
    this.maxLength = info.maxLength;
    /** Whether it scores pairs (a cross-encoder) rather than embeds. */
    this.reranks = info.reranks;
  }

  /** One Float32Array per text. */
  async embed(texts) {
    return this.#backend().embed(strings('texts', texts));
  }

  /** The documents best first: `{ index, relevanceScore }` (the model's logit), the best `topN` if given. */
  async rerank(query, documents, { topN } = {}) {
    if (typeof query !== 'string') throw new TernError('invalid_argument', 'query must be a string');
    strings('documents', documents);
    if (topN !== undefined && !(Number.isInteger(topN) && topN >= 1))
      throw new TernError('invalid_argument', 'topN must be a positive integer');
    const scores = await this.#backend().rerank(query, documents);
    const ranked = Array.from(scores, (relevanceScore, index) => ({ index, relevanceScore }));
    ranked.sort((a, b) => b.relevanceScore - a.relevanceScore);
    return ranked.slice(0, topN ?? ranked.length);
  }

  #backend() {
    if (!this.#b) throw new TernError('invalid_argument', 'the encoder was disposed');
    return this.#b;
  }

  dispose() {
    this.#b?.dispose();
    this.#b = null;
  }
}
