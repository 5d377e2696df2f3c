"""Test-only: drive `tern serve` with the official `openai` package.

    python openai_client.py basic BASE_URL
        chat and completions, streamed and not, greedy; prints one JSON object
    python openai_client.py structured BASE_URL
        chat.completions.parse with a Pydantic model, a streamed json_object,
        greedy logprobs; prints one JSON object
    python openai_client.py tools BASE_URL
        a tool-call round trip with tool_choice "required" (call, tool
        message, answer), a named function streamed; prints one JSON object
    python openai_client.py load BASE_URL N TOKENS
        N different prompts, each alone (not streamed), then all N at once as
        concurrent streams; prints each pair of texts, throughput, TTFT p50/p99
    python openai_client.py embeddings BASE_URL
        /v1/embeddings: base64 (the client's default) and float, dimensions,
        token-id input, bad inputs; prints one JSON object
    python openai_client.py reasoning BASE_URL
        a server whose chat template thinks (<think>…</think>): a reply held
        to a thinking block and an answer by a regex, whole and streamed
        (reasoning_content apart, as llama-server), with
        chat_template_kwargs, reasoning_effort and reasoning_format through
        extra_body; prints one JSON object
    python openai_client.py responses BASE_URL
        client.responses.create: whole and streamed, previous_response_id
        (and an unknown one), a required function call answered with a
        function_call_output, text.format json_schema; prints one JSON object
    python openai_client.py load_chat BASE_URL N TOKENS SCHEMA.json|-
        N chat requests at once as streams, under a JSON Schema (or free);
        prints throughput, TTFT p50 and how many replies are whole JSON
"""
import asyncio
import json
import sys
import time

from openai import AsyncOpenAI, OpenAI

TOPICS = ["the sea", "a city", "winter", "a robot", "the moon", "coffee", "a library", "rain",
          "a garden", "the desert", "a violin", "trains", "a lighthouse", "snow", "a market", "the wind"]


def basic(base: str) -> None:
    c = OpenAI(base_url=base, api_key="unused")
    msgs = [{"role": "user", "content": "What is the capital of France?"}]
    chat = c.chat.completions.create(model="tern", messages=msgs, max_tokens=16, temperature=0)
    parts, finish = [], None
    for ch in c.chat.completions.create(model="tern", messages=msgs, max_tokens=16, temperature=0, stream=True):
        if ch.choices:
            parts.append(ch.choices[0].delta.content or "")
            finish = ch.choices[0].finish_reason or finish
    comp = c.completions.create(model="tern", prompt="The capital of France is", max_tokens=8, temperature=0)
    stream_usage, texts = None, []
    for ch in c.completions.create(model="tern", prompt="The capital of France is", max_tokens=8, temperature=0,
                                   stream=True, stream_options={"include_usage": True}):
        if ch.choices:
            texts.append(ch.choices[0].text)
        if ch.usage:
            stream_usage = ch.usage.completion_tokens
    stopped = c.completions.create(model="tern", prompt="The capital of France is", max_tokens=8, temperature=0,
                                   stop=["\n"])
    seeded = [c.completions.create(model="tern", prompt="Once upon a time", max_tokens=12, temperature=0.9,
                                   seed=42).choices[0].text for _ in range(2)]
    models = [m.id for m in c.models.list().data]
    print(json.dumps({
        "chat": chat.choices[0].message.content, "chat_finish": chat.choices[0].finish_reason,
        "chat_usage": [chat.usage.prompt_tokens, chat.usage.completion_tokens],
        "chat_stream": "".join(parts), "chat_stream_finish": finish,
        "completion": comp.choices[0].text, "completion_stream": "".join(texts), "stream_usage": stream_usage,
        "stopped": stopped.choices[0].text, "stopped_finish": stopped.choices[0].finish_reason,
        "seeded": seeded, "models": models,
    }))


