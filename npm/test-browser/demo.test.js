// The web demo driven like a person in headless Chromium: load the default
// (locally served Qwen) model, type, send, watch text stream in, stop; a
// screenshot is saved. Then, with the model in the browser's cache, a fresh
// page load to the first streamed token is timed (reported, under 3 s).
// A disk too full to keep the model (Chromium refuses a write that would
// leave less than 1 GiB free) is reported, not failed: then the second
// load must say why it downloaded again, and the Cache API itself is
// tested on a small file in greedy.test.js.

import assert from 'node:assert/strict';
import { mkdirSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, test } from 'node:test';

import { start } from './browser.js';

const shots = fileURLToPath(new URL('../../target/web-demo', import.meta.url));
let env;
before(async () => (env = await start()));
after(() => env?.close());

test('load, chat with streamed tokens, stop; then page load to first token from the cache', async () => {
  const ctx = env.context;
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${env.base}/`);
  await page.click('#load-url');
  await page.waitForFunction(() => /ready/.test(document.getElementById('status').textContent), null, {
    timeout: 120_000,
  });
  assert.match(await page.textContent('#threads'), /2 \(wasm threads\)/);
  const kept = !/not kept in the browser cache/.test(await page.textContent('#status'));
  if (!kept) {
    const fs = statfsSync(tmpdir());
    const free = (fs.bavail * fs.bsize) / 2 ** 20;
    console.log(`model not cached, ${free.toFixed(0)} MiB free: ${await page.textContent('#status')}`);
    assert.match(await page.textContent('#status'), /QuotaExceededError/);
  }

  // greedy, so the reply is known to be long (372 tokens natively with the page's defaults) and is
  // still streaming when Stop is pressed; a sampled reply may end at once
  await page.fill('#temperature', '0');
  await page.fill('#prompt', 'Write a quicksort in Python with comments.');
  await page.click('#send');
  const reply = page.locator('.msg.assistant').last();
  // text streams in: it grows while the stop button is live
  await page.waitForFunction(() => (document.querySelector('.msg.assistant')?.textContent.length ?? 0) > 20);
  const early = (await reply.textContent()).length;
  await page.waitForFunction((n) => document.querySelector('.msg.assistant').textContent.length > n + 20, early);
  assert.equal(await page.isEnabled('#stop'), true);
  await page.click('#stop');
  await page.waitForSelector('.msg.assistant .meta');
  assert.match(await reply.locator('.meta').textContent(), /cancelled/);
  assert.equal(await page.isEnabled('#send'), true);
  assert.match(await page.textContent('#speed'), /tokens\/s/);
  assert.match(await page.textContent('#memory'), /MiB/);
  mkdirSync(shots, { recursive: true });
  await page.screenshot({ path: join(shots, 'chat.png') });
  await page.close();

  // the model is in the Cache API now: page load → first streamed token
  const again = await ctx.newPage();
  await again.goto(`${env.base}/?autoload=1`);
  await again.waitForFunction(() => /ready/.test(document.getElementById('status').textContent), null, {
    timeout: 60_000,
  });
  assert.match(await again.textContent('#status'), kept ? /from the browser cache/ : /downloaded/);
  await again.fill('#prompt', 'Hello!');
  await again.click('#send');
  await again.waitForFunction(() => window.ternTimings.pageToFirstTokenMs !== null);
  const t = await again.evaluate(() => window.ternTimings);
  console.log(
    `page load to model ready ${t.pageToModelMs.toFixed(0)} ms, to first token ${t.pageToFirstTokenMs.toFixed(0)} ms (Qwen, ${kept ? 'cached' : 'downloaded'}, typing included)`,
  );
  // the short reply may already be over: a disabled Stop ignores the click
  await again.evaluate(() => document.getElementById('stop').click());
  await again.waitForSelector('.msg.assistant .meta');
  await again.screenshot({ path: join(shots, 'cached.png') });
  await again.close();
  assert.deepEqual(errors, []);
});
