// Headless Debian Chromium driven by playwright-core (no browser download),
// against the pages web-demo/serve.js serves on loopback.

import { chromium } from 'playwright-core';

import { serve } from '../../web-demo/serve.js';

export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

/** Start the server (isolated unless told) and a browser; `close()` ends both. */
export async function start({ isolation = true } = {}) {
  const server = await serve({ port: 0, isolation });
  const base = `http://127.0.0.1:${server.address().port}`;
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
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
    await browser.close();
    await new Promise((r) => server.close(r));
  };
  return { base, browser, close };
}
