//! The model (immutable, shareable) and the session (KV cache, position,
//! scratch) that runs it. `forward` serves prefill and decode alike.

mod adapter;
mod altup;
mod attention;
pub(crate) mod binder;
pub(crate) mod config;
mod engine;
mod experts;
pub(crate) mod family;
mod forward;
pub(crate) mod gemma3n;
mod gemma3n_weights;
mod hadamard;
mod kv_cache;
mod laurel;
#[cfg(feature = "std")]
mod lazy_rows8;
pub(crate) mod limits;
mod lora;
pub(crate) mod matmul;
mod mlp;
pub(crate) mod moe;
pub(crate) mod parts;
mod per_layer;
mod prefix_cache;
pub(crate) mod requant;
mod rope;
mod scratch;
mod seq;
mod snapshot;
mod tensor_ref;
pub(crate) mod weights;

use alloc::vec::Vec;

pub(crate) use adapter::{check_scale, Mat, Pair};
pub use adapter::{Adapter, AdapterSet, Applied, Proj, MAX_ADAPTERS, MAX_SCALE};
pub use config::Config;
pub use engine::Engine;
pub use family::Arch;
pub use gemma3n::Gemma3n;
pub use gemma3n_weights::{Gemma3nLayer, Gemma3nWeights};
pub use moe::Moe;
pub use parts::{Act, LongRope, RopeStyle, Window};
pub use requant::{Requantized, Widened};
pub use scratch::Scratch;
pub use weights::{Experts, Ffn, Footprint, LayerWeights, Mlp, SharedExpert, TensorRef, Weights};

use crate::backend::QMatrix;
use crate::error::{Error, Result};
use crate::sampler::Rng;
use kv_cache::KvCache;
pub use kv_cache::KvType;
pub use prefix_cache::{BlockCounts, PrefixCache};

/// The longest context a session may have (16 M positions).
pub const MAX_CTX: usize = 1 << 24;

/// A loaded model: immutable, shareable across threads; its bytes held in `B` (a mapped file, a
/// vector). Sessions run it.
pub struct Model<B> {
    /// The model's bytes: a GGUF file, or an HF directory's shards (plus
    /// any weights quantized at load).
    bufs: Vec<B>,
    /// Block scales widened to f32 for the kernels (`widen_scales`).
    scales: Vec<f32>,
    /// Matrices' 8-row groups interleaved for the kernels (`repack_rows8`).
    rows8: Vec<u8>,
    /// Experts' interleaved on first use (`repack_experts_lazily`).
    #[cfg(feature = "std")]
    lazy_rows8: Option<lazy_rows8::LazyRows8>,
    /// Hyper-parameters.
    pub config: Config,
    /// Where each weight is in the buffers.
    pub weights: Weights,
}

impl<B: AsRef<[u8]>> Model<B> {
    /// A model over buffers whose tensors `weights` already locates (see
    /// `crate::hf` for HF directories).
    pub fn from_parts(bufs: Vec<B>, config: Config, weights: Weights) -> Result<Model<B>> {
        for t in weights.matrices() {
            let fits =
                bufs.get(t.buf).is_some_and(|b| t.start.checked_add(t.len).is_some_and(|e| e <= b.as_ref().len()));
            if !fits {
                return Err(Error::TensorOutOfBounds {
                    tensor: t.name.clone(),
                    offset: t.start as u64,
                    len: t.len as u64,
                    data_len: bufs.get(t.buf).map_or(0, |b| b.as_ref().len()) as u64,
                });
            }
        }
        Ok(Model {
            bufs,
            scales: Vec::new(),
            rows8: Vec::new(),
            #[cfg(feature = "std")]
            lazy_rows8: None,
            config,
            weights,
        })
    }

    /// An error naming the first adapter of `set` that was loaded for
    /// another model (its shapes or row order differ from this one's).
    pub fn check_adapters(&self, set: &AdapterSet) -> Result<()> {
        set.list().iter().try_for_each(|a| self.check_adapter(&a.adapter))
    }