def responses(base: str) -> None:
    import openai
    c = OpenAI(base_url=base, api_key="unused")
    kw = dict(model="tern", instructions="Answer briefly.", max_output_tokens=16, temperature=0)
    first = c.responses.create(input="What is the capital of France?", **kw)
    deltas, types, completed = [], [], None
    for ev in c.responses.create(input="What is the capital of France?", stream=True, **kw):
        types.append(ev.type)
        if ev.type == "response.output_text.delta":
            deltas.append(ev.delta)
        if ev.type == "response.completed":
            completed = ev.response
    second = c.responses.create(input="And of Italy?", previous_response_id=first.id, **kw)
    try:
        c.responses.create(input="x", previous_response_id="resp-nope", **kw)
        unknown = None
    except openai.NotFoundError as e:
        unknown = e.status_code
    weather = {"type": "function", "name": "get_weather", "description": "The current weather in a city",
               "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    call = c.responses.create(model="tern", input="What is the weather like in Paris today?", tools=[weather],
                              tool_choice="required", max_output_tokens=64, temperature=0)
    fc = [o for o in call.output if o.type == "function_call"]
    answer = c.responses.create(model="tern", previous_response_id=call.id, tools=[weather], max_output_tokens=24,
                                temperature=0, input=[{"type": "function_call_output", "call_id": fc[0].call_id,
                                                       "output": '{"temperature": 21}'}]) if fc else None
    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
              "additionalProperties": False}
    js = c.responses.create(model="tern", input="Name a city in Japan as JSON.", max_output_tokens=32, temperature=0,
                            text={"format": {"type": "json_schema", "name": "city", "schema": schema, "strict": True}})
    print(json.dumps({
        "text": first.output_text, "status": first.status, "usage": first.usage.input_tokens,
        "streamed": "".join(deltas), "first_event": types[0], "last_event": types[-1],
        "completed_text": completed.output_text if completed else None,
        "second": second.output_text, "second_usage": second.usage.input_tokens, "unknown": unknown,
        "calls": [{"name": o.name, "arguments": json.loads(o.arguments)} for o in fc],
        "answer": answer.output_text if answer else None, "json": js.output_text,
    }))


def reasoning(base: str) -> None:
    c = OpenAI(base_url=base, api_key="unused")
    msgs = [{"role": "user", "content": "What is two and two?"}]
    # the reply's shape held by a regex, its words the model's
    shape = {"grammar": 'root ::= "<think>\\n" [a-z ]{3,24} "\\n</think>\\n\\n" [A-Z] [a-z]{2,8} "."'}
    kw = dict(model="tern", messages=msgs, max_tokens=48, temperature=0)
    whole = c.chat.completions.create(**kw, extra_body=shape)
    r, t = [], []
    for ch in c.chat.completions.create(**kw, stream=True, extra_body=shape):
        if ch.choices:
            d = ch.choices[0].delta
            r.append((d.model_extra or {}).get("reasoning_content") or "")
            t.append(d.content or "")
    inline = c.chat.completions.create(**kw, extra_body=dict(shape, reasoning_format="none"))
    off = c.chat.completions.create(**kw, extra_body={"chat_template_kwargs": {"enable_thinking": False}})
    effort = c.chat.completions.create(**kw, reasoning_effort="low", extra_body=shape)
    m = whole.choices[0].message
    print(json.dumps({
        "reasoning": (m.model_extra or {}).get("reasoning_content"), "content": m.content,
        "stream_reasoning": "".join(r), "stream_content": "".join(t),
        "inline": inline.choices[0].message.content,
        "inline_reasoning": (inline.choices[0].message.model_extra or {}).get("reasoning_content"),
        "prompt_tokens": whole.usage.prompt_tokens, "off_prompt_tokens": off.usage.prompt_tokens,
        "effort_content": effort.choices[0].message.content,
    }))


