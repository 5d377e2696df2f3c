// Hub references in loadModel, against a stand-in hub on 127.0.0.1: a
// quantization's GGUF through a redirect, an HF directory repository, and
// the errors (unknown repository, missing quantization); the parser.

import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { loadModel } from '../src/index.js';
import { parseReference } from '../src/hub.js';
import { SMOLLM2, root } from './helpers.js';

const DIR = join(root, 'target/test-models/smollm2-hf-f32');
let server;
let endpoint;
const routes = new Map();
const seen = [];

before(async () => {
  const gguf = await readFile(SMOLLM2);
  routes.set('/api/models/test/SmolLM2-GGUF', JSON.stringify({
    siblings: [{ rfilename: 'README.md' }, { rfilename: 'SmolLM2-135M-Instruct-Q8_0.gguf' }, { rfilename: 'SmolLM2-135M-Instruct-Q4_1.gguf' }],
  }));
  routes.set('/test/SmolLM2-GGUF/resolve/main/SmolLM2-135M-Instruct-Q4_1.gguf', { redirect: '/cdn/smollm2' });
  routes.set('/cdn/smollm2', gguf);
  const files = (await readdir(DIR)).filter((f) => /\.(json|safetensors)$/.test(f));
  routes.set('/api/models/test/smollm2-hf', JSON.stringify({ siblings: [...files, 'README.md'].map((rfilename) => ({ rfilename })) }));
  for (const f of files) routes.set(`/test/smollm2-hf/resolve/main/${f}`, await readFile(join(DIR, f)));
  server = createServer((req, res) => {
    seen.push(req.url);
    const r = routes.get(req.url);
    if (r === undefined) return res.writeHead(404).end();
    if (r.redirect) return res.writeHead(302, { location: r.redirect }).end();
    res.writeHead(200, { 'content-length': Buffer.byteLength(r) }).end(r);
  });
  await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
  endpoint = `http://127.0.0.1:${server.address().port}`;
});

after(() => server.close());

describe('hub references', () => {
  test('owner/repo:QUANT loads that GGUF through the redirect, and runs', async () => {
    const model = await loadModel('test/SmolLM2-GGUF:q4_1', { hubEndpoint: endpoint, threads: 2 });
    try {
      const r = await model.generate('The capital of France is', { maxTokens: 4, temperature: 0 }).result;
      assert.equal(r.text, ' Paris.\n\n');
      assert.ok(seen.includes('/cdn/smollm2'));
    } finally {
      await model.dispose();
    }
  });

  test('a repository without GGUF files loads as an HF directory', async () => {
    const model = await loadModel('test/smollm2-hf', { hubEndpoint: endpoint, threads: 2 });
    try {
      assert.equal(model.info.arch, 'llama');
      assert.ok(!seen.includes('/test/smollm2-hf/resolve/main/README.md'), 'only the model files');
    } finally {
      await model.dispose();
    }
  });

  test('an unknown repository or quantization is a fetch_failed naming it', async () => {
    await assert.rejects(loadModel('test/nothing', { hubEndpoint: endpoint }), {
      code: 'fetch_failed',
      message: /test\/nothing: no such model on the hub/,
    });
    await assert.rejects(loadModel('test/SmolLM2-GGUF:Q5_K_M', { hubEndpoint: endpoint }), {
      code: 'fetch_failed',
      message: 'test/SmolLM2-GGUF has no Q5_K_M GGUF; it has: Q4_1, Q8_0',
    });
  });

  test('what is and is not a reference', () => {
    assert.deepEqual(parseReference('o/r:q8_0'), { owner: 'o', name: 'r', quant: 'Q8_0' });
    assert.deepEqual(parseReference('o/r'), { owner: 'o', name: 'r' });
    assert.deepEqual(parseReference('o/r/sub/m.gguf'), { owner: 'o', name: 'r', file: 'sub/m.gguf' });
    for (const s of ['/m/x.gguf', './o/r', 'models/x.gguf', 'https://h/o/r', 'o/r/../x', '-o/r', 'o/r:Q 4', 'x.gguf']) {
      assert.equal(parseReference(s), null, s);
    }
  });
});
