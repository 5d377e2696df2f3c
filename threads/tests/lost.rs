//! A pool thread that dies inside a region without unwinding (a wasm trap
//! on a pool worker) leaves its part unfinished: once its flag is set, the
//! poster panics instead of spinning for ever, and so does every later
//! region. (A process of its own: the stuck helper never returns.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tern_core::backend::Parallel;
use tern_threads::Threads;

#[test]
fn a_lost_helper_makes_the_poster_panic_not_hang() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let par: &'static Threads = Box::leak(Box::new(Threads::spinning_beside(pool)));
    let helper_stuck = &*Box::leak(Box::new(AtomicBool::new(false)));
    let t0 = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let poster = std::thread::current().id();
        let posted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut data = vec![0.0f32; 1 << 17];
            par.for_each_run(&mut data, 64, &|_, _| {
                if std::thread::current().id() != poster && !helper_stuck.swap(true, Ordering::AcqRel) {
                    loop {
                        std::thread::park();
                    }
                }
                // (slow enough that the helper claims a part)
                std::thread::sleep(Duration::from_micros(200));
            });
        }));
        let _ = tx.send(posted.map_err(|e| e.downcast_ref::<String>().cloned().unwrap_or_default()));
    });
    // a helper is in its part, never to come back: say it was lost
    while !helper_stuck.load(Ordering::Acquire) {
        assert!(t0.elapsed() < Duration::from_secs(30), "no helper ever claimed a part");
        std::thread::yield_now();
    }
    std::thread::sleep(Duration::from_millis(100));
    par.lost_flag().unwrap().store(1, Ordering::Relaxed);
    let posted = rx.recv_timeout(Duration::from_secs(30)).expect("the poster still waits on the lost helper");
    let msg = posted.expect_err("the poster returned with a part unfinished");
    assert!(msg.contains("trapped and was lost"), "{msg}");
    // later regions say the same at once
    let again = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        par.for_each_run(&mut vec![0.0f32; 1 << 17], 64, &|_, _| {})
    }));
    assert!(again.is_err(), "a later region ran on a pool that lost a thread");
}
