//! Q5_0 matrices widened to Q8_0 at load (the wasm build does this: its
//! SIMD128 Q8_0 blocks run ~1.8× faster than Q5_0 blocks) carry the same numbers:
//! Qwen's logits stay bit-identical, on the default and the exact path;
//! block scales widened to f32 beside every 32-element block matrix; and
//! a KV cache of f16 values kept widened to f32 (the wasm build's) gives
//! the f16 cache's logits; and Q5_0/Q8_0 matrices repacked at load in
//! groups of 8 rows interleaved (the AVX-512 kernels' layout) give the same
//! logits at every step size a speculative verify step takes.

use tern::Buffer;
use tern_core::backend::quant::GgmlType;
use tern_core::{KvType, Logits, Model};
use tern_tests::*;

fn logits(m: &Model<Buffer>, exact: bool, seq: &[u32]) -> Vec<f32> {
    logits_kv(m, exact, tern::engine(threads(), exact).unwrap().kv_type(), seq)
}

fn logits_kv(m: &Model<Buffer>, exact: bool, kv: KvType, seq: &[u32]) -> Vec<f32> {
    let e = tern::engine(threads(), exact).unwrap();
    let mut s = m.session_kv(seq.len(), 512, kv);
    let mut rows = s.forward(m, &e, &seq[..seq.len() - 2], Logits::All).unwrap().to_vec();
    for &t in &seq[seq.len() - 2..] {
        rows.extend_from_slice(s.forward(m, &e, &[t], Logits::Last).unwrap());
    }
    rows
}

#[test]
fn widened_qwen_gives_the_same_logits() {
    let (model, file) = MODELS[0];
    let plain = load(file).bundle.model;
    let q5 = plain.weights.matrices().filter(|t| t.ty == GgmlType::Q5_0).count();
    let (wide, w) = load(file).bundle.model.widen_q5_0(usize::MAX, Buffer::Owned).unwrap();
    assert!(q5 > 100, "Qwen2.5 Q4_K_M has its Q5_0 matrices ({q5})");
    assert_eq!(w.matrices, q5);
    assert_eq!(wide.weights.matrices().filter(|t| t.ty == GgmlType::Q5_0).count(), 0);
    assert_eq!(wide.n_bytes(), plain.n_bytes() + w.bytes);
    for p in ["p1", "p2"] {
        let case = prompt_case(model, p);
        let seq: Vec<u32> = case.input_ids.iter().chain(&case.generated[..2]).copied().collect();
        for exact in [false, true] {
            let (a, b) = (logits(&plain, exact, &seq), logits(&wide, exact, &seq));
            assert!(
                bits_equal(&a, &b),
                "{p} (exact: {exact}): widened logits differ, max |Δ| {}",
                max_abs_diff(&a, &b)
            );
        }
    }
}

#[test]
fn widening_past_the_limit_converts_nothing() {
    let plain = load(MODELS[0].1).bundle.model;
    let limit = plain.n_bytes() + 1000;
    let (m, w) = plain.widen_q5_0(limit, Buffer::Owned).unwrap();
    assert_eq!((w.matrices, w.bytes), (0, 0));
    assert!(m.weights.matrices().any(|t| t.ty == GgmlType::Q5_0));
    assert_eq!(m.buffers().len(), 1);
}

#[test]
fn widened_scales_cover_every_block_format_matrix() {
    let (plain, smol) = (load(MODELS[1].1).bundle.model, load(MODELS[1].1).bundle.model);
    let (m, bytes) = smol.widen_scales(usize::MAX);
    assert_eq!(m.n_bytes(), plain.n_bytes() + bytes);
    let mut covered = 0;
    for t in m.weights.matrices() {
        let nb4 = (t.n_cols / 32).next_multiple_of(4);
        let want = match t.ty {
            GgmlType::Q4_1 | GgmlType::Q5_1 => 2 * nb4 * t.n_rows,
            GgmlType::Q4_0 | GgmlType::Q5_0 | GgmlType::Q8_0 => nb4 * t.n_rows,
            _ => 0,
        };
        assert_eq!(t.scales.len(), want, "{}", t.name);
        covered += (want > 0) as usize;
        // the matrix a kernel sees carries them
        assert_eq!(m.matrix(t).scales.len(), want);
    }
    assert!(covered > 200, "SmolLM2's Q4_1 and Q8_0 matrices ({covered})");
    assert_eq!(bytes, 4 * m.weights.matrices().map(|t| t.scales.len()).sum::<usize>());
    // the tied head is the embedding's scales, not a copy
    assert!(m.weights.tied_output && m.weights.output.scales == m.weights.token_embd.scales);
    // past the limit: none
    let (m, bytes) = load(MODELS[1].1).bundle.model.widen_scales(plain.n_bytes());
    assert_eq!(bytes, 0);
    assert!(m.weights.matrices().all(|t| t.scales.is_empty()));
}

