// Encoders in Node: MiniLM (a sentence-transformers directory) embeds with
// the native build's vectors bit for bit; the test cross-encoder reranks
// with the native build's scores, best first; SmolLM2 pooled by its last
// token (a decoder embedder) as the native build; in a Worker by default
// (the calling thread keeps running); bad input is a TernError.

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { loadEncoder, TernError } from '../src/index.js';
import { MINILM, models, root, SMOLLM2 } from './helpers.js';

const tern = process.env.TERN_BIN || join(root, 'target/release/tern');
const native = (args) => JSON.parse(execFileSync(tern, [...args, '--json'], { encoding: 'utf8', maxBuffer: 1 << 26 }));

describe('encoders', () => {
  it('embeds as the native build does, bit for bit', async () => {
    const dir = MINILM;
    const texts = ['A man is eating food.', 'Le chat est assis dehors.', 'def add(a, b): return a + b'];
    const enc = await loadEncoder(dir, { threads: 1, worker: false });
    assert.equal(enc.dim, 384);
    assert.equal(enc.maxLength, 256);
    const got = await enc.embed(texts);
    const want = native(['embed', '-m', dir, ...texts]).data.map((d) => Float32Array.from(d.embedding));
    assert.equal(got.length, 3);
    got.forEach((v, i) => assert.deepEqual(v, want[i], `text ${i}`));
    await assert.rejects(enc.embed('not a list'), TernError);
    await assert.rejects(enc.embed([]), /no inputs/);
    await assert.rejects(enc.rerank('q', ['d']), /cross-encoder/);
    enc.dispose();
    await assert.rejects(enc.embed(texts), /disposed/);
  });

  it('embeds in a Worker by default: the calling thread keeps running, the vectors are the same', async () => {
    const texts = Array.from({ length: 48 }, (_, i) => `Sentence number ${i} is about ${'something '.repeat(i % 7)}else.`);
    const local = await loadEncoder(MINILM, { threads: 1, worker: false });
    const want = await local.embed(texts);
    local.dispose();
    const enc = await loadEncoder(MINILM, { threads: 1 });
    assert.equal(enc.dim, 384);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 2);
    const t0 = performance.now();
    const got = await enc.embed(texts);
    const ms = performance.now() - t0;
    clearInterval(timer);
    // on the calling thread the timer could not fire while the batch ran
    assert.ok(ms > 50 && ticks >= ms / 20, `${ticks} timer ticks in ${ms.toFixed(0)} ms`);
    assert.equal(got.length, texts.length);
    got.forEach((v, i) => assert.deepEqual(v, want[i], `text ${i}`));
    await assert.rejects(enc.embed([]), /no inputs/);
    await assert.rejects(enc.rerank('q', ['d']), /cross-encoder/);
    enc.dispose();
  });

  it('reranks as the native build does', async () => {
    const dir = join(models, 'minilm-rerank-test');
    const docs = ['Cats eat meat.', 'Tokyo is the capital of Japan.', 'Paris.'];
    const enc = await loadEncoder(dir, { threads: 1 });
    assert.equal(enc.reranks, true);
    const got = await enc.rerank('What is the capital of Japan?', docs);
    const want = native(['rerank', '-m', dir, 'What is the capital of Japan?', ...docs]).results;
    assert.deepEqual(got.map((r) => r.index), want.map((r) => r.index));
    got.forEach((r, i) => assert.equal(r.relevanceScore, Math.fround(want[i].relevance_score)));
    assert.equal((await enc.rerank('q', docs, { topN: 1 })).length, 1);
    await assert.rejects(enc.rerank('q', docs, { topN: 0 }), /topN/);
    await assert.rejects(enc.embed(['x']), /no pooling/);
    enc.dispose();
  });

  it('pools a decoder as told, as the native build does', async () => {
    const texts = ['A man is eating food.', 'def add(a, b): return a + b'];
    await assert.rejects(loadEncoder(SMOLLM2, { threads: 1 }), /choose a pooling/);
    await assert.rejects(loadEncoder(SMOLLM2, { pooling: 'max' }), /pooling must be one of/);
    const enc = await loadEncoder(SMOLLM2, { threads: 1, pooling: 'last' });
    assert.equal(enc.dim, 576);
    const got = await enc.embed(texts);
    const want = native(['embed', '-m', SMOLLM2, '--pooling', 'last', ...texts]).data;
    got.forEach((v, i) => assert.deepEqual(v, Float32Array.from(want[i].embedding), `text ${i}`));
    enc.dispose();
  });
});
