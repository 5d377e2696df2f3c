#!/usr/bin/env python3
"""Which of llama.cpp's attention paths made the shared greedy fixture?

Runs llama-server (bench/peer.sh's build) on each test model with flash
attention on and off (and weight repacking on and off), asks /completion
for the shared prompts' 32 greedy tokens as ../shared/oracle/
llamacpp_greedy.json was made (prompt as token ids, temperature 0, only
the temperature sampler, ignore_eos, no prompt cache, 2 threads), and
prints, per configuration, the first token that differs from the fixture.
Then tern's greedy tokens (`tern run --prompt-ids ... --ignore-eos`, the
default path) on the same prompts: how many of the 32 agree, in a row,
with the fixture and with each configuration.

    python3 bench/llamacpp-attention-paths.py [--models DIR] [--tern BIN] [--peer-runs FILE] [--forced]

--forced instead measures how close tern's probabilities are to the
fixture's, free of near-tie flips: tern is fed the fixture's own tokens
(each step's prompt is the prompt and the fixture's tokens before it) and
its log-probabilities of the fixture's two most likely tokens at every
step are compared with the fixture's: the mean absolute difference of
each, and of the gap between them (what decides a greedy flip).

--peer-runs keeps llama-server's tokens in FILE (made on the first run,
read on later ones), so variants of tern compare without restarting it.
"""
import argparse
import json
import math
import os
import pathlib
import socket
import struct
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURE = ROOT.parent / "shared/oracle/llamacpp_greedy.json"
MODELS = {
    "qwen2.5-coder-0.5b": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    "smollm2-135m": "smollm2-135m-instruct-q4_1.gguf",
}
CONFIGS = {
    "fa on": ["-fa", "on"],
    "fa off": ["-fa", "off"],
    "fa on, no repack": ["-fa", "on", "--no-repack"],
    "fa off, no repack": ["-fa", "off", "--no-repack"],
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, path, body):
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.load(r)


def serve(peer, model, args):
    port = free_port()
    cmd = [f"{peer}/llama-server", "-m", model, "--port", str(port), "--host", "127.0.0.1",
           "-t", "2", "-c", "2048", "-np", "1", *args]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as r:
                if r.status == 200:
                    return p, port
        except OSError:
            time.sleep(0.1)
    p.kill()
    sys.exit(f"llama-server did not start: {cmd}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tern", default=str(ROOT / "target/release/tern"))
    ap.add_argument("--models", default=os.environ.get("TERN_MODELS", str(pathlib.Path.home() / ".cache/tern/models")))
    ap.add_argument("--peer-runs", help="a JSON file caching llama-server's tokens")
    ap.add_argument("--forced", action="store_true", help="compare log-probabilities along the fixture's tokens")
    a = ap.parse_args()
    fixture = json.loads(FIXTURE.read_text())
    print(f"fixture: {fixture['_meta']['engine']}")
    if a.forced:
        return forced(fixture, a.tern, a.models)
    # (model, config) -> {prompt: ids}
    if a.peer_runs and os.path.exists(a.peer_runs):
        runs = {tuple(k.split("|")): v for k, v in json.load(open(a.peer_runs)).items()}
    else:
        runs = peer_runs(fixture, a.models)
        if a.peer_runs:
            json.dump({"|".join(k): v for k, v in runs.items()}, open(a.peer_runs, "w"))
    for (name, label), got in runs.items():
        same = [agree(got[q], rec["generated_ids"]) for q, rec in fixture[name].items()]
        print(f"{name:20} {label:18} agrees with the fixture for {same} tokens")
    tern_runs(fixture, runs, a.tern, a.models)


