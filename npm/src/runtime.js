// Where we run: Node or a browser (window or worker), and the wasm module,
// instantiated once per thread.

import init, * as wasm from '../dist/tern_wasm.js';

export const isNode = typeof process !== 'undefined' && !!process.versions?.node;

let ready;

/** The wasm module's exports, instantiated on first use. */
export function loadWasm() {
  ready ??= (async () => {
    const url = new URL('../dist/tern_wasm_bg.wasm', import.meta.url);
    if (isNode) {
      const { readFile } = await import('node:fs/promises');
      await init({ module_or_path: await readFile(url) });
    } else {
      await init({ module_or_path: url });
    }
    return wasm;
  })();
  return ready;
}

/** Bytes of wasm linear memory in use by this thread's instance. */
export function wasmMemoryBytes() {
  return wasm.memory_bytes();
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
