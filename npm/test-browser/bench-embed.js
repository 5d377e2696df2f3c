#!/usr/bin/env node
// Embeddings/s in headless Chromium: tern-wasm's loadEncoder beside wllama
// (llama.cpp in wasm, @wllama/wllama from npm) on the same GGUF, threads 1
// and 2, engines alternating, medians; 256 made-up sentences of ~30
// tokens (deterministic). Also the cosine of the two engines' vectors for
// the first sentence (they should agree: the same model).
//
//   node npm/test-browser/bench-embed.js [-m FILE.gguf in ~/.cache/tern/models] [-r 3] [-t 1,2]
// (a bert GGUF: cargo run --release -p tern-tests --example bert_gguf, then
// llama.cpp's llama-quantize for Q8_0; bench/NOTES.md E4)

import { parseArgs } from 'node:util';

import { onBenchPage, start } from './browser.js';

const { values: o } = parseArgs({
  options: {
    model: { type: 'string', short: 'm', default: 'minilm-q8_0.gguf' },
    reps: { type: 'string', short: 'r', default: '3' },
    threads: { type: 'string', short: 't', default: '1,2' },
  },
});
const reps = Number(o.reps);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const words = ('the a river city model engine quiet bright people walk along old road under rain while small ' +
  'children read books about stars ships music and distant mountains near green fields every morning').split(' ');
let seed = 7;
const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
const texts = Array.from({ length: 256 }, (_, i) => {
  const s = Array.from({ length: 24 }, () => words[Math.floor(next() * words.length)]).join(' ');
  return `${s[0].toUpperCase()}${s.slice(1)} number ${i}.`;
});

const env = await start();
const onPage = (fn, args) => onBenchPage(env, fn, args);

const rows = [];
try {
  const url = `/models/${o.model}`;
  for (const t of o.threads.split(',').map(Number)) {
    const tern = [];
    const wl = [];
    let cos;
    for (let r = 0; r < reps; r++) {
      const a = await onPage('benchTernEmbed', [url, t, texts]);
      const b = await onPage('benchWllamaEmbed', [url, t, texts]);
      tern.push(a.rate);
      wl.push(b.rate);
      const dot = (x, y) => x.reduce((s, v, i) => s + v * y[i], 0);
      cos = dot(a.first, b.first) / Math.sqrt(dot(a.first, a.first) * dot(b.first, b.first));
    }
    rows.push({ threads: t, tern: median(tern), wllama: median(wl), cos, all: { tern, wllama: wl } });
    console.error(`t=${t}: ${JSON.stringify(rows.at(-1))}`);
  }
} finally {
  await env.close();
}

console.log(`tern-wasm vs wllama 2.4.0 embeddings, headless Chromium, ${o.model}, 256 sentences, medians of ${reps}\n`);
console.log('| threads | tern / wllama embeddings/s | ratio | cosine of the first vectors |');
console.log('| ---: | ---: | ---: | ---: |');
for (const r of rows) {
  console.log(`| ${r.threads} | ${r.tern.toFixed(1)} / ${r.wllama.toFixed(1)} | ${(r.tern / r.wllama).toFixed(2)}× | ${r.cos.toFixed(5)} |`);
}
