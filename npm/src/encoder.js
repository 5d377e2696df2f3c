// Encoders: embedding models and cross-encoders (BERT: a sentence-
// transformers directory as a file map, or a `bert` GGUF; a decoder pooled
// as its files or `pooling` say). They run on the calling thread, in the
// same wasm build as generation, and give the native build's vectors bit
// for bit.

import { call } from './engine.js';
import { TernError } from './errors.js';
import { resolveReference } from './hub.js';
import { defaultThreads, loadWasm } from './runtime.js';
import { readSource } from './source.js';

const POOLINGS = ['mean', 'cls', 'last'];

/**
 * Load an encoder: a GGUF (URL, path, bytes, Blob) or a
 * sentence-transformers directory as a map of file names to sources (in
 * Node, a directory path too). `pooling` ('mean', 'cls' or 'last')
 * overrides the model's own: a decoder embedder whose files name none.
 */
export async function loadEncoder(source, options = {}) {
  source = await resolveReference(source, options);
  const { onProgress, cache = false, signal, threads, pooling } = options;
  if (pooling !== undefined && !POOLINGS.includes(pooling))
    throw new TernError('invalid_argument', `pooling must be one of ${POOLINGS.join(', ')}`);
  signal?.throwIfAborted();
  const wasm = await loadWasm({ threads: threads ?? (await defaultThreads()) });
  const loader = await readSource(wasm, source, { onProgress, cache, signal });
  return new TernEncoder(call(() => loader.finish_encoder(pooling)));
}

const strings = (what, list) => {
  if (!Array.isArray(list) || list.some((t) => typeof t !== 'string'))
    throw new TernError('invalid_argument', `${what} must be an array of strings`);
  return list;
};

export class TernEncoder {
  #e;

  constructor(e) {
    this.#e = e;
    /** Width of the vectors. */
    this.dim = e.dim();
    /** Tokens an input keeps (longer ones are truncated). */
    this.maxLength = e.max_len();
    /** Whether it scores pairs (a cross-encoder) rather than embeds. */
    this.reranks = e.reranks();
  }

  /** One Float32Array per text. */
  async embed(texts) {
    strings('texts', texts);
    const flat = call(() => this.#e.embed(texts));
    return texts.map((_, i) => flat.slice(i * this.dim, (i + 1) * this.dim));
  }

  /** The documents best first: `{ index, relevanceScore }` (the model's logit), the best `topN` if given. */
  async rerank(query, documents, { topN } = {}) {
    if (typeof query !== 'string') throw new TernError('invalid_argument', 'query must be a string');
    strings('documents', documents);
    if (topN !== undefined && !(Number.isInteger(topN) && topN >= 1))
      throw new TernError('invalid_argument', 'topN must be a positive integer');
    const scores = call(() => this.#e.rerank(query, documents));
    const ranked = Array.from(scores, (relevanceScore, index) => ({ index, relevanceScore }));
    ranked.sort((a, b) => b.relevanceScore - a.relevanceScore);
    return ranked.slice(0, topN ?? ranked.length);
  }

  dispose() {
    this.#e?.free();
    this.#e = null;
  }
}
