//! llama.cpp's spellings: its multi-letter flags with one dash (`-hf`,
//! `-sys`, `-cnv`, `-ngl`, `-np`, `-fa`, `-md`, `-nr`…), which a parser of POSIX short
//! flags would read as bundles (`-hf` as `-h -f`), rewritten to their long
//! names before the command line is parsed; and `run -cnv` (llama-cli's
//! conversation mode) run as `tern chat`, its `-p` the system prompt as
//! llama-cli takes it there.

use std::ffi::OsString;

/// One-dash flags of llama.cpp's tools and the long flag each is here.
const ONE_DASH: [(&str, &str); 10] = [
    ("-hf", "--hf-repo"),
    ("-hfr", "--hf-repo"),
    ("-hff", "--hf-file"),
    ("-sys", "--system-prompt"),
    ("-cnv", "--conversation"),
    ("-ngl", "--n-gpu-layers"),
    ("-np", "--parallel"),
    ("-fa", "--flash-attn"),
    ("-md", "--model-draft"),
    ("-nr", "--no-repack"),
];

/// The command line with llama.cpp's one-dash flags as long flags (only
/// before a `--`), and `run --conversation` as `chat`.
pub fn normalize(args: impl IntoIterator<Item = OsString>) -> Vec<OsString> {
    let mut out: Vec<OsString> = Vec::new();
    let mut rest = false;
    for a in args {
        if rest {
            out.push(a);
            continue;
        }
        if a == "--" {
            rest = true;
            out.push(a);
            continue;
        }
        let long = a.to_str().and_then(|s| ONE_DASH.iter().find(|(one, _)| *one == s)).map(|(_, long)| *long);
        out.push(long.map_or(a, OsString::from));
    }
    conversation_as_chat(out)
}

/// `tern run … --conversation`: `tern chat`, `-p`/`--prompt` as its
/// system prompt.
fn conversation_as_chat(mut args: Vec<OsString>) -> Vec<OsString> {
    let conv = args.iter().position(|a| a == "--conversation");
    let run = args.iter().position(|a| a == "run");
    let (Some(c), Some(r)) = (conv, run) else { return args };
    if r > c {
        return args;
    }
    args.remove(c);
    args[r] = "chat".into();
    for a in args.iter_mut().skip(r + 1) {
        if a == "-p" || a == "--prompt" {
            *a = "--system".into();
        }
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(s: &str) -> String {
        let v: Vec<String> =
            normalize(s.split(' ').map(OsString::from)).into_iter().map(|a| a.into_string().unwrap()).collect();
        v.join(" ")
    }

    #[test]
    fn llama_cpp_spellings_become_long_flags() {
        assert_eq!(norm("tern run -hf a/b:Q4_K_M -p hi"), "tern run --hf-repo a/b:Q4_K_M -p hi");
        assert_eq!(norm("tern serve -np 4 -ngl 99 -fa"), "tern serve --parallel 4 --n-gpu-layers 99 --flash-attn");
        assert_eq!(norm("tern run -sys hi -p x"), "tern run --system-prompt hi -p x");
        assert_eq!(norm("tern run -m m -cnv -p helpful"), "tern chat -m m --system helpful");
        assert_eq!(norm("tern run -p x -- -hf"), "tern run -p x -- -hf");
        assert_eq!(norm("tern run -h"), "tern run -h");
    }
}
