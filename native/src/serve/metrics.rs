//! The server's counters, gauges and histograms, written in Prometheus'
//! text format by `GET /metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;

/// Bucket bounds (seconds) for time to first token and inter-token latency.
const TTFT_BUCKETS: [f64; 10] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];
const ITL_BUCKETS: [f64; 10] = [0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.5, 5.0];

pub struct Histogram {
    bounds: &'static [f64],
    counts: Mutex<(Vec<u64>, f64, u64)>,
}

impl Histogram {
    fn new(bounds: &'static [f64]) -> Histogram {
        Histogram { bounds, counts: Mutex::new((vec![0; bounds.len()], 0.0, 0)) }
    }
    pub fn observe(&self, v: f64) {
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        for (n, &b) in c.0.iter_mut().zip(self.bounds) {
            if v <= b {
                *n += 1;
            }
        }
        c.1 += v;
        c.2 += 1;
    }
    fn write(&self, out: &mut String, name: &str, help: &str) {
        let c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (n, b) in c.0.iter().zip(self.bounds) {
            let _ = writeln!(out, "{name}_bucket{{le=\"{b}\"}} {n}");
        }
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {}\n{name}_sum {}\n{name}_count {}", c.2, c.1, c.2);
    }
}

pub struct Metrics {
    pub requests: AtomicU64,
    pub rejected: AtomicU64,
    pub errors: AtomicU64,
    pub cancelled: AtomicU64,
    pub prompt_tokens: AtomicU64,
    pub cached_tokens: AtomicU64,
    pub copied_tokens: AtomicU64,
    pub completion_tokens: AtomicU64,
    pub draft_tokens: AtomicU64,
    pub draft_accepted: AtomicU64,
    pub queue_depth: AtomicU64,
    pub active: AtomicU64,
    pub kv_used: AtomicU64,
    pub kv_capacity: AtomicU64,
    pub kv_blocks: AtomicU64,
    pub blocks_in_use: AtomicU64,
    pub blocks_shared: AtomicU64,
    pub blocks_cached: AtomicU64,
    pub evictions: AtomicU64,
    pub batch_tokens: AtomicU64,
    pub steps: AtomicU64,
    pub encoder_batches: AtomicU64,
    pub encoder_inputs: AtomicU64,
    pub encoder_tokens: AtomicU64,
    pub ttft: Histogram,
    pub itl: Histogram,
}

impl Metrics {
    /// Metrics of a server whose KV budget is `kv_blocks` blocks.
    pub fn new(kv_blocks: u64) -> Metrics {
        Metrics {
            requests: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            prompt_tokens: AtomicU64::new(0),
            cached_tokens: AtomicU64::new(0),
            copied_tokens: AtomicU64::new(0),
            completion_tokens: AtomicU64::new(0),
            draft_tokens: AtomicU64::new(0),
            draft_accepted: AtomicU64::new(0),
            queue_depth: AtomicU64::new(0),
            active: AtomicU64::new(0),
            kv_used: AtomicU64::new(0),
            kv_capacity: AtomicU64::new(kv_blocks.saturating_mul(tern_core::backend::KV_BLOCK as u64)),
            kv_blocks: AtomicU64::new(kv_blocks),
            blocks_in_use: AtomicU64::new(0),
            blocks_shared: AtomicU64::new(0),
            blocks_cached: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
            batch_tokens: AtomicU64::new(0),
            steps: AtomicU64::new(0),
            encoder_batches: AtomicU64::new(0),
            encoder_inputs: AtomicU64::new(0),
            encoder_tokens: AtomicU64::new(0),
            ttft: Histogram::new(&TTFT_BUCKETS),
            itl: Histogram::new(&ITL_BUCKETS),
        }
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        let mut put = |name: &str, kind: &str, help: &str, v: &AtomicU64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {}", v.load(Relaxed));
        };
        put("tern_requests_total", "counter", "Completion requests admitted.", &self.requests);
        put("tern_requests_rejected_total", "counter", "Requests answered 429 (queue full).", &self.rejected);
        put("tern_requests_failed_total", "counter", "Admitted requests that ended in an error.", &self.errors);
        put("tern_requests_cancelled_total", "counter", "Requests whose client went away.", &self.cancelled);
        put("tern_prompt_tokens_total", "counter", "Prompt tokens of finished requests.", &self.prompt_tokens);
        put(
            "tern_prompt_tokens_cached_total",
            "counter",
            "Of those, found cached (prefix hits: the prefix cache, a slot's own or a running slot's).",
            &self.cached_tokens,
        );
        put(
            "tern_prompt_tokens_copied_total",
            "counter",
            "Prompt tokens whose K/V were copied from another slot's cache.",
            &self.copied_tokens,
        );
        put("tern_completion_tokens_total", "counter", "Generated tokens.", &self.completion_tokens);
        put("tern_draft_tokens_total", "counter", "Tokens drafted for speculative decoding.", &self.draft_tokens);
        put(
            "tern_draft_tokens_accepted_total",
            "counter",
            "Of those, accepted (generated without a forward pass of their own).",
            &self.draft_accepted,
        );
        put("tern_queue_depth", "gauge", "Requests waiting for a slot.", &self.queue_depth);
        put("tern_active_sequences", "gauge", "Sequences being prefilled or decoded.", &self.active);
        put("tern_kv_cache_used_tokens", "gauge", "KV cache positions held by active sequences.", &self.kv_used);
        put("tern_kv_cache_capacity_tokens", "gauge", "KV cache positions the budget holds.", &self.kv_capacity);
        put("tern_kv_blocks_total", "gauge", "KV blocks the budget (--kv-memory) holds.", &self.kv_blocks);
        put("tern_kv_blocks_in_use", "gauge", "KV blocks held by sequences.", &self.blocks_in_use);
        put("tern_kv_blocks_shared", "gauge", "Of those, held by two sequences or more.", &self.blocks_shared);
        put("tern_kv_blocks_cached", "gauge", "KV blocks only the prefix cache holds.", &self.blocks_cached);
        let free = self
            .kv_blocks
            .load(Relaxed)
            .saturating_sub(self.blocks_in_use.load(Relaxed) + self.blocks_cached.load(Relaxed));
        put("tern_kv_blocks_free", "gauge", "KV blocks of the budget unallocated.", &AtomicU64::new(free));
        put("tern_kv_block_evictions_total", "counter", "Prefix cache blocks evicted for room.", &self.evictions);
        put("tern_batch_tokens_total", "counter", "Tokens run through batched forward passes.", &self.batch_tokens);
        put("tern_forward_steps_total", "counter", "Batched forward passes.", &self.steps);
        put("tern_encoder_batches_total", "counter", "Embedding and rerank batches run.", &self.encoder_batches);
        put("tern_encoder_inputs_total", "counter", "Texts embedded and pairs scored.", &self.encoder_inputs);
        put("tern_encoder_tokens_total", "counter", "Tokens of those inputs.", &self.encoder_tokens);
        self.ttft.write(&mut out, "tern_time_to_first_token_seconds", "From admission to the first token.");
        self.itl.write(&mut out, "tern_inter_token_latency_seconds", "Between consecutive tokens of a stream.");
        out
    }
}