    /// An error if `a` was loaded for another model (its shapes or row
    /// order differ from this one's).
    pub fn check_adapter(&self, a: &Adapter) -> Result<()> {
        if a.base == Adapter::fingerprint(&self.config, &self.weights) {
            return Ok(());
        }
        let what = alloc::format!("it was loaded for another model than this {}", self.config.arch);
        Err(Error::Adapter { adapter: a.name.clone(), what })
    }

    /// The buffers the model reads (the GGUF file is the first and only
    /// one of a GGUF model).
    pub fn buffers(&self) -> &[B] {
        &self.bufs
    }

    /// Bytes of all buffers, widened scales and repacked rows.
    pub fn n_bytes(&self) -> usize {
        self.bufs.iter().map(|b| b.as_ref().len()).sum::<usize>() + self.scales.len() * 4 + self.rows8.len()
    }

    /// The matrix `t` refers to, as the kernels take it.
    pub fn matrix(&self, t: &TensorRef) -> QMatrix<'_> {
        let b = self.bufs[t.buf].as_ref();
        let (scales, rows8) = (&self.scales[t.scales.clone()], &self.rows8[t.rows8.clone()]);
        QMatrix { ty: t.ty, data: &b[t.start..t.start + t.len], n_cols: t.n_cols, n_rows: t.n_rows, scales, rows8 }
    }

    /// Run `f` on a view of the model: its buffers as slices, on the stack
    /// for up to four (a GGUF file is one), so a decode step allocates none.
    fn with_view<R>(&self, f: impl FnOnce(View<'_>) -> R) -> R {
        let mut small: [&[u8]; 4] = [&[]; 4];
        let many: Vec<&[u8]>;
        let bufs: &[&[u8]] = if self.bufs.len() <= small.len() {
            for (s, b) in small.iter_mut().zip(&self.bufs) {
                *s = b.as_ref();
            }
            &small[..self.bufs.len()]
        } else {
            many = self.bufs.iter().map(AsRef::as_ref).collect();
            &many
        };
        f(View {
            config: &self.config,
            weights: &self.weights,
            bufs,
            scales: &self.scales,
            rows8: &self.rows8,
            #[cfg(feature = "std")]
            lazy_rows8: self.lazy_rows8.as_ref(),
        })
    }

    /// Bytes `n_seqs` sessions of `n_ctx` positions and `n_batch`-token
    /// steps take (KV caches of `kv` elements and scratch), or None past
    /// u64. The scratch part is an estimate, from below.
    pub fn sessions_bytes(&self, n_seqs: usize, n_ctx: usize, n_batch: usize, kv: KvType) -> Option<u64> {
        let c = &self.config;
        let u = |x: usize| x as u64;
        let kv_bytes = u(2 * kv.bytes(c.kv_dim())).checked_mul(u(kv_cache::rows(c, n_ctx, n_batch)))?;
        let moe = c.moe.as_ref().map_or(0, |m| m.n_expert + (m.n_expert_used + 2) * c.n_embd + 2 * m.n_expert_used);
        let per_token = u(4 * (4 * c.n_embd + 2 * c.q_dim() + 2 * c.kv_dim() + 3 * c.ff_widest() + moe));
        let heads = u(4 * c.n_head).checked_mul(u(n_batch).checked_mul(u(c.head_dim))?.checked_add(u(n_ctx))?)?;
        let scratch = per_token.checked_mul(u(n_batch))?.checked_add(heads)?;
        kv_bytes.checked_add(scratch)?.checked_mul(u(n_seqs))
    }

    /// Bytes of one KV block (`KV_BLOCK` positions of every layer that
    /// keeps no window ring, K and V) of sessions of `n_ctx` positions and
    /// `n_batch`-token steps; 0 when every layer keeps a ring.
    pub fn kv_block_bytes(&self, n_ctx: usize, n_batch: usize, kv: KvType) -> usize {
        kv_cache::block_bytes(&self.config, n_ctx, n_batch.clamp(1, n_ctx.max(1)), kv)
    }

    /// Sessions of `n_ctx` positions, `n_seqs` of them, in `available`
    /// bytes of memory: an error naming the sizes when they cannot be, so
    /// a context size from a command line or a request is refused before
    /// anything is allocated for it.
    pub fn check_sessions(
        &self,
        n_seqs: usize,
        n_ctx: usize,
        n_batch: usize,
        kv: KvType,
        available: u64,
    ) -> Result<()> {
        if n_ctx == 0 || n_ctx > MAX_CTX {
            return Err(Error::InvalidArgument { what: alloc::format!("context size {n_ctx} (1..={MAX_CTX})") });
        }
        if n_seqs == 0 || n_batch == 0 {
            return Err(Error::InvalidArgument { what: "zero sequences or a batch of zero tokens".into() });
        }
        let c = &self.config;
        if !kv.fits(c.head_dim, c.kv_dim()) {
            return Err(Error::InvalidArgument {
                what: alloc::format!(
                    "KV type {} needs heads of whole 32-element blocks; this model's head dimension is {}",
                    kv.name(),
                    c.head_dim
                ),
            });
        }
        let need = self.sessions_bytes(n_seqs, n_ctx, n_batch, kv);
        if need.is_none_or(|n| n > available) {
            let need = need.map_or("more than 2^64 bytes".into(), |n| alloc::format!("{:.2} GB", n as f64 / 1e9));
            return Err(Error::InvalidArgument {
                what: alloc::format!(
                    "{n_seqs} session(s) of {n_ctx} positions with batches of {n_batch} need {need} \
                     (KV cache and scratch); {:.2} GB of memory is available",
                    available as f64 / 1e9
                ),
            });
        }
        Ok(())
    }

    /// A new session holding up to `n_ctx` positions, running batches of
    /// up to `n_batch` tokens per forward step, its KV cache in f16.
    pub fn session(&self, n_ctx: usize, n_batch: usize) -> Session {
        self.session_kv(n_ctx, n_batch, KvType::F16)
    }

    /// A new session whose KV cache holds `kv` elements (f32 for the exact,
    /// oracle-parity path; q8_0 for half of f16's memory, on a model whose
    /// heads hold whole Q8_0 blocks — else f16, which `Session::kv_type`
    /// reports and `check_sessions` refuses beforehand).
    pub fn session_kv(&self, n_ctx: usize, n_batch: usize, kv: KvType) -> Session {
        let n_batch = n_batch.clamp(1, n_ctx.max(1));
        Session {
            kv: KvCache::new(&self.config, n_ctx, n_batch, kv),
            scratch: Scratch::new(&self.config, n_batch),
            tokens: Vec::new(),
            logits: Vec::new(),
            n_vocab: self.config.n_vocab,
            rng: Rng::new(0),
            adapters: AdapterSet::new(),
        }
    }

    /// Scratch for `forward_batch`: up to `n_batch` tokens per call, over
    /// sessions of any length.
    pub fn batch_scratch(&self, n_batch: usize) -> Scratch {
        Scratch::new(&self.config, n_batch.max(1))
    }

    /// One forward over several sessions at once: each runs its tokens at
    /// its own next positions, against its own cache. `logits` gets the
    /// last token's logits of each item, in order. Each row is bit-identical
    /// to running that session alone.
    pub fn forward_batch(
        &self,
        e: &Engine,
        scratch: &mut Scratch,
        items: &mut [(&mut Session, &[u32])],
        logits: &mut Vec<f32>,
    ) -> Result<()> {
        self.forward_batch_rows(e, scratch, items, &mut |_| 1, logits)
    }

    /// [`Model::forward_batch`] with `rows(i)` rows of logits for item `i`
    /// — its last tokens' (all of a drafted step's, one for the others),
    /// in order: item by item, each item's rows in position order.
    pub fn forward_batch_rows(
        &self,
        e: &Engine,
        scratch: &mut Scratch,
        items: &mut [(&mut Session, &[u32])],
        rows: &mut dyn FnMut(usize) -> usize,
        logits: &mut Vec<f32>,
    ) -> Result<()> {
        let total: usize = items.iter().map(|it| it.1.len()).sum();
        if total > scratch.n_batch {
            return Err(Error::InvalidArgument {
                what: alloc::format!("{total} tokens in a batch of at most {}", scratch.n_batch),
            });
        }
        let mut out_rows = Vec::with_capacity(items.len());
        let mut row = 0;
        for (i, (sess, toks)) in items.iter().enumerate() {
            sess.check(&self.config, toks)?;
            self.check_adapters(&sess.adapters)?;
            if toks.len() > sess.kv.max_step() && self.config.window.is_some() {
                return Err(Error::InvalidArgument {
                    what: alloc::format!(
                        "a step of {} tokens in a session made for steps of at most {} (its sliding-window cache holds no more)",
                        toks.len(),
                        sess.kv.max_step()
                    ),
                });
            }
            if toks.is_empty() {
                return Err(Error::InvalidArgument { what: "an empty item in a batch".into() });
            }
            row += toks.len();
            let n = rows(i).clamp(1, toks.len());
            out_rows.extend(row - n..row);
        }
        logits.resize(out_rows.len() * self.config.n_vocab, 0.0);
        let mut seqs: Vec<seq::Seq> = items
            .iter_mut()
            .map(|(sess, toks)| seq::Seq {
                pos0: sess.tokens.len(),
                kv: &mut sess.kv,
                tokens: toks,
                lora: sess.adapters.list(),
            })
            .collect();
        self.with_view(|view| forward::batch(view, e, scratch, &mut seqs, &out_rows, forward::Out::Logits(logits)))?;
        for (sess, toks) in items.iter_mut() {
            sess.tokens.extend_from_slice(toks);
        }
        Ok(())
    }
}

