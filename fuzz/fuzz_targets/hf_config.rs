//! Any bytes as config.json, generation_config.json and a safetensors
//! index: an error or a value, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tern_core::{GenerationDefaults, runtime::HfConfig, runtime::Index};

fuzz_target!(|data: &[u8]| {
    if let Ok(c) = HfConfig::parse(data) {
        let _ = c.config.check_fits(true, data.len() as u64);
    }
    let _ = GenerationDefaults::parse(data);
    let _ = Index::parse(data);
});
