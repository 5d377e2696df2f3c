#!/usr/bin/env node
// The one static server of the demo, the browser tests and the benchmark:
// serves the repository's web-facing folders and the model cache on
// loopback with the cross-origin isolation headers (COOP/COEP) that wasm
// threads need.
//
//   node web-demo/serve.js [--port 8080] [--no-isolation]
//
//   /                  → web-demo/ (the chat page)
//   /npm/…             → npm/ (the tern-llm package: src/, dist/)
//   /bench/…           → bench/web/ (tern-wasm vs wllama page)
//   /node_modules/…    → npm/test-browser/node_modules/ (wllama for the bench)
//   /tjs/…             → bench/transformers-js/node_modules/ (transformers.js
//                        for the embeddings bench, installed by it)
//   /models/…          → $TERN_MODELS (default ~/.cache/tern/models)
//   /test-models/…     → target/test-models/ (the tests' tiny GGUF twins)

import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { homedir } from 'node:os';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const MOUNTS = [
  ['/npm/', join(root, 'npm')],
  ['/bench/', join(root, 'bench/web')],
  ['/node_modules/', join(root, 'npm/test-browser/node_modules')],
  ['/tjs/', join(root, 'bench/transformers-js/node_modules')],
  ['/models/', process.env.TERN_MODELS || join(homedir(), '.cache/tern/models')],
  ['/test-models/', join(root, 'target/test-models')],
  ['/', join(root, 'web-demo')],
];
const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
};

/** The file a URL path names, or null if it leaves its mount. */
function resolve(path, mounts) {
  for (const [prefix, dir] of mounts) {
    if (!path.startsWith(prefix)) continue;
    const rel = normalize(decodeURIComponent(path.slice(prefix.length)));
    if (rel.startsWith('..') || rel.includes(`${sep}..${sep}`)) return null;
    return join(dir, rel);
  }
  return null;
}

/**
 * Serve `mounts` (URL prefix → folder; by default the repository's pages
 * and the models) on loopback, cross-origin isolated unless told.
 */
export function serve({ port = 8080, host = '127.0.0.1', isolation = true, mounts = MOUNTS } = {}) {
  const server = createServer(async (req, res) => {
    const url = new URL(req.url, 'http://x');
    let file = resolve(url.pathname, mounts);
    const headers = { 'Cache-Control': 'no-cache' };
    if (isolation) {
      headers['Cross-Origin-Opener-Policy'] = 'same-origin';
      headers['Cross-Origin-Embedder-Policy'] = 'require-corp';
      headers['Cross-Origin-Resource-Policy'] = 'same-origin';
    }
    try {
      if (!file) throw new Error('outside');
      let st = await stat(file);
      if (st.isDirectory()) {
        file = join(file, 'index.html');
        st = await stat(file);
      }
      headers['Content-Type'] = TYPES[extname(file)] || 'application/octet-stream';
      headers['Content-Length'] = st.size;
      res.writeHead(200, headers);
      if (req.method === 'HEAD') return res.end();
      createReadStream(file).pipe(res);
    } catch {
      res.writeHead(404, { ...headers, 'Content-Type': 'text/plain' });
      res.end(`not found: ${url.pathname}\n`);
    }
  });
  return new Promise((resolve) => server.listen(port, host, () => resolve(server)));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const at = args.indexOf('--port');
  const port = at >= 0 ? Number(args[at + 1]) : 8080;
  const server = await serve({ port, isolation: !args.includes('--no-isolation') });
  const { port: p } = server.address();
  console.log(`tern web demo: http://127.0.0.1:${p}/  (models from /models/, Ctrl-C to stop)`);
}
