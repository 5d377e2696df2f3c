//! A prefix cache: KV blocks kept after their sequences end, keyed by the
//! tokens they hold, for any later sequence whose prompt starts the same.
//!
//! A block's key chains its parent's key with its tokens, so a key names a
//! whole prefix, not one block's tokens wherever they stand. A full block
//! (`KV_BLOCK` tokens) may have children; a block a sequence ended inside
//! is a leaf holding its first tokens. Looking up a prompt walks from the
//! root through full blocks and ends in the child sharing the most tokens
//! with the rest of it, whole or in part: a sequence may take any leading
//! run of a block's positions (its rows past them are never read, and the
//! sequence's first write there copies the block).
//!
//! Chains start from a root of the sequences' LoRA adapter set: the same
//! tokens run with other adapters have other rows, so they never share.
//!
//! Blocks are reference counted: the cache and every sequence holding a
//! block share it. `evict` drops the least recently used leaf no sequence
//! holds, deepest first among equals, so a chain is cut from its end.
//! Keys are checked against the stored parent, depth and tokens, so a hash
//! collision is a miss, never another prompt's rows.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;

use super::{AdapterSet, KvType, Session};
use crate::backend::{KvBlock, KV_BLOCK};
use crate::hash::Fnv;

/// The root's key: the parent of every first block.
const ROOT: u64 = 0x7465_726e_5f6b_7600;

struct Node {
    parent: u64,
    /// Blocks before this one in its chain.
    depth: usize,
    /// The tokens of the block's positions it holds (all `KV_BLOCK`, or a
    /// leaf's first ones).
    tokens: Vec<u32>,
    block: Arc<KvBlock>,
    /// When a lookup or an insert last touched it.
    used: u64,
}

/// Blocks kept for reuse, keyed by their tokens; see the module notes.
#[derive(Default)]
pub struct PrefixCache {
    nodes: BTreeMap<u64, Node>,
    /// A node's children's keys (the root's under `ROOT`).
    children: BTreeMap<u64, Vec<u64>>,
    /// What blocks must be to be kept together: layers per block, row
    /// length, element type (the first cache's).
    shape: Option<(usize, usize, KvType)>,
    clock: u64,
    evictions: u64,
}

/// How the blocks of a set of sequences and a prefix cache are held.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockCounts {
    /// Blocks some sequence holds.
    pub in_use: usize,
    /// Of those, blocks two sequences or more hold.
    pub shared: usize,
    /// Blocks only the prefix cache holds (evictable).
    pub cached: usize,
}

impl PrefixCache {
    /// An empty cache.
    pub fn new() -> PrefixCache {
        PrefixCache::default()
    }

    /// Keep the blocks of `s`'s first `n` positions (at most those it
    /// holds), keyed by their tokens: the full blocks, and the last one's
    /// first positions if `n` ends inside it. The session keeps them too.
    /// A session with window rings shares nothing and adds nothing.
    pub fn insert(&mut self, s: &Session, n: usize) {
        let Some(shape) = s.kv.shape() else { return };
        if *self.shape.get_or_insert(shape) != shape {
            return;
        }
        self.clock += 1;
        let n = n.min(s.tokens.len());
        let mut parent = root(s);
        for (depth, (tokens, block)) in s.tokens[..n].chunks(KV_BLOCK).zip(s.kv.blocks()).enumerate() {
            let key = chain(parent, tokens);
            match self.nodes.get_mut(&key) {
                Some(node) if node.parent == parent && node.depth == depth && node.tokens == tokens => {
                    node.used = self.clock
                }
                Some(_) => return, // a collision: that prefix stays uncached
                None => {
                    // a node another one begins says less: the longer is kept
                    if self.sibling_beginning(parent, tokens).is_some() {
                        return;
                    }
                    while let Some(k) = self.sibling_within(parent, tokens) {
                        self.remove(k);
                    }
                    let node = Node { parent, depth, tokens: tokens.to_vec(), block: block.clone(), used: self.clock };
                    self.nodes.insert(key, node);
                    self.children.entry(parent).or_default().push(key);
                }
            }
            parent = key;
        }
    }

    /// How many leading tokens of `tokens` the cache holds, and the blocks
    /// holding them (the last perhaps only in part).
    fn find(&self, root: u64, tokens: &[u32]) -> (usize, Vec<u64>) {
        let (mut parent, mut n, mut path) = (root, 0, Vec::new());
        while n < tokens.len() {
            let rest = &tokens[n..];
            let kids = self.children.get(&parent).map_or(&[][..], |k| &k[..]);
            let best = kids
                .iter()
                .filter_map(|k| Some((*k, self.nodes.get(k)?)))
                .filter(|(_, c)| c.parent == parent && c.depth == path.len())
                .map(|(k, c)| (k, c.tokens.len(), c.tokens.iter().zip(rest).take_while(|(a, b)| a == b).count()))
                .max_by_key(|x| x.2);
            let Some((key, len, common)) = best.filter(|x| x.2 > 0) else { break };
            path.push(key);
            n += common;
            if common < KV_BLOCK || len < KV_BLOCK {
                break;
            }
            parent = key;
        }
        (n, path)
    }

