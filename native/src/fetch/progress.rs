//! The download progress bar (bytes, rate, ETA) on stderr: drawn only on a
//! terminal and unless quiet.

use std::path::Path;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar, or nothing.
pub(crate) struct Bar(Option<ProgressBar>);

impl Bar {
    pub(crate) fn new(show: bool, dest: &Path) -> Bar {
        if !show {
            return Bar(None);
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{msg} {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_message(dest.file_name().unwrap_or_default().to_string_lossy().into_owned());
        Bar(Some(bar))
    }

    /// A request begins at byte `at` of `total`.
    pub(crate) fn start(&self, at: u64, total: Option<u64>) {
        if let Some(b) = &self.0 {
            if let Some(t) = total {
                b.set_length(t);
            }
            b.set_position(at);
            b.reset_eta();
        }
    }

    pub(crate) fn inc(&self, n: u64) {
        if let Some(b) = &self.0 {
            b.inc(n);
        }
    }

    /// A line above the bar.
    pub(crate) fn note(&self, line: &str) {
        match &self.0 {
            Some(b) if !b.is_hidden() => b.println(format!("tern: {line}")),
            Some(_) => eprintln!("tern: {line}"),
            None => {}
        }
    }

    pub(crate) fn finish(&self) {
        if let Some(b) = &self.0 {
            b.finish();
        }
    }
}
