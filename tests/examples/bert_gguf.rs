//! Write an HF BERT directory as a GGUF in llama.cpp's conventions (for
//! bench/embed.sh's llama-embedding peer):
//!     cargo run --release -p tern-tests --example bert_gguf -- DIR OUT.gguf [POOLING]
//! POOLING: llama.cpp's number (1 mean, the default; 2 CLS; 0 none).

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: bert_gguf DIR OUT.gguf [POOLING]");
        std::process::exit(2);
    }
    let pooling = args.get(3).map_or(1, |p| p.parse().expect("POOLING: a number"));
    let bytes = tern_tests::bert_gguf::bert_gguf(std::path::Path::new(&args[1]), pooling);
    std::fs::write(&args[2], bytes).expect("writing the GGUF");
}