#[test]
fn f16_values_kept_wide_give_the_f16_caches_logits() {
    for (model, file) in MODELS {
        let m = load(file).bundle.model;
        let case = prompt_case(model, "p1");
        let seq: Vec<u32> = case.input_ids.iter().chain(&case.generated[..6]).copied().collect();
        let (a, b) = (logits_kv(&m, false, KvType::F16, &seq), logits_kv(&m, false, KvType::F16Wide, &seq));
        assert!(bits_equal(&a, &b), "{model}: f16-wide logits differ, max |Δ| {}", max_abs_diff(&a, &b));
        // and the exact f32 cache is a different one (the test can tell)
        let c = logits_kv(&m, false, KvType::F32, &seq);
        assert!(!bits_equal(&a, &c), "{model}: f32 and f16 caches gave the same logits");
    }
}

/// Logits of `seq` fed as a prompt, then steps of 1, 2, 5 and 9 tokens
/// (a verify step's sizes), every row's.
fn logits_in_steps(m: &Model<Buffer>, seq: &[u32]) -> Vec<f32> {
    let e = tern::engine(threads(), false).unwrap();
    let mut s = m.session_kv(seq.len(), 512, e.kv_type());
    let steps = [1, 2, 5, 9];
    let prompt = seq.len() - steps.iter().sum::<usize>();
    let mut rows = s.forward(m, &e, &seq[..prompt], Logits::All).unwrap().to_vec();
    let mut at = prompt;
    for n in steps {
        rows.extend_from_slice(s.forward(m, &e, &seq[at..at + n], Logits::All).unwrap());
        at += n;
    }
    rows
}

#[test]
fn repacked_rows_give_the_same_logits() {
    let no_repack = tern::LoadOptions { no_repack: true, ..Default::default() };
    for (model, file) in MODELS {
        let plain = tern::load_with(&model_path(file), &no_repack).unwrap().bundle.model;
        assert!(plain.weights.matrices().all(|t| t.rows8.is_empty()), "--no-repack made a copy");
        let all = |ty: GgmlType| {
            use GgmlType::*;
            matches!(ty, Q4_0 | Q5_0 | Q8_0 | Q4_K | Q6_K)
        };
        let fresh = tern::load_with(&model_path(file), &no_repack).unwrap().bundle.model;
        let (packed, bytes) = fresh.repack_rows8(all, usize::MAX);
        assert_eq!(packed.n_bytes(), plain.n_bytes() + bytes);
        let mut covered = 0;
        for t in packed.weights.matrices() {
            // an embedding table not tied to the head is only looked up
            let lookup_only = !packed.weights.tied_output && t.name == packed.weights.token_embd.name;
            let want = match all(t.ty) && !lookup_only {
                true => tern_core::backend::quant::rows8::matrix_bytes(t.ty, t.n_cols, t.n_rows).unwrap(),
                false => 0,
            };
            assert_eq!(packed.matrix(t).rows8.len(), want, "{model}: {}", t.name);
            covered += (want > 0) as usize;
        }
        let least = if model.starts_with("qwen") { 100 } else { 1 };
        assert!(covered >= least, "{model}: its Q5_0/Q8_0/K-quant matrices ({covered})");
        if model.starts_with("qwen") {
            // the K-quants' layout too: its ffn_down are Q4_K and Q6_K
            let k = |ty| packed.weights.matrices().any(|t| t.ty == ty && !t.rows8.is_empty());
            assert!(k(GgmlType::Q4_K) && k(GgmlType::Q6_K), "{model}: Q4_K and Q6_K repacked");
        }
        let case = prompt_case(model, "p1");
        let seq: Vec<u32> = case.input_ids.iter().chain(&case.generated).copied().collect();
        assert!(seq.len() >= 20, "{model}: {} tokens", seq.len());
        let (a, b) = (logits_in_steps(&plain, &seq), logits_in_steps(&packed, &seq));
        assert!(bits_equal(&a, &b), "{model}: repacked logits differ, max |Δ| {}", max_abs_diff(&a, &b));
        // past the limit: none
        let (m, bytes) = plain.repack_rows8(all, 1000);
        assert_eq!(bytes, 0);
        assert!(m.weights.matrices().all(|t| t.rows8.is_empty()));
    }
}
