// The package in headless Chromium, loaded from the local static server
// with COOP/COEP: greedy ids equal the native build's on the recorded
// prompts, for SmolLM2 and Qwen.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { fixture, nativeRun, QWEN, SMOLLM2 } from '../test/helpers.js';
import { start } from './browser.js';

let env;
before(async () => (env = await start()));
after(() => env?.close());

async function greedyInPage(file, prompts, n) {
  const page = await env.browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${env.base}/npm/test-browser/greedy.html`);
  await page.waitForFunction(() => window.ready === true);
  const r = await page.evaluate(([url, p, k]) => window.greedy(url, p, k), [`/models/${file}`, prompts, n]);
  await page.close();
  assert.deepEqual(errors, []);
  return r;
}

for (const [name, path, file, n, which] of [
  ['smollm2-135m', SMOLLM2, 'smollm2-135m-instruct-q4_1.gguf', 24, ['p1', 'p2', 'p3', 'p4', 'p5']],
  ['qwen2.5-coder-0.5b', QWEN, 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf', 8, ['p1', 'p2']],
]) {
  test(`${name}: greedy ids in Chromium equal the native build's`, async () => {
    const recs = which.map((p) => fixture('llamacpp_greedy.json')[name][p]);
    const r = await greedyInPage(file, recs.map((x) => x.prompt_ids), n);
    assert.equal(r.isolated, true, 'served cross-origin isolated');
    assert.equal(r.info.backend, 'simd128');
    recs.forEach((rec, i) => {
      const native = nativeRun(['-m', path, '--prompt-ids', rec.prompt_ids.join(','), '-n', String(n), '--temp', '0', '--ignore-eos']);
      assert.deepEqual(r.out[i].ids, native.ids, `${name} ${which[i]}`);
      assert.equal(r.out[i].text, native.text);
    });
  });
}