/// What a forward pass reads of a model: `Send` and `Sync` whatever holds
/// the bytes, so the pass can run on a worker thread.
#[derive(Clone, Copy)]
struct View<'a> {
    config: &'a Config,
    weights: &'a Weights,
    bufs: &'a [&'a [u8]],
    scales: &'a [f32],
    rows8: &'a [u8],
    #[cfg(feature = "std")]
    lazy_rows8: Option<&'a lazy_rows8::LazyRows8>,
}

impl<'a> View<'a> {
    fn matrix(&self, t: &TensorRef) -> QMatrix<'a> {
        let b = self.bufs[t.buf];
        let data = &b[t.start..t.start + t.len];
        let (scales, rows8) = (&self.scales[t.scales.clone()], &self.rows8[t.rows8.clone()]);
        QMatrix { ty: t.ty, data, n_cols: t.n_cols, n_rows: t.n_rows, scales, rows8 }
    }

    /// Layer `l`'s expert `x`'s matrix `t` (`w` of it), its rows
    /// interleaved when they have been (`pack`: now, if not yet).
    #[cfg_attr(not(feature = "std"), allow(unused_variables))]
    fn expert(&self, l: usize, x: usize, w: ExpertPart, t: &TensorRef, pack: bool) -> QMatrix<'a> {
        let m = self.matrix(t);
        #[cfg(feature = "std")]
        if let Some(lazy) = self.lazy_rows8 {
            return QMatrix { rows8: lazy.rows(l, x, w, t, m.data, pack), ..m };
        }
        m
    }
}