def structured(base: str) -> None:
    from pydantic import BaseModel

    class City(BaseModel):
        name: str
        country: str
        population: int

    c = OpenAI(base_url=base, api_key="unused")
    msgs = [{"role": "user", "content": "Describe Paris as JSON."}]
    parsed = c.chat.completions.parse(model="tern", messages=msgs, max_tokens=80, temperature=0.8, seed=3,
                                      response_format=City)
    city = parsed.choices[0].message.parsed
    parts = []
    for ch in c.chat.completions.create(model="tern", messages=msgs, max_tokens=80, temperature=0.8, seed=4,
                                        stream=True, response_format={"type": "json_object"}):
        if ch.choices:
            parts.append(ch.choices[0].delta.content or "")
    lp = c.chat.completions.create(model="tern", messages=[{"role": "user", "content": "What is the capital of France?"}],
                                   max_tokens=12, temperature=0, logprobs=True, top_logprobs=2)
    streamed_lp = []
    for ch in c.chat.completions.create(model="tern", messages=[{"role": "user", "content": "What is the capital of France?"}],
                                        max_tokens=12, temperature=0, logprobs=True, top_logprobs=2, stream=True):
        if ch.choices and ch.choices[0].logprobs:
            streamed_lp += [t.logprob for t in ch.choices[0].logprobs.content]
    print(json.dumps({
        "parsed_type": type(city).__name__, "parsed": city.model_dump() if city else None,
        "parsed_finish": parsed.choices[0].finish_reason,
        "json_object": "".join(parts),
        "logprobs": [{"token": t.token, "bytes": t.bytes, "logprob": t.logprob,
                      "top": [[x.token, x.logprob] for x in t.top_logprobs]} for t in lp.choices[0].logprobs.content],
        "logprobs_text": lp.choices[0].message.content,
        "streamed_logprobs": streamed_lp,
    }))


def tools(base: str) -> None:
    c = OpenAI(base_url=base, api_key="unused")
    weather = {"type": "function", "function": {
        "name": "get_weather", "description": "The current weather in a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"},
                                                        "unit": {"enum": ["celsius", "fahrenheit"]}},
                       "required": ["city", "unit"], "additionalProperties": False}}}
    clock = {"type": "function", "function": {
        "name": "get_time", "description": "The time in a timezone",
        "parameters": {"type": "object", "properties": {"tz": {"type": "string"}}, "required": ["tz"]}}}
    fns = [weather, clock]

    def calls_of(m):
        return [{"name": t.function.name, "arguments": json.loads(t.function.arguments)} for t in m.tool_calls or []]

    def streamed(**kw):
        calls, finish, content = {}, None, ""
        for ch in c.chat.completions.create(model="tern", tools=fns, stream=True, **kw):
            if ch.choices:
                d = ch.choices[0].delta
                content += d.content or ""
                for t in d.tool_calls or []:
                    e = calls.setdefault(t.index, {"name": "", "arguments": ""})
                    e["name"] += t.function.name or ""
                    e["arguments"] += t.function.arguments or ""
                finish = ch.choices[0].finish_reason or finish
        return [{"name": e["name"], "arguments": json.loads(e["arguments"])} for _, e in sorted(calls.items())], \
            finish, content

    msgs = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = c.chat.completions.create(model="tern", messages=msgs, tools=fns, tool_choice="required",
                                      max_tokens=80, temperature=0.7, seed=1, parallel_tool_calls=False)
    m = first.choices[0].message
    msgs.append({"role": "assistant", "content": m.content, "tool_calls": [t.model_dump() for t in m.tool_calls or []]})
    for t in m.tool_calls or []:
        msgs.append({"role": "tool", "tool_call_id": t.id, "content": json.dumps({"temperature": 21, "sky": "clear"})})
    # the tool's answer taken back: a plain reply
    answer = c.chat.completions.create(model="tern", messages=msgs, tools=fns, tool_choice="none", max_tokens=60,
                                       temperature=0)
    named, named_finish, _ = streamed(messages=[{"role": "user", "content": "Time in Tokyo?"}], max_tokens=160,
                                      temperature=0, tool_choice={"type": "function", "function": {"name": "get_time"}})
    both = [{"role": "user", "content": "What is the weather in Paris and the time in Tokyo?"}]
    parallel = c.chat.completions.create(model="tern", messages=both, tools=fns, tool_choice="required",
                                         max_tokens=120, temperature=0)
    ask = [{"role": "user", "content": "What is the weather like in Paris today?"}]
    auto = c.chat.completions.create(model="tern", messages=ask, tools=fns, max_tokens=80, temperature=0)
    auto_streamed, auto_streamed_finish, auto_streamed_content = streamed(messages=ask, max_tokens=80, temperature=0)
    both_auto = c.chat.completions.create(model="tern", messages=both, tools=fns, max_tokens=120, temperature=0)
    plain = c.chat.completions.create(model="tern", messages=[{"role": "user", "content": "Write a haiku about the sea."}],
                                      tools=fns, max_tokens=40, temperature=0)
    print(json.dumps({
        "finish": first.choices[0].finish_reason, "calls": calls_of(m), "ids": [t.id for t in m.tool_calls or []],
        "answer": answer.choices[0].message.content, "answer_calls": calls_of(answer.choices[0].message),
        "answer_finish": answer.choices[0].finish_reason,
        "streamed": named, "streamed_finish": named_finish,
        "parallel": calls_of(parallel.choices[0].message), "parallel_finish": parallel.choices[0].finish_reason,
        "auto": calls_of(auto.choices[0].message), "auto_finish": auto.choices[0].finish_reason,
        "auto_content": auto.choices[0].message.content,
        "auto_streamed": auto_streamed, "auto_streamed_finish": auto_streamed_finish,
        "auto_streamed_content": auto_streamed_content,
        "parallel_auto": calls_of(both_auto.choices[0].message),
        "plain": plain.choices[0].message.content, "plain_finish": plain.choices[0].finish_reason,
    }))


