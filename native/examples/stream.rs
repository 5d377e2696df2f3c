//! Streaming: iterate over token events, print text as it comes, stop at a
//! stop string, cancel from another thread after two seconds.
//!
//!     cargo run --release -p tern-llm --example stream MODEL.gguf

use std::io::Write;
use std::sync::atomic::Ordering;

use tern::{Event, Options};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = tern::Model::load(std::env::args().nth(1).ok_or("usage: stream MODEL.gguf")?)?;
    let opts = Options::default().max_tokens(200).temperature(0.7).seed(1).stop("\n6.");
    let stream = model.stream("Here is a list of fruits:\n1.", &opts)?;
    let cancel = stream.cancel_flag();
    std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(2));
        cancel.store(true, Ordering::Relaxed);
    });
    print!("1.");
    for event in stream {
        match event? {
            Event::Token { text, .. } => {
                print!("{text}");
                std::io::stdout().flush().ok();
            }
            Event::Done(r) => println!("\n[{}: {} tokens]", r.finish_reason.as_str(), r.usage.completion_tokens),
        }
    }
    Ok(())
}
