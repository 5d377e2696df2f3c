// The package as published: its own files (both wasm modules included)
// under 2 MB gzip, with the entry points, types and bin it declares.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('..', import.meta.url));

test('npm pack: under 2 MB gzip, with every declared file', () => {
  const [pack] = JSON.parse(execFileSync('npm', ['pack', '--dry-run', '--json'], { cwd: dir, encoding: 'utf8' }));
  const files = new Set(pack.files.map((f) => f.path));
  for (const f of [
    'src/index.js',
    'src/index.d.ts',
    'src/worker.js',
    'src/thread.js',
    'bin/tern-llm.js',
    'dist/tern_wasm_bg.wasm',
    'dist/threads/tern_wasm_bg.wasm',
  ]) {
    assert.ok(files.has(f), `${f} in the package`);
  }
  console.log(`package: ${pack.size} bytes gzip, ${pack.unpackedSize} unpacked, ${pack.files.length} files`);
  // under 3 MB: two wasm builds (single-threaded and threaded), each with
  // llguidance's constrained decoding (~350 KB gzip of the ~1.3 MB each)
  assert.ok(pack.size < 3_000_000, `${pack.size} bytes`);
});
