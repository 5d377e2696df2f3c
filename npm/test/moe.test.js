// Mixtures of experts in the package: the tiny Qwen2-MoE, Qwen3-MoE,
// Mixtral and OLMoE GGUF twins (scripts/make-test-models.sh, experts
// stacked as llama.cpp's converter writes them, SmolLM2's tokenizer cut to
// their 512 tokens) give transformers' greedy ids and the native build's,
// in Node, single-threaded and threaded.

import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { loadModel } from '../src/index.js';
import { nativeGreedy, root } from './helpers.js';

const TINY = join(root, 'tests/fixtures/tiny');
const MODELS = join(root, 'target/test-models');

async function oracle(name) {
  return JSON.parse(await readFile(join(TINY, name, 'oracle.json'), 'utf8'));
}

async function greedyIds(model, ids, n) {
  const r = await model.generate(ids, { maxTokens: n, temperature: 0, ignoreEos: true }).result;
  return r.tokens;
}

describe('mixtures of experts', () => {
  for (const [name, arch] of [['tiny-qwen2-moe', 'qwen2moe'], ['tiny-qwen3-moe', 'qwen3moe'],
    ['tiny-mixtral', 'llama'], ['tiny-olmoe', 'olmoe']]) {
    test(`${name}.gguf: transformers' greedy ids, the native build's`, async () => {
      const o = await oracle(name);
      const path = join(MODELS, `${name}.gguf`);
      const model = await loadModel(new Uint8Array(await readFile(path)), { worker: false });
      try {
        assert.equal(model.info.arch, arch);
        const ids = await greedyIds(model, o.input_ids, 8);
        assert.deepEqual(ids, o.generated_ids);
        assert.deepEqual(ids, nativeGreedy(path, o.input_ids, 8).ids);
      } finally {
        model.dispose();
      }
    });
  }

  test('tiny-qwen2-moe.gguf in the threaded build (shared expert): the same ids', async () => {
    const o = await oracle('tiny-qwen2-moe');
    const model = await loadModel(join(MODELS, 'tiny-qwen2-moe.gguf'), { threads: 2 });
    try {
      assert.deepEqual(await greedyIds(model, o.input_ids, 8), o.generated_ids);
    } finally {
      model.dispose();
    }
  });
});
