// The package in headless Chromium, loaded from the local static server:
// with COOP/COEP (cross-origin isolated: the threaded build on 2 threads)
// greedy ids equal the native build's on the recorded prompts, for SmolLM2,
// Qwen and Gemma 3; without them the single-thread build is chosen, same
// ids. With `cache: true` a second load comes from the Cache API. Speculative
// (n-gram) decoding gives plain decoding's ids there too. The tiny Gemma 3n
// and Qwen3-MoE GGUF twins give transformers' greedy ids there.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';

import { fixture, GEMMA3, nativeGreedy, QWEN, root, SMOLLM2 } from '../test/helpers.js';
import { start } from './browser.js';

let env;
before(async () => (env = await start()));
after(() => env?.close());

async function greedyInPage(file, prompts, n, e = env) {
  const page = await e.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${e.base}/npm/test-browser/greedy.html`);
  await page.waitForFunction(() => window.ready === true);
  const url = file.startsWith('/') ? file : `/models/${file}`;
  const r = await page.evaluate(([u, p, k]) => window.greedy(u, p, k), [url, prompts, n]);
  await page.close();
  assert.deepEqual(errors, []);
  return r;
}

for (const [name, path, file, n, which, records] of [
  ['smollm2-135m', SMOLLM2, 'smollm2-135m-instruct-q4_1.gguf', 24, ['p1', 'p2', 'p3', 'p4', 'p5']],
  ['qwen2.5-coder-0.5b', QWEN, 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf', 8, ['p1', 'p2']],
  // p6 runs past Gemma's 512-position sliding window
  ['gemma3-270m', GEMMA3, 'gemma-3-270m-q4_k_m.gguf', 12, ['p1', 'p6'], 'gemma3/llamacpp_greedy.json'],
]) {
  test(`${name}: greedy ids in Chromium equal the native build's`, async () => {
    const recs = which.map((p) => (records ? fixture(records)[p] : fixture('llamacpp_greedy.json')[name][p]));
    const r = await greedyInPage(
      file,
      recs.map((x) => x.prompt_ids),
      n,
    );
    assert.equal(r.isolated, true, 'served cross-origin isolated');
    assert.equal(r.info.backend, 'simd128');
    assert.equal(r.info.threaded, true);
    assert.equal(r.info.threads, 2);
    recs.forEach((rec, i) => {
      const native = nativeGreedy(path, rec.prompt_ids, n);
      assert.deepEqual(r.out[i].ids, native.ids, `${name} ${which[i]}`);
      assert.equal(r.out[i].text, native.text);
    });
  });
}

for (const name of ['tiny-gemma3n', 'tiny-qwen3-moe']) {
  test(`${name}.gguf: transformers' greedy ids in Chromium (threaded)`, async () => {
    const o = JSON.parse(readFileSync(join(root, 'tests/fixtures/tiny', name, 'oracle.json'), 'utf8'));
    const r = await greedyInPage(`/test-models/${name}.gguf`, [o.input_ids], 8);
    assert.equal(r.info.threaded, true);
    assert.deepEqual(r.out[0].ids, o.generated_ids);
  });
}

test('spec: ngram in Chromium (threaded, in the Worker): plain decoding\'s ids and logprobs, drafts counted', async () => {
  const page = await env.context.newPage();
  await page.goto(`${env.base}/npm/test-browser/greedy.html`);
  await page.waitForFunction(() => window.ready === true);
  const prompt = '1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2, 3, 4, 5, 1, 2,';
  const r = await page.evaluate(([u, p, n]) => window.speculative(u, p, n), ['/models/smollm2-135m-instruct-q4_1.gguf', prompt, 24]);
  await page.close();
  assert.equal(r.info.threaded, true);
  assert.deepEqual(r.spec.ids, r.plain.ids);
  assert.deepEqual(r.spec.logprobs, r.plain.logprobs);
  assert.equal(r.plain.usage.draftTokens, 0);
  assert.ok(r.spec.usage.draftTokens > 0 && r.spec.usage.acceptedDraftTokens > 0, JSON.stringify(r.spec.usage));
});

test('not cross-origin isolated: the single-thread build, same ids', async () => {
  const plain = await start({ isolation: false });
  try {
    const rec = fixture('llamacpp_greedy.json')['smollm2-135m'].p3;
    const r = await greedyInPage('smollm2-135m-instruct-q4_1.gguf', [rec.prompt_ids], 16, plain);
    assert.equal(r.isolated, false);
    assert.equal(r.info.threaded, false);
    assert.equal(r.info.threads, 1);
    const native = nativeGreedy(SMOLLM2, rec.prompt_ids, 16);
    assert.deepEqual(r.out[0].ids, native.ids);
  } finally {
    await plain.close();
  }
});

test('a trap on the page\'s thread: the model is lost, the next load gets a fresh instance and the same ids', async () => {
  const page = await env.context.newPage();
  await page.goto(`${env.base}/npm/test-browser/greedy.html`);
  await page.waitForFunction(() => window.ready === true);
  const r = await page.evaluate(([u, n]) => window.trapAndReload(u, n), ['/models/smollm2-135m-instruct-q4_1.gguf', 6]);
  await page.close();
  assert.equal(r.error?.code, 'model_lost', JSON.stringify(r.error));
  assert.match(r.error.message, /trapped \(.*out of bounds.*\).*load the model again/);
  assert.ok(r.fresh, 'a new instance');
  assert.deepEqual(r.got, r.want);
});

test('cache: true keeps the file in the Cache API, the next load reads it from there; cache: false does neither; a full disk is reported', async () => {
  // the smallest served model with a tokenizer (98 MB; Chromium keeps 1 GiB of the disk free)
  const e = await start();
  try {
    const page = await e.context.newPage();
    await page.goto(`${e.base}/npm/test-browser/greedy.html`);
    await page.waitForFunction(() => window.ready === true);
    const load = (url, cache) => page.evaluate(([u, c]) => window.load(u, c), [url, cache]);
    const cached = () => page.evaluate(async () => (await (await caches.open('tern-llm-models')).keys()).length);
    const url = '/models/smollm2-135m-instruct-q4_1.gguf';
    const off = await load(url, false);
    assert.deepEqual([off.fromCache, off.cacheError, await cached()], [false, null, 0]);
    const first = await load(url, true);
    assert.deepEqual([first.fromCache, first.cacheError, await cached()], [false, null, 1]);
    const second = await load(url, true);
    assert.deepEqual([second.fromCache, second.cacheError], [true, null]);
    assert.equal(second.name, off.name);
    // cache: false never reads the cache either
    assert.equal((await load(url, false)).fromCache, false);
    // a full disk (the origin's quota cut to 1 MiB): the model loads and says why it was not kept
    await page.evaluate(() => caches.delete('tern-llm-models'));
    const cdp = await e.context.newCDPSession(page);
    await cdp.send('Storage.overrideQuotaForOrigin', { origin: e.base, quotaSize: 2 ** 20 });
    const full = await load(url, true);
    assert.equal(full.fromCache, false);
    assert.match(full.cacheError, /^\/models\/smollm2-135m-instruct-q4_1\.gguf: QuotaExceededError: /);
    assert.equal(await cached(), 0);
    await page.close();
  } finally {
    await e.close();
  }
});
