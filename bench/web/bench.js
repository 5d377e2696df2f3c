// One engine's pp and tg tokens/s in this page (the driver opens a page per
// engine, model and thread count). pp: `pp` prompt tokens in one batch on an
// empty cache; tg: `tg` tokens decoded one at a time after it. Repeated
// `reps` times; every run's figures are returned (the driver takes medians).

const log = (s) => (document.getElementById('log').textContent += `${s}\n`);

/** Token ids for a pp test: a fixed text's ids, repeated to `n`. */
function promptIds(ids, n) {
  const out = [];
  while (out.length < n) out.push(...ids);
  return out.slice(0, n);
}

const TEXT =
  'The history of computing is the story of people building machines to extend the reach of thought: ' +
  'from tally sticks and the abacus to mechanical calculators, punched cards, vacuum tubes and transistors.';

window.benchTern = async (url, threads, pp, tg, reps) => {
  const { loadModel } = await import('/npm/src/index.js');
  const model = await loadModel(url, { threads, contextSize: pp + tg + 8 });
  const ids = promptIds(await model.encode(TEXT, { addSpecial: false }), pp);
  const runs = [];
  for (let r = 0; r < reps; r++) {
    await model.reset();
    const a = await model.generate(ids, { maxTokens: 1, temperature: 0 }).result;
    await model.reset();
    const b = await model.generate(ids.slice(0, 8), { maxTokens: tg + 1, temperature: 0, ignoreEos: true }).result;
    runs.push({ pp: (pp / a.timings.prefillMs) * 1e3, tg: b.timings.tokensPerS });
    log(`tern r${r}: pp ${runs.at(-1).pp.toFixed(1)} tg ${runs.at(-1).tg.toFixed(1)}`);
  }
  const info = { threads: model.info.threads, threaded: model.info.threaded };
  await model.dispose();
  return { runs, info, ids };
};

window.benchWllama = async (url, threads, pp, tg, reps, ids) => {
  const { Wllama } = await import('/node_modules/@wllama/wllama/esm/index.js');
  const base = '/node_modules/@wllama/wllama/esm';
  const w = new Wllama(
    { 'single-thread/wllama.wasm': `${base}/single-thread/wllama.wasm`, 'multi-thread/wllama.wasm': `${base}/multi-thread/wllama.wasm` },
    { suppressNativeLog: true },
  );
  await w.loadModelFromUrl(new URL(url, location.href).href, { n_threads: threads, n_ctx: pp + tg + 8, n_batch: Math.max(pp, 8) });
  const runs = [];
  for (let r = 0; r < reps; r++) {
    await w.kvClear();
    let t0 = performance.now();
    await w.decode(ids, {});
    const ppMs = performance.now() - t0;
    await w.kvClear();
    await w.decode(ids.slice(0, 8), {});
    let tok = ids[8];
    t0 = performance.now();
    for (let i = 0; i < tg; i++) await w.decode([tok], {});
    const tgMs = performance.now() - t0;
    runs.push({ pp: (pp / ppMs) * 1e3, tg: (tg / tgMs) * 1e3 });
    log(`wllama r${r}: pp ${runs.at(-1).pp.toFixed(1)} tg ${runs.at(-1).tg.toFixed(1)}`);
  }
  const info = { threads: w.getNumThreads(), threaded: w.isMultithread() };
  await w.exit();
  return { runs, info };
};

window.ready = true;

/**
 * The mask's cost (bench-mask.js): tern's per-token p50 for a chat reply,
 * unconstrained (EOS ignored, so as long) and under the JSON Schema at
 * `schemaUrl`, alternating, one pair a seed, after a warm-up that builds
 * the grammar compiler.
 */
