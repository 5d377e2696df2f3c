//! The `tern` binary end to end on the small test model: `run --json` with
//! token ids in, greedy ids and logits out; `info`; errors on bad input.

mod common;

use std::process::Command;

fn tern() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tern"))
}

fn smollm2() -> String {
    let p = common::smollm2();
    assert!(p.exists(), "{} is missing: run scripts/fetch-models.sh (CI does)", p.display());
    p.display().to_string()
}

#[test]
fn run_json_with_prompt_ids_and_logits_out() {
    let logits = std::env::temp_dir().join(format!("tern-cli-logits-{}.bin", std::process::id()));
    let out = tern()
        .args(["run", "-m", &smollm2(), "--prompt-ids", "504,3575,282,4649,314", "-n", "4", "--temp", "0", "--json"])
        .args(["--ignore-eos", "-t", "1", "--logits-out", logits.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // llama.cpp's (and the HF oracle's) greedy start for "The capital of France is"
    assert_eq!(j["ids"], serde_json::json!([7042, 30, 198, 198]));
    assert_eq!(j["prompt_ids"], serde_json::json!([504, 3575, 282, 4649, 314]));
    assert_eq!(j["text"], " Paris.\n\n");
    assert_eq!(j["finish_reason"], "length");
    assert!(j["timings"]["tokens_per_s"].as_f64().unwrap() > 0.0);
    let bytes = std::fs::read(&logits).unwrap();
    std::fs::remove_file(&logits).ok();
    assert_eq!(bytes.len(), 4 * 49152 * 4, "one f32 row per generated token");
    let row0: Vec<f32> =
        bytes[..49152 * 4].chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(tern_core::runtime::argmax(&row0), 7042);
}

#[test]
fn text_prompt_streams_and_seed_repeats() {
    let run = || {
        let out = tern()
            .args(["run", "-m", &smollm2(), "-p", "Once upon a time", "-n", "6", "--seed", "42", "-t", "1"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let a = run();
    assert!(!a.trim().is_empty());
    assert_eq!(a, run(), "same seed, same text");
}

#[test]
fn info_and_errors() {
    let out = tern().args(["info", &smollm2()]).output().unwrap();
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.contains("arch        llama") && s.contains("Q4_1: 210"), "{s}");

    // the AVX-512 kernels' 8-row copy of the Q8_0 matrices, shown; -nr or
    // the AVX2 kernels: none
    let info = |kernels: &str, extra: &[&str]| {
        let out = tern().env("TERN_KERNELS", kernels).args(["info", &smollm2()]).args(extra).output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    };
    if tern::kernels::by_name("avx512").is_some() {
        let s = info("avx512", &[]);
        assert!(s.contains("repacked    at load for the avx512 kernels, 8 rows interleaved: Q8_0: "), "{s}");
        for (k, extra) in [("avx512", &["-nr"][..]), ("avx512", &["--no-repack"][..]), ("avx2", &[][..])] {
            let s = info(k, extra);
            assert!(!s.contains("repacked") && s.contains("no copy of weights"), "{k} {extra:?}: {s}");
        }
    }

    let out = tern().args(["info", "/nonexistent.gguf"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent.gguf"));

    let junk = std::env::temp_dir().join(format!("tern-junk-{}.gguf", std::process::id()));
    std::fs::write(&junk, b"GGUF\x03\0\0\0\xff\xff\xff\xff\xff\xff\xff\xff").unwrap();
    let out = tern().args(["run", "-m", junk.to_str().unwrap(), "-p", "x"]).output().unwrap();
    std::fs::remove_file(&junk).ok();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tensor count at offset 8"), "{err}");
}

#[test]
fn chat_keeps_history_in_the_session_and_saves_it() {
    use std::io::Write;
    let save = std::env::temp_dir().join(format!("tern-chat-{}.bin", std::process::id()));
    let mut child = tern()
        .args(["chat", "-m", &smollm2(), "--temp", "0", "-n", "8", "-t", "1", "--system", "Be brief."])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let script = format!("Hi!\nAnd again?\n/save {0}\n/reset\n/load {0}\nBye.\n/quit\n", save.display());
    child.stdin.take().unwrap().write_all(script.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    std::fs::remove_file(&save).ok();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let cached: Vec<usize> = err
        .lines()
        .filter_map(|l| l.split(" cached;").next().and_then(|h| h.rsplit(", ").next()).and_then(|n| n.parse().ok()))
        .collect();
    assert_eq!(cached.len(), 3, "{err}");
    assert_eq!(cached[0], 0);
    assert!(cached[1] > 0 && cached[2] > cached[1], "turns reuse the cache, also after /load: {cached:?}\n{err}");
    assert!(err.contains("(saved 5 messages") && err.contains("(loaded 5 messages"), "{err}");
}

#[test]
fn run_chat_template_and_stop_string() {
    let out = tern()
        .args(["run", "-m", &smollm2(), "-p", "Count from 1 to 9, separated by commas.", "--chat", "--temp", "0"])
        .args(["-n", "40", "--stop", "5", "--json", "-t", "1"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = j["text"].as_str().unwrap();
    assert_eq!(j["finish_reason"], "stop", "{j}");
    assert!(!text.contains('5') && text.contains('4'), "{text:?}");
    // the template wrapped the prompt: far more tokens than the bare text
    assert!(j["prompt_ids"].as_array().unwrap().len() > 20);
}

/// `--json-schema` refuses a keyword llguidance cannot enforce, naming it,
/// before any token; `--lenient` ignores it and enforces the rest.
#[test]
fn json_schema_strict_and_lenient() {
    let schema = r#"{"type": "object", "properties": {"t": {"type": "array", "items": {"type": "integer"}, "uniqueItems": true, "maxItems": 2}}, "required": ["t"], "additionalProperties": false}"#;
    let run = |lenient: bool| {
        let mut c = tern();
        c.args(["run", "-m", &smollm2(), "-p", "Two numbers as JSON.", "--chat", "--temp", "0", "-n", "40"]);
        c.args(["--json", "-t", "1", "--json-schema", schema]);
        if lenient {
            c.arg("--lenient");
        }
        c.output().unwrap()
    };
    let strict = run(false);
    assert_eq!(strict.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&strict.stderr).contains("uniqueItems"),
        "{}",
        String::from_utf8_lossy(&strict.stderr)
    );
    assert!(strict.stdout.is_empty());
    let out = run(true);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let text = j["text"].as_str().unwrap();
    if j["finish_reason"] == "stop" {
        let v: serde_json::Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert!(v["t"].as_array().is_some_and(|t| t.len() <= 2 && t.iter().all(|x| x.is_i64())), "{text}");
    } else {
        assert!(text.starts_with("{\"t\": ["), "{text}");
    }
}

#[test]
fn ctrl_c_cancels_the_reply_not_the_chat() {
    use std::io::{BufRead, BufReader, Write};
    let mut child = tern()
        .args(["chat", "-m", &smollm2(), "--temp", "0.7", "--seed", "3", "-n", "400", "--ignore-eos", "-t", "1"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"Write a long story about a dragon.\n").unwrap();
    stdin.flush().unwrap();
    // wait until the reply is streaming, then interrupt
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let first = String::from_utf8_lossy(stdout.fill_buf().unwrap()).into_owned();
    assert!(!first.is_empty());
    let consumed = first.len();
    stdout.consume(consumed);
    let pid = child.id().to_string();
    assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    stdin.write_all(b"/quit\n").unwrap();
    drop(stdin);
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the chat survives Ctrl-C: {:?}", out.status);
    assert!((first + &rest).contains("[cancelled]"), "{rest}");
}

/// `bench -o`: llama-bench's csv and one JSON object a line; another
/// choice is an error naming the choices.
#[test]
fn bench_prints_csv_and_jsonl() {
    let bench = |o: &str| {
        let out =
            tern().args(["bench", "-m", &smollm2(), "-p", "8", "-n", "2", "-r", "1", "-t", "1", "-o", o]).output();
        out.unwrap()
    };
    let csv = String::from_utf8(bench("csv").stdout).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[0].starts_with("engine,backends,model_filename,") && lines[1].starts_with("tern,CPU/"), "{csv}");
    let jsonl = String::from_utf8(bench("jsonl").stdout).unwrap();
    let rows: Vec<serde_json::Value> = jsonl.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!((rows.len(), rows[0]["n_prompt"].as_u64(), rows[1]["n_gen"].as_u64()), (2, Some(8), Some(2)));
    let bad = bench("xml");
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success() && err.contains("md, json, jsonl, csv"), "{err}");
}

#[test]
fn bench_json_uses_llama_bench_fields() {
    let out = tern()
        .args(["bench", "-m", &smollm2(), "-p", "8", "-n", "4", "-d", "4", "-r", "2", "-t", "1", "-o", "json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "a pp and a tg row");
    for (r, (np, ng)) in rows.iter().zip([(8, 0), (0, 4)]) {
        assert_eq!((r["n_prompt"].as_u64(), r["n_gen"].as_u64(), r["n_depth"].as_u64()), (Some(np), Some(ng), Some(4)));
        assert_eq!(r["samples_ts"].as_array().unwrap().len(), 2);
        for f in ["avg_ts", "stddev_ts", "avg_ns", "n_threads", "model_size", "peak_rss_bytes", "weight_bytes"] {
            assert!(r[f].is_number(), "{f} in {r}");
        }
        assert!(r["avg_ts"].as_f64().unwrap() > 0.0);
    }
}

fn tiny(name: &str) -> String {
    format!("{}/../tests/fixtures/oracle/tiny/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// `tern info` names what sets a Gemma 3 apart: its windowed layers with
/// their own RoPE, the score scale, post-norms, GELU-tanh, the scaled
/// embedding; and a Gemma 2's softcaps.
#[test]
fn info_shows_the_gemma_attention_and_ffn() {
    let dir = format!("{}/../tests/fixtures/tiny/tiny-gemma3", env!("CARGO_MANIFEST_DIR"));
    let out = tern().args(["info", &dir]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let info = String::from_utf8_lossy(&out.stdout);
    for want in [
        "arch        gemma3",
        "score scale 0.20412415, post-norms true",
        "window      5 positions on 3 of 4 layers, their own RoPE",
        "ffn         GeluTanh gate, embeddings scaled by 8",
    ] {
        assert!(info.contains(want), "{want:?} not in:\n{info}");
    }
    // and a Gemma 2 its softcaps, every other layer windowed
    let dir = format!("{}/../tests/fixtures/tiny/tiny-gemma2", env!("CARGO_MANIFEST_DIR"));
    let out = tern().args(["info", &dir]).output().unwrap();
    let info = String::from_utf8_lossy(&out.stdout);
    for want in ["arch        gemma2", "window      5 positions on 2 of 4 layers\n", "softcaps    scores 1, logits 1.5"]
    {
        assert!(info.contains(want), "{want:?} not in:\n{info}");
    }
}

#[test]
fn run_and_info_take_an_hf_directory() {
    let out = tern().args(["info", &tiny("tiny-qwen3")]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let info = String::from_utf8_lossy(&out.stdout);
    for want in
        ["Qwen3ForCausalLM", "saved as BF16: 35", "q/k norm true", "tied to the token embedding", "tokenizer   none"]
    {
        assert!(info.contains(want), "{want:?} not in:\n{info}");
    }
    // the oracle's greedy ids (oracle.json), sharded float32 directory
    let ids = "1,23,45,67,89,101,211,307,401,499,5,511";
    let out = tern()
        .args([
            "run",
            "-m",
            &tiny("tiny-qwen2"),
            "--prompt-ids",
            ids,
            "-n",
            "8",
            "--temp",
            "0",
            "--json",
            "--ignore-eos",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["ids"], serde_json::json!([48, 26, 252, 275, 143, 217, 368, 368]));
    // text needs a tokenizer, which the tiny models lack
    let out = tern().args(["run", "-m", &tiny("tiny-qwen2"), "-p", "hello"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no tokenizer"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn quantize_at_load_is_reported_by_info() {
    let out = tern().args(["info", "--quantize", "q8_0", &tiny("tiny-llama")]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let info = String::from_utf8_lossy(&out.stdout);
    assert!(info.contains("matrices    30 — Q8_0: 30"), "{info}");
    assert!(info.contains("quantized   at load to Q8_0: 30 matrices"), "{info}");
    let out = tern().args(["info", "--quantize", "q4_k", &tiny("tiny-llama")]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("tern quantizes at load to q8_0"));
}

/// Sizes and sampler values from the command line are checked before
/// anything is allocated or started: each is an error naming the figure,
/// in well under a second, never an abort, a panic or a hang.
#[test]
fn absurd_sizes_and_values_are_refused_at_once() {
    let m = smollm2();
    let cases: [(&[&str], &str); 13] = [
        (&["run", "-p", "hi", "-c", "100000000"], "context size 100000000"),
        // core's one rule (`Bundle::prepare`): prompt + n − 1 must fit -c; at most four stops
        (&["run", "-p", "hi", "-c", "4", "-n", "8"], "context full"),
        (&["run", "-p", "hi", "--stop", "a", "--stop", "b", "--stop", "c", "--stop", "d", "--stop", "e"], "stop"),
        (&["run", "-p", "hi", "-c", "10000000"], "GB of memory is available"),
        (&["run", "-p", "hi", "-n", "4611686018427387904"], "-n 4611686018427387904"),
        (&["run", "-p", "hi", "-t", "100000"], "100000 threads"),
        (&["run", "-p", "hi", "--temp", "nan"], "temperature NaN"),
        (&["run", "-p", "hi", "--min-p", "nan"], "min_p NaN"),
        (&["run", "-p", "hi", "--top-p", "5"], "top_p 5"),
        (&["run", "-p", "hi", "-c", "0"], "-c 0"),
        (&["serve", "--ctx", "100000000", "--port", "0"], "context size 100000000"),
        (&["serve", "--parallel", "1000000", "--port", "0"], "--parallel at most"),
        (&["serve", "--batch", "1000000000", "--port", "0"], "--batch at most"),
    ];
    for (args, want) in cases {
        let t0 = std::time::Instant::now();
        let out = tern().args(&args[..1]).args(["-m", &m]).args(&args[1..]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        let secs = t0.elapsed().as_secs_f64();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want) && !err.contains("listening") && !err.contains("panicked"), "{args:?}: {err}");
        assert!(secs < 5.0, "{args:?} took {secs} s");
    }
}

/// llama.cpp's habits: `-f` reads the prompt from a file, `-s` seeds, and
/// `--version` says which tern this is.
#[test]
fn llama_cpp_flags() {
    let prompt = std::env::temp_dir().join(format!("tern-cli-prompt-{}.txt", std::process::id()));
    std::fs::write(&prompt, "Once upon a time").unwrap();
    let run = |args: &[&str]| {
        let out = tern().args(["run", "-m", &smollm2(), "-n", "6", "-t", "1", "--json"]).args(args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        (j["prompt_ids"].clone(), j["ids"].clone(), j["seed"].clone())
    };
    let from_file = run(&["-f", prompt.to_str().unwrap(), "-s", "42"]);
    std::fs::remove_file(&prompt).ok();
    assert_eq!(from_file, run(&["-p", "Once upon a time", "--seed", "42"]));
    assert_eq!(from_file.2, 42);

    let out = tern().args(["run", "-m", &smollm2(), "-f", "/nonexistent/prompt.txt"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("/nonexistent/prompt.txt"), "{err}");

    let out = tern().arg("--version").output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("tern {}", env!("CARGO_PKG_VERSION")));

    // llama.cpp's one-dash spellings: -sys, -r, --ctx-size as tern's own
    // flags; -ngl and -fa accepted, each with its one line of why
    let chat = ["--chat", "-p", "Name a colour", "--temp", "0"];
    let ours = tern()
        .args(["run", "-m", &smollm2(), "-n", "12", "-t", "1", "--json"])
        .args(chat)
        .args(["--system", "Be brief", "-c", "256", "--stop", "."])
        .output()
        .unwrap();
    let theirs = tern()
        .args(["run", "-m", &smollm2(), "-n", "12", "-t", "1", "--json"])
        .args(chat)
        .args(["-sys", "Be brief", "--ctx-size", "256", "-r", ".", "-ngl", "99", "-fa"])
        .output()
        .unwrap();
    assert!(theirs.status.success(), "{}", String::from_utf8_lossy(&theirs.stderr));
    let ids = |o: &std::process::Output| serde_json::from_slice::<serde_json::Value>(&o.stdout).unwrap()["ids"].clone();
    assert_eq!(ids(&ours), ids(&theirs));
    let err = String::from_utf8_lossy(&theirs.stderr);
    assert!(
        err.contains("--n-gpu-layers 99: this build has no GPU offload") && err.contains("--flash-attn on"),
        "{err}"
    );
    // -cnv: llama-cli's conversation mode, its -p the system prompt
    let mut child = tern()
        .args(["run", "-m", &smollm2(), "-cnv", "-p", "Be brief", "-n", "12", "--temp", "0", "-t", "1"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"Name a colour\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.starts_with("tern chat:"), "{stderr}");
    let once = tern()
        .args(["run", "-m", &smollm2(), "-n", "12", "-t", "1", "--json", "--system", "Be brief"])
        .args(chat)
        .output()
        .unwrap();
    let once: serde_json::Value = serde_json::from_slice(&once.stdout).unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), once["text"].as_str().unwrap().trim_end());
    // -hf is -m's hub reference (here: offline, not in the cache)
    let out = tern().args(["run", "-hf", "nobody/none-GGUF:Q4_K_M", "-p", "x", "--offline"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("nobody/none-GGUF") && !err.contains("Usage"), "{err}");
}

/// `tern embed`: one unit vector per text (the same text, the same bits),
/// as JSON; no texts, or a model that does not embed, is a clear error.
#[test]
fn embed_texts_and_refuse_what_cannot_be_embedded() {
    let dir = tern::models_dir().join("all-minilm-l6-v2");
    assert!(dir.exists(), "{} is missing: run scripts/fetch-models.sh (CI does)", dir.display());
    let dir = dir.display().to_string();
    let out = tern().args(["embed", "-m", &dir, "--json", "-t", "1", "A cat.", "Un chat.", "A cat."]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["dim"], 384);
    let v: Vec<Vec<f64>> = j["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["embedding"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect())
        .collect();
    assert_eq!(v.len(), 3);
    assert_eq!(v[0], v[2]);
    let norm: f64 = v[1].iter().map(|x| x * x).sum::<f64>().sqrt();
    assert!((norm - 1.0).abs() < 1e-5, "{norm}");
    for (args, want) in [
        (vec!["embed", "-m", &dir], "no inputs"),
        (vec!["embed", "x"], "needs -m"),
        (vec!["embed", "-m", &smollm2(), "x"], "choose a pooling"),
        (vec!["embed", "-m", &smollm2(), "--pooling", "max", "x"], "mean, cls or last"),
    ] {
        let out = tern().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.code() == Some(1) || out.status.code() == Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // a decoder, pooled as asked: its last token's unit vector
    let out = tern().args(["embed", "-m", &smollm2(), "--pooling", "last", "--json", "-t", "1", "A cat."]).output();
    let out = out.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["dim"], 576);
    let norm: f64 = j["data"][0]["embedding"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap().powi(2)).sum();
    assert!((norm.sqrt() - 1.0).abs() < 1e-5, "{norm}");
}

/// `tern rerank`: documents best first with their scores (`--top-n`);
/// an embedding model, or no documents, is a clear error.
#[test]
fn rerank_documents_and_refuse_what_cannot_rerank() {
    let dir = tern::models_dir().join("minilm-rerank-test");
    assert!(dir.exists(), "{} is missing: run scripts/fetch-models.sh (CI does)", dir.display());
    let dir = dir.display().to_string();
    let out = tern().args(["rerank", "-m", &dir, "--top-n", "2", "-t", "1", "q?", "a", "b", "c"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let scores: Vec<f64> = text.lines().map(|l| l.split_whitespace().next().unwrap().parse().unwrap()).collect();
    assert_eq!(scores.len(), 2, "{text}");
    assert!(scores[0] >= scores[1], "{text}");
    let minilm = tern::models_dir().join("all-minilm-l6-v2").display().to_string();
    for (args, want) in [
        (vec!["rerank", "-m", &dir, "q"], "no inputs"),
        (vec!["rerank", "q", "d"], "needs -m"),
        (vec!["rerank", "-m", &minilm, "q", "d"], "cross-encoder"),
    ] {
        let out = tern().args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// Hostile files and terminal input (second round): a device or pipe as a
/// prompt, grammar or conversation file is read with a bound, not until
/// memory runs out; a prompt file is bounded by what the context can hold;
/// a schema nested a thousand `$ref`s deep is an error, not an abort; a
/// system message longer than the context is refused at start; a byte
/// that is not UTF-8 on stdin is replaced, and the chat goes on; a saved
/// conversation with an unknown role, too many messages or a KV value that
/// is not finite is refused.
#[test]
fn hostile_files_and_lines_are_bounded_errors() {
    let m = smollm2();
    let dir = std::env::temp_dir().join(format!("tern-cli-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let big = dir.join("big.txt");
    std::fs::write(&big, "word ".repeat(1 << 20)).unwrap(); // 5 MB
    let mut defs = serde_json::Map::new();
    for i in 0..1000 {
        defs.insert(format!("d{i}"), serde_json::json!({"$ref": format!("#/$defs/d{}", i + 1)}));
    }
    defs.insert("d1000".into(), serde_json::json!({"type": "integer"}));
    let deep = dir.join("deep.json");
    std::fs::write(&deep, serde_json::json!({"$ref": "#/$defs/d0", "$defs": defs}).to_string()).unwrap();
    let (big, deep) = (big.to_str().unwrap(), deep.to_str().unwrap());
    let system = "word ".repeat(200);
    let cases: [(&[&str], &str); 7] = [
        (&["run", "-f", "/dev/zero"], "prompt file /dev/zero goes on past"),
        (&["run", "-f", big, "-c", "256"], "a context of 256 (-c) holds less"),
        (&["run", "-p", "hi", "--grammar", "/dev/zero"], "grammar file /dev/zero goes on past the 1048576 bytes"),
        (&["run", "-p", "hi", "--json-schema", "/dev/zero"], "grammar file /dev/zero goes on past"),
        (&["run", "-p", "hi", "--json-schema", deep], "nests deeper than 100 levels"),
        (&["embed", "--pooling", "last", "-f", "/dev/zero"], "texts file /dev/zero goes on past"),
        (&["chat", "-c", "64", "--system", &system], "context full"),
    ];
    for (args, want) in cases {
        let t0 = std::time::Instant::now();
        let out = tern().args(&args[..1]).args(["-m", &m]).args(&args[1..]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want) && !err.contains("panicked"), "{args:?}: {err}");
        assert!(t0.elapsed().as_secs_f64() < 10.0, "{args:?} took {:?}", t0.elapsed());
    }

    // the chat: a bad byte, then conversation files that must be refused
    let saved = dir.join("ok.conv");
    let run_chat = |input: &[u8]| {
        use std::io::Write;
        let mut child = tern()
            .args(["chat", "-m", &m, "-n", "2", "--temp", "0", "-c", "256"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let mut input = b"hi\xff\n".to_vec();
    input.extend(format!("/save {}\nagain\n/quit\n", saved.display()).bytes());
    let err = run_chat(&input);
    assert!(err.contains("not UTF-8") && err.matches("tok/s").count() == 2, "{err}");
    let bytes = std::fs::read(&saved).unwrap();
    let nl = bytes.iter().position(|&b| b == b'\n').unwrap();
    let messages: serde_json::Value = serde_json::from_slice(&bytes[..nl]).unwrap();
    let with = |messages: &serde_json::Value, state: &[u8]| {
        let mut b = serde_json::to_vec(messages).unwrap();
        b.push(b'\n');
        b.extend_from_slice(state);
        b
    };
    let mut root = messages.clone();
    root[0]["role"] = "root".into();
    let many = serde_json::Value::Array(vec![messages[0].clone(); 100_000]);
    // an f16 state: the last two bytes are a value of the last V row; 0x7c00 is +∞
    let mut inf = bytes[nl + 1..].to_vec();
    let at = inf.len() - 2;
    inf[at..].copy_from_slice(&half::f16::INFINITY.to_le_bytes());
    let cases = [
        ("root.conv", with(&root, &bytes[nl + 1..]), "unknown role \"root\""),
        ("many.conv", with(&many, &bytes[nl + 1..]), "100000 messages"),
        ("inf.conv", with(&messages, &inf), "not finite"),
    ];
    for (name, b, want) in cases {
        let p = dir.join(name);
        std::fs::write(&p, b).unwrap();
        let err = run_chat(format!("/load {}\n/load /dev/zero\n/quit\n", p.display()).as_bytes());
        assert!(err.contains(want), "{name}: {err}");
        assert!(err.contains("conversation file /dev/zero goes on past"), "{err}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `tern run --chat` with a template that thinks (Qwen3's, llama.cpp's
/// copy, on SmolLM2 whose ChatML tokens it shares) and a grammar holding
/// the reply to a thinking block and an answer: the answer alone on
/// stdout, the thinking on stderr (`--reasoning hide`: nowhere), both in
/// `--json`; `--reasoning-format none` leaves it inline.
#[test]
fn run_shows_the_thinking_block_apart_from_the_answer() {
    let template =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/test-models/templates/Qwen-Qwen3-0.6B.jinja");
    assert!(template.exists(), "{} is missing: run scripts/make-test-models.sh", template.display());
    let grammar = std::env::temp_dir().join(format!("tern-cli-think-{}.gbnf", std::process::id()));
    std::fs::write(&grammar, r#"root ::= "<think>\n" [a-z ]{3,24} "\n</think>\n\n" [A-Z] [a-z]{2,8} ".""#).unwrap();
    let run = |extra: &[&str]| {
        let out = tern()
            .args([
                "run",
                "-m",
                &smollm2(),
                "--chat",
                "-p",
                "What is two and two?",
                "--temp",
                "0",
                "-n",
                "48",
                "-t",
                "1",
            ])
            .args(["--chat-template", template.to_str().unwrap(), "--grammar", grammar.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
    };
    let (json, _) = run(&["--json"]);
    let j: serde_json::Value = serde_json::from_str(&json).unwrap();
    let (reasoning, content) = (j["reasoning_content"].as_str().unwrap(), j["content"].as_str().unwrap());
    assert!(!reasoning.is_empty() && content.ends_with('.') && !content.contains("think"), "{j}");
    assert!(j["text"].as_str().unwrap().starts_with("<think>\n"), "{j}");
    let (out, err) = run(&[]);
    assert_eq!(out, format!("{content}\n"));
    assert!(err.starts_with(reasoning), "{err}");
    let (out, err) = run(&["--reasoning", "hide"]);
    assert_eq!(out, format!("{content}\n"));
    assert!(!err.contains(reasoning), "{err}");
    let (out, _) = run(&["--reasoning-format", "none"]);
    assert_eq!(out, format!("{}\n", j["text"].as_str().unwrap()));
    // tern chat: the same turn, the same split
    let mut child = tern()
        .args(["chat", "-m", &smollm2(), "--temp", "0", "-n", "48", "-t", "1"])
        .args(["--chat-template", template.to_str().unwrap(), "--grammar", grammar.to_str().unwrap()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(b"What is two and two?\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout, format!("{content}\n"), "{stderr}");
    assert!(stderr.contains(&format!("> {reasoning}\n")), "{stderr}");
    std::fs::remove_file(&grammar).ok();
}

/// `run --json` of an edit prompt with `extra` flags: ids, logprobs, usage.
fn spec_run(model: &str, extra: &[&str]) -> serde_json::Value {
    let prompt = "Fix the typos and change nothing else: The quick brown fox jumpd over the lazy dog. \
                  It was a sunny afternon, and the fox had been runing through the feilds since morning.";
    let out = tern()
        .args(["run", "-m", model, "--chat", "-p", prompt, "-n", "40", "--temp", "0", "--json", "--logprobs", "2"])
        .args(["-t", "2"])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn speculative_decoding_gives_plain_decodings_tokens_and_logits() {
    for model in [smollm2(), common::qwen().display().to_string()] {
        let plain = spec_run(&model, &[]);
        assert_eq!(plain["usage"]["draft_tokens"], 0);
        for extra in [&["--spec", "ngram"][..], &["-md", &model, "--draft-max", "4", "--draft-p-min", "0"]] {
            let r = spec_run(&model, extra);
            assert_eq!(r["ids"], plain["ids"], "{model} {extra:?}");
            // each token's log-probability and alternatives come from its
            // logits row: the same bits, so the same JSON numbers
            assert_eq!(r["logprobs"], plain["logprobs"], "{model} {extra:?}");
            let (drafted, accepted) = (&r["usage"]["draft_tokens"], &r["usage"]["accepted_draft_tokens"]);
            assert!(drafted.as_u64().unwrap() > 0, "{model} {extra:?}: nothing drafted");
            assert!(accepted.as_u64().unwrap() > 0, "{model} {extra:?}: nothing accepted");
            assert_eq!(r["timings"]["draft_n"], *drafted);
        }
    }
}

#[test]
fn speculative_flags_refuse_bad_values() {
    let qwen = common::qwen().display().to_string();
    let fails = |extra: &[&str], says: &str| {
        let out = tern().args(["run", "-m", &smollm2(), "-p", "Hi", "-n", "2"]).args(extra).output().unwrap();
        assert!(!out.status.success(), "{extra:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{extra:?}: {err}");
    };
    fails(&["--spec", "ngram", "--draft-max", "0"], "--draft-max 0");
    fails(&["--spec", "ngram", "--draft-max", "100000"], "--draft-max 100000");
    fails(&["--spec", "ngram", "--draft-p-min", "NaN"], "--draft-p-min NaN");
    fails(&["--spec", "ngram", "--draft-min", "9", "--draft-max", "4"], "--draft-min 9");
    fails(&["--draft-max", "4"], "need --spec ngram or --model-draft");
    fails(&["--spec", "lookahead"], "lookahead");
    // another vocabulary: the first token whose text differs is named
    fails(&["-md", &qwen], "the draft model's vocabulary differs from the target's at token");
}

/// The README's LoRA example, as it is written there (the built-in name
/// resolves to the cached model; run from the repository's root), prints
/// the answer the README says.
#[test]
fn readme_lora_example_prints_what_it_says() {
    smollm2();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let mut lines = readme.lines().map(str::trim).skip_while(|l| !l.starts_with("tern run -m smollm2-135m --lora "));
    let (cmd, want) = (lines.next().expect("the example"), lines.next().expect("its output"));
    let want = want.strip_prefix("# ").expect("its output, as a comment");
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd.replacen("tern", env!("CARGO_BIN_EXE_tern"), 1))
        .current_dir(&root)
        .env("TERN_OFFLINE", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{cmd}: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), want, "{cmd}");
}
