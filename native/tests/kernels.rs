//! Every kernel backend this CPU can run equals the scalar reference bit
//! for bit (core's conformance harness). With TERN_KERNELS set, the named
//! backend must be the one in use (no silent fallback).

mod common;

#[test]
fn every_available_backend_conforms() {
    let names = tern::kernels::available();
    println!("backends on this CPU: {names:?}");
    for name in names {
        let k = tern::kernels::by_name(name).unwrap();
        assert_eq!(k.name(), name);
        tern_core::backend::conformance::check(k).unwrap_or_else(|e| panic!("{e}"));
    }
}

#[test]
fn default_backend_is_the_fastest_available_and_unknown_names_are_refused() {
    let names = tern::kernels::available();
    assert_eq!(names.last(), Some(&"scalar"));
    if std::env::var("TERN_KERNELS").is_err() {
        assert_eq!(tern::kernels::select().unwrap().name(), names[0]);
    }
    assert!(tern::kernels::by_name("no-such-backend").is_none());
}

/// TERN_KERNELS picks the backend; one this CPU cannot run is an error,
/// never a silent fallback.
#[test]
fn tern_kernels_selects_or_fails() {
    let tern = env!("CARGO_BIN_EXE_tern");
    let model = common::smollm2();
    let model = model.to_str().unwrap();
    for name in tern::kernels::available() {
        let out = std::process::Command::new(tern)
            .env("TERN_KERNELS", name)
            .args(["bench", "-m", model, "-p", "4", "-n", "0", "-r", "1", "-t", "1", "-o", "json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(rows[0]["backends"], format!("CPU/{name}"));
    }
    // a name no build knows lists the names; one this build knows but this
    // CPU cannot run says which check failed
    let out =
        std::process::Command::new(tern).env("TERN_KERNELS", "neon-on-x86").args(["info", model]).output().unwrap();
    assert!(!out.status.success());
    let names = tern::kernels::NAMES.join(", ");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("TERN_KERNELS=neon-on-x86 is not a kernel set (one of: {names})")), "{err}");
    if let Some(missing) = tern::kernels::NAMES.iter().find(|n| !tern::kernels::available().contains(n)) {
        let out = std::process::Command::new(tern).env("TERN_KERNELS", missing).args(["info", model]).output().unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&format!("TERN_KERNELS={missing} is not available")), "{err}");
        println!("{}", tern::kernels::why_not(missing));
    }
    // `tern info` names the kernels in use
    let out = std::process::Command::new(tern).args(["info", model]).output().unwrap();
    let info = String::from_utf8_lossy(&out.stdout);
    let line = info.lines().find(|l| l.starts_with("kernels")).expect("a kernels line");
    assert!(line.contains(&format!("{} (available: ", tern::kernels::available()[0])), "{line}");
}

/// The whole model's logits on `path` (exact?, cache type) are the same
/// bits on every backend and with two threads (prefill of a prompt, then
/// cached decode steps). One test per path, so that the test harness runs
/// them side by side (under qemu for aarch64 each run is an emulated
/// forward pass; the exact path's f32 arithmetic is the slowest to emulate).
fn model_logits_identical(path: (bool, tern_core::KvType)) {
    model_logits_identical_on(&common::smollm2(), "The quick brown fox jumps over the lazy dog.", path)
}

