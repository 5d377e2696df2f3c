// A model source — URL, file path (Node), bytes, or Blob/File — fed in
// chunks into the wasm ModelLoader, with progress and optional Cache API
// storage for URLs. An HF model directory is a map of file names to such
// sources (or, in Node, a directory path), gathered in a DirLoader.

import { TernError } from './errors.js';
import { isNode } from './runtime.js';

const CACHE_NAME = 'tern-llm-models';

/** Whether `source` is a map of file names to sources (an HF directory). */
export function isFileMap(source) {
  if (source instanceof Map) return true;
  return source !== null && typeof source === 'object' && Object.getPrototypeOf(source) === Object.prototype;
}

/**
 * Feed `source` into a new `wasm.ModelLoader` (or, for a file map, a
 * `wasm.DirLoader`); returns the loader, full.
 */
export async function readSource(wasm, source, opts = {}) {
  if (isFileMap(source)) return readFiles(wasm, source, opts);
  return readOne(wasm, source, opts);
}

/** Every file of a map, one after another, into a DirLoader. */
async function readFiles(wasm, files, { onProgress, cache = false, signal } = {}) {
  const entries = files instanceof Map ? [...files] : Object.entries(files);
  if (entries.length === 0) throw new TernError('invalid_argument', 'the model file map is empty');
  const sized = entries.map(([, src]) => byteSize(src));
  const total = sized.every((n) => n !== undefined) ? sized.reduce((a, b) => a + b, 0) : undefined;
  const dir = new wasm.DirLoader();
  let done = 0;
  let fromCache = true;
  const stored = [];
  for (const [name, src] of entries) {
    if (isFileMap(src)) throw new TernError('invalid_argument', `${name}: a file map inside a file map`);
    let last = 0;
    const onFile = ({ loaded }) => {
      last = loaded;
      onProgress?.({ loaded: done + loaded, total, file: name });
    };
    const loader = await readOne(wasm, src, { onProgress: onFile, cache, signal });
    done += last;
    fromCache &&= !!loader.fromCache;
    stored.push(loader.stored);
    try {
      dir.add(String(name), loader);
    } catch (e) {
      throw TernError.from(e);
    }
  }
  dir.fromCache = fromCache;
  dir.stored = Promise.all(stored).then((why) => why.find((w) => w) ?? null);
  return dir;
}

function byteSize(src) {
  if (src instanceof ArrayBuffer || ArrayBuffer.isView(src)) return src.byteLength;
  if (typeof Blob !== 'undefined' && src instanceof Blob) return src.size;
  return undefined;
}

async function readOne(wasm, source, { onProgress, cache = false, signal } = {}) {
  const progress = (loaded, total) => onProgress?.({ loaded, total });
  if (source instanceof ArrayBuffer) source = new Uint8Array(source);
  else if (ArrayBuffer.isView(source) && !(source instanceof Uint8Array)) {
    source = new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  }
  if (source instanceof Uint8Array) {
    const loader = newLoader(wasm, source.byteLength);
    const step = 1 << 24;
    for (let i = 0; i < source.byteLength; i += step) {
      loader.push(source.subarray(i, i + step));
      progress(Math.min(i + step, source.byteLength), source.byteLength);
    }
    if (source.byteLength === 0) progress(0, 0);
    return loader;
  }
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    return fromStream(wasm, source.stream(), source.size, progress, signal);
  }
  if (source instanceof URL || typeof source === 'string') {
    const s = String(source);
    if (isNode && !/^(https?|blob|data):/i.test(s)) {
      const dir = await directoryFiles(s);
      if (dir) return readFiles(wasm, dir, { onProgress, cache, signal });
      return fromPath(wasm, s, progress, signal);
    }
    return fromUrl(wasm, s, progress, cache, signal);
  }
  throw new TernError(
    'invalid_argument',
    'model source must be a URL, a path (Node), a Uint8Array/ArrayBuffer or a Blob/File',
  );
}

