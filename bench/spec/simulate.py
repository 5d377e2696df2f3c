#!/usr/bin/env python3
"""Speculative decoding's steps, simulated: which draft-length rule pays.

Greedy output does not depend on drafting, and an n-gram draft depends only
on the tokens before it, so one plain run of each prompt fixes every step a
rule would take. This replays `bench/spec/prompts.jsonl`'s greedy outputs
under tern's n-gram lookup (8 down to 2 tokens, the latest occurrence) with
a draft-length rule, and prices each step with a measured cost curve: the
milliseconds of a forward of n rows, every row's logits (bench/NOTES
"Issue 48 (second steps)"). It prints the ratio plain/speculative, the
steps, and the drafted and accepted tokens, as `tern bench --spec ngram`
reports them — without the timing noise, so rules can be compared.

    bench/spec/simulate.py MODEL.gguf [--threads 2] [--n 128]

The rule replayed is `Speculation::record`'s (core/src/speculative/mod.rs):
keep the two in step when either changes.
"""

import argparse
import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# ms of one forward of n rows (all rows' logits), Qwen2.5-Coder-0.5B Q4_K_M,
# 2 threads, this host (bench/NOTES "Issue 48 (second steps)"); past 16 a
# rough slope
COST_2T = {1: 31, 2: 33, 3: 39, 4: 45, 5: 51, 6: 55, 7: 58, 8: 61, 9: 70, 10: 75, 11: 77, 12: 79, 13: 83,
           14: 86, 15: 89, 16: 92}


def cost(n):
    return COST_2T[n] if n in COST_2T else COST_2T[16] + (n - 16) * 5


def ngram_draft(seq, max_len, n_max=8, n_min=2):
    """tern's `Ngram`: what followed the latest earlier occurrence of the
    longest tail of 8 … 2 tokens."""
    size = len(seq)
    for n in range(min(n_max, size - 1), n_min - 1, -1):
        tail = seq[size - n:]
        for j in range(size - n - 1, -1, -1):
            if seq[j:j + n] == tail:
                return seq[j + n:j + n + max_len]
    return []


class Rule:
    """`Speculation`'s draft length and pauses (n_max 8, n_min 0)."""

    def __init__(self, n_max=8, min_k=2, grace=2):
        self.n_max, self.min_k, self.grace = n_max, min_k, grace
        self.k, self.rest, self.misses = n_max, 0, 0

    def length(self):
        if self.rest > 0:
            self.rest -= 1
            return 0
        return self.k

    def record(self, drafted, accepted):
        if drafted == 0:
            return
        k = self.k * 2 if accepted == drafted else max(accepted + 1, self.k // 2, self.min_k)
        self.k = max(1, min(k, self.n_max))
        if accepted == 0:
            self.misses = min(self.misses + 1, self.grace + 6)
            self.rest = (1 << max(self.misses - self.grace, 0)) - 1
        else:
            self.misses = 0


def replay(prompt, ids, rule, max_tokens):
    """(plain ms, speculative ms, steps, drafted, accepted) of one output."""
    hist, i, t, steps, drafted, accepted = list(prompt), 1, 0.0, 0, 0, 0
    while i < len(ids):
        room = max_tokens - i - 1
        k = min(rule.length(), max(room, 0))
        draft = ngram_draft(hist + [ids[i - 1]], k) if k > 0 else []
        a = 0
        while a < len(draft) and i + a < len(ids) and draft[a] == ids[i + a]:
            a += 1
        t += cost(1 + len(draft))
        steps, drafted, accepted = steps + 1, drafted + len(draft), accepted + a
        rule.record(len(draft), a)
        hist += ids[i - 1:i + a]
        i += a + 1
    return (len(ids) - 1) * cost(1), t, steps, drafted, accepted


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('model')
    ap.add_argument('--threads', default='2')
    ap.add_argument('--n', type=int, default=128)
    o = ap.parse_args()
    tern = ROOT / 'target/release/tern'
    totals = {}
    for line in open(ROOT / 'bench/spec/prompts.jsonl'):
        p = json.loads(line)
        out = subprocess.run([str(tern), 'run', '-m', o.model, '--chat', '-p', p['prompt'], '-n', str(o.n), '--temp',
                              '0', '--json', '-t', o.threads], capture_output=True, text=True, check=True).stdout
        j = json.loads(out)
        ids = j['ids'] + ([] if j['finish_reason'] == 'length' else [None])  # the end token's step
        got = replay(j['prompt_ids'], ids, Rule(), o.n)
        totals[p['kind']] = [a + b for a, b in zip(totals.get(p['kind'], [0] * 5), got)]
    for kind, (plain, spec, steps, drafted, accepted) in totals.items():
        print(f'{kind}: {plain / spec:.2f}x, {steps} steps, {accepted}/{drafted} accepted')


if __name__ == '__main__':
    main()
