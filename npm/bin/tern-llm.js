#!/usr/bin/env node
// tern-llm run -m FILE -p PROMPT [-n N] [--temp T] [--seed S] [--json] ...
// The wasm build from a shell, mirroring the native `tern run` (same flags,
// same defaults, same --json fields) so the two can be compared.

import { parseArgs } from 'node:util';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { loadModel, TernError } from '../src/index.js';

const USAGE = `usage: tern-llm run [-m MODEL] -p PROMPT | --prompt-ids 1,2,3 [--chat [--system S]]
                    [-n N] [--temp T] [--top-k K] [--top-p P] [--min-p P] [--typical P]
                    [--repeat-penalty R] [--presence-penalty P] [--frequency-penalty P]
                    [--repeat-last-n N] [--seed S] [--stop STR]... [--ignore-eos]
                    [--spec ngram [--draft-max N] [--draft-min N]]
                    [--exact] [--json] [-c CTX] [-t THREADS]
MODEL defaults to the Qwen2.5-Coder-0.5B model in $TERN_MODELS (~/.cache/tern/models).`;

const QWEN = 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf';

function fail(msg, code = 2) {
  process.stderr.write(`tern-llm: ${msg}\n`);
  process.exit(code);
}

function number(name, v, { int = false, min = -Infinity } = {}) {
  if (v === undefined) return undefined;
  const x = Number(v);
  if (!Number.isFinite(x) || (int && !Number.isInteger(x)) || x < min) fail(`--${name}: not a valid value: ${v}`);
  return x;
}