impl View<'_> {
    /// Interleave the experts of `todo` — (layer, expert, part, matrix) —
    /// not yet interleaved, when the model packs lazily.
    #[cfg_attr(not(feature = "std"), allow(unused_variables))]
    fn pack_experts(&self, e: &Engine, todo: &[(usize, usize, ExpertPart, &TensorRef)]) {
        #[cfg(feature = "std")]
        if let Some(lazy) = self.lazy_rows8 {
            lazy.pack(e.par, todo, &|t| self.matrix(t).data);
        }
    }
}

/// An expert's matrix: its gate, up or down projection.
#[derive(Clone, Copy)]
enum ExpertPart {
    Gate = 0,
    Up = 1,
    Down = 2,
}

/// Which positions of a forward call get logits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logits {
    /// The last token only (prefill before sampling, decode).
    Last,
    /// Every token of the call (parity tests).
    All,
    /// The tokens of the call from this index on (perplexity scores a
    /// window's second half).
    From(usize),
    /// No logits (a prefill before more tokens).
    None,
}

/// A sequence's mutable state: KV cache, the tokens in it, scratch buffers, the RNG sampling draws
/// from.
pub struct Session {
    kv: KvCache,
    scratch: Scratch,
    /// The tokens whose K/V are in the cache, position by position.
    tokens: Vec<u32>,
    /// The last call's rows: logits, or hidden states after [`Session::hidden`].
    logits: Vec<f32>,
    n_vocab: usize,
    /// The session's random state (sampling draws from it).
    pub rng: Rng,
    /// The LoRA adapters its forward passes apply.
    adapters: AdapterSet,
}