/// As `model_logits_identical`, for `file` and `text`.
fn model_logits_identical_on(file: &std::path::Path, text: &str, path: (bool, tern_core::KvType)) {
    use tern_core::{Engine, Logits};
    assert!(file.exists(), "{} is missing: run scripts/fetch-models.sh (CI does)", file.display());
    let lm = tern::load(file).unwrap();
    let prompt = lm.tokenizer().unwrap().encode(text, true).unwrap();
    let run = |name: &str, threads: usize| {
        let (exact, kv) = path;
        let par = tern::Threads::new(threads);
        let e = Engine { kernels: tern::kernels::by_name(name).unwrap(), par: &par, exact };
        let mut s = lm.model.session_kv(64, 512, kv);
        assert_eq!(s.kv_type(), kv);
        let mut out = s.forward(&lm.model, &e, &prompt, Logits::All).unwrap().to_vec();
        for t in [42u32, 7, 1000] {
            out.extend_from_slice(s.forward(&lm.model, &e, &[t], Logits::Last).unwrap());
        }
        out.iter().map(|v| v.to_bits()).collect::<Vec<u32>>()
    };
    // Every backend at one thread; at two, the default one (what runs
    // unless TERN_KERNELS says otherwise).
    let names = tern::kernels::available();
    let runs = names.iter().filter(|&&n| n != "scalar").map(|&n| (n, 1)).chain([(names[0], 2)]);
    let reference = run("scalar", 1);
    for (name, threads) in runs {
        assert!(run(name, threads) == reference, "{name} with {threads} threads ({path:?}) differs from scalar");
    }
}

/// Qwen2.5-Coder Q4_K_M, whose Q5_0 and Q8_0 tensors take the 32-element
/// formats' prefill kernels (AMX tiles where granted: a prompt of more
/// than 16 tokens), the default path.
#[test]
fn qwen_logits_identical_across_backends_and_threads() {
    let text = "fn main() { let xs = vec![3, 1, 2]; let total: i32 = xs.iter().sum(); println!(\"{total}\"); }";
    model_logits_identical_on(&common::qwen(), text, (false, tern_core::KvType::F16));
}

/// Gemma 3 270M Q4_K_M (Q4_K, Q6_K and Q8_0 matrices), the default path.
#[test]
fn gemma3_logits_identical_across_backends_and_threads() {
    let file = tern::models_dir().join("gemma-3-270m-q4_k_m.gguf");
    let text = "The tide came in slowly over the flat grey sand, and the gulls rose crying from the pools.";
    model_logits_identical_on(&file, text, (false, tern_core::KvType::F16));
}

/// The default path with its f16 cache.
#[test]
fn model_logits_identical_across_backends_and_threads_f16_cache() {
    model_logits_identical((false, tern_core::KvType::F16));
}

/// The default path with a Q8_0 cache.
#[test]
fn model_logits_identical_across_backends_and_threads_q8_0_cache() {
    model_logits_identical((false, tern_core::KvType::Q8_0));
}

/// The exact path (f32 activations and cache).
#[test]
fn model_logits_identical_across_backends_and_threads_exact() {
    model_logits_identical((true, tern_core::KvType::F32));
}

/// The numerics contract across architectures: the same logits bits on
/// x86-64 and aarch64 (CI runs this test under qemu-aarch64 too). The
/// constant is the FNV-1a hash of the logits bits recorded on x86-64; a
/// change to the numerics must update it deliberately.
#[test]
fn logits_bits_match_the_recorded_hash() {
    use tern_core::{Engine, KvType, Logits};
    // [quantized, exact, quantized with a Q8_0 cache]
    const RECORDED: [u64; 3] = [0x4f62f9b8ac85aa11, 0x703d818cd8fd6a79, 0xc2498919e51a5371];
    let path = common::smollm2();
    assert!(path.exists(), "{} is missing: run scripts/fetch-models.sh (CI does)", path.display());
    let lm = tern::load(&path).unwrap();
    // "The capital of France is" eight times: 40 positions, two of
    // attention's tiles (its online softmax's rescaling)
    let prompt = [504u32, 3575, 282, 4649, 314].repeat(8);
    let paths = [(false, KvType::F16), (true, KvType::F32), (false, KvType::Q8_0)];
    let mut got = Vec::new();
    // two threads: the bits are the same at any thread count (and under
    // qemu, where CI runs this for aarch64, the emulated f32 of the exact
    // path is the slowest part of the kernels test)
    for (exact, kv) in paths {
        let par = tern::Threads::new(2);
        let e = Engine { kernels: tern::kernels::select().unwrap(), par: &par, exact };
        let mut s = lm.model.session_kv(64, 512, kv);
        let mut bits: Vec<u32> =
            s.forward(&lm.model, &e, &prompt, Logits::Last).unwrap().iter().map(|v| v.to_bits()).collect();
        for t in [7042u32, 30] {
            bits.extend(s.forward(&lm.model, &e, &[t], Logits::Last).unwrap().iter().map(|v| v.to_bits()));
        }
        let mut h = 0xcbf29ce484222325u64;
        for b in bits {
            for byte in b.to_le_bytes() {
                h = (h ^ byte as u64).wrapping_mul(0x100000001b3);
            }
        }
        println!("exact={exact} {kv:?}: logits hash {h:#018x}");
        got.push(h);
    }
    assert_eq!(got, RECORDED, "logits differ from the recorded x86-64 bits");
}

