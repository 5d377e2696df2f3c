//! Every region covers its output once, with the right chunk indices, on
//! one worker or with spinning helpers beside the caller — also when
//! several threads post regions at once and when the helpers have gone
//! back to sleep.

use tern_core::backend::Parallel;
use tern_threads::Threads;

/// Fill `len` elements in chunks of `chunk`: each element its chunk index
/// times 1000 plus its place in the chunk (a run's chunks split by hand).
fn check(par: &dyn Parallel, len: usize, chunk: usize) {
    let mut data = vec![-1.0f32; len];
    par.for_each_run(&mut data, chunk, &|first, run| {
        for (j, c) in run.chunks_mut(chunk).enumerate() {
            for (k, x) in c.iter_mut().enumerate() {
                assert_eq!(*x, -1.0, "an element written twice");
                *x = ((first + j) * 1000 + k) as f32;
            }
        }
    });
    for (i, x) in data.iter().enumerate() {
        assert_eq!(*x, ((i / chunk) * 1000 + i % chunk) as f32, "len {len} chunk {chunk}: element {i}");
    }
}

const SHAPES: [(usize, usize); 7] = [(1, 1), (7, 3), (576, 72), (960 * 3, 16), (1000, 999), (70_000, 250), (5, 64)];

#[test]
fn regions_cover_their_output_once() {
    for par in [Threads::new(1), Threads::new(2), Threads::new(3)] {
        for (len, chunk) in SHAPES {
            check(&par, len, chunk);
        }
    }
    for helpers in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(helpers).build().unwrap();
        let par = Threads::spinning_beside(pool);
        assert_eq!(par.n_workers(), helpers + 1);
        for (len, chunk) in SHAPES {
            check(&par, len, chunk);
        }
        par.install(&mut || {
            for _ in 0..200 {
                for (len, chunk) in SHAPES {
                    check(&par, len, chunk);
                }
            }
        });
        // after the helpers have given up spinning
        std::thread::sleep(std::time::Duration::from_millis(50));
        par.install(&mut || check(&par, 576, 72));
        // several posters at once (one posts, the others run theirs alone)
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..100 {
                        for (len, chunk) in SHAPES {
                            check(&par, len, chunk);
                        }
                    }
                });
            }
        });
    }
}
