//! Spinning regions, for pools whose idle threads are slow to wake (wasm
//! threads: rayon's idle workers sleep within microseconds, yielding being
//! a no-op, and a wake-up through `memory.atomic.notify` outlasts a decode
//! region). The poster publishes a region — its closure and its output —
//! and bumps an epoch; helpers, rayon jobs spinning on the epoch between
//! regions, claim parts of it as the poster does. A region costs a few
//! atomics and no allocation; a helper that sees no region for
//! `SPIN_ROUNDS` loads returns to rayon (and sleeps), and the next region
//! spawns it again.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

/// A region's work: `f(first chunk, run of chunks)`.
type Part<'a> = &'a (dyn Fn(usize, &mut [f32]) + Sync + 'a);

/// Loads of the epoch a helper makes before it gives up and returns to
/// rayon (~1-2 ms: longer than the serial work between two regions,
/// shorter than a pause between requests).
const SPIN_ROUNDS: u32 = 1 << 20;

/// Spins between yields of the thread, waiting: on a machine with more
/// busy threads than cores (tests side by side) a spinner would otherwise
/// hold the core the thread it waits for needs. (A no-op in wasm.)
const YIELD_EVERY: u32 = 1 << 10;

/// One round of a wait: a spin hint, and now and then a yield.
fn pause(rounds: u32) {
    if rounds % YIELD_EVERY == 0 {
        std::thread::yield_now();
    } else {
        std::hint::spin_loop();
    }
}

/// The region being run: what is left to claim.
struct Current {
    f: Option<Part<'static>>,
    /// The output not yet claimed.
    rest: &'static mut [f32],
    /// Elements and chunks per part; parts claimed so far.
    part_len: usize,
    per: usize,
    claimed: usize,
}

pub(crate) struct Regions {
    /// Workers: the poster and at most `n - 1` helpers.
    n: usize,
    epoch: AtomicU64,
    current: Mutex<Current>,
    /// Parts of the current region finished.
    done: AtomicUsize,
    /// A region is posted (one poster at a time; others take rayon's path).
    busy: AtomicBool,
    /// Helpers spinning or spawned.
    helpers: AtomicUsize,
    /// Nonzero once a helper died without unwinding (a wasm trap, said by
    /// the pool worker's JS): nothing waits on a part it claimed.
    pub(crate) lost: AtomicU32,
}

/// What a poster says when a helper of its pool was lost.
const LOST: &str = "a thread of the pool trapped and was lost: the pool cannot run another region";

impl Regions {
    pub fn new(n: usize) -> Regions {
        let current = Current { f: None, rest: &mut [], part_len: 1, per: 1, claimed: 0 };
        Regions {
            n,
            epoch: AtomicU64::new(0),
            current: Mutex::new(current),
            done: AtomicUsize::new(0),
            busy: AtomicBool::new(false),
            helpers: AtomicUsize::new(0),
            lost: AtomicU32::new(0),
        }
    }

    /// Run `f` over runs of `per` chunks of `data` with the helpers (the
    /// pool's threads); false (nothing run) if another region is being
    /// posted.
    pub fn run(
        self: &Arc<Self>,
        pool: &rayon::ThreadPool,
        data: &mut [f32],
        per: usize,
        chunk_len: usize,
        f: Part,
    ) -> bool {
        self.check_lost();
        if self.busy.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_err() {
            return false;
        }
        // the previous region's parts are all done and none is left to claim
        self.done.store(0, Ordering::Relaxed);
        let posted = Posted(self);
        {
            let mut c = self.lock();
            // SAFETY: `posted`'s drop, before this function returns or
            // unwinds, takes both out of `current` and waits until every
            // part claimed from it is done: no reference outlives `'a`.
            let (f, data) = unsafe { erase(f, data) };
            (c.f, c.rest, c.part_len, c.per, c.claimed) = (Some(f), data, per * chunk_len, per, 0);
        }
        self.epoch.fetch_add(1, Ordering::Release);
        self.spawn_helpers(pool);
        self.work();
        drop(posted);
        self.busy.store(false, Ordering::Release);
        true
    }

    /// The region's state, spinning while another thread holds it: a
    /// contended `lock` parks the thread (in wasm `memory.atomic.wait`),
    /// and its wake-up outlasts the part it came to claim.
    fn lock(&self) -> MutexGuard<'_, Current> {
        loop {
            match self.current.try_lock() {
                Ok(g) => return g,
                Err(TryLockError::Poisoned(e)) => return e.into_inner(),
                Err(TryLockError::WouldBlock) => {
                    self.check_lost();
                    std::hint::spin_loop()
                }
            }
        }
    }

    /// Whether a helper was lost (it may have died holding the region's
    /// lock or with a part claimed: waiting for it would never end).
    fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Relaxed) != 0
    }

    /// Panic if a helper was lost.
    fn check_lost(&self) {
        if self.is_lost() {
            panic!("{LOST}");
        }
    }

    /// Run parts of the current region until none is left to claim.
    fn work(&self) {
        loop {
            let (f, first, part) = {
                let mut c = self.lock();
                let Some(f) = c.f else { return };
                if c.rest.is_empty() {
                    return;
                }
                let rest = core::mem::take(&mut c.rest);
                let (part, tail) = rest.split_at_mut(c.part_len.min(rest.len()));
                c.rest = tail;
                c.claimed += 1;
                (f, (c.claimed - 1) * c.per, part)
            };
            f(first, part);
            self.done.fetch_add(1, Ordering::Release);
        }
    }

    /// Bring the helpers up to `n - 1` (after they went back to rayon).
    fn spawn_helpers(self: &Arc<Self>, pool: &rayon::ThreadPool) {
        // only the poster adds helpers; helpers only leave
        while self.helpers.load(Ordering::Acquire) < self.n - 1 {
            self.helpers.fetch_add(1, Ordering::AcqRel);
            let me = self.clone();
            pool.spawn(move || me.help());
        }
    }

    /// A helper: work on each region as it is posted, until none comes.
    fn help(&self) {
        let mut seen = self.epoch.load(Ordering::Acquire);
        loop {
            self.work();
            let mut rounds = 0;
            loop {
                let e = self.epoch.load(Ordering::Acquire);
                if e != seen {
                    seen = e;
                    break;
                }
                rounds += 1;
                if rounds == SPIN_ROUNDS || self.is_lost() {
                    self.helpers.fetch_sub(1, Ordering::AcqRel);
                    return;
                }
                pause(rounds);
            }
        }
    }
}

