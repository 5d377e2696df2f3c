//! Streaming: iterate over token events, print text as it comes, stop at a
//! stop string, cancel from another thread after two seconds.
//!
//!     cargo run --release -p tern --example stream [MODEL.gguf]

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tern::{models, Threads};
use tern_core::generate::{Event, GenerateConfig, Generator};
use tern_core::sampler::SamplerConfig;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = models::path_or(std::env::args().nth(1), models::SMOLLM2)?;
    let lm = tern::load(&path)?;
    let threads = Threads::new(0);
    let ids = lm.tokenizer()?.encode("Here is a list of fruits:\n1.", true)?;
    let mut session = lm.model.session(512, 512);
    let cfg = GenerateConfig {
        max_tokens: 200,
        sampler: SamplerConfig { temperature: 0.7, seed: Some(1), ..Default::default() },
        stop: vec!["\n6.".into()],
        ..Default::default()
    };
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = cancel.clone();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(2));
        flag.store(true, Ordering::Relaxed);
    });
    let gen = Generator::new(&lm.model, tern::engine(&threads, false), lm.tokenizer()?, &mut session, &ids, cfg)
        .with_cancel(cancel)
        .with_clock(tern::clock);
    print!("1.");
    for event in gen {
        match event? {
            Event::Token { text, .. } => {
                print!("{text}");
                std::io::stdout().flush()?;
            }
            Event::Done(r) => println!("\n[{}: {} tokens]", r.finish_reason.as_str(), r.usage.completion_tokens),
        }
    }
    Ok(())
}
