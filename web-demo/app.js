// The chat page: load a model (URL with progress and Cache API storage, or
// a file), chat with streamed tokens through the model's template, stop,
// sampler settings, live tokens/s and memory.

import { loadModel } from '/npm/src/index.js';

const $ = (id) => document.getElementById(id);
const ui = {
  url: $('url'),
  loadUrl: $('load-url'),
  file: $('file'),
  cache: $('cache'),
  progress: $('progress'),
  status: $('status'),
  messages: $('messages'),
  composer: $('composer'),
  prompt: $('prompt'),
  send: $('send'),
  stop: $('stop'),
  clear: $('clear'),
  speed: $('speed'),
  prefill: $('prefill'),
  memory: $('memory'),
  modelName: $('model-name'),
  threads: $('threads'),
};

const pageStart = performance.now();
let model = null;
let history = [];
let abort = null;
/** Page load to first streamed token (reported once, for the first reply). */
window.ternTimings = { pageToModelMs: null, pageToFirstTokenMs: null };

const mib = (b) => `${(b / 1048576).toFixed(0)} MiB`;

function status(text, error = false) {
  ui.status.textContent = text;
  ui.status.classList.toggle('error', error);
}

function setBusy(loading, generating) {
  ui.loadUrl.disabled = loading || generating;
  ui.file.disabled = loading || generating;
  ui.prompt.disabled = !model || loading || generating;
  ui.send.disabled = !model || loading || generating;
  ui.stop.disabled = !generating;
}

async function load(source, label) {
  setBusy(true, false);
  ui.progress.hidden = false;
  ui.progress.removeAttribute('value');
  status(`Loading ${label}…`);
  try {
    await model?.dispose();
    model = null;
    const t0 = performance.now();
    model = await loadModel(source, {
      cache: ui.cache.checked,
      threads: navigator.hardwareConcurrency || 1,
      onProgress: ({ loaded, total }) => {
        if (total) {
          ui.progress.max = total;
          ui.progress.value = loaded;
          status(`Loading ${label}: ${mib(loaded)} of ${mib(total)}`);
        } else {
          status(`Loading ${label}: ${mib(loaded)}`);
        }
      },
    });
    const info = model.info;
    window.ternTimings.pageToModelMs ??= performance.now() - pageStart;
    const how = info.fromCache
      ? 'from the browser cache'
      : info.cacheError
        ? `downloaded; not kept in the browser cache: ${info.cacheError}`
        : 'downloaded';
    ui.prompt.placeholder = 'Message (Enter to send, Shift+Enter for a new line)';
    status(`${info.name || label} ready (${how}, ${((performance.now() - t0) / 1000).toFixed(1)} s). Say something.`);
    ui.modelName.textContent = `${info.name || label} · ${info.arch}`;
    ui.threads.textContent = info.threaded ? `${info.threads} (wasm threads)` : '1 (page not cross-origin isolated)';
    if (!info.chatTemplate) status('This model has no chat template; replies continue your text as written.');
    history = [];
    ui.messages.replaceChildren();
    await showMemory();
  } catch (e) {
    status(`Could not load ${label}: ${e.message}`, true);
  } finally {
    ui.progress.hidden = true;
    setBusy(false, false);
    ui.prompt.focus();
  }
}

async function showMemory() {
  if (model) ui.memory.textContent = mib(await model.memoryBytes());
}

function bubble(role, text = '') {
  const div = document.createElement('div');
  div.className = `msg ${role}`;
  div.textContent = text;
  ui.messages.append(div);
  ui.messages.scrollTop = ui.messages.scrollHeight;
  return div;
}

function options() {
  const num = (id) => (ui[id] ?? $(id)).valueAsNumber;
  const o = {
    temperature: num('temperature'),
    topK: num('topK'),
    topP: num('topP'),
    minP: num('minP'),
    repeatPenalty: num('repeatPenalty'),
    maxTokens: num('maxTokens'),
  };
  const seed = $('seed').valueAsNumber;
  if (Number.isFinite(seed)) o.seed = seed;
  for (const [k, v] of Object.entries(o)) if (!Number.isFinite(v)) delete o[k];
  return o;
}

async function send(text) {
  const system = $('system').value.trim();
  history.push({ role: 'user', content: text });
  bubble('user', text);
  const out = bubble('assistant');
  out.classList.add('streaming');
  abort = new AbortController();
  setBusy(false, true);
  const messages = [...(system ? [{ role: 'system', content: system }] : []), ...history];
  const t0 = performance.now();
  let n = 0;
  let first = 0;
  try {
    const gen = model.info.chatTemplate
      ? model.chat(messages, { ...options(), signal: abort.signal })
      : model.generate(text, { ...options(), signal: abort.signal });
    for await (const ev of gen) {
      if (ev.type !== 'token') continue;
      n++;
      if (n === 1) {
        first = performance.now();
        window.ternTimings.pageToFirstTokenMs ??= first - pageStart;
        ui.prefill.textContent = `${(first - t0).toFixed(0)} ms to first token`;
      }
      out.textContent += ev.text;
      if (n > 1) ui.speed.textContent = `${((n - 1) / ((performance.now() - first) / 1000)).toFixed(1)} tokens/s`;
      ui.messages.scrollTop = ui.messages.scrollHeight;
    }
    const r = await gen.result;
    history.push({ role: 'assistant', content: r.text });
    const t = r.timings;
    ui.speed.textContent = `${t.tokensPerS.toFixed(1)} tokens/s`;
    ui.prefill.textContent = `${r.usage.promptTokens - r.usage.cachedTokens} new tokens at ${t.promptTokensPerS.toFixed(0)} tokens/s`;
    const meta = document.createElement('span');
    meta.className = 'meta';
    meta.textContent = `${r.usage.completionTokens} tokens · ${t.tokensPerS.toFixed(1)} tokens/s · ${r.finishReason}`;
    out.append(meta);
  } catch (e) {
    out.textContent += `\n[error: ${e.message}]`;
    history.pop();
  } finally {
    out.classList.remove('streaming');
    abort = null;
    setBusy(false, false);
    await showMemory();
    ui.prompt.focus();
  }
}

ui.loadUrl.addEventListener('click', () => load(ui.url.value.trim(), ui.url.value.trim().split('/').pop()));
ui.file.addEventListener('change', () => {
  const files = [...(ui.file.files ?? [])];
  if (files.length === 1 && files[0].name.endsWith('.gguf')) load(files[0], files[0].name);
  // an HF directory's files (config.json, safetensors, tokenizer files…)
  else if (files.length > 0) load(Object.fromEntries(files.map((f) => [f.name, f])), `${files.length} files`);
});
ui.composer.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = ui.prompt.value.trim();
  if (!text || !model || abort) return;
  ui.prompt.value = '';
  send(text);
});
ui.prompt.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey) {
    e.preventDefault();
    ui.composer.requestSubmit();
  }
});
ui.stop.addEventListener('click', () => abort?.abort());
ui.clear.addEventListener('click', async () => {
  abort?.abort();
  history = [];
  ui.messages.replaceChildren();
  await model?.reset();
});

// ?autoload=1 (or a ?model=URL) loads at once: the page-to-first-token path.
const params = new URLSearchParams(location.search);
if (params.has('model')) ui.url.value = params.get('model');
if (params.has('autoload') || params.has('model')) ui.loadUrl.click();
