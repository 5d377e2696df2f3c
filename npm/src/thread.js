// A pool worker of the threaded build: instantiate the module on the shared
// memory it is sent, say so, then run one pool thread for good (helper.js).

import { runHelper } from './helper.js';

const isNode = typeof process !== 'undefined' && !!process.versions?.node;
const port = isNode ? (await import('node:worker_threads')).parentPort : self;
const { module, memory } = await new Promise((resolve) => {
  if (isNode) port.once('message', resolve);
  else self.onmessage = (e) => resolve(e.data);
});
const glue = await import('../dist/threads/tern_wasm.js');
glue.initSync({ module, memory });
port.postMessage('started');
runHelper(glue, memory);
