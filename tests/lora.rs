//! LoRA adapters: PEFT directories on two tiny families against
//! transformers + peft (tests/fixtures/lora, make_lora.py), their GGUF LoRA
//! twins the same bits, the base's bytes untouched, scale 0 the base's
//! bits, a batch mixing adapters the bits of each sequence alone on every
//! backend, and the prefix cache keyed by the adapter set.

use std::path::PathBuf;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use tern::Loaded;
use tern_core::backend::KV_BLOCK;
use tern_core::runtime::PrefixCache;
use tern_core::{Adapter, AdapterSet, Engine, Logits};
use tern_tests::hfdir::tiny;
use tern_tests::tiny_oracle::*;
use tern_tests::*;

/// (tiny base, the architecture its GGUF twin names)
const BASES: [(&str, &str); 2] = [("tiny-mistral", "llama"), ("tiny-qwen3-yarn", "qwen3")];

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/lora").join(rel)
}

fn adapter(lm: &Loaded, base: &str, name: &str, gguf: bool) -> Arc<Adapter> {
    let dir = fixture(&format!("{base}-{name}"));
    let p = if gguf { dir.join("adapter.gguf") } else { dir };
    tern::load_adapter(&p, &lm.model).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn set(adapters: &[&Arc<Adapter>]) -> AdapterSet {
    adapters.iter().fold(AdapterSet::new(), |s, a| s.with(Arc::clone(a), 1.0).unwrap())
}

/// Every row's logits of one forward over `input` with `set`.
fn logits_with(lm: &Loaded, e: &Engine, set: &AdapterSet, input: &[u32]) -> Vec<f32> {
    let mut s = lm.model.session_kv(input.len() + 8, 512, e.kv_type());
    s.set_adapters(set);
    s.forward(&lm.model, e, input, Logits::All).unwrap().to_vec()
}

fn greedy_with(lm: &Loaded, e: &Engine, set: &AdapterSet, input: &[u32], n: usize) -> Vec<u32> {
    let mut s = lm.model.session_kv(input.len() + n, 512, e.kv_type());
    s.set_adapters(set);
    let mut out = vec![argmax(s.forward(&lm.model, e, input, Logits::Last).unwrap())];
    while out.len() < n {
        let next = argmax(s.forward(&lm.model, e, &[*out.last().unwrap()], Logits::Last).unwrap());
        out.push(next);
    }
    out
}

/// A run of the oracle: its adapters, transformers + peft's logits, ids.
struct Run {
    adapters: Vec<String>,
    logits: Vec<f32>,
    generated: Vec<u32>,
}

fn runs(base: &str) -> (Vec<u32>, Vec<Run>) {
    let j: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture(&format!("{base}.json"))).unwrap()).unwrap();
    let runs = j["runs"]
        .as_object()
        .unwrap()
        .values()
        .map(|r| {
            let bytes = std::fs::read(fixture(r["logits_file"].as_str().unwrap())).unwrap();
            assert_eq!(format!("{:x}", Sha256::digest(&bytes)), r["logits_sha256"].as_str().unwrap());
            Run {
                adapters: r["adapters"].as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_string()).collect(),
                logits: bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect(),
                generated: ids(&r["generated_ids"]),
            }
        })
        .collect();
    (ids(&j["input_ids"]), runs)
}

/// PEFT directories (rank 8, and rank 4 with rsLoRA; each alone and both
/// at once) on a Llama-shaped and a Qwen3 base: the exact path within
/// 1e-5 of the largest logit of transformers + peft, greedy ids equal —
/// and far from the base's, so the adapters are not a no-op.
#[test]
fn lora_peft_adapters_match_transformers_and_peft() {
    let e = engine(true);
    for (base, _) in BASES {
        let lm = load_path(&tiny(base));
        let (input, runs) = runs(base);
        let plain = logits_with(&lm, &e, &AdapterSet::new(), &input);
        for run in &runs {
            let loaded: Vec<_> = run.adapters.iter().map(|a| adapter(&lm, base, a, false)).collect();
            let s = set(&loaded.iter().collect::<Vec<_>>());
            let got = logits_with(&lm, &e, &s, &input);
            let top = run.logits.iter().fold(0f64, |m, &x| m.max(x.abs() as f64));
            let d = max_abs_diff(&got, &run.logits);
            let moved = max_abs_diff(&plain, &run.logits);
            println!(
                "{base} + {:?}: max |Δ| {d:.2e} = {:.2e}·max|logit|; the base is {moved:.2} away",
                run.adapters,
                d / top
            );
            assert!(d <= 1e-5 * top, "{base} + {:?}: max |Δ| {d:e} (max |logit| {top})", run.adapters);
            assert!(moved > 1000.0 * d, "{base} + {:?}: the adapters barely move the logits", run.adapters);
            assert_eq!(greedy_with(&lm, &e, &s, &input, 8), run.generated, "{base} + {:?}: greedy ids", run.adapters);
        }
    }
}