window.benchMask = async (url, threads, schemaUrl, tokens, seeds) => {
  const { loadModel } = await import('/npm/src/index.js');
  const schema = await (await fetch(schemaUrl)).json();
  const model = await loadModel(url, { threads });
  const messages = [{ role: 'user', content: 'List people with addresses as JSON.' }];
  const responseFormat = { type: 'json_schema', json_schema: { name: 'people', schema } };
  await model.chat(messages, { maxTokens: 4, responseFormat }).result;
  const free = [];
  const constrained = [];
  for (let seed = 0; seed < seeds; seed++) {
    const opts = { maxTokens: tokens, temperature: 0.8, seed };
    const a = await model.chat(messages, { ...opts, ignoreEos: true }).result;
    const b = await model.chat(messages, { ...opts, responseFormat }).result;
    free.push(a.timings.perTokenP50Ms);
    constrained.push(b.timings.perTokenP50Ms);
    log(`seed ${seed}: free ${free.at(-1).toFixed(2)} ms, constrained ${constrained.at(-1).toFixed(2)} ms (${b.tokens.length} tokens)`);
  }
  const info = { threads: model.info.threads, threaded: model.info.threaded };
  await model.dispose();
  return { free, constrained, info };
};

/**
 * Embeddings/s (bench-embed.js): tern's `loadEncoder` embedding `texts` in
 * one call, after a warm-up call; the vectors' first text is returned for
 * the driver's check against wllama's.
 */
window.benchTernEmbed = async (url, threads, texts) => {
  const { loadEncoder } = await import('/npm/src/index.js');
  const enc = await loadEncoder(url, { threads });
  await enc.embed(texts.slice(0, 8));
  const t0 = performance.now();
  const v = await enc.embed(texts);
  const rate = (texts.length / (performance.now() - t0)) * 1e3;
  log(`tern: ${rate.toFixed(1)} embeddings/s`);
  enc.dispose();
  return { rate, first: Array.from(v[0]) };
};

/**
 * The same with wllama: an embeddings context (mean pooling, as the GGUF
 * says), `createEmbedding` per text (its API embeds one text a call).
 */
window.benchWllamaEmbed = async (url, threads, texts) => {
  const { Wllama } = await import('/node_modules/@wllama/wllama/esm/index.js');
  const base = '/node_modules/@wllama/wllama/esm';
  const w = new Wllama(
    { 'single-thread/wllama.wasm': `${base}/single-thread/wllama.wasm`, 'multi-thread/wllama.wasm': `${base}/multi-thread/wllama.wasm` },
    { suppressNativeLog: true },
  );
  await w.loadModelFromUrl(new URL(url, location.href).href, {
    n_threads: threads, n_ctx: 512, n_batch: 512, embeddings: true, pooling_type: 'LLAMA_POOLING_TYPE_MEAN',
  });
  for (const t of texts.slice(0, 8)) await w.createEmbedding(t);
  const t0 = performance.now();
  const first = await w.createEmbedding(texts[0]);
  for (const t of texts.slice(1)) await w.createEmbedding(t);
  const rate = (texts.length / (performance.now() - t0)) * 1e3;
  log(`wllama: ${rate.toFixed(1)} embeddings/s`);
  await w.exit();
  return { rate, first };
};

/**
 * The same with transformers.js (onnxruntime-web's wasm backend): a
 * feature-extraction pipeline over `dir` in /models/ (config, tokenizer and
 * onnx/model_quantized.onnx), mean pooled and normalised as
 * sentence-transformers does, all `texts` in one call as tern's.
 */
window.benchTjsEmbed = async (dir, threads, texts) => {
  const { pipeline, env } = await import('/tjs/@huggingface/transformers/dist/transformers.js');
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = '/models/';
  env.useBrowserCache = false;
  env.backends.onnx.wasm.numThreads = threads;
  env.backends.onnx.wasm.wasmPaths = '/tjs/onnxruntime-web/dist/';
  const extract = await pipeline('feature-extraction', dir, { dtype: 'q8', device: 'wasm' });
  const opts = { pooling: 'mean', normalize: true };
  await extract(texts.slice(0, 8), opts);
  const t0 = performance.now();
  const out = await extract(texts, opts);
  const rate = (texts.length / (performance.now() - t0)) * 1e3;
  log(`transformers.js: ${rate.toFixed(1)} embeddings/s`);
  const dim = out.dims[1];
  await extract.dispose();
  return { rate, first: Array.from(out.data.slice(0, dim)) };
};
