// HF model directories in the package: the SmolLM2 GGUF dequantized into
// an f32 safetensors directory (scripts/make-test-models.sh) loads from a
// directory path and from a map of file names, and its greedy ids equal the
// native build's on the same directory; a broken map is a typed error.

import assert from 'node:assert/strict';
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';

import { loadModel } from '../src/index.js';
import { fixture, nativeGreedy, nativeRun, root } from './helpers.js';

const DIR = join(root, 'target/test-models/smollm2-hf-f32');
const rec = fixture('llamacpp_greedy.json')['smollm2-135m'];

async function greedyIds(model, ids, n) {
  const r = await model.generate(ids, { maxTokens: n, temperature: 0, ignoreEos: true }).result;
  return r.tokens;
}

describe('SmolLM2 as an HF directory', () => {
  test('a directory path (Node): greedy ids equal the native build on the same directory', async () => {
    const seen = [];
    const model = await loadModel(DIR, { threads: 2, onProgress: (p) => seen.push(p) });
    try {
      assert.equal(model.info.arch, 'llama');
      assert.equal(model.info.tiedOutput, true);
      assert.ok(model.info.chatTemplate.includes('im_start'));
      assert.ok(seen.some((p) => p.file === 'model-00001-of-00001.safetensors'), 'progress names the file');
      for (const name of ['p1', 'p3']) {
        const native = nativeGreedy(DIR, rec[name].prompt_ids, 16);
        assert.deepEqual(await greedyIds(model, rec[name].prompt_ids, 16), native.ids, name);
      }
      const text = await model.generate('The capital of France is', { maxTokens: 4, temperature: 0 }).result;
      assert.equal(text.text, ' Paris.\n\n');
    } finally {
      model.dispose();
    }
  });

  test('a map of file names to bytes, in this thread', async () => {
    const files = {};
    for (const f of await readdir(DIR)) files[f] = new Uint8Array(await readFile(join(DIR, f)));
    const model = await loadModel(files, { worker: false });
    try {
      const native = nativeGreedy(DIR, rec.p2.prompt_ids, 8);
      assert.deepEqual(await greedyIds(model, rec.p2.prompt_ids, 8), native.ids);
    } finally {
      model.dispose();
    }
  });
});

describe('a template that thinks', () => {
  // Qwen3's chat template (llama.cpp's copy, scripts/make-test-models.sh)
  // on SmolLM2, whose ChatML tokens it shares; a grammar holds the reply to
  // a thinking block and an answer
  const QWEN3 = join(root, 'target/test-models/templates/Qwen-Qwen3-0.6B.jinja');
  const shape = 'root ::= "<think>\\n" [a-z ]{3,24} "\\n</think>\\n\\n" [A-Z] [a-z]{2,8} "."';

  test('chat events carry reasoning apart from content, as the native build splits it', async () => {
    const files = {};
    for (const f of await readdir(DIR)) files[f] = new Uint8Array(await readFile(join(DIR, f)));
    files['chat_template.jinja'] = new Uint8Array(await readFile(QWEN3));
    const model = await loadModel(files, { worker: false });
    try {
      const msgs = [{ role: 'user', content: 'What is two and two?' }];
      const opts = { maxTokens: 48, temperature: 0, grammar: shape };
      const g = model.chat(msgs, opts);
      let reasoning = '', content = '', done;
      for await (const ev of g) {
        if (ev.type === 'token') (reasoning += ev.reasoning, content += ev.content);
        else done = ev;
      }
      assert.ok(done.text.startsWith('<think>\n'), done.text);
      assert.ok(done.reasoning.length > 0 && !done.reasoning.includes('think'), done.reasoning);
      assert.match(done.content, /^[A-Z][a-z]+\.$/);
      assert.equal(reasoning, done.reasoning);
      assert.equal(content, done.content);
      const gbnf = join(tmpdir(), `tern-npm-think-${process.pid}.gbnf`);
      await writeFile(gbnf, shape);
      const native = nativeRun(['-m', DIR, '--chat', '-p', msgs[0].content, '-n', '48', '--temp', '0',
        '--chat-template', QWEN3, '--grammar', gbnf]);
      await rm(gbnf);
      assert.deepEqual([done.reasoning, done.content], [native.reasoning_content, native.content]);
      // inline with reasoningFormat none; enable_thinking reaches the template
      const inline = await model.chat(msgs, { ...opts, reasoningFormat: 'none' }).result;
      assert.equal(inline.text, done.text);
      assert.equal(inline.reasoning, undefined);
      const off = await model.chat(msgs, { maxTokens: 1, chatTemplateKwargs: { enable_thinking: false } }).result;
      assert.ok(off.usage.promptTokens > done.usage.promptTokens);
      await assert.rejects(model.chat(msgs, { reasoningFormat: 'hidden' }).result, /reasoningFormat/);
      await assert.rejects(model.generate('x', { reasoningFormat: 'none' }).result, /option of chat/);
    } finally {
      model.dispose();
    }
  });
});

describe('broken directories', () => {
  const tiny = join(root, 'tests/fixtures/oracle/tiny');
  const bytes = async (dir, names) =>
    Object.fromEntries(await Promise.all(names.map(async (n) => [n, await readFile(join(tiny, dir, n))])));

  test('no config.json', async () => {
    const files = await bytes('tiny-llama', ['model.safetensors']);
    await assert.rejects(loadModel(files, { worker: false }), (e) => {
      assert.equal(e.code, 'bad_file');
      assert.match(e.message, /config\.json: \(file\): not found/);
      return true;
    });
  });

  test('a shard the index names is not given', async () => {
    const names = ['config.json', 'model.safetensors.index.json', 'model-00001-of-00003.safetensors'];
    await assert.rejects(loadModel(await bytes('tiny-qwen2', names)), (e) => {
      assert.equal(e.code, 'bad_file');
      assert.match(e.message, /model-00002-of-00003\.safetensors/);
      return true;
    });
  });

  test('text generation needs tokenizer.json', async () => {
    const files = await bytes('tiny-llama', ['config.json', 'model.safetensors']);
    await assert.rejects(loadModel(files, { worker: false }), (e) => {
      assert.equal(e.code, 'unsupported');
      assert.match(e.message, /no tokenizer\.json/);
      return true;
    });
  });
});