impl Session {
    /// Run with the adapters of `set` from now on. A set other than the
    /// current one empties the cache: its rows were computed without them.
    pub fn set_adapters(&mut self, set: &AdapterSet) {
        if *set != self.adapters {
            self.truncate(0);
            self.adapters = set.clone();
        }
    }
    /// The adapters its forward passes apply.
    pub fn adapters(&self) -> &AdapterSet {
        &self.adapters
    }
    /// Positions already in the cache.
    pub fn n_past(&self) -> usize {
        self.tokens.len()
    }
    /// Positions the cache holds.
    pub fn n_ctx(&self) -> usize {
        self.kv.n_ctx
    }
    /// Element type of the KV cache.
    pub fn kv_type(&self) -> KvType {
        self.kv.ty()
    }
    /// Most tokens one step may run and later take back (a sliding
    /// window's ring holds no more).
    pub fn max_step(&self) -> usize {
        self.kv.max_step()
    }
    /// The tokens in the cache.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }
    /// Forget everything after the first `n` positions and return how many
    /// are kept: `n` (or all there are, if fewer), or 0 when a sliding-window
    /// layer's ring has since overwritten rows that position `n`'s window
    /// needs (the prefix must then run again).
    pub fn truncate(&mut self, n: usize) -> usize {
        let keep = self.kv.keepable(self.tokens.len(), n.min(self.tokens.len()));
        self.tokens.truncate(keep);
        self.kv.truncate(keep);
        keep
    }
    /// Take the first `n` positions of `from`'s cache (another session of
    /// the same model, context and batch sizes) instead of computing them:
    /// this session then holds those tokens, their K/V the same bits a
    /// prefill of them would write. Returns the positions taken: `n` (at
    /// most `from`'s), or 0 if the caches differ in shape or type, hold
    /// sliding-window rings, or were computed with other adapters
    /// (nothing changes then).
    pub fn copy_prefix(&mut self, from: &Session, n: usize) -> usize {
        let n = n.min(from.tokens.len());
        if self.kv.shape().is_none() || self.kv.shape() != from.kv.shape() || self.adapters != from.adapters {
            return 0;
        }
        let blocks = &from.kv.blocks()[..n.div_ceil(crate::backend::KV_BLOCK)];
        if self.hold(blocks, &from.tokens[..n]) {
            n
        } else {
            0
        }
    }
    /// Hold `blocks` (of a cache of this one's shape) as the K/V rows of
    /// `tokens` at positions 0.. instead of computing them; false, nothing
    /// changed, if the cache cannot (window rings, past its context).
    fn hold(&mut self, blocks: &[alloc::sync::Arc<crate::backend::KvBlock>], tokens: &[u32]) -> bool {
        if !self.kv.adopt(blocks, tokens.len()) {
            return false;
        }
        self.tokens.clear();
        self.tokens.extend_from_slice(tokens);
        true
    }
    /// How many leading tokens of `tokens` the cache already holds.
    pub fn common_prefix(&self, tokens: &[u32]) -> usize {
        self.tokens.iter().zip(tokens).take_while(|(a, b)| a == b).count()
    }
    /// Whether the KV cache can share its blocks (with other sessions, a
    /// [`PrefixCache`]): not when a layer keeps a window ring.
    pub fn shares_blocks(&self) -> bool {
        self.kv.shape().is_some()
    }
    /// KV blocks running the next `n` tokens allocates: new ones, and a
    /// copy of a block it shares and writes into.
    pub fn kv_blocks_to_write(&self, n: usize) -> usize {
        self.kv.blocks_to_write(self.tokens.len(), n)
    }
    /// Bytes held by the KV cache.
    pub fn kv_bytes(&self) -> usize {
        self.kv.bytes()
    }
    /// Bytes held by the KV cache and the scratch buffers.
    pub fn bytes(&self) -> usize {
        self.kv.bytes() + self.scratch.bytes()
    }

