//! The `tern` command line.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let args = cli::Cli::parse_from(cli::llama_flags::normalize(std::env::args_os()));
    match cli::dispatch(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tern: error: {e}");
            ExitCode::FAILURE
        }
    }
}
