//! The generation API on the real models: chat templates as HF renders
//! them, multi-turn cache reuse, save/restore, context overflow, seeded
//! reproducibility across thread counts, streaming and cancellation, and
//! batch invariance.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tern::Threads;
use tern_core::runtime::messages_from_json;
use tern_core::SamplerConfig;
use tern_core::{generate_batch, BatchItem, Event, FinishReason, GenerateConfig, Generator};
use tern_core::{AdapterSet, Error, Logits};
use tern_core::{Conversation, Overflow};
use tern_tests::*;

fn greedy(n: usize) -> GenerateConfig {
    GenerateConfig { max_tokens: n, sampler: SamplerConfig::greedy(), ..Default::default() }
}

fn sampled(n: usize, seed: Option<u64>) -> GenerateConfig {
    GenerateConfig {
        max_tokens: n,
        sampler: SamplerConfig { temperature: 0.9, seed, ..Default::default() },
        ..Default::default()
    }
}

#[test]
fn chat_templates_render_as_hf_does() {
    for (model, file) in MODELS {
        let lm = load(file);
        let case = &manifest()["prompts"][model]["p3"];
        let mut conv = Conversation::new(&lm.model, lm.tokenizer().unwrap(), 256, None).unwrap();
        conv.messages = messages_from_json(&case["messages"]).unwrap();
        let rendered = conv.render().unwrap();
        assert_eq!(rendered, case["rendered"].as_str().unwrap(), "{model}");
        assert_eq!(conv.prompt(lm.tokenizer().unwrap(), 0).unwrap(), ids(&case["input_ids"]), "{model}");
    }
}

#[test]
fn multi_turn_prefills_only_new_tokens_and_matches_a_fresh_session() {
    let lm = load(MODELS[1].1);
    let e = tern::engine(threads(), false).unwrap();
    let mut conv = Conversation::new(&lm.model, lm.tokenizer().unwrap(), 512, Some("Be brief.")).unwrap();
    let r1 = conv.reply(&lm.model, e, lm.tokenizer().unwrap(), "Name a color.", greedy(12), tern::clock).unwrap();
    assert_eq!(r1.usage.cached_tokens, 0);
    let in_cache = conv.session.n_past();
    let prompt2 = {
        let mut c = Conversation::new(&lm.model, lm.tokenizer().unwrap(), 512, None).unwrap();
        c.messages = conv.messages.clone();
        c.messages.push(tern_core::Message::new("user", "Another one."));
        c.prompt(lm.tokenizer().unwrap(), 0).unwrap()
    };
    let gen = conv.generator(&lm.model, e, lm.tokenizer().unwrap(), "Another one.", greedy(1)).unwrap();
    let r2 = gen.run(|_, _| {}).unwrap();
    let reused = r2.usage.cached_tokens;
    println!(
        "turn 2: {} prompt tokens, {reused} from the cache ({in_cache} were cached), {} prefilled",
        r2.usage.prompt_tokens,
        r2.usage.prompt_tokens - reused
    );
    assert_eq!(r2.usage.prompt_tokens, prompt2.len());
    assert!(reused > r1.usage.prompt_tokens, "the first turn's prompt and reply are reused");
    assert!(reused <= in_cache);
    let turn_logits = conv.session.sampling_parts().0.to_vec();
    let mut fresh = lm.model.session(512, 512);
    let want = fresh.forward(&lm.model, &e, &prompt2, Logits::Last).unwrap();
    assert!(bits_equal(&turn_logits, want), "turn-2 logits differ from a fresh session over the whole conversation");
}

#[test]
fn saved_session_continues_identically() {
    let lm = load(MODELS[1].1);
    let e = tern::engine(threads(), false).unwrap();
    let mut conv = Conversation::new(&lm.model, lm.tokenizer().unwrap(), 512, None).unwrap();
    conv.reply(&lm.model, e, lm.tokenizer().unwrap(), "Tell me a story.", sampled(10, Some(5)), tern::clock).unwrap();
    let saved = conv.save(&lm.model);
    // seed None: the second turn draws from the session's RNG, saved with it
    let a = conv.reply(&lm.model, e, lm.tokenizer().unwrap(), "Go on.", sampled(12, None), tern::clock).unwrap();
    let mut other = Conversation::new(&lm.model, lm.tokenizer().unwrap(), 512, None).unwrap();
    other.load(&lm.model, &saved).unwrap();
    let b = other.reply(&lm.model, e, lm.tokenizer().unwrap(), "Go on.", sampled(12, None), tern::clock).unwrap();
    assert_eq!(a.tokens, b.tokens);
    assert_eq!(a.usage, b.usage);
    // a damaged state is refused with a typed error
    let mut bad = saved.clone();
    bad.truncate(bad.len() - 3);
    assert!(matches!(other.load(&lm.model, &bad), Err(Error::InvalidValue { .. })));
}

