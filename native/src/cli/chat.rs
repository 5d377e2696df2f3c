//! `tern chat`: interactive multi-turn chat in the terminal. The history
//! lives in one session, so each turn prefills only its new tokens.
//! Commands: /reset, /save FILE, /load FILE, /quit. Ctrl-C cancels the
//! reply being written (and quits at the prompt).

use std::io::{BufRead, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tern::{limits, Error, Result, Threads};
use tern_core::{Conversation, Overflow};
use tern_core::{FinishReason, Generator};
use tern_core::{Prompt, Request, Sampling};

use super::sampling::SamplingArgs;

/// The longest line read from the terminal (16 MiB).
const MAX_LINE: u64 = 16 << 20;

#[derive(clap::Args)]
pub struct Args {
    #[command(flatten)]
    load: super::LoadArgs,
    /// System message (llama.cpp's -sys)
    #[arg(long, visible_alias = "system-prompt")]
    system: Option<String>,
    #[command(flatten)]
    template: super::TemplateArgs,
    /// A thinking block on stderr (show) or not at all (hide)
    #[arg(long, value_enum, default_value_t = super::template_args::Show::Show)]
    reasoning: super::template_args::Show,
    #[command(flatten)]
    sampling: SamplingArgs,
    #[command(flatten)]
    spec: super::speculative::SpecArgs,
    /// Context size
    #[arg(short, long, visible_alias = "ctx-size", default_value_t = 4096)]
    ctx: usize,
    /// When the context is full, drop the oldest turns instead of failing
    #[arg(long)]
    drop_oldest: bool,
    /// Control-token strings typed into messages (`<|im_end|>`…) become
    /// control tokens [default: they are text]
    #[arg(long)]
    content_specials: bool,
    #[arg(short, long, default_value_t = 0)]
    threads: usize,
}

pub fn run(a: Args) -> Result<()> {
    let path = a.load.model_path()?;
    let lm = super::load(&path, &a.load)?;
    let tok = lm.tokenizer()?;
    limits::check_sessions(&lm, 1, a.ctx, 512.min(a.ctx.max(1)), tern_core::KvType::F16)?;
    let threads = Threads::new(limits::check_threads(a.threads)?);
    let engine = tern::engine(&threads, false)?;
    let mut conv = Conversation::new(&lm.model, tok, a.ctx, a.system.as_deref())?;
    if a.drop_oldest {
        conv.overflow = Overflow::DropOldest;
    }
    conv.content_specials = a.content_specials;
    conv.template_kwargs = a.template.kwargs();
    if let Some(source) = a.template.source()? {
        conv.set_template(tok, &source)?;
    }

    let cancel = Arc::new(AtomicBool::new(false));
    let busy = Arc::new(AtomicBool::new(false));
    {
        let (cancel, busy) = (cancel.clone(), busy.clone());
        let _ = ctrlc::set_handler(move || {
            if busy.load(Ordering::SeqCst) {
                cancel.store(true, Ordering::SeqCst);
            } else {
                eprintln!();
                std::process::exit(130);
            }
        });
    }

    eprintln!("tern chat: {} — /reset, /save FILE, /load FILE, /quit; Ctrl-C stops a reply", lm.model.config.name);
    let stdin = std::io::stdin();
    let mut seed = a.sampling.seed();
    // every reply matches the grammar, if one is given: compiled here to
    // refuse a bad one before the first turn, then for each reply (~1 ms)
    let req = Request { speculative: a.spec.speculative()?, ..a.sampling.request(Prompt::Ids(Vec::new()), seed)? };
    let draft = a.spec.draft(&a.load, &lm)?;
    if let Some(g) = &req.grammar {
        lm.grammar()?.compile(g)?;
    }
    loop {
        eprint!("> ");
        // a line of bytes, bounded; bytes that are not UTF-8 are replaced
        // (and said), not the end of the chat
        let mut bytes = Vec::new();
        let read = stdin.lock().take(MAX_LINE + 1).read_until(b'\n', &mut bytes);
        if read.map_err(|source| Error::Io { path: "stdin".into(), source })? == 0 {
            return Ok(());
        }
        if bytes.len() as u64 > MAX_LINE && !bytes.ends_with(b"\n") {
            let mut rest = Vec::new();
            while stdin.lock().take(MAX_LINE).read_until(b'\n', &mut rest).is_ok_and(|n| n > 0)
                && !rest.ends_with(b"\n")
            {
                rest.clear();
            }
            eprintln!("tern: a line of more than {MAX_LINE} bytes: not sent");
            continue;
        }
        let line = String::from_utf8_lossy(&bytes);
        if let std::borrow::Cow::Owned(_) = line {
            eprintln!("tern: the line was not UTF-8: its invalid bytes are sent as U+FFFD");
        }
        let line = line.trim_end_matches(['\n', '\r']);
        let (cmd, arg) = line.split_once(' ').unwrap_or((line, ""));
        match cmd {
            "" => continue,
            "/quit" | "/exit" => return Ok(()),
            "/reset" => {
                conv.reset();
                eprintln!("(conversation reset)");
                continue;
            }
            "/save" => {
                let r = std::fs::write(arg, conv.save(&lm.model));
                match r {
                    Ok(()) => eprintln!("(saved {} messages to {arg})", conv.messages.len()),
                    Err(e) => eprintln!("tern: {arg}: {e}"),
                }
                continue;
            }
            "/load" => {
                // the cache, and messages of a context's text (JSON-escaped: up to 6 bytes a byte)
                let text = (a.ctx as u64).saturating_mul(tok.longest_token() as u64 * 6);
                let max = conv.session.state_bytes_max(&lm.model.config).saturating_add(text).saturating_add(1 << 20);
                let r = super::files::read_bounded(std::path::Path::new(arg), max, "conversation file")
                    .map_err(|e| e.to_string())
                    .and_then(|b| conv.load(&lm.model, &b).map_err(|e| e.to_string()));
                match r {
                    Ok(()) => {
                        eprintln!("(loaded {} messages, {} cached tokens)", conv.messages.len(), conv.session.n_past())
                    }
                    Err(e) => eprintln!("tern: {arg}: {e}"),
                }
                continue;
            }
            _ => {}
        }
        cancel.store(false, Ordering::SeqCst);
        busy.store(true, Ordering::SeqCst);
        let turn = Request { sampling: Sampling { seed: Some(seed), ..req.sampling.clone() }, ..req.clone() };
        seed = seed.wrapping_add(1);
        // the turn's settings with the one request path; a turn they
        // refuse is taken back
        let n_msgs = conv.messages.len();
        let prepared = conv.open_turn(tok, line, a.sampling.n_predict).and_then(|ids| lm.prepare_ids(&turn, ids, None));
        let mut printer =
            super::template_args::Printer::new(conv.reasoning(a.template.reasoning_format()), a.reasoning);
        let r = prepared.inspect_err(|_| conv.messages.truncate(n_msgs)).and_then(|p| {
            let generation = p.generation_drafted(tern::clock, a.spec.drafter(draft.as_ref(), a.ctx));
            let g = Generator::over(&lm.model, engine, tok, &mut conv.session, generation);
            g.with_cancel(cancel.clone()).run(|_, text| printer.print(text))
        });
        printer.finish();
        busy.store(false, Ordering::SeqCst);
        match r {
            Ok(r) => {
                conv.push_reply(&r.text);
                let note = match r.finish_reason {
                    FinishReason::Cancelled => " [cancelled]",
                    FinishReason::Length => " [length]",
                    FinishReason::Stop => "",
                };
                println!("{note}");
                eprintln!(
                    "({} new prompt tokens, {} cached; {} tokens at {:.1} tok/s)",
                    r.usage.prompt_tokens - r.usage.cached_tokens,
                    r.usage.cached_tokens,
                    r.usage.completion_tokens,
                    r.timings.tokens_per_s
                );
            }
            Err(e) => eprintln!("tern: error: {e}"),
        }
    }
}
