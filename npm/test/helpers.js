// Shared by the Node tests: model paths, the fixtures, and the native
// `tern` binary (built by `cargo test --release` / `cargo build --release`).

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const models = process.env.TERN_MODELS || join(homedir(), '.cache/tern/models');
export const SMOLLM2 = join(models, 'smollm2-135m-instruct-q4_1.gguf');
export const QWEN = join(models, 'qwen2.5-coder-0.5b-instruct-q4_k_m.gguf');
export const GEMMA3 = join(models, 'gemma-3-270m-q4_k_m.gguf');
export const MINILM = join(models, 'all-minilm-l6-v2');

export function fixture(name) {
  return JSON.parse(readFileSync(join(root, 'tests/fixtures/oracle', name), 'utf8'));
}

const ternBin = process.env.TERN_BIN || join(root, 'target/release/tern');

/** The native build's `tern run --json` for these arguments. */
export function nativeRun(args) {
  if (!existsSync(ternBin)) throw new Error(`native tern binary not found at ${ternBin} (cargo build --release)`);
  const out = execFileSync(ternBin, ['run', ...args, '--json'], { encoding: 'utf8', maxBuffer: 1 << 26 });
  return JSON.parse(out);
}

export const binPath = join(root, 'npm/bin/tern-llm.js');

/** The native build's greedy continuation of token ids (EOS ignored). */
export function nativeGreedy(path, ids, n) {
  return nativeRun(['-m', path, '--prompt-ids', ids.join(','), '-n', String(n), '--temp', '0', '--ignore-eos']);
}
