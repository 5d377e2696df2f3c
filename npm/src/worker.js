// Worker entry (Web Worker or Node worker_threads): owns one LocalEngine
// or LocalEncoder and answers the requests of WorkerEngine (client.js).

import { LocalEncoder } from './encoder.js';
import { LocalEngine } from './engine.js';
import { TernError } from './errors.js';
import { isNode } from './runtime.js';

const port = isNode ? (await import('node:worker_threads')).parentPort : self;
const post = (m, transfer) => port.postMessage(m, transfer);
const fail = (id, e) => post({ id, type: 'error', error: TernError.from(e).toJSON() });

let engine = null;
let encoder = null;
const cancelled = new Set();
const CALLS = new Set(['info', 'encode', 'decode', 'applyChatTemplate', 'memoryBytes', 'reset', 'setContextSize', 'loadAdapter']);

function disposeAll() {
  engine?.dispose();
  encoder?.dispose();
  engine = encoder = null;
}

function loadedEncoder() {
  if (!encoder) throw new TernError('invalid_argument', 'no encoder loaded');
  return encoder;
}

async function handle(m) {
  switch (m.op) {
    case 'load':
    case 'loadEncoder': {
      const abort = new AbortController();
      cancelled.delete(m.id);
      disposeAll();
      const load = m.op === 'load' ? LocalEngine.load : LocalEncoder.load;
      const e = await load(m.source, {
        ...m.options,
        signal: abort.signal,
        onProgress: (p) => {
          if (cancelled.has(m.id)) abort.abort();
          post({ id: m.id, type: 'progress', ...p });
        },
      });
      if (m.op === 'load') engine = e;
      else encoder = e;
      return post({ id: m.id, type: 'result', value: e.info() });
    }
    case 'embed': {
      const vectors = loadedEncoder().embed(m.texts);
      return post({ id: m.id, type: 'result', value: vectors }, vectors.map((v) => v.buffer));
    }
    case 'rerank': {
      const scores = loadedEncoder().rerank(m.query, m.documents);
      return post({ id: m.id, type: 'result', value: scores }, [scores.buffer]);
    }
    case 'call': {
      if (!engine) throw new TernError('invalid_argument', 'no model loaded');
      if (!CALLS.has(m.method)) throw new TernError('invalid_argument', `unknown method ${m.method}`);
      return post({ id: m.id, type: 'result', value: await engine[m.method](...m.args) });
    }
    case 'run': {
      if (!engine) throw new TernError('invalid_argument', 'no model loaded');
      const ids = engine.promptIds(m.kind, m.input, m.options);
      for await (const ev of engine.run(ids, m.options, () => cancelled.has(m.id))) {
        post({ id: m.id, type: 'event', event: ev });
      }
      cancelled.delete(m.id);
      return post({ id: m.id, type: 'result' });
    }
    case 'cancel':
      cancelled.add(m.target);
      return;
    case 'dispose':
      disposeAll();
      return post({ id: m.id, type: 'result' });
    default:
      throw new TernError('invalid_argument', `unknown request ${m.op}`);
  }
}

const onMessage = (m) => handle(m).catch((e) => fail(m.id, e));
if (isNode) port.on('message', onMessage);
else self.onmessage = (e) => onMessage(e.data);
post({ type: 'ready' });