#[test]
fn context_overflow_errors_unless_dropping_oldest_turns() {
    let lm = load(MODELS[1].1);
    let e = tern::engine(threads(), false).unwrap();
    let long = "word ".repeat(60);
    let mut conv = Conversation::new(&lm.model, lm.tokenizer().unwrap(), 128, Some("S.")).unwrap();
    conv.reply(&lm.model, e, lm.tokenizer().unwrap(), &long, greedy(4), tern::clock).unwrap();
    let before = conv.messages.len();
    let err = conv.generator(&lm.model, e, lm.tokenizer().unwrap(), &long, greedy(4)).err().unwrap();
    assert!(matches!(err, Error::ContextFull { n_ctx: 128, .. }), "{err}");
    assert_eq!(conv.messages.len(), before, "a refused turn leaves the history as it was");
    conv.overflow = Overflow::DropOldest;
    let r = conv.reply(&lm.model, e, lm.tokenizer().unwrap(), &long, greedy(4), tern::clock).unwrap();
    assert_eq!(r.usage.completion_tokens, 4);
    assert_eq!(conv.messages[0].role, "system");
    assert_eq!(conv.messages.len(), 3, "system, the new user turn, its reply");
}

#[test]
fn seeded_sampling_is_the_same_for_any_thread_count() {
    let lm = load(MODELS[1].1);
    let prompt = lm.tokenizer().unwrap().encode("Once upon a time", true).unwrap();
    let run = |t: &Threads| {
        let mut s = lm.model.session(64, 512);
        let cfg = sampled(16, Some(1234));
        Generator::new(&lm.model, tern::engine(t, false).unwrap(), lm.tokenizer().unwrap(), &mut s, &prompt, cfg)
            .run(|_, _| {})
            .unwrap()
    };
    let (one, two) = (run(&Threads::new(1)), run(&Threads::new(2)));
    assert_eq!(one.tokens, two.tokens);
    assert_eq!(one.tokens, run(&Threads::new(2)).tokens);
    assert_ne!(one.tokens, {
        let mut s = lm.model.session(64, 512);
        let cfg = sampled(16, Some(99));
        Generator::new(
            &lm.model,
            tern::engine(threads(), false).unwrap(),
            lm.tokenizer().unwrap(),
            &mut s,
            &prompt,
            cfg,
        )
        .run(|_, _| {})
        .unwrap()
        .tokens
    });
}