def peer_runs(fixture, models):
    """llama-server's greedy tokens per (model, configuration) and prompt."""
    peer = subprocess.run(["bash", str(ROOT / "bench/peer.sh")], capture_output=True, text=True, check=True).stdout.strip()
    runs = {}
    for name, file in MODELS.items():
        for label, args in CONFIGS.items():
            p, port = serve(peer, str(pathlib.Path(models) / file), args)
            try:
                got = {}
                for prompt, rec in fixture[name].items():
                    r = post(port, "/completion", {
                        "prompt": rec["prompt_ids"], "n_predict": len(rec["generated_ids"]), "temperature": 0,
                        "samplers": ["temperature"], "ignore_eos": True, "cache_prompt": False,
                        "return_tokens": True, "repeat_penalty": 1.0,
                    })
                    got[prompt] = r["tokens"]
                runs[(name, label)] = got
            finally:
                p.kill()
                p.wait()
    return runs


def tern_runs(fixture, runs, tern, models):
    """tern's agreement with the fixture and with each configuration."""
    fixture_runs = {(name, "fixture"): {q: r["generated_ids"] for q, r in fixture[name].items()} for name in MODELS}
    same = {}  # (model, label) -> tokens in a row that agree, per prompt
    for name, file in MODELS.items():
        for prompt, rec in fixture[name].items():
            out = subprocess.run([tern, "run", "-m", str(pathlib.Path(models) / file), "--prompt-ids",
                                  ",".join(map(str, rec["prompt_ids"])), "-n", str(len(rec["generated_ids"])),
                                  "--temp", "0", "--ignore-eos", "--json", "-t", "2"],
                                 capture_output=True, text=True, check=True)
            ids = json.loads(out.stdout)["ids"]
            for (model, label), got in {**fixture_runs, **runs}.items():
                if model == name:
                    same.setdefault((name, label), []).append(agree(ids, got[prompt]))
    n = sum(len(r["generated_ids"]) for m in MODELS for r in fixture[m].values())
    total = {}
    for (_, label), k in same.items():
        total[label] = total.get(label, 0) + sum(k)
    for label, k in total.items():
        print(f"tern agrees with {label:18}: {k}/{n} tokens (each prompt's run before the first difference)")
    for (name, label), k in same.items():
        print(f"  {name:20} {label:18} {k}")


def forced(fixture, tern, models):
    """Mean |Δ log p| of the fixture's top-2 tokens, tern fed the fixture's tokens."""
    for name, file in MODELS.items():
        d1 = d2 = dgap = 0.0
        steps = 0
        for prompt, rec in fixture[name].items():
            top2 = rec["top2"]
            if len(top2) != len(rec["generated_ids"]):
                # (llama-server gave one entry per piece of text: a token that
                # ends mid-character shares its entry, so steps cannot be matched)
                print(f"{name} {prompt}: {len(top2)} top-2 entries for {len(rec['generated_ids'])} tokens; skipped")
                continue
            for k, pairs in enumerate(top2):
                ids = rec["prompt_ids"] + rec["generated_ids"][:k]
                with tempfile.NamedTemporaryFile() as f:
                    subprocess.run([tern, "run", "-m", str(pathlib.Path(models) / file), "--prompt-ids",
                                    ",".join(map(str, ids)), "-n", "1", "--temp", "0", "--ignore-eos", "--json",
                                    "-t", "2", "--logits-out", f.name], capture_output=True, check=True)
                    raw = open(f.name, "rb").read()
                # the prompt's last position only (-n 1 feeds nothing back)
                logits = struct.unpack(f"<{len(raw) // 4}f", raw)
                mx = max(logits)
                lse = mx + math.log(sum(math.exp(x - mx) for x in logits))
                (p1, i1), (p2, i2) = pairs[0], pairs[1]
                t1, t2 = logits[i1] - lse, logits[i2] - lse
                d1 += abs(t1 - math.log(p1))
                d2 += abs(t2 - math.log(p2))
                dgap += abs((t1 - t2) - (math.log(p1) - math.log(p2)))
                steps += 1
        print(f"{name:20} {steps} steps: mean |Δ log p| top-1 {d1 / steps:.5f}, top-2 {d2 / steps:.5f}, "
              f"gap {dgap / steps:.5f}")


def agree(a, b):
    """Tokens in a row from the start that `a` and `b` share."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))

if __name__ == "__main__":
    main()
