// Worker entry (Web Worker or Node worker_threads): owns one LocalEngine
// and answers the requests of WorkerEngine (client.js).

import { LocalEngine } from './engine.js';
import { TernError } from './errors.js';
import { isNode } from './runtime.js';

const port = isNode ? (await import('node:worker_threads')).parentPort : self;
const post = (m) => port.postMessage(m);
const fail = (id, e) => post({ id, type: 'error', error: TernError.from(e).toJSON() });

let engine = null;
const cancelled = new Set();
const CALLS = new Set(['info', 'encode', 'decode', 'applyChatTemplate', 'memoryBytes', 'reset', 'setContextSize']);

async function handle(m) {
  switch (m.op) {
    case 'load': {
      const abort = new AbortController();
      cancelled.delete(m.id);
      engine?.dispose();
      engine = null;
      const e = await LocalEngine.load(m.source, {
        ...m.options,
        signal: abort.signal,
        onProgress: (p) => {
          if (cancelled.has(m.id)) abort.abort();
          post({ id: m.id, type: 'progress', ...p });
        },
      });
      engine = e;
      return post({ id: m.id, type: 'result', value: e.info() });
    }
    case 'call': {
      if (!engine) throw new TernError('invalid_argument', 'no model loaded');
      if (!CALLS.has(m.method)) throw new TernError('invalid_argument', `unknown method ${m.method}`);
      return post({ id: m.id, type: 'result', value: engine[m.method](...m.args) });
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
      engine?.dispose();
      engine = null;
      return post({ id: m.id, type: 'result' });
    default:
      throw new TernError('invalid_argument', `unknown request ${m.op}`);
  }
}

const onMessage = (m) => handle(m).catch((e) => fail(m.id, e));
if (isNode) port.on('message', onMessage);
else self.onmessage = (e) => onMessage(e.data);
post({ type: 'ready' });