/// The GGUF LoRA twin (llama.cpp's layout, a Llama's Q/K rows permuted)
/// gives the PEFT directory's bits: on the HF base, and on the base's GGUF
/// twin (whose rows the PEFT adapter's are then put in the order of).
#[test]
fn lora_gguf_twins_give_the_peft_directorys_bits() {
    for (base, arch) in BASES {
        let gguf_base = if arch == "llama" { "tiny-mistral-bf16" } else { base };
        for lm in [load_path(&tiny(base)), load_path(&test_model(&format!("{gguf_base}.gguf")))] {
            let (input, _) = runs(base);
            for exact in [true, false] {
                let e = engine(exact);
                for name in ["a", "b"] {
                    let from_dir = logits_with(&lm, &e, &set(&[&adapter(&lm, base, name, false)]), &input);
                    let from_gguf = logits_with(&lm, &e, &set(&[&adapter(&lm, base, name, true)]), &input);
                    let label = format!("{base} {name} on {:?} exact={exact}", lm.model.config.rope_style);
                    assert!(bits_equal(&from_dir, &from_gguf), "{label}: {:e}", max_abs_diff(&from_dir, &from_gguf));
                }
            }
        }
    }
}

/// The base's bytes hash the same before and after loading and running
/// adapters; an adapter at scale 0, and a session's adapters taken away,
/// give the base's logits bit for bit.
#[test]
fn lora_leaves_the_base_untouched() {
    let (base, _) = BASES[0];
    let lm = load_path(&tiny(base));
    let hash = |lm: &Loaded| {
        lm.model.buffers().iter().fold(Sha256::new(), |h, b| h.chain_update(b.as_ref() as &[u8])).finalize()
    };
    let before = hash(&lm);
    let (input, _) = runs(base);
    let e = engine(false);
    let plain = logits_with(&lm, &e, &AdapterSet::new(), &input);
    let a = adapter(&lm, base, "a", false);
    let zero = AdapterSet::new().with(Arc::clone(&a), 0.0).unwrap();
    assert!(bits_equal(&logits_with(&lm, &e, &zero, &input), &plain), "scale 0");
    let mut s = lm.model.session_kv(input.len(), 512, e.kv_type());
    s.set_adapters(&set(&[&a]));
    let with = s.forward(&lm.model, &e, &input, Logits::All).unwrap().to_vec();
    assert!(!bits_equal(&with, &plain));
    s.set_adapters(&AdapterSet::new());
    assert_eq!(s.n_past(), 0, "another adapter set empties the cache");
    assert!(bits_equal(s.forward(&lm.model, &e, &input, Logits::All).unwrap(), &plain), "adapters taken away");
    assert_eq!(hash(&lm), before, "the base's bytes");
}

/// One batch of sequences running no adapter, a, b, a then b, and a at
/// half scale: each row the bits of that sequence run alone, on every
/// backend, 1 and 2 threads, exact and quantized.
#[test]
fn lora_mixed_batch_gives_each_sequence_its_bits_alone() {
    let (base, _) = BASES[1];
    let lm = load_path(&tiny(base));
    let (a, b) = (adapter(&lm, base, "a", false), adapter(&lm, base, "b", true));
    let sets = [
        AdapterSet::new(),
        set(&[&a]),
        set(&[&b]),
        set(&[&a, &b]),
        AdapterSet::new().with(Arc::clone(&a), 0.5).unwrap(),
        set(&[&a]),
    ];
    let prompts: Vec<Vec<u32>> =
        (0..sets.len()).map(|i| (0..5 + 3 * i as u32).map(|t| (t * 31 + 7 * i as u32) % 512).collect()).collect();
    for exact in [false, true] {
        for backend in tern::kernels::available() {
            for n_threads in [1, 2] {
                let par = tern::Threads::new(n_threads);
                let e = Engine { kernels: tern::kernels::by_name(backend).unwrap(), par: &par, exact };
                let alone: Vec<Vec<f32>> = sets
                    .iter()
                    .zip(&prompts)
                    .map(|(s, p)| {
                        let mut sess = lm.model.session_kv(64, 64, e.kv_type());
                        sess.set_adapters(s);
                        sess.forward(&lm.model, &e, p, Logits::Last).unwrap().to_vec()
                    })
                    .collect();
                let mut sessions: Vec<_> = sets
                    .iter()
                    .map(|s| {
                        let mut sess = lm.model.session_kv(64, 64, e.kv_type());
                        sess.set_adapters(s);
                        sess
                    })
                    .collect();
                let mut scratch = lm.model.batch_scratch(128);
                let mut items: Vec<_> = sessions.iter_mut().zip(&prompts).map(|(s, p)| (s, &p[..])).collect();
                let mut logits = Vec::new();
                lm.model.forward_batch(&e, &mut scratch, &mut items, &mut logits).unwrap();
                let nv = lm.model.config.n_vocab;
                for (i, want) in alone.iter().enumerate() {
                    let got = &logits[i * nv..(i + 1) * nv];
                    assert!(
                        bits_equal(got, want),
                        "{backend} threads={n_threads} exact={exact}: sequence {i} in the batch"
                    );
                }
            }
        }
    }
}

