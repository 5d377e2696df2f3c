#!/usr/bin/env node
// What constrained decoding costs in the browser: tern-wasm in headless
// Chromium, Qwen2.5 0.5B Q4_K_M (151 936 tokens), a chat reply of 64 tokens
// at temperature 0.8 free and under bench/web/nested-schema.json
// (responseFormat json_schema), alternating, seeds 0..r-1, threads 1 and 2;
// per-token p50 medians and their ratio.
//
//   node npm/test-browser/bench-mask.js [-n 64] [-r 4] [-t 1,2]

import { parseArgs } from 'node:util';

import { onBenchPage, start } from './browser.js';

const { values: o } = parseArgs({
  options: {
    tokens: { type: 'string', short: 'n', default: '64' },
    reps: { type: 'string', short: 'r', default: '4' },
    threads: { type: 'string', short: 't', default: '1,2' },
  },
});
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const env = await start();
const rows = [];
try {
  for (const t of o.threads.split(',').map(Number)) {
    const args = ['/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf', t, '/bench/nested-schema.json', Number(o.tokens), Number(o.reps)];
    const r = await onBenchPage(env, 'benchMask', args);
    console.error(`t=${t}: ${JSON.stringify(r)}`);
    rows.push({ t, free: median(r.free), constrained: median(r.constrained), info: r.info });
  }
} finally {
  await env.close();
}
console.log(`tern-wasm in headless Chromium, Qwen2.5 0.5B Q4_K_M, ${o.tokens} tokens, medians of ${o.reps} seeds\n`);
console.log('| threads | free ms/token | json_schema ms/token | ratio |');
console.log('| ---: | ---: | ---: | ---: |');
for (const r of rows)
  console.log(`| ${r.info.threads}${r.info.threaded ? '' : ' (single-thread build)'} | ${r.free.toFixed(2)} | ${r.constrained.toFixed(2)} | ${(r.constrained / r.free).toFixed(3)} |`);
