"""Eight concurrent streams over four different LoRA adapters against the
same eight over one: `tern serve` with four rank-R adapters loaded
(bench/lora/make.py, seeds 0-3), eight /v1/completions streams at once
(greedy, ignore_eos, N tokens each), each request naming its adapter
(`lora: [{id, scale: 1}]`): all id 0, then ids 0,1,2,3,0,1,2,3 — the
runs alternating, R times; the medians of tokens/s over the wall time of
each round, and their ratio.

    cargo build --release -p tern-llm --features serve
    python3 bench/lora/mixed.py BASE.gguf ADAPTER0 ADAPTER1 ADAPTER2 ADAPTER3 [-n 64] [-r 5] [-t 2]
"""
import argparse
import json
import statistics
import subprocess
import threading
import time
import urllib.request


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)


def round_(port, ids, n):
    out = [None] * len(ids)

    def one(i, a):
        body = {"prompt": f"Story {i}: once upon a time", "max_tokens": n, "temperature": 0, "ignore_eos": True,
                "lora": [{"id": a, "scale": 1.0}]}
        out[i] = post(port, body)["usage"]["completion_tokens"]

    t0 = time.perf_counter()
    ths = [threading.Thread(target=one, args=(i, a)) for i, a in enumerate(ids)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    return sum(out) / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("adapters", nargs=4)
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("-r", type=int, default=5)
    ap.add_argument("-t", type=int, default=2)
    a = ap.parse_args()
    port = 18731
    cmd = ["target/release/tern", "serve", "-m", a.model, "--port", str(port), "-t", str(a.t), "--parallel", "8"]
    for p in a.adapters:
        cmd += ["--lora-scaled", p, "0"]
    srv = subprocess.Popen(cmd, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if srv.poll() is not None:
                raise SystemExit(f"tern serve exited ({srv.returncode}): build it with --features serve")
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except Exception:
                time.sleep(0.2)
        round_(port, [0] * 8, 8)  # warm-up
        one, four = [], []
        for _ in range(a.r):
            one.append(round_(port, [0] * 8, a.n))
            four.append(round_(port, [0, 1, 2, 3] * 2, a.n))
        m1, m4 = statistics.median(one), statistics.median(four)
        print(f"8 streams × {a.n} tokens, {a.t} threads: one adapter {m1:.1f} tok/s, four adapters {m4:.1f} tok/s, "
              f"ratio {m4 / m1:.3f} (runs: {[round(x, 1) for x in one]} / {[round(x, 1) for x in four]})")
    finally:
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    main()
