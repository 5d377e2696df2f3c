#!/usr/bin/env python3
"""Speculative decoding's steps, simulated: which draft-length rule pays.

Greedy output does not depend on drafting, and an n-gram draft depends only
on the tokens before it, so one plain run of each prompt fixes every step a
rule would take. This replays `bench/spec/prompts.jsonl`'s greedy outputs
under tern's n-gram lookup (8 down to 1 token, the latest occurrences) with
a draft-length rule, and prices each step with a measured cost curve: the
milliseconds of a forward of n rows, every row's logits (bench/NOTES
"Issue 48 (second steps)"). It prints the ratio plain/speculative, the
steps, and the drafted and accepted tokens, as `tern bench --spec ngram`
reports them — without the timing noise, so rules can be compared.

    bench/spec/simulate.py MODEL.gguf [--threads 2] [--n 128]

The rule replayed is `Speculation::record`'s (core/src/speculative/mod.rs)
and the drafter `Ngram`'s (core/src/speculative/ngram.rs): keep them in
step when either changes.
"""

import argparse
import json
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# ms of one verify step of n rows (all rows' logits), back to back as in
# decoding, Qwen2.5-Coder-0.5B Q4_K_M, medians of 3 (bench/NOTES "Issue 48
# (fourth steps)": a host without AMX, the K-quants repacked, spinning
# helpers; 7, 9, 11, 13-15 interpolated); past 16 a rough slope
COSTS = {
    '1': [30.2, 33.8, 35.7, 37.9, 40.2, 43.2, 45.6, 48.0, 50.8, 53.5, 56.3, 59.0, 62.6, 66.2, 69.8, 73.4],
    '2': [14.4, 17.5, 18.2, 19.7, 20.9, 23.2, 25.2, 27.1, 28.7, 30.2, 31.9, 33.6, 35.8, 38.0, 40.1, 42.3],
}
COST = COSTS['2']


def cost(n):
    return COST[n - 1] if n <= len(COST) else COST[-1] + (n - len(COST)) * (COST[-1] - COST[-2])


def ngram_draft(seq, max_len, n_max=8, per_matched=2, candidates=8):
    """tern's `Ngram`: (draft, weak) — what followed the latest earlier
    occurrence of the longest tail of 8 … 1 tokens, at most 2 tokens per
    matched one (a lone token counting two), cut where the next latest
    occurrences' continuations part from it; a lone token's draft is weak
    (its miss does not count) and may be empty."""
    size = len(seq)
    for n in range(min(n_max, size - 1), 0, -1):
        tail = seq[size - n:]
        js = [j for j in range(size - n - 1, -1, -1) if seq[j:j + n] == tail][:candidates]
        if js:
            first = seq[js[0] + n:]
            m = min(len(first), max_len, per_matched * max(n, 2))
            for j in js[1:]:
                c = seq[j + n:]
                k = 0
                while k < min(len(c), m) and c[k] == first[k]:
                    k += 1
                m = k
            if n == 1:
                return first[:m], True
            return first[:min(max(m, 1), max_len)], False
    return [], False


class Rule:
    """`Speculation`'s draft length and pauses (n_max 8, n_min 0)."""

    def __init__(self, n_max=8, min_k=2, grace=3):
        self.n_max, self.min_k, self.grace = n_max, min_k, grace
        self.k, self.rest, self.misses = n_max, 0, 0

    def length(self):
        if self.rest > 0:
            self.rest -= 1
            return 0
        return self.k

    def record(self, drafted, accepted, weak=False):
        if drafted == 0 or (accepted == 0 and weak):
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
        draft, weak = ngram_draft(hist + [ids[i - 1]], k) if k > 0 else ([], False)
        a = 0
        while a < len(draft) and i + a < len(ids) and draft[a] == ids[i + a]:
            a += 1
        t += cost(1 + len(draft))
        steps, drafted, accepted = steps + 1, drafted + len(draft), accepted + a
        rule.record(len(draft), a, weak)
        hist += ids[i - 1:i + a]
        i += a + 1
    return (len(ids) - 1) * cost(1), t, steps, drafted, accepted


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('model')
    ap.add_argument('--threads', default='2')
    ap.add_argument('--n', type=int, default=128)
    o = ap.parse_args()
    global COST
    COST = COSTS[o.threads]
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