def shared_text(words: int) -> str:
    """A system text of about `words` words (~1.3 tokens each), the same every time."""
    rules = [f"Rule {i}: when a reader asks about {TOPICS[i % len(TOPICS)]}, answer kindly, briefly and only "
             f"with what you know for certain about {TOPICS[(i * 7) % len(TOPICS)]}." for i in range(words // 20 + 1)]
    return "You are the assistant of a small library. " + " ".join(rules) + "\n\n"


async def load(base: str, n: int, tokens: int, shared_words: int = 0) -> None:
    """N prompts alone, then all at once as streams; with `shared_words`,
    every prompt starts with the same system text of that many words."""
    c = AsyncOpenAI(base_url=base, api_key="unused", max_retries=0, timeout=600)
    head = shared_text(shared_words) if shared_words else ""
    prompts = [f"{head}A short poem about {TOPICS[i % len(TOPICS)]}, number {i}:" for i in range(n)]
    alone = []
    for p in prompts:
        r = await c.completions.create(model="tern", prompt=p, max_tokens=tokens, temperature=0)
        alone.append(r.choices[0].text)

    async def one(p):
        t0 = time.perf_counter()
        ttft, parts = None, []
        async for ch in await c.completions.create(model="tern", prompt=p, max_tokens=tokens, temperature=0,
                                                   stream=True):
            if ch.choices and ch.choices[0].text and ttft is None:
                ttft = time.perf_counter() - t0
            if ch.choices:
                parts.append(ch.choices[0].text)
        return "".join(parts), ttft

    t0 = time.perf_counter()
    together = await asyncio.gather(*(one(p) for p in prompts))
    wall = time.perf_counter() - t0
    ttfts = sorted(t for _, t in together if t is not None)
    pct = lambda q: ttfts[min(len(ttfts) - 1, int(len(ttfts) * q))]
    print(json.dumps({
        "alone": alone, "together": [t for t, _ in together], "wall_s": wall,
        "tokens_per_s": n * tokens / wall, "ttft_p50_s": pct(0.5), "ttft_p99_s": pct(0.99),
    }))


def embeddings(base: str) -> None:
    c = OpenAI(base_url=base, api_key="unused", max_retries=0)
    texts = ["A man is eating food.", "Le chat est assis dehors.", "def add(a, b): return a + b"]
    default = c.embeddings.create(model="all-minilm-l6-v2", input=texts)  # the client asks for base64
    floats = c.embeddings.create(model="all-minilm-l6-v2", input=texts, encoding_format="float")
    short = c.embeddings.create(model="all-minilm-l6-v2", input=texts[0], dimensions=64, encoding_format="float")
    ids = c.embeddings.create(model="all-minilm-l6-v2", input=[[101, 2023, 2003, 1037, 3231, 102]], encoding_format="float")
    errors = {}
    for name, kw in {"empty": {"input": []}, "too_many": {"input": ["x"] * 10000},
                     "bad_dims": {"input": "x", "dimensions": 1000}}.items():
        try:
            c.embeddings.create(model="all-minilm-l6-v2", **kw)
            errors[name] = None
        except Exception as e:  # openai.BadRequestError
            errors[name] = [getattr(e, "status_code", None), str(e)]
    print(json.dumps({
        "default": [d.embedding for d in default.data], "float": [d.embedding for d in floats.data],
        "indices": [d.index for d in floats.data], "usage": floats.usage.model_dump(), "model": floats.model,
        "short": short.data[0].embedding, "ids": ids.data[0].embedding, "errors": errors,
    }))


async def load_chat(base: str, n: int, tokens: int, schema_path: str) -> None:
    """n chat requests at once as streams (greedy, usage in the last chunk),
    under the JSON Schema at schema_path (or free if "-"): completion tokens
    per second of wall time, TTFT, and how many replies are whole JSON."""
    c = AsyncOpenAI(base_url=base, api_key="unused", max_retries=0, timeout=600)
    extra = {}
    if schema_path != "-":
        with open(schema_path, encoding="utf-8") as f:
            schema = json.load(f)
        extra["response_format"] = {"type": "json_schema", "json_schema": {"name": "people", "schema": schema}}

    async def one(i):
        msgs = [{"role": "user", "content": f"List people with addresses as JSON ({TOPICS[i % len(TOPICS)]} fans)."}]
        t0 = time.perf_counter()
        ttft, parts, used, finish = None, [], 0, None
        async for ch in await c.chat.completions.create(model="tern", messages=msgs, max_tokens=tokens, temperature=0,
                                                        stream=True, stream_options={"include_usage": True}, **extra):
            if ch.choices and ch.choices[0].delta.content:
                ttft = ttft if ttft is not None else time.perf_counter() - t0
                parts.append(ch.choices[0].delta.content)
            if ch.choices and ch.choices[0].finish_reason:
                finish = ch.choices[0].finish_reason
            if ch.usage:
                used = ch.usage.completion_tokens
        return "".join(parts), ttft, used, finish

    await one(0)  # warm-up: a server may build its grammar machinery once
    t0 = time.perf_counter()
    done = await asyncio.gather(*(one(i) for i in range(n)))
    wall = time.perf_counter() - t0

    def whole_json(text):
        try:
            json.loads(text)
            return True
        except ValueError:
            return False

    ttfts = sorted(t for _, t, _, _ in done if t is not None)
    print(json.dumps({
        "tokens": sum(u for _, _, u, _ in done), "wall_s": wall,
        "tokens_per_s": sum(u for _, _, u, _ in done) / wall, "ttft_p50_s": ttfts[len(ttfts) // 2],
        "whole_json": sum(whole_json(t) for t, _, _, _ in done),
        "length": sum(f == "length" for _, _, _, f in done), "texts": [t for t, _, _, _ in done],
    }))


if __name__ == "__main__":
    if sys.argv[1] == "basic":
        basic(sys.argv[2])
    elif sys.argv[1] == "structured":
        structured(sys.argv[2])
    elif sys.argv[1] == "tools":
        tools(sys.argv[2])
    elif sys.argv[1] == "responses":
        responses(sys.argv[2])
    elif sys.argv[1] == "reasoning":
        reasoning(sys.argv[2])
    elif sys.argv[1] == "embeddings":
        embeddings(sys.argv[2])
    elif sys.argv[1] == "load_chat":
        asyncio.run(load_chat(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]))
    else:
        asyncio.run(load(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]) if len(sys.argv) > 5 else 0))
