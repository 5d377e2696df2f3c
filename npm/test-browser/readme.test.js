// The npm README's browser example, as a user would serve it: the packed
// tarball installed into an empty folder (npm/test/packed.js), the README's
// html block saved there as index.html, the folder and the models served
// with COOP/COEP, the page opened in headless Chromium: it streams
// SmolLM2's greedy answer into the page.

import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { models } from '../test/helpers.js';
import { codeBlocks, installPacked } from '../test/packed.js';
import { start } from './browser.js';

test('npm/README.md: the html block runs in Chromium against the installed tarball', async () => {
  const { app } = installPacked();
  const [html, ...more] = codeBlocks(join(app, 'node_modules/tern-llm/README.md'), 'html');
  assert.ok(html && more.length === 0, 'one html block');
  writeFileSync(join(app, 'index.html'), html);
  const env = await start({ mounts: [['/models/', models], ['/', app]] });
  try {
    const page = await env.context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    await page.goto(`${env.base}/`);
    await page.waitForFunction(() => document.getElementById('out').textContent.includes('Paris'), null, { timeout: 180_000 });
    const text = await page.evaluate(() => document.getElementById('out').textContent);
    const isolated = await page.evaluate(() => self.crossOriginIsolated);
    console.log(`page: ${JSON.stringify(text)}, crossOriginIsolated: ${isolated}`);
    assert.equal(isolated, true);
    assert.deepEqual(errors, []);
  } finally {
    await env.close();
  }
});
