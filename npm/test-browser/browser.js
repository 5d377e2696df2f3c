// Headless Debian Chromium driven by playwright-core (no browser download),
// against the pages web-demo/serve.js serves on loopback. The browser runs
// on a fresh, persistent profile (as a person's browser: storage such as
// the Cache API behaves as on disk, not as in an incognito window).

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { chromium } from 'playwright-core';

import { serve } from '../../web-demo/serve.js';

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

/** Start the server (isolated unless told; `mounts` as serve() takes them) and a browser; `close()` ends both. */
export async function start({ isolation = true, viewport = { width: 1200, height: 820 }, mounts } = {}) {
  const server = await serve({ port: 0, isolation, mounts });
  const base = `http://127.0.0.1:${server.address().port}`;
  const profile = mkdtempSync(join(tmpdir(), 'tern-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  const close = async () => {
    await context.close();
    await new Promise((r) => server.close(r));
    rmSync(profile, { recursive: true, force: true });
  };
  return { base, context, close };
}

/**
 * The benchmarks' page: run `window[fn](...args)` on a fresh page of
 * bench/web/ (served at /bench/) and close it after.
 */
export async function onBenchPage(env, fn, args) {
  const page = await env.context.newPage();
  await page.goto(`${env.base}/bench/`);
  await page.waitForFunction(() => window.ready === true);
  try {
    return await page.evaluate(([f, a]) => window[f](...a), [fn, args]);
  } finally {
    await page.close();
  }
}
