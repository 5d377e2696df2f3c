//! The conversations of past `/v1/responses` answers, kept for
//! `previous_response_id`: bounded in count and bytes, the oldest dropped
//! first.

use std::collections::VecDeque;
use std::sync::Mutex;

use serde_json::Value;

/// Responses kept for `previous_response_id`: at most this many…
pub const MAX_STORED: usize = 256;
/// …and at most this many bytes of conversation in all (the oldest go first).
pub const MAX_STORED_BYTES: usize = 64 << 20;

/// Conversations by response id, oldest first.
#[derive(Default)]
pub struct Store {
    items: VecDeque<(String, Vec<Value>, usize)>,
    bytes: usize,
}

impl Store {
    pub fn get(&self, id: &str) -> Option<Vec<Value>> {
        self.items.iter().find(|(i, ..)| i == id).map(|(_, m, _)| m.clone())
    }

    pub fn put(&mut self, id: String, messages: Vec<Value>) {
        let n = serde_json::to_string(&messages).map_or(0, |s| s.len());
        if n > MAX_STORED_BYTES {
            return;
        }
        while self.items.len() >= MAX_STORED || self.bytes + n > MAX_STORED_BYTES {
            let Some((_, _, old)) = self.items.pop_front() else { break };
            self.bytes -= old;
        }
        self.bytes += n;
        self.items.push_back((id, messages, n));
    }
}

/// The stores of a server.
pub type Shared = Mutex<Store>;
