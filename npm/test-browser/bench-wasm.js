#!/usr/bin/env node
// tern-wasm beside wllama (llama.cpp in wasm, @wllama/wllama from npm) in
// the same headless Chromium, same model files, threads 1 and 2: pp and tg
// tokens/s (medians over repetitions, engines alternating), and ratios.
//
//   node npm/test-browser/bench-wasm.js [-p 64] [-n 32] [-r 3] [-t 1,2] [smollm2|qwen|gemma3 ...]

import { parseArgs } from 'node:util';

import { onBenchPage, start } from './browser.js';

const MODELS = {
  smollm2: 'smollm2-135m-instruct-q4_1.gguf',
  qwen: 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf',
  gemma3: 'gemma-3-270m-q4_k_m.gguf',
};

const { values: o, positionals } = parseArgs({
  options: {
    pp: { type: 'string', short: 'p', default: '64' },
    tg: { type: 'string', short: 'n', default: '32' },
    reps: { type: 'string', short: 'r', default: '3' },
    threads: { type: 'string', short: 't', default: '1,2' },
  },
  allowPositionals: true,
});
const [pp, tg, reps] = [Number(o.pp), Number(o.tg), Number(o.reps)];
const threadList = o.threads.split(',').map(Number);
const models = positionals.length ? positionals : Object.keys(MODELS);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const env = await start();
const onPage = (fn, args) => onBenchPage(env, fn, args);

const rows = [];
try {
  for (const m of models) {
    const url = `/models/${MODELS[m]}`;
    for (const t of threadList) {
      const tern = { pp: [], tg: [] };
      const wl = { pp: [], tg: [] };
      let infos;
      // one repetition of each engine at a time, alternating
      for (let r = 0; r < reps; r++) {
        const a = await onPage('benchTern', [url, t, pp, tg, 1]);
        const b = await onPage('benchWllama', [url, t, pp, tg, 1, a.ids]);
        infos = [a.info, b.info];
        for (const [acc, res] of [
          [tern, a],
          [wl, b],
        ]) {
          acc.pp.push(res.runs[0].pp);
          acc.tg.push(res.runs[0].tg);
        }
      }
      const row = { model: m, threads: t, infos };
      for (const k of ['pp', 'tg']) row[k] = { tern: median(tern[k]), wllama: median(wl[k]) };
      rows.push(row);
      console.error(`${m} t=${t}: ${JSON.stringify(row)}`);
    }
  }
} finally {
  await env.close();
}

console.log(`tern-wasm vs wllama 2.4.0, headless Chromium, medians of ${reps} (pp${pp}, tg${tg})\n`);
console.log('| model | threads | pp tern / wllama tok/s | ratio | tg tern / wllama tok/s | ratio |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: |');
for (const r of rows) {
  const f = (x) => x.toFixed(1);
  console.log(
    `| ${r.model} | ${r.threads} | ${f(r.pp.tern)} / ${f(r.pp.wllama)} | ${(r.pp.tern / r.pp.wllama).toFixed(2)}× ` +
      `| ${f(r.tg.tern)} / ${f(r.tg.wllama)} | ${(r.tg.tern / r.tg.wllama).toFixed(2)}× |`,
  );
}
