// Encoders in headless Chromium: MiniLM (a sentence-transformers directory
// as a map of file URLs) embeds with the native build's vectors bit for
// bit; the test cross-encoder ranks documents with its scores.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { models, root } from '../test/helpers.js';
import { start } from './browser.js';

let env;
before(async () => (env = await start()));
after(() => env?.close());

const tern = process.env.TERN_BIN || join(root, 'target/release/tern');
const native = (args) => JSON.parse(execFileSync(tern, [...args, '--json'], { encoding: 'utf8', maxBuffer: 1 << 26 }));
const FILES = ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json'];
const ST = ['modules.json', '1_Pooling/config.json', 'sentence_bert_config.json'];

async function inPage(dir, files, texts, query) {
  const page = await env.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${env.base}/npm/test-browser/greedy.html`);
  await page.waitForFunction(() => window.ready === true);
  const map = Object.fromEntries(files.map((f) => [f, `/models/${dir}/${f}`]));
  const r = await page.evaluate(([m, t, q]) => window.encode(m, t, q), [map, texts, query]);
  await page.close();
  assert.deepEqual(errors, []);
  return r;
}

test("MiniLM in Chromium: the native build's vectors, bit for bit", async () => {
  const texts = ['A man is eating food.', 'Кошка сидит снаружи.'];
  const got = await inPage('all-minilm-l6-v2', [...FILES, ...ST], texts);
  const want = native(['embed', '-m', join(models, 'all-minilm-l6-v2'), ...texts]).data;
  got.forEach((v, i) => assert.deepEqual(Float32Array.from(v), Float32Array.from(want[i].embedding), `text ${i}`));
});

test("a cross-encoder in Chromium: the native build's ranking and scores", async () => {
  const docs = ['Cats eat meat.', 'Tokyo is the capital of Japan.'];
  const q = 'What is the capital of Japan?';
  const got = await inPage('minilm-rerank-test', FILES, docs, q);
  const want = native(['rerank', '-m', join(models, 'minilm-rerank-test'), q, ...docs]).results;
  assert.deepEqual(got.map((r) => r.index), want.map((r) => r.index));
  got.forEach((r, i) => assert.equal(r.relevanceScore, Math.fround(want[i].relevance_score)));
});
