// npm pack / npm publish: build the two wasm modules into dist/ first (with
// ../scripts/build-wasm.sh), so the package is complete; a missing tool is
// an error naming it and how to get it.

import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));
const build = `${root}scripts/build-wasm.sh`;

function fail(why) {
  console.error(`tern-llm prepack: ${why}`);
  process.exit(1);
}

if (!existsSync(build)) fail(`${build} is missing: pack from a checkout of the tern repository`);
const has = (cmd, args = ['--version']) => spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
const missing = [];
if (!has('bash')) missing.push('bash');
if (!has('cargo')) missing.push('cargo (Rust, from https://rustup.rs)');
const pinned = /^wasm-bindgen = "=(.*)"/m.exec(readFileSync(`${root}wasm/Cargo.toml`, 'utf8'))?.[1];
const bindgen = spawnSync('wasm-bindgen', ['--version'], { encoding: 'utf8' }).stdout?.split(' ')[1]?.trim();
if (bindgen !== pinned) missing.push(`wasm-bindgen-cli ${pinned} (have: ${bindgen ?? 'none'})`);
if (has('rustup') && !execFileSync('rustup', ['target', 'list', '--installed'], { encoding: 'utf8' }).includes('wasm32-unknown-unknown'))
  missing.push('the wasm32-unknown-unknown Rust target');
if (has('rustup') && !execFileSync('rustup', ['component', 'list', '--installed'], { encoding: 'utf8' }).includes('rust-src'))
  missing.push('rust-src (rustup component add rust-src)');
if (missing.length)
  fail(`cannot build the wasm modules without ${missing.join(', ')}; scripts/install-wasm-tools.sh installs them`);
// the build's output on stderr: npm pack --json owns stdout
const r = spawnSync('bash', [build], { stdio: ['ignore', 2, 'inherit'] });
if (r.status !== 0) fail(`${build} failed (exit ${r.status})`);
