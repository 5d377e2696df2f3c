// LoRA adapters in the package: the tiny Qwen3 twin with a vocabulary
// (scripts/make-test-models.sh) and the fixture adapters made with PEFT
// (tests/fixtures/lora/make_lora.py) give transformers + peft's greedy ids
// on the exact path — a PEFT directory as a file map, its GGUF LoRA twin
// as a path; one adapter, both at once, none — in the caller's thread and
// in a worker; a mismatched adapter is a named error.

import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { loadModel } from '../src/index.js';
import { root } from './helpers.js';

const PATH = join(root, 'target/test-models/tiny-qwen3-yarn-vocab.gguf');
const FIX = join(root, 'tests/fixtures/lora');

const peftDir = async (name) => ({
  'adapter_config.json': new Uint8Array(await readFile(join(FIX, name, 'adapter_config.json'))),
  'adapter_model.safetensors': new Uint8Array(await readFile(join(FIX, name, 'adapter_model.safetensors'))),
});

for (const worker of [false, true]) {
  describe(`LoRA adapters (worker: ${worker})`, () => {
    test('PEFT and GGUF adapters give transformers + peft\'s greedy ids', async () => {
      const o = JSON.parse(await readFile(join(FIX, 'tiny-qwen3-yarn.json'), 'utf8'));
      const model = await loadModel(PATH, { worker, exact: true });
      try {
        const a = await model.loadAdapter(await peftDir('tiny-qwen3-yarn-a'));
        const b = await model.loadAdapter(join(FIX, 'tiny-qwen3-yarn-b/adapter.gguf'));
        assert.deepEqual([a, b], [0, 1]);
        const greedy = async (adapters) =>
          (await model.generate(o.input_ids, { maxTokens: 8, temperature: 0, ignoreEos: true, adapters }).result).tokens;
        assert.deepEqual(await greedy([{ id: a, scale: 1 }]), o.runs.a.generated_ids);
        assert.deepEqual(await greedy([{ id: b, scale: 1 }]), o.runs.b.generated_ids);
        assert.deepEqual(await greedy([{ id: a, scale: 1 }, { id: b, scale: 1 }]), o.runs['a+b'].generated_ids);
        // default scales 0: the base's ids, which differ
        const plain = await greedy(undefined);
        assert.notDeepEqual(plain, o.runs.a.generated_ids);
        await assert.rejects(greedy([{ id: 7, scale: 1 }]), /no adapter with id 7/);
        await assert.rejects(model.loadAdapter(await peftDir('tiny-mistral-a'), { name: 'mistral-a' }), /mistral-a/);
      } finally {
        await model.dispose();
      }
    });
  });
}