/// Tile state is each call's own: many threads, each making many calls of
/// different shapes and formats on the `amx` backend at once, every result
/// the scalar reference's bits (a configuration or sums left by one call
/// or thread would change another's). Skipped, saying why, without AMX.
#[test]
fn amx_tile_state_never_leaks_between_threads_or_calls() {
    use tern_core::backend::quant::{BlockQ8K, BlockQ8_0, GgmlType, QK8, QK_K};
    use tern_core::backend::{speed::random_matrix, Acts, Kernels, QMatrix, Scalar};
    let Some(amx) = tern::kernels::by_name("amx") else {
        println!("skipped: {}", tern::kernels::why_not("amx"));
        return;
    };
    let shapes = [
        (GgmlType::Q8_0, 512usize, 16usize),
        (GgmlType::Q5_0, 544, 37),
        (GgmlType::Q4_0, 1024, 20),
        (GgmlType::Q4_K, 512, 33),
        (GgmlType::Q6_K, 768, 16),
    ];
    let mats: Vec<_> = shapes.iter().map(|&(ty, cols, _)| (ty, cols, random_matrix(ty, cols, 40_000))).collect();
    std::thread::scope(|s| {
        for thread in 0..8usize {
            let mats = &mats;
            s.spawn(move || {
                for call in 0..40usize {
                    let (ty, n_cols, (data, n_rows)) = &mats[(thread + call) % mats.len()];
                    let n_tok = shapes[(thread + call) % shapes.len()].2 + call % 5;
                    let w = QMatrix { ty: *ty, data, n_cols: *n_cols, n_rows: *n_rows, scales: &[], rows8: &[] };
                    let x: Vec<f32> =
                        (0..n_tok * n_cols).map(|i| ((i * 7919 + call) % 2001) as f32 / 1000.0 - 1.0).collect();
                    let mut a = vec![BlockQ8_0::ZERO; n_tok * n_cols / QK8];
                    let mut ak = vec![BlockQ8K::ZERO; n_tok * n_cols / QK_K];
                    let acts = if ty.block().0 == QK_K {
                        Scalar.quantize_q8_k(&x, &mut ak);
                        Acts::Q8K(&ak)
                    } else {
                        Scalar.quantize_q8_0(&x, &mut a);
                        Acts::Q8_0(&a)
                    };
                    let rows = call % 7..(*n_rows).min(40 + call);
                    let mut got = vec![0.0f32; rows.len() * n_tok];
                    let mut want = got.clone();
                    amx.matmul_rows(&w, acts, n_tok, rows.clone(), &mut got);
                    Scalar.matmul_rows(&w, acts, n_tok, rows.clone(), &mut want);
                    let same = got.iter().zip(&want).all(|(g, w)| g.to_bits() == w.to_bits());
                    assert!(same, "thread {thread} call {call}: {ty:?} {n_tok} tokens rows {rows:?} differ");
                }
            });
        }
    });
}
