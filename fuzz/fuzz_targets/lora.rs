//! Any bytes as a LoRA adapter for the tiny Qwen3 base
//! (tests/fixtures/tiny/tiny-qwen3-yarn): a GGUF LoRA file if they start
//! with `GGUF`, else a PEFT directory's two files (the first two bytes
//! the length of adapter_config.json, then it, then
//! adapter_model.safetensors). An error, or an adapter a forward pass
//! then runs with — never a panic or an allocation the bytes cannot
//! justify.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use tern_core::backend::{Scalar, Serial};
use tern_core::{Adapter, AdapterSet, Engine, Logits};

fn base() -> &'static tern::Loaded {
    static BASE: OnceLock<tern::Loaded> = OnceLock::new();
    BASE.get_or_init(|| {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tiny/tiny-qwen3-yarn");
        tern::load(&dir).expect("the tiny Qwen3 base")
    })
}

fuzz_target!(|data: &[u8]| {
    let lm = base();
    let adapter = if data.starts_with(b"GGUF") {
        Adapter::from_gguf(data, "fuzz", &lm.model)
    } else {
        let Some((n, rest)) = data.split_first_chunk::<2>() else { return };
        let n = u16::from_le_bytes(*n) as usize;
        if rest.len() < n {
            return;
        }
        let (config, tensors) = rest.split_at(n);
        Adapter::from_peft(config, tensors, "fuzz", &lm.model)
    };
    if let Ok(a) = adapter {
        let set = AdapterSet::new().with(Arc::new(a), 1.0).expect("scale 1");
        let mut s = lm.model.session(4, 4);
        s.set_adapters(&set);
        let e = Engine { kernels: &Scalar, par: &Serial, exact: false };
        s.forward(&lm.model, &e, &[1, 2], Logits::Last).expect("a forward with an adapter that loaded");
    }
});
