// The package as a user gets it: `npm pack` (its prepack builds the wasm
// modules) and the tarball installed into an empty folder, once per process.

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const npmDir = fileURLToPath(new URL('..', import.meta.url));
let installed;

/** The folder the packed tarball was installed into (with its package.json). */
export function installPacked() {
  if (installed) return installed;
  const tmp = mkdtempSync(join(tmpdir(), 'tern-llm-packed-'));
  const [pack] = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: npmDir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }),
  );
  const app = join(tmp, 'app');
  mkdirSync(app);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error', join(tmp, pack.filename)], { cwd: app, stdio: 'inherit' });
  installed = { app, pack };
  return installed;
}

/** The fenced code blocks of a Markdown file in this language, in order. */
export function codeBlocks(markdownPath, lang) {
  const md = readFileSync(markdownPath, 'utf8');
  const re = new RegExp('^```' + lang + '\\n([\\s\\S]*?)^```$', 'gm');
  return [...md.matchAll(re)].map((m) => m[1]);
}