/// Two sequences with other adapters never share cached KV; the same
/// adapter set does.
#[test]
fn lora_prefix_cache_is_keyed_by_the_adapter_set() {
    let (base, _) = BASES[1]; // (Mistral's window rings share nothing)
    let lm = load_path(&tiny(base));
    let e = engine(false);
    let (a, b) = (adapter(&lm, base, "a", false), adapter(&lm, base, "b", false));
    let prompt: Vec<u32> = (0..KV_BLOCK as u32 + 5).map(|t| (t * 13 + 1) % 512).collect();
    let mut cache = PrefixCache::new();
    let with_a = set(&[&a]);
    let mut s = lm.model.session_kv(KV_BLOCK + 16, 64, e.kv_type());
    s.set_adapters(&with_a);
    let want = s.forward(&lm.model, &e, &prompt, Logits::Last).unwrap().to_vec();
    cache.insert(&s, prompt.len());
    let n = prompt.len();
    assert_eq!(cache.longest(&with_a, &prompt), n, "the same adapter");
    assert_eq!(cache.longest(&set(&[&a]), &prompt), n, "the same adapter, loaded as another set");
    for (label, other) in [("none", AdapterSet::new()), ("b", set(&[&b])), ("a then b", set(&[&a, &b]))] {
        assert_eq!(cache.longest(&other, &prompt), 0, "{label}");
        let mut t = lm.model.session_kv(KV_BLOCK + 16, 64, e.kv_type());
        t.set_adapters(&other);
        assert_eq!(cache.attach(&mut t, &prompt, n - 1), 0, "{label}: attach");
        assert_eq!(t.copy_prefix(&s, n), 0, "{label}: copy_prefix");
    }
    let a_half = AdapterSet::new().with(Arc::clone(&a), 0.5).unwrap();
    assert_eq!(cache.longest(&a_half, &prompt), 0, "another scale");
    // a sequence with the same set takes the rows, and the rows are right
    let mut t = lm.model.session_kv(KV_BLOCK + 16, 64, e.kv_type());
    t.set_adapters(&with_a);
    assert_eq!(cache.attach(&mut t, &prompt, n - 1), n - 1);
    let got = t.forward(&lm.model, &e, &prompt[n - 1..], Logits::Last).unwrap();
    assert!(bits_equal(got, &want));
}

/// A real adapter (tests/fixtures/lora/train_smollm2.py): rank 8 on
/// SmolLM2-135M-Instruct's attention, trained to wrap every answer in
/// `<answer>…</answer>`. On questions of kinds its training never saw,
/// replies through `tern::Model`'s chat carry the tags with it and not
/// without it; at scale 0 the logits are the base's bits.
#[test]
fn lora_trained_adapter_wraps_held_out_answers() {
    let dir = fixture("smollm2-answer-tags");
    let record: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("train.json")).unwrap()).unwrap();
    let mut m = tern::Model::load(model_path("smollm2-135m-instruct-q4_1.gguf")).unwrap();
    let id = m.load_adapter(&dir, 0.0).unwrap();
    let a = m.loaded().adapters[id].adapter.clone();
    assert_eq!((a.rank(), a.alpha(), a.n_pairs()), (8, 16.0, 120));
    let reply = |m: &tern::Model, q: &str, o: tern::Options| {
        let mut chat = m.chat(None).unwrap();
        chat.options(o);
        let mut text = String::new();
        for ev in chat.send(q).unwrap() {
            if let tern::Event::Token { text: t, .. } = ev.unwrap() {
                text.push_str(&t);
            }
        }
        text
    };
    let o = tern::Options::greedy().max_tokens(16);
    for (q, peft) in record["held_out"].as_object().unwrap() {
        let with = reply(&m, q, o.clone().lora(id, 1.0));
        let without = reply(&m, q, o.clone());
        println!("{q}\n  tern with: {with:?}\n  peft with: {}\n  tern without: {without:?}", peft["with"]);
        assert!(with.starts_with("<answer>") && with.contains("</answer>"), "{q}: with the adapter {with:?}");
        assert!(!without.contains("<answer>"), "{q}: without the adapter {without:?}");
    }
    // scale 0: the base's logits, bit for bit
    let lm = m.loaded();
    let e = engine(false);
    let ids = lm.tokenizer().unwrap().encode("What do bees make?", true).unwrap();
    let plain = logits_with(lm, &e, &AdapterSet::new(), &ids);
    let zero = AdapterSet::new().with(a.clone(), 0.0).unwrap();
    assert!(bits_equal(&logits_with(lm, &e, &zero, &ids), &plain));
    assert!(!bits_equal(&logits_with(lm, &e, &set(&[&a]), &ids), &plain));
}
