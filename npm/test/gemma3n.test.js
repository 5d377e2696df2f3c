// Gemma 3n in the package: the tiny Gemma 3n GGUF twin
// (scripts/make-test-models.sh: as llama.cpp's converter writes it, Gemma
// 3's SentencePiece vocabulary cut to its 512 tokens) gives transformers'
// greedy ids and the native build's, in Node, single-threaded and
// threaded, and chats through Gemma's turn template.

import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { loadModel } from '../src/index.js';
import { nativeGreedy, root } from './helpers.js';

const PATH = join(root, 'target/test-models/tiny-gemma3n.gguf');

describe('Gemma 3n', () => {
  test('tiny-gemma3n.gguf: transformers\' greedy ids, the native build\'s, a chat', async () => {
    const o = JSON.parse(await readFile(join(root, 'tests/fixtures/tiny/tiny-gemma3n/oracle.json'), 'utf8'));
    const model = await loadModel(new Uint8Array(await readFile(PATH)), { worker: false });
    try {
      assert.equal(model.info.arch, 'gemma3n');
      const r = await model.generate(o.input_ids, { maxTokens: 8, temperature: 0, ignoreEos: true }).result;
      assert.deepEqual(r.tokens, o.generated_ids);
      assert.deepEqual(r.tokens, nativeGreedy(PATH, o.input_ids, 8).ids);
      const chat = await model.chat([{ role: 'user', content: 'Hi' }], { maxTokens: 4, temperature: 0 }).result;
      assert.ok(chat.tokens.length > 0 && chat.tokens.length <= 4);
    } finally {
      model.dispose();
    }
  });

  test('tiny-gemma3n.gguf in the threaded build: the same ids', async () => {
    const o = JSON.parse(await readFile(join(root, 'tests/fixtures/tiny/tiny-gemma3n/oracle.json'), 'utf8'));
    const model = await loadModel(PATH, { threads: 2 });
    try {
      const r = await model.generate(o.input_ids, { maxTokens: 8, temperature: 0, ignoreEos: true }).result;
      assert.deepEqual(r.tokens, o.generated_ids);
    } finally {
      model.dispose();
    }
  });
});