async function main(argv) {
  const [cmd, ...rest] = argv;
  if (cmd === '-h' || cmd === '--help' || cmd === undefined) {
    process.stdout.write(`${USAGE}\n`);
    return cmd ? 0 : 2;
  }
  if (cmd !== 'run') fail(`unknown command ${cmd}\n${USAGE}`);
  let a;
  try {
    a = parseArgs({
      args: rest,
      options: {
        model: { type: 'string', short: 'm' },
        prompt: { type: 'string', short: 'p' },
        'prompt-ids': { type: 'string' },
        chat: { type: 'boolean' },
        system: { type: 'string' },
        'n-predict': { type: 'string', short: 'n' },
        temp: { type: 'string' },
        'top-k': { type: 'string' },
        'top-p': { type: 'string' },
        'min-p': { type: 'string' },
        typical: { type: 'string' },
        'repeat-penalty': { type: 'string' },
        'presence-penalty': { type: 'string' },
        'frequency-penalty': { type: 'string' },
        'repeat-last-n': { type: 'string' },
        seed: { type: 'string' },
        stop: { type: 'string', multiple: true },
        'ignore-eos': { type: 'boolean' },
        spec: { type: 'string' },
        'draft-max': { type: 'string' },
        'draft-min': { type: 'string' },
        exact: { type: 'boolean' },
        json: { type: 'boolean' },
        ctx: { type: 'string', short: 'c' },
        threads: { type: 'string', short: 't' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }).values;
  } catch (e) {
    fail(`${e.message}\n${USAGE}`);
  }
  if (a.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if ((a.prompt === undefined) === (a['prompt-ids'] === undefined))
    fail('give exactly one of -p/--prompt and --prompt-ids');
  if (a.system !== undefined && !a.chat) fail('--system needs --chat');
  const model = a.model ?? join(process.env.TERN_MODELS || join(homedir(), '.cache/tern/models'), QWEN);
  const n = number('n-predict', a['n-predict'] ?? '256', { int: true, min: 0 });
  // Seeds travel as JS numbers: exact up to 2^53 - 1.
  const seed =
    a.seed !== undefined ? number('seed', a.seed, { int: true, min: 0 }) : Math.floor(Math.random() * 2 ** 52);
  if (seed > Number.MAX_SAFE_INTEGER) fail(`--seed: at most ${Number.MAX_SAFE_INTEGER} in the wasm build`);
  const options = {
    maxTokens: n,
    temperature: number('temp', a.temp ?? '0.8'),
    topK: number('top-k', a['top-k'] ?? '40', { int: true, min: 0 }),
    topP: number('top-p', a['top-p'] ?? '0.95'),
    minP: number('min-p', a['min-p'] ?? '0.05'),
    typicalP: number('typical', a.typical ?? '1'),
    repeatPenalty: number('repeat-penalty', a['repeat-penalty'] ?? '1'),
    presencePenalty: number('presence-penalty', a['presence-penalty'] ?? '0'),
    frequencyPenalty: number('frequency-penalty', a['frequency-penalty'] ?? '0'),
    repeatLastN: number('repeat-last-n', a['repeat-last-n'] ?? '64', { int: true, min: 0 }),
    seed,
    stop: a.stop ?? [],
    ignoreEos: !!a['ignore-eos'],
    spec: a.spec,
    draftMax: number('draft-max', a['draft-max'], { int: true, min: 0 }),
    draftMin: number('draft-min', a['draft-min'], { int: true, min: 0 }),
  };
  let promptIds;
  if (a['prompt-ids'] !== undefined) {
    promptIds = a['prompt-ids'].split(',').map((s) => number('prompt-ids', s.trim(), { int: true, min: 0 }));
  }
  const ctx = number('ctx', a.ctx, { int: true, min: 1 });
  const t = number('threads', a.threads ?? '0', { int: true, min: 0 });
  const m = await loadModel(model, { worker: false, exact: !!a.exact, contextSize: ctx ?? 0, threads: t || undefined });
  let prompt = promptIds;
  if (!prompt && a.chat) {
    const messages = [
      ...(a.system ? [{ role: 'system', content: a.system }] : []),
      { role: 'user', content: a.prompt },
    ];
    prompt = await m.encode(await m.applyChatTemplate(messages));
  }
  prompt ??= await m.encode(a.prompt);
  const needed = prompt.length + Math.max(n, 1) - 1;
  if (needed > m.info.nCtx) await m.setContextSize(ctx === undefined ? needed : Math.max(ctx, needed));
  return runWith(m, model, prompt, options, a);
}

async function runWith(m, path, prompt, options, a) {
  const gen = m.generate(prompt, options);
  for await (const ev of gen) {
    if (ev.type === 'token' && !a.json) process.stdout.write(ev.text);
  }
  const r = await gen.result;
  const t = r.timings;
  if (a.json) {
    const j = {
      model: path,
      prompt_ids: prompt,
      ids: r.tokens,
      text: r.text,
      finish_reason: r.finishReason,
      seed: r.seed,
      exact: !!a.exact,
      usage: {
        prompt_tokens: r.usage.promptTokens,
        cached_tokens: r.usage.cachedTokens,
        completion_tokens: r.usage.completionTokens,
        draft_tokens: r.usage.draftTokens,
        accepted_draft_tokens: r.usage.acceptedDraftTokens,
      },
      timings: {
        load_ms: m.info.loadMs,
        prefill_ms: t.prefillMs,
        first_token_ms: t.firstTokenMs,
        per_token_p50_ms: t.perTokenP50Ms,
        per_token_p90_ms: t.perTokenP90Ms,
        per_token_p99_ms: t.perTokenP99Ms,
        total_ms: t.totalMs,
        prompt_tokens_per_s: t.promptTokensPerS,
        tokens_per_s: t.tokensPerS,
        draft_n: r.usage.draftTokens,
        draft_n_accepted: r.usage.acceptedDraftTokens,
      },
      backend: m.info.backend,
      threads: m.info.threads,
    };
    process.stdout.write(`${JSON.stringify(j)}\n`);
  } else {
    process.stdout.write('\n');
    process.stderr.write(
      `tern-llm: ${prompt.length} prompt tokens in ${t.prefillMs.toFixed(0)} ms (${t.promptTokensPerS.toFixed(1)} tok/s), ` +
        `${r.tokens.length} tokens at ${t.tokensPerS.toFixed(1)} tok/s, finish: ${r.finishReason}\n`,
    );
  }
  await m.dispose();
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e) => {
    const err = TernError.from(e);
    fail(`${err.code}: ${err.message}`, 1);
  },
);