    fn check(&self, c: &Config, tokens: &[u32]) -> Result<()> {
        let needed = self.tokens.len() + tokens.len();
        if needed > self.kv.n_ctx {
            return Err(Error::ContextFull { n_ctx: self.kv.n_ctx, needed });
        }
        if let Some(&id) = tokens.iter().find(|&&id| id as usize >= c.n_vocab) {
            return Err(Error::TokenOutOfRange { id, n_vocab: c.n_vocab });
        }
        Ok(())
    }

    /// Run `tokens` at the next positions, append them to the cache, and
    /// return the requested logits: (rows, n_vocab) row-major.
    pub fn forward<B: AsRef<[u8]>>(
        &mut self,
        m: &Model<B>,
        e: &Engine,
        tokens: &[u32],
        want: Logits,
    ) -> Result<&[f32]> {
        self.run(m, e, tokens, want, false)
    }

    /// As [`Session::forward`], but each requested row is the final norm's
    /// output instead of logits (the vector the output head reads; a
    /// decoder embedder pools these): (rows, n_embd) row-major.
    pub fn hidden<B: AsRef<[u8]>>(&mut self, m: &Model<B>, e: &Engine, tokens: &[u32], want: Logits) -> Result<&[f32]> {
        self.run(m, e, tokens, want, true)
    }

    fn run<B: AsRef<[u8]>>(
        &mut self,
        m: &Model<B>,
        e: &Engine,
        tokens: &[u32],
        want: Logits,
        hidden: bool,
    ) -> Result<&[f32]> {
        let nv = if hidden { m.config.n_embd } else { m.config.n_vocab };
        self.check(&m.config, tokens)?;
        m.check_adapters(&self.adapters)?;
        let n_rows = match want {
            Logits::Last => tokens.len().min(1),
            Logits::All => tokens.len(),
            Logits::From(k) => tokens.len().saturating_sub(k),
            Logits::None => 0,
        };
        self.logits.resize(n_rows * nv, 0.0);
        let mut row = 0;
        let n_batch = self.scratch.n_batch;
        let mut out_rows = core::mem::take(&mut self.scratch.out_rows);
        let r = m.with_view(|view| {
            for (i, batch) in tokens.chunks(n_batch).enumerate() {
                let last_batch = (i + 1) * n_batch >= tokens.len();
                out_rows.clear();
                match want {
                    Logits::All => out_rows.extend(0..batch.len()),
                    Logits::From(k) => out_rows.extend(k.saturating_sub(i * n_batch).min(batch.len())..batch.len()),
                    Logits::Last if last_batch => out_rows.push(batch.len() - 1),
                    _ => {}
                }
                let out = &mut self.logits[row * nv..(row + out_rows.len()) * nv];
                let lora = self.adapters.list();
                let mut seq = [seq::Seq { kv: &mut self.kv, pos0: self.tokens.len(), tokens: batch, lora }];
                let out = if hidden { forward::Out::Hidden(out) } else { forward::Out::Logits(out) };
                forward::batch(view, e, &mut self.scratch, &mut seq, &out_rows, out)?;
                self.tokens.extend_from_slice(batch);
                row += out_rows.len();
            }
            Ok(())
        });
        self.scratch.out_rows = out_rows;
        r.map(|()| &self.logits[..])
    }

    /// Run `f` on the session with the last call's rows lent beside it
    /// (a draft's rows, verified while sampling draws from the session's
    /// RNG and history).
    pub fn with_rows<R>(&mut self, f: impl FnOnce(&mut Session, &[f32]) -> R) -> R {
        let rows = core::mem::take(&mut self.logits);
        let r = f(self, &rows);
        self.logits = rows;
        r
    }

    /// The last computed logits row, the RNG and the token history, for
    /// sampling (borrowed together).
    pub fn sampling_parts(&mut self) -> (&[f32], &mut Rng, &[u32]) {
        let start = self.logits.len().saturating_sub(self.n_vocab);
        (&self.logits[start..], &mut self.rng, &self.tokens)
    }
}
