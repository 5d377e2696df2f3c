"""A conversation that grows to the whole context, against a running
OpenAI-compatible server (the official `openai` client, streamed, greedy).

    python bench/long-chat.py BASE_URL CTX [REPLY_TOKENS]

Each turn pastes the next source file of this repository (core/src, in
sorted order, each cut to 6000 characters) and asks what it does; the
replies stay in the history, as an agent re-sends its growing transcript.
Turns go on while the next one fits in CTX positions. One row a turn:
prompt tokens, of them cached (reused from the last turn's cache), time to
first token, decode tokens/s; then one JSON line of totals.
"""
import json
import pathlib
import sys
import time

from openai import OpenAI

base, ctx = sys.argv[1], int(sys.argv[2])
reply = int(sys.argv[3]) if len(sys.argv) > 3 else 48
root = pathlib.Path(__file__).resolve().parent.parent
docs = [p for p in sorted((root / "core/src").rglob("*.rs")) if p.stat().st_size >= 3000]
client = OpenAI(base_url=base, api_key="unused", timeout=1800)
msgs = [{"role": "system", "content": "You are a concise code reviewer. Answer in one sentence."}]
rows, prompt_tokens, chars_per_token, t_start = [], 0, 3.0, time.perf_counter()
print("| turn | file | prompt tokens | cached | TTFT s | prefill t/s | decode t/s |")
print("| ---: | --- | ---: | ---: | ---: | ---: | ---: |")
for turn, path in enumerate(docs, 1):
    text = path.read_text()[:6000]
    # stop before a turn that would not fit: its text at the rate seen so far
    if prompt_tokens + (len(text) + 200) / chars_per_token + 2 * reply + 64 > ctx:
        break
    msgs.append({"role": "user", "content": f"File {path.relative_to(root)}:\n\n{text}\n\nWhat does this file do?"})
    t0 = time.perf_counter()
    ttft, parts, usage = None, [], None
    for ch in client.chat.completions.create(model="tern", messages=msgs, max_tokens=reply, temperature=0,
                                             stream=True, stream_options={"include_usage": True}):
        if ch.choices and ch.choices[0].delta.content and ttft is None:
            ttft = time.perf_counter() - t0
        if ch.choices:
            parts.append(ch.choices[0].delta.content or "")
        if ch.usage:
            usage = ch.usage
    wall = time.perf_counter() - t0
    ttft = ttft or wall  # (a reply with no text: its end is its first token)
    cached = usage.prompt_tokens_details.cached_tokens if usage.prompt_tokens_details else 0
    new = usage.prompt_tokens - prompt_tokens
    chars_per_token = len(text) / max(new, 1)
    prompt_tokens = usage.prompt_tokens
    msgs.append({"role": "assistant", "content": "".join(parts)})
    fresh = usage.prompt_tokens - cached
    decode = (usage.completion_tokens - 1) / (wall - ttft) if usage.completion_tokens > 1 else 0.0
    rows.append({"prompt": usage.prompt_tokens, "cached": cached, "completion": usage.completion_tokens,
                 "ttft_s": ttft, "wall_s": wall})
    print(f"| {turn} | {path.relative_to(root / 'core/src')} | {usage.prompt_tokens} | {cached} | {ttft:.2f} | "
          f"{fresh / ttft:.1f} | {decode:.1f} |", flush=True)
last = rows[-1]
print(json.dumps({
    "turns": len(rows), "final_prompt_tokens": last["prompt"], "final_total_tokens": last["prompt"] + last["completion"],
    "prompt_tokens_sent": sum(r["prompt"] for r in rows), "prompt_tokens_cached": sum(r["cached"] for r in rows),
    "wall_s": time.perf_counter() - t_start, "last_ttft_s": last["ttft_s"],
}))