/** Node: a directory path as a map of its files' paths (sentence-transformers' module folders too); else null. */
async function directoryFiles(path) {
  const { stat, readdir } = await import('node:fs/promises');
  const { join } = await import('node:path');
  const { fileURLToPath } = await import('node:url');
  const p = path.startsWith('file:') ? fileURLToPath(path) : path;
  const st = await stat(p).catch(() => null);
  if (!st?.isDirectory()) return null;
  const files = new Map();
  for (const e of await readdir(p, { withFileTypes: true })) {
    if (e.isFile() && /\.(json|safetensors|jinja)$/.test(e.name)) files.set(e.name, join(p, e.name));
    // sentence-transformers' module folders (1_Pooling/config.json): one level, JSON only
    if (e.isDirectory() && /^\d+_\w+$/.test(e.name)) {
      for (const f of await readdir(join(p, e.name), { withFileTypes: true })) {
        if (f.isFile() && f.name.endsWith('.json')) files.set(`${e.name}/${f.name}`, join(p, e.name, f.name));
      }
    }
  }
  return files;
}

function newLoader(wasm, total) {
  try {
    return new wasm.ModelLoader(total);
  } catch (e) {
    throw TernError.from(e);
  }
}

async function fromPath(wasm, path, progress, signal) {
  const { open } = await import('node:fs/promises');
  const { fileURLToPath } = await import('node:url');
  const p = path.startsWith('file:') ? fileURLToPath(path) : path;
  let fh;
  try {
    fh = await open(p, 'r');
  } catch (e) {
    throw new TernError('fetch_failed', `cannot open model file ${p}: ${e.message}`);
  }
  try {
    const { size } = await fh.stat();
    const loader = newLoader(wasm, size);
    const buf = new Uint8Array(1 << 24);
    let done = 0;
    while (done < size) {
      signal?.throwIfAborted();
      const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, size - done), done);
      if (bytesRead === 0)
        throw new TernError('bad_file', `${p}: file shrank while reading (${done} of ${size} bytes)`);
      loader.push(buf.subarray(0, bytesRead));
      done += bytesRead;
      progress(done, size);
    }
    return loader;
  } finally {
    await fh.close();
  }
}

async function fromUrl(wasm, url, progress, cache, signal) {
  const store = cache && typeof caches !== 'undefined' ? await caches.open(CACHE_NAME) : null;
  let res = store ? await store.match(url) : undefined;
  const cached = !!res;
  if (!res) {
    try {
      res = await fetch(url, { signal });
    } catch (e) {
      if (e?.name === 'AbortError') throw TernError.from(e);
      throw new TernError('fetch_failed', `cannot fetch ${url}: ${e.message}`);
    }
    if (!res.ok) throw new TernError('fetch_failed', `cannot fetch ${url}: HTTP ${res.status} ${res.statusText}`);
  }
  let stored;
  if (store && !cached) {
    // Store a copy as it streams by; `loader.stored` settles when it is
    // written, to null or why it was not (not fatal: the model still loads).
    stored = store.put(url, res.clone()).then(
      () => null,
      (e) => {
        const why = `${url}: ${e?.name ?? 'Error'}: ${e?.message ?? e}`;
        console.warn(`tern-llm: not kept in the browser cache: ${why}`);
        return why;
      },
    );
  }
  const len = Number(res.headers.get('content-length'));
  const encoded = res.headers.get('content-encoding');
  const total = Number.isFinite(len) && len > 0 && !encoded ? len : undefined;
  const loader = await fromStream(wasm, res.body, total, progress, signal);
  loader.fromCache = cached;
  loader.stored = stored;
  return loader;
}

/** A byte stream into a loader; with no known total, gathered first. */
async function fromStream(wasm, stream, total, progress, signal) {
  const reader = stream.getReader();
  const abort = () => reader.cancel().catch(() => {});
  signal?.addEventListener('abort', abort, { once: true });
  try {
    if (total === undefined) {
      const parts = [];
      let n = 0;
      for (;;) {
        const { done, value } = await reader.read();
        signal?.throwIfAborted();
        if (done) break;
        parts.push(value);
        n += value.byteLength;
        progress(n, undefined);
      }
      const loader = newLoader(wasm, n);
      for (const p of parts) loader.push(p);
      return loader;
    }
    const loader = newLoader(wasm, total);
    let n = 0;
    for (;;) {
      const { done, value } = await reader.read();
      signal?.throwIfAborted();
      if (done) break;
      try {
        loader.push(value);
      } catch (e) {
        throw TernError.from(e);
      }
      n += value.byteLength;
      progress(n, total);
    }
    return loader;
  } finally {
    signal?.removeEventListener('abort', abort);
  }
}
