// The package's TypeScript types compile against a typical use of the API
// (strict mode), and reject a wrongly typed option.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';

const here = fileURLToPath(new URL('.', import.meta.url));
const tsc = join(here, 'node_modules/.bin/tsc');
const flags = ['--noEmit', '--strict', '--target', 'es2022', '--module', 'nodenext', '--moduleResolution', 'nodenext'];

test('index.d.ts: a typical use compiles', () => {
  const r = spawnSync(tsc, [...flags, join(here, 'types/usage.ts')], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('index.d.ts: a string where a number belongs is an error', () => {
  const bad = readFileSync(join(here, 'types/usage.ts'), 'utf8').replace('maxTokens: 4,', "maxTokens: '4',");
  const dir = mkdtempSync(join(here, 'types/tmp-'));
  const file = join(dir, 'bad.ts');
  writeFileSync(file, bad.replaceAll('../../src/index.js', '../../../src/index.js'));
  const r = spawnSync(tsc, [...flags, file], { encoding: 'utf8' });
  spawnSync('rm', ['-rf', dir]);
  assert.notEqual(r.status, 0);
  assert.match(r.stdout, /maxTokens|not assignable to type 'number'/);
});