    /// How many leading tokens of `tokens` the cache holds for sequences
    /// running the adapters of `adapters`.
    pub fn longest(&self, adapters: &AdapterSet, tokens: &[u32]) -> usize {
        self.find(root_of(adapters), tokens).0
    }

    /// Make `s` hold the longest prefix of `tokens` the cache holds, at
    /// most `max` tokens (what it held before is dropped): the same rows a
    /// prefill of them would write. Returns the positions it now holds (0,
    /// and `s` unchanged, when the cache holds none or `s`'s blocks are of
    /// another shape).
    pub fn attach(&mut self, s: &mut Session, tokens: &[u32], max: usize) -> usize {
        if s.kv.shape().is_none() || s.kv.shape() != self.shape {
            return 0;
        }
        let (n, path) = self.find(root(s), &tokens[..max.min(tokens.len())]);
        self.clock += 1;
        let mut blocks = Vec::with_capacity(path.len());
        for key in &path {
            let node = self.nodes.get_mut(key).expect("found nodes are in the cache");
            node.used = self.clock;
            blocks.push(node.block.clone());
        }
        if n == 0 || !s.hold(&blocks, &tokens[..n]) {
            return 0;
        }
        n
    }

    /// Drop the least recently used block that no sequence holds and that
    /// has no children; false if there is none.
    pub fn evict(&mut self) -> bool {
        let victim = self
            .nodes
            .iter()
            .filter(|(k, n)| Arc::strong_count(&n.block) == 1 && self.children.get(k).is_none_or(|c| c.is_empty()))
            .min_by_key(|(_, n)| (n.used, usize::MAX - n.depth))
            .map(|(k, _)| *k);
        let Some(key) = victim else { return false };
        self.remove(key);
        self.evictions += 1;
        true
    }

    /// Blocks the cache refers to.
    pub fn blocks(&self) -> usize {
        self.nodes.len()
    }

    /// Blocks dropped by `evict` so far.
    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// How the blocks of `sessions` and of this cache are held.
    pub fn counts<'a>(&self, sessions: impl IntoIterator<Item = &'a Session>) -> BlockCounts {
        // each block's sessions
        let mut holders: BTreeMap<*const KvBlock, usize> = BTreeMap::new();
        for s in sessions {
            for b in s.kv.blocks() {
                *holders.entry(Arc::as_ptr(b)).or_default() += 1;
            }
        }
        BlockCounts {
            in_use: holders.len(),
            shared: holders.values().filter(|&&n| n > 1).count(),
            // (a block is in one node at most: the cache's one reference)
            cached: self.nodes.values().filter(|n| Arc::strong_count(&n.block) == 1).count(),
        }
    }

    /// A child of `parent` whose tokens begin with `tokens`.
    fn sibling_beginning(&self, parent: u64, tokens: &[u32]) -> Option<u64> {
        let kids = self.children.get(&parent)?;
        kids.iter().copied().find(|k| self.nodes.get(k).is_some_and(|n| n.tokens.starts_with(tokens)))
    }

    /// A leaf child of `parent` whose tokens `tokens` begins with (and
    /// outgrows).
    fn sibling_within(&self, parent: u64, tokens: &[u32]) -> Option<u64> {
        let kids = self.children.get(&parent)?;
        let within = |n: &Node| n.tokens.len() < tokens.len() && tokens.starts_with(&n.tokens);
        kids.iter().copied().find(|k| self.nodes.get(k).is_some_and(within))
    }

    fn remove(&mut self, key: u64) {
        let Some(node) = self.nodes.remove(&key) else { return };
        if let Some(kids) = self.children.get_mut(&node.parent) {
            kids.retain(|k| *k != key);
            if kids.is_empty() {
                self.children.remove(&node.parent);
            }
        }
    }
}

/// The parent of the first blocks of `s`'s chains: the root's key, mixed
/// with the adapter set's (sequences with other adapters share nothing).
fn root(s: &Session) -> u64 {
    root_of(&s.adapters)
}

fn root_of(a: &AdapterSet) -> u64 {
    match a.key() {
        0 => ROOT,
        k => Fnv::new(ROOT).u64(k).finish(),
    }
}

/// A block's key: its parent's key and its tokens, mixed (FNV-1a over the
/// token bytes from the parent's key, then a final avalanche).
fn chain(parent: u64, tokens: &[u32]) -> u64 {
    tokens.iter().fold(Fnv::new(parent), |h, &t| h.u32(t)).u32(tokens.len() as u32).finish()
}