/// A posted region: on drop (return or unwind) nothing more can be
/// claimed, and the parts claimed have finished.
struct Posted<'r>(&'r Regions);

impl Drop for Posted<'_> {
    fn drop(&mut self) {
        let claimed = {
            let mut c = self.0.lock();
            c.f = None;
            c.rest = &mut [];
            c.claimed
        };
        let mut rounds = 0u32;
        while self.0.done.load(Ordering::Acquire) < claimed {
            rounds = rounds.wrapping_add(1);
            if self.0.is_lost() {
                // (its part may be written by no one: the poster's output
                // is garbage, and the panic says so)
                self.0.busy.store(false, Ordering::Release);
                panic!("{LOST}");
            }
            pause(rounds);
        }
    }
}

/// The region's borrows as `'static`, to hand them to the helpers.
///
/// # Safety
/// Neither may be used after `'a` ends.
unsafe fn erase<'a>(f: Part<'a>, data: &'a mut [f32]) -> (Part<'static>, &'static mut [f32]) {
    // SAFETY: same types but for the lifetimes; the caller's contract.
    unsafe {
        (
            core::mem::transmute::<Part<'a>, Part<'static>>(f),
            core::mem::transmute::<&'a mut [f32], &'static mut [f32]>(data),
        )
    }
}