#[test]
fn streamed_deltas_build_the_text_and_cancel_works_from_another_thread() {
    let lm = load(MODELS[1].1);
    let e = tern::engine(threads(), false).unwrap();
    let case = prompt_case(MODELS[1].0, "p5");
    let mut s = lm.model.session(256, 512);
    let mut text = String::new();
    let mut ids = Vec::new();
    let gen = Generator::new(&lm.model, e, lm.tokenizer().unwrap(), &mut s, &case.input_ids, greedy(24))
        .with_clock(tern::clock);
    let mut result = None;
    for ev in gen {
        match ev.unwrap() {
            Event::Token { id, text: t, .. } => {
                ids.push(id);
                text += &t;
            }
            Event::Done(r) => result = Some(r),
        }
    }
    let r = result.unwrap();
    assert_eq!((r.text.as_str(), &r.tokens), (text.as_str(), &ids));
    let t = &r.timings;
    assert!(t.prefill_ms > 0.0 && t.first_token_ms >= t.prefill_ms && t.total_ms >= t.first_token_ms, "{t:?}");
    assert!(t.per_token_p50_ms > 0.0 && t.per_token_p50_ms <= t.per_token_p99_ms && t.tokens_per_s > 0.0, "{t:?}");
    assert_eq!(
        (r.usage.prompt_tokens, r.usage.cached_tokens, r.usage.completion_tokens),
        (case.input_ids.len(), 0, 24)
    );

    let flag = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let canceller = {
        let flag = flag.clone();
        std::thread::spawn(move || {
            rx.recv().unwrap();
            flag.store(true, Ordering::SeqCst);
        })
    };
    let mut s = lm.model.session(256, 512);
    let gen =
        Generator::new(&lm.model, e, lm.tokenizer().unwrap(), &mut s, &case.input_ids, greedy(200)).with_cancel(flag);
    let mut sent = false;
    let r = gen
        .run(|_, _| {
            if !sent {
                tx.send(()).unwrap();
                sent = true;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        })
        .unwrap();
    canceller.join().unwrap();
    assert_eq!(r.finish_reason, FinishReason::Cancelled);
    assert!(r.tokens.len() < 5, "{} tokens after cancelling", r.tokens.len());
}

#[test]
fn batched_sequences_equal_each_run_alone() {
    let lm = load(MODELS[1].1);
    let e = tern::engine(threads(), false).unwrap();
    let items: Vec<BatchItem> = PROMPTS[..4]
        .iter()
        .enumerate()
        .map(|(i, p)| BatchItem {
            prompt: prompt_case(MODELS[1].0, p).input_ids,
            cfg: if i % 2 == 0 { greedy(6 + 3 * i) } else { sampled(6 + 3 * i, Some(i as u64)) },
        })
        .collect();
    let mut sessions: Vec<_> = items.iter().map(|_| lm.model.session(512, 64)).collect();
    let batched = generate_batch(&lm.model, &e, lm.tokenizer().unwrap(), &mut sessions, &items, tern::clock).unwrap();
    for (it, b) in items.iter().zip(&batched) {
        let mut s = lm.model.session(512, 64);
        let alone = Generator::new(&lm.model, e, lm.tokenizer().unwrap(), &mut s, &it.prompt, it.cfg.clone())
            .run(|_, _| {})
            .unwrap();
        assert_eq!((&alone.tokens, &alone.text, alone.finish_reason), (&b.tokens, &b.text, b.finish_reason));
    }

    // the logits themselves: one batched step vs each session alone
    let mut alone: Vec<_> = items.iter().map(|_| lm.model.session(512, 64)).collect();
    let mut together: Vec<_> = items.iter().map(|_| lm.model.session(512, 64)).collect();
    for ((a, t), it) in alone.iter_mut().zip(together.iter_mut()).zip(&items) {
        a.forward(&lm.model, &e, &it.prompt, Logits::None).unwrap();
        t.forward(&lm.model, &e, &it.prompt, Logits::None).unwrap();
    }
    let mut scratch = lm.model.batch_scratch(8);
    let nv = lm.model.config.n_vocab;
    for step in 0..3u32 {
        let toks: Vec<[u32; 1]> = (0..items.len() as u32).map(|i| [100 + 7 * i + step]).collect();
        let mut work: Vec<_> = together.iter_mut().zip(&toks).map(|(s, t)| (s, &t[..])).collect();
        let mut logits = Vec::new();
        lm.model.forward_batch(&e, &mut scratch, &mut work, &mut logits).unwrap();
        for (i, a) in alone.iter_mut().enumerate() {
            let want = a.forward(&lm.model, &e, &toks[i], Logits::Last).unwrap();
            assert!(bits_equal(&logits[i * nv..(i + 1) * nv], want), "sequence {i}, step {step}");
        }
    }
}

/// A session takes another's cached prefix instead of prefilling it (its
/// KV blocks, shared): the logits that follow are the same bits as a fresh
/// prefill of the whole prompt, and the donor, whose last shared block the
/// taker then wrote to, still computes what it did. Caches of another
/// element type, or with sliding-window rings, are not taken from (0,
/// nothing changes); another context size is.
#[test]
fn a_prefix_copied_from_another_session_equals_a_fresh_prefill() {
    let lm = load(MODELS[1].1);
    let e = tern::engine(threads(), false).unwrap();
    let tok = lm.tokenizer().unwrap();
    let system =
        tok.encode("You are a careful assistant. Answer in one short sentence, and name your sources.", true).unwrap();
    let ask = |q: &str| [system.clone(), tok.encode(q, false).unwrap()].concat();
    let (a, b) = (ask(" What is the capital of France?"), ask(" Who wrote Hamlet?"));
    let mut donor = lm.model.session(256, 64);
    donor.forward(&lm.model, &e, &a, Logits::Last).unwrap();
    let mut s = lm.model.session(256, 64);
    let shared = donor.common_prefix(&b);
    assert!(shared >= system.len());
    assert_eq!(s.copy_prefix(&donor, shared), shared);
    assert_eq!(s.tokens(), &b[..shared]);
    let got = s.forward(&lm.model, &e, &b[shared..], Logits::Last).unwrap().to_vec();
    let mut fresh = lm.model.session(256, 64);
    let want = fresh.forward(&lm.model, &e, &b, Logits::Last).unwrap();
    assert!(bits_equal(&got, want), "logits after a copied prefix differ from a fresh prefill");
    assert!(shared % tern_core::backend::KV_BLOCK != 0, "the taker writes into a shared block");
    let next = [b[shared]];
    let got = donor.forward(&lm.model, &e, &next, Logits::Last).unwrap().to_vec();
    let mut fresh = lm.model.session(256, 64);
    fresh.forward(&lm.model, &e, &a, Logits::None).unwrap();
    let want = fresh.forward(&lm.model, &e, &next, Logits::Last).unwrap();
    assert!(bits_equal(&got, want), "the donor's cache changed when the taker wrote");
    // another context size takes it; another element type does not
    let mut other = lm.model.session(128, 64);
    assert_eq!(other.copy_prefix(&donor, shared), shared);
    let mut wide = lm.model.session_kv(256, 64, tern_core::KvType::F32);
    assert_eq!(wide.copy_prefix(&donor, shared), 0);
    assert_eq!(wide.n_past(), 0);
    // truncate keeps at most the positions there are
    assert_eq!(wide.truncate(shared), 0);
    assert_eq!(other.truncate(4 * shared), shared);
    // a model with sliding-window rings
    let gemma = tern::load(&tern_tests::hfdir::tiny("tiny-gemma2")).unwrap();
    let mut g1 = gemma.model.session(512, 16);
    g1.forward(&gemma.model, &e, &[1, 2, 3, 4, 5, 6, 7, 8], Logits::None).unwrap();
    let mut g2 = gemma.model.session(512, 16);
    assert_eq!(g2.copy_prefix(&g1, 4), 0);
}

/// The prefix cache keeps a finished sequence's blocks keyed by their
/// tokens: a later session attaches the longest cached prefix of its
/// prompt — through whole blocks, ending inside a block — and the logits
/// that follow are the same bits as a fresh prefill. Blocks a session
/// holds are never evicted; the rest go least recently used, a chain from
/// its end. Sessions of another element type, or with window rings,
/// neither add nor take.
#[test]
fn a_prefix_from_the_prefix_cache_equals_a_fresh_prefill() {
    use tern_core::backend::KV_BLOCK;
    use tern_core::{runtime::BlockCounts, runtime::PrefixCache};
    let lm = load(MODELS[1].1);
    let e = tern::engine(threads(), false).unwrap();
    let tok = lm.tokenizer().unwrap();
    let text = "Maps, atlases and globes are sold here every day from nine to six, except on Sundays. ".repeat(40);
    let long = tok.encode(&text, true).unwrap();
    assert!(long.len() > 2 * KV_BLOCK + 100, "{}", long.len());
    let ask = |n: usize, q: &str| [&long[..n], &tok.encode(q, false).unwrap()].concat();
    let a = ask(2 * KV_BLOCK + 60, " What is sold here?");
    let mut cache = PrefixCache::new();
    let mut s1 = lm.model.session(1024, 64);
    s1.forward(&lm.model, &e, &a, Logits::Last).unwrap();
    cache.insert(&s1, s1.n_past());
    assert_eq!(cache.blocks(), 3, "two full blocks and the one the prompt ends in");
    drop(s1);
    assert_eq!(cache.counts([]), BlockCounts { in_use: 0, shared: 0, cached: 3 });

    let fresh = |p: &[u32]| lm.model.session(1024, 64).forward(&lm.model, &e, p, Logits::Last).unwrap().to_vec();
    // through two whole blocks into the third; the first whole; inside the first
    let mut held = Vec::new();
    let (b, c, d) = (ask(2 * KV_BLOCK + 60, " When do you open?"), ask(KV_BLOCK, " Why?"), ask(100, " Hi?"));
    for (p, want_n) in [(b, 2 * KV_BLOCK + 60), (c, KV_BLOCK), (d, 100)] {
        assert_eq!(cache.longest(&AdapterSet::new(), &p), want_n);
        let mut s = lm.model.session(1024, 64);
        assert_eq!(cache.attach(&mut s, &p, p.len() - 1), want_n);
        assert_eq!((s.n_past(), s.tokens()), (want_n, &p[..want_n]));
        assert_eq!(s.kv_blocks_to_write(p.len() - want_n), 1, "a new block, or a copy of the one it writes into");
        let got = s.forward(&lm.model, &e, &p[want_n..], Logits::Last).unwrap().to_vec();
        assert!(bits_equal(&got, &fresh(&p)), "logits after {want_n} cached positions differ from a fresh prefill");
        held.push(s);
    }
    // the cache's blocks 0 and 1 are held, 0 by two sessions; the third
    // session wrote into (its copy of) block 0, the first into block 2
    assert_eq!(cache.counts(&held), BlockCounts { in_use: 5, shared: 1, cached: 1 });
    assert!(cache.evict(), "the third block: no session holds it now");
    assert!(!cache.evict(), "the rest are held");
    assert_eq!(cache.longest(&AdapterSet::new(), &a), 2 * KV_BLOCK);
    held.clear();
    assert!(cache.evict() && cache.evict() && !cache.evict());
    assert_eq!((cache.blocks(), cache.evictions(), cache.longest(&AdapterSet::new(), &a)), (0, 3, 0));

    // least recently used first: an older prompt's last block, then its
    // first, before a newer prompt's
    let c = ask(100, " Hi?")[40..].to_vec();
    for p in [&a[..300], &c[..]] {
        let mut s = lm.model.session(1024, 64);
        s.forward(&lm.model, &e, p, Logits::None).unwrap();
        cache.insert(&s, p.len());
    }
    assert!(cache.evict());
    assert_eq!((cache.longest(&AdapterSet::new(), &a), cache.longest(&AdapterSet::new(), &c)), (KV_BLOCK, c.len()));
    assert!(cache.evict());
    assert_eq!((cache.longest(&AdapterSet::new(), &a), cache.longest(&AdapterSet::new(), &c)), (0, c.len()));
    assert!(cache.evict() && !cache.evict());

    // another element type, and a model with window rings: nothing shared
    let mut s = lm.model.session(1024, 64);
    s.forward(&lm.model, &e, &a[..300], Logits::None).unwrap();
    cache.insert(&s, 300);
    let mut wide = lm.model.session_kv(1024, 64, tern_core::KvType::F32);
    assert_eq!((cache.attach(&mut wide, &a, a.len()), wide.n_past()), (0, 0));
    let gemma = tern::load(&tern_tests::hfdir::tiny("tiny-gemma2")).unwrap();
    let mut g = gemma.model.session(512, 16);
    g.forward(&gemma.model, &e, &[1, 2, 3, 4, 5, 6, 7, 8], Logits::None).unwrap();
    let mut gemma_cache = PrefixCache::new();
    gemma_cache.insert(&g, 8);
    assert_eq!(gemma_cache.blocks(), 0);
}

#[test]
fn a_q8_0_cache_takes_half_the_memory_shares_and_saves_exactly() {
    use tern_core::{runtime::PrefixCache, KvType};
    let lm = load(MODELS[1].1);
    let (m, e) = (&lm.model, tern::engine(threads(), false).unwrap());
    let p = lm.tokenizer().unwrap().encode(&"The keeper counted the ships that passed the light. ".repeat(30), true);
    let p = p.unwrap();
    // 34 bytes per 32 elements, f16's 64
    let (q8, f16) = (m.kv_block_bytes(1024, 64, KvType::Q8_0), m.kv_block_bytes(1024, 64, KvType::F16));
    assert_eq!(q8 * 64, f16 * 34);
    let run = |kv, p: &[u32]| {
        let mut s = m.session_kv(1024, 64, kv);
        let l = s.forward(m, &e, p, Logits::Last).unwrap().to_vec();
        (s, l)
    };
    // quantized once, when written: not f16's logits, but near them
    let ((mut s8, l8), (_, l16)) = (run(KvType::Q8_0, &p), run(KvType::F16, &p));
    assert_eq!(s8.kv_type(), KvType::Q8_0);
    assert!(!bits_equal(&l8, &l16), "the Q8_0 cache stores what f16 does");
    let argmax = |l: &[f32]| (0..l.len()).max_by(|&a, &b| l[a].total_cmp(&l[b])).unwrap();
    assert_eq!(argmax(&l8), argmax(&l16));
    let spread =
        l16.iter().fold(f32::NEG_INFINITY, |a, &b| a.max(b)) - l16.iter().fold(f32::INFINITY, |a, &b| a.min(b));
    let off = l8.iter().zip(&l16).fold(0.0f32, |a, (x, y)| a.max((x - y).abs()));
    assert!(off < 0.05 * spread, "Q8_0 logits {off} from f16's (spread {spread})");

    // saved and restored into another Q8_0 session: the same blocks, so
    // the same logits after; an f16 session refuses the rotated rows, and
    // a Q8_0 one an f16 state
    let saved = s8.save(&m.config);
    let mut r = m.session_kv(1024, 64, KvType::Q8_0);
    r.restore(&m.config, &saved).unwrap();
    let err = m.session(1024, 64).restore(&m.config, &saved).unwrap_err().to_string();
    assert!(err.contains("q8_0") && err.contains("rotated"), "{err}");
    let f16_state = run(KvType::F16, &p[..10]).0.save(&m.config);
    assert!(m.session_kv(1024, 64, KvType::Q8_0).restore(&m.config, &f16_state).is_err());
    let a = s8.forward(m, &e, &[42, 7], Logits::Last).unwrap().to_vec();
    assert!(bits_equal(&a, r.forward(m, &e, &[42, 7], Logits::Last).unwrap()), "restored Q8_0 rows differ");

    // Q8_0 blocks are shared through the prefix cache like f16 ones, with
    // the same bits as a fresh prefill; an f16 session takes none of them
    let mut cache = PrefixCache::new();
    cache.insert(&s8, p.len());
    let q = [&p[..], &[11, 12, 13]].concat();
    let mut s = m.session_kv(1024, 64, KvType::Q8_0);
    assert_eq!(cache.attach(&mut s, &q, q.len() - 1), p.len());
    let got = s.forward(m, &e, &q[p.len()..], Logits::Last).unwrap().to_vec();
    assert!(bits_equal(&got, &run(KvType::Q8_0, &q).1), "a cached Q8_0 prefix differs from a fresh prefill");
    assert_eq!(cache.attach(&mut m.session(1024, 64), &q, q.len()), 0);

    // sliding-window rings of Q8_0 rows read as blocks of them do (Gemma 3:
    // window 5, so a ring of 20 positions for 16-token steps, kept when
    // its two copies are smaller than the context)
    let gemma = tern::load(&tern_tests::hfdir::tiny("tiny-gemma3")).unwrap();
    let toks: Vec<u32> = (0..38).map(|i| 3 + i * 7 % 200).collect();
    let logits = |n_ctx| {
        let mut s = gemma.model.session_kv(n_ctx, 16, KvType::Q8_0);
        s.forward(&gemma.model, &e, &toks, Logits::All).unwrap().to_vec()
    };
    assert!(bits_equal(&logits(512), &logits(40)), "Q8_0 rings differ from Q8_0 blocks");
    // heads that are not whole Q8_0 blocks (16) are refused, naming them
    let g2 = tern::load(&tern_tests::hfdir::tiny("tiny-gemma2")).unwrap();
    let err = g2.model.check_sessions(1, 64, 16, KvType::Q8_0, u64::MAX).unwrap_err().to_string();
    assert!(err.contains("q8_0") && err.contains("head dimension is 16"), "{err}");
    assert_eq!(g2.model.session_kv(64, 16, KvType::Q8_0).kv_type(), KvType::F16);
}
