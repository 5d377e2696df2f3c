// HuggingFace hub references, as llama.cpp's -hf takes them:
//   owner/repo:Q4_K_M      the GGUF file of that quantization
//   owner/repo/file.gguf   that file
//   owner/repo             its Q4_K_M GGUF (else its only one); with no GGUF
//                          files, the repository as an HF directory
// resolved through the hub's API to its download URLs (which `fetch` then
// reads, with progress and the Cache API as for any URL).

import { TernError } from './errors.js';
import { isNode } from './runtime.js';

/** The hub, unless `hubEndpoint` names another (a mirror, a local server). */
export const DEFAULT_ENDPOINT = 'https://huggingface.co';

const NAME = /^(?![.-])[A-Za-z0-9._-]{1,96}(?<![.-])$/;
const QUANT = /^[A-Za-z0-9_]{1,32}$/;
const DIR_FILES = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json',
  'special_tokens_map.json', 'model.safetensors.index.json'];

/**
 * A hub reference parsed ({ owner, name, quant?, file? }), or null if `s`
 * is not one (a URL, a path: `./x`, `/x`, `x.gguf`, `dir/x.gguf`).
 */
export function parseReference(s) {
  if (typeof s !== 'string' || /^[a-z][a-z0-9+.-]*:\/\//i.test(s) || /^(blob|data|file):/i.test(s)) return null;
  if (/^[./~\\]/.test(s) || s.includes('\\')) return null;
  const [path, quant, ...more] = s.split(':');
  const parts = path.split('/');
  if (parts.length < 2 || more.length) return null;
  if (parts.length === 2 && /\.gguf$/i.test(path)) return null;
  const [owner, name, ...rest] = parts;
  if (!NAME.test(owner) || !NAME.test(name) || owner.includes('..') || name.includes('..')) return null;
  if (quant !== undefined) {
    if (rest.length || !QUANT.test(quant)) return null;
    return { owner, name, quant: quant.toUpperCase() };
  }
  if (rest.length === 0) return { owner, name };
  if (rest.some((c) => c === '' || c === '.' || c === '..')) return null;
  return { owner, name, file: rest.join('/') };
}

/** The download URL of a file in a repository. */
export function fileUrl(endpoint, ref, file) {
  const path = file.split('/').map(encodeURIComponent).join('/');
  return `${endpoint.replace(/\/+$/, '')}/${ref.owner}/${ref.name}/resolve/main/${path}`;
}

/**
 * `source` with a hub reference replaced by what to fetch: a URL, or a map
 * of file names to URLs (an HF directory). Anything else is returned as is.
 */
export async function resolveReference(source, { hubEndpoint = DEFAULT_ENDPOINT, signal } = {}) {
  const ref = parseReference(source);
  if (!ref) return source;
  if (isNode) {
    const { existsSync } = await import('node:fs');
    if (existsSync(source)) return source;
  }
  const repo = `${ref.owner}/${ref.name}`;
  if (ref.file) {
    if (!/\.gguf$/i.test(ref.file)) throw new TernError('invalid_argument', `${repo}/${ref.file}: a file named in a reference must be a .gguf file`);
    return fileUrl(hubEndpoint, ref, ref.file);
  }
  const api = `${hubEndpoint.replace(/\/+$/, '')}/api/models/${repo}`;
  let res;
  try {
    res = await fetch(api, { signal });
  } catch (e) {
    if (e?.name === 'AbortError') throw TernError.from(e);
    throw new TernError('fetch_failed', `cannot reach the hub for ${repo} (${api}): ${e.message}`);
  }
  if (res.status === 404) throw new TernError('fetch_failed', `${repo}: no such model on the hub (${api}: HTTP 404)`);
  if (res.status === 401 || res.status === 403)
    throw new TernError('fetch_failed', `${repo}: access refused (HTTP ${res.status}): the model is gated or private (fetch it yourself with a token and pass the bytes)`);
  if (!res.ok) throw new TernError('fetch_failed', `${repo}: ${api}: HTTP ${res.status}`);
  const text = await res.text();
  if (text.length > 64 << 20) throw new TernError('fetch_failed', `${repo}: the hub's file list is over 64 MiB`);
  let files;
  try {
    files = JSON.parse(text)
      .siblings.slice(0, 10000)
      .map((s) => s.rfilename)
      .filter((f) => typeof f === 'string' && !f.includes('\\') && f.split('/').every((c) => c && c !== '.' && c !== '..'));
  } catch {
    throw new TernError('fetch_failed', `${repo}: the hub's answer lists no files`);
  }
  const chosen = choose(repo, ref.quant, files);
  if (typeof chosen === 'string') return fileUrl(hubEndpoint, ref, chosen);
  return new Map(chosen.map((f) => [f, fileUrl(hubEndpoint, ref, f)]));
}

/** llama.cpp's choice: a file name (GGUF), or an array of files (directory). */
export function choose(repo, quant, files) {
  const ggufs = files.filter((f) => /\.gguf$/i.test(f) && !/mmproj/i.test(f));
  if (ggufs.length === 0) {
    if (quant) throw new TernError('fetch_failed', `${repo} has no GGUF files, so no ${quant}`);
    const take = files.filter((f) => DIR_FILES.includes(f) || (!f.includes('/') && f.endsWith('.safetensors')));
    if (!take.includes('config.json') || !take.includes('tokenizer.json') || !take.some((f) => f.endsWith('.safetensors')))
      throw new TernError('fetch_failed', `${repo} is neither a GGUF repository nor an HF model directory (config.json, tokenizer.json, *.safetensors)`);
    return take;
  }
  const q = quant ?? 'Q4_K_M';
  const stem = (f) => f.split('/').pop().toUpperCase().replace(/\.GGUF$/, '');
  const matching = ggufs.filter((f) => stem(f).split(/[-.]/).includes(q) || stem(f).endsWith(`_${q}`));
  let chosen;
  if (matching.length === 0 && !quant && ggufs.length === 1) chosen = ggufs[0];
  else if (matching.length === 0) {
    const have = [...new Set(ggufs.map((f) => stem(f).split(/[-.]/).reverse().find((w) => /^(I?Q|B?F)\d/.test(w))).filter(Boolean))].sort();
    throw new TernError('fetch_failed', `${repo} has no ${q} GGUF; it has: ${have.join(', ')}`);
  } else chosen = matching.reduce((a, b) => (b.length < a.length ? b : a));
  const split = /-of-(\d+)\.gguf$/i.exec(chosen);
  if (split) throw new TernError('unsupported', `${repo}: ${chosen} is one of ${Number(split[1])} split GGUF parts, which tern does not load`);
  return chosen;
}
