// The READMEs' JavaScript, run as a user would: `npm pack` on this checkout
// (its prepack builds the wasm), the tarball installed into an empty
// folder, each ```js block of the installed package's README and of the
// repository's README saved there as a module and run in Node on SmolLM2.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

import { MINILM, QWEN, root, SMOLLM2 } from './helpers.js';
import { codeBlocks, installPacked } from './packed.js';

test('the packed tarball holds the whole package', () => {
  const { app, pack } = installPacked();
  const pkg = join(app, 'node_modules/tern-llm');
  for (const f of ['README.md', 'LICENSE-MIT', 'LICENSE-APACHE', 'src/index.js', 'dist/tern_wasm_bg.wasm', 'dist/threads/tern_wasm_bg.wasm'])
    assert.ok(existsSync(join(pkg, f)), `${f} installed`);
  console.log(`tarball ${pack.filename}: ${pack.size} bytes, ${pack.files.length} files`);
});

const readmes = [
  ['npm/README.md', () => join(installPacked().app, 'node_modules/tern-llm/README.md')],
  ['README.md', () => join(root, 'README.md')],
];
for (const [name, path] of readmes) {
  test(`${name}: every js block runs in Node against the installed tarball`, () => {
    const { app } = installPacked();
    const blocks = codeBlocks(path(), 'js');
    assert.ok(blocks.length > 0, `${name} has js blocks`);
    blocks.forEach((code, i) => {
      const file = join(app, `${name.replace(/\W/g, '_')}-${i}.mjs`);
      writeFileSync(file, code);
      // the tool-call example asks for Qwen (its calls: Hermes <tool_call> blocks)
      const model = code.includes('toolChoice') ? QWEN : code.includes('loadEncoder') ? MINILM : SMOLLM2;
      const out = execFileSync(process.execPath, [file, model], { cwd: app, encoding: 'utf8', timeout: 300_000 });
      console.log(`${name} block ${i}: ${JSON.stringify(out.slice(0, 120))}`);
      assert.ok(out.trim().length > 0, `${name} block ${i} printed something`);
      if (code.includes('The capital of France is')) assert.match(out, /Paris/);
      if (code.includes('toolChoice')) assert.match(out, /^tool_calls get_weather \{ city: 'Paris' \}/);
    });
  });
}

test("the repository's README links only to files in the repository", () => {
  const md = readFileSync(join(root, 'README.md'), 'utf8');
  const links = [...md.matchAll(/\]\(([^)]+)\)/g)].map((m) => m[1]).filter((l) => !/^https?:/.test(l));
  assert.ok(links.length > 0);
  for (const l of links) assert.ok(existsSync(join(root, l.split('#')[0])), `${l} exists`);
  assert.ok(!md.includes('../shared'), 'nothing outside the repository');
});
