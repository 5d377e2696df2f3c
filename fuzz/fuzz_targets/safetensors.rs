//! Any bytes as a safetensors shard (header and tensor table), checked as
//! a one-shard checkpoint: an error or a tensor directory, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tern_core::runtime::Shards;

fuzz_target!(|data: &[u8]| {
    let _ = Shards::read(&[("model.safetensors", data)], None, None);
});
