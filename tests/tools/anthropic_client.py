"""Test-only: drive `tern serve`'s /v1/messages with the official
`anthropic` package (scripts/install-test-python.sh).

    python anthropic_client.py BASE_URL
        a message whole and streamed (greedy), count_tokens, a forced tool
        call answered with a tool_result, a missing max_tokens; prints one
        JSON object
"""
import json
import sys

import anthropic


def main(base: str) -> None:
    c = anthropic.Anthropic(base_url=base, api_key="unused")
    msgs = [{"role": "user", "content": "What is the capital of France?"}]
    kw = dict(model="tern", max_tokens=16, system="Answer briefly.", extra_body={"temperature": 0})
    whole = c.messages.create(messages=msgs, **kw)
    with c.messages.stream(messages=msgs, **kw) as s:
        streamed = "".join(s.text_stream)
        final = s.get_final_message()
    # a stop sequence met: the reply's second word
    word = whole.content[0].text.split()[1]
    stopped = c.messages.create(messages=msgs, stop_sequences=["\u2603", word], **kw)
    counted = c.messages.count_tokens(model="tern", messages=msgs, system="Answer briefly.")
    weather = {"name": "get_weather", "description": "The current weather in a city",
               "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
    ask = [{"role": "user", "content": "What is the weather like in Paris today?"}]
    call = c.messages.create(model="tern", max_tokens=64, extra_body={"temperature": 0}, messages=ask, tools=[weather],
                             tool_choice={"type": "any"})
    use = [b for b in call.content if b.type == "tool_use"]
    answer = None
    if use:
        ask += [{"role": "assistant", "content": [b.model_dump() for b in call.content]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use[0].id,
                                              "content": '{"temperature": 21, "sky": "clear"}'}]}]
        answer = c.messages.create(model="tern", max_tokens=24, extra_body={"temperature": 0}, messages=ask, tools=[weather])
    with c.messages.stream(model="tern", max_tokens=64, extra_body={"temperature": 0}, messages=ask[:1], tools=[weather],
                           tool_choice={"type": "tool", "name": "get_weather"}) as s:
        streamed_call = s.get_final_message()
    try:
        # (the client requires max_tokens itself: the raw request, to see the server's answer)
        c.post("/v1/messages", body={"model": "tern", "messages": msgs}, cast_to=object)
        missing = None
    except anthropic.BadRequestError as e:
        missing = str(e)
    print(json.dumps({
        "text": whole.content[0].text, "stop_reason": whole.stop_reason, "usage": [whole.usage.input_tokens, whole.usage.output_tokens],
        "streamed": streamed, "stream_stop_reason": final.stop_reason,
        "count": counted.input_tokens, "word": word,
        "stopped": [b.text for b in stopped.content], "stopped_reason": stopped.stop_reason,
        "stopped_sequence": stopped.stop_sequence,
        "call_stop": call.stop_reason, "calls": [{"name": b.name, "input": b.input} for b in use],
        "answer": answer.content[0].text if answer and answer.content else None,
        "streamed_call": [{"name": b.name, "input": b.input} for b in streamed_call.content if b.type == "tool_use"],
        "missing_max_tokens": missing,
    }))


if __name__ == "__main__":
    main(sys.argv[1])
