import { loadModel, TernError, type GenerationResult } from '../../src/index.js';
async function main(): Promise<void> {
  const m = await loadModel(new Uint8Array(10), { threads: 2, onProgress: (p) => console.log(p.loaded, p.total) });
  const gen = m.chat([{ role: 'user', content: 'hi' }], { temperature: 0, maxTokens: 4, stop: ['x'], logitBias: { 5: '-Infinity' } });
  for await (const ev of gen) {
    if (ev.type === 'token') console.log(ev.id, ev.text);
    else console.log(ev.finishReason, ev.usage.cachedTokens);
  }
  const r: GenerationResult = await gen.result;
  const ids: number[] = await m.encode('x');
  console.log(r.timings.tokensPerS, ids, m.info.nCtx, await m.memoryBytes());
  try { await m.decode([1]); } catch (e) { if (e instanceof TernError) console.log(e.code); }
  await m.dispose();
}
main();
