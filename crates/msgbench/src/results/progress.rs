//! Progress of a run on standard error: a bar with the current row and
//! an estimate of the time left, drawn only when standard error is a
//! terminal (indicatif hides it otherwise), so pipes and CI logs get no
//! control characters.
//!
//! The bar counts planned seconds, not rows: a suite gives each item its
//! expected length, so the estimate stays right when rows differ in
//! length (a 64 KiB row against a 1-byte one).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Milliseconds per unit of the bar.
const UNIT_MS: f64 = 1.0;

/// The progress of one run.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar for `total` planned time, labelled with the suite's name;
    /// hidden when standard error is not a terminal.
    pub fn new(suite: &str, total: Duration) -> Progress {
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        Progress::with_target(suite, total, target)
    }

    /// A bar that is never drawn (tests, nested runs).
    pub fn hidden() -> Progress {
        Progress::with_target("", Duration::ZERO, ProgressDrawTarget::hidden())
    }

    fn with_target(suite: &str, total: Duration, target: ProgressDrawTarget) -> Progress {
        let bar = ProgressBar::with_draw_target(Some(units(total)), target);
        let style = ProgressStyle::with_template(
            "{prefix} [{bar:30}] {percent:>3}% {msg}  (about {eta} left)",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
        bar.set_style(style);
        bar.set_prefix(suite.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar }
    }

    /// Whether the bar is drawn.
    pub fn visible(&self) -> bool {
        !self.bar.is_hidden()
    }

    /// Starts an item: `what` is shown as the current row.
    pub fn start(&self, what: impl Into<String>) {
        self.bar.set_message(what.into());
    }

    /// Ends an item that was planned to take `planned`.
    pub fn done(&self, planned: Duration) {
        self.bar.inc(units(planned));
    }

    /// Adds `more` planned time (an item re-run).
    pub fn extend(&self, more: Duration) {
        if let Some(len) = self.bar.length() {
            self.bar.set_length(len + units(more));
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

fn units(d: Duration) -> u64 {
    (d.as_secs_f64() * 1000.0 / UNIT_MS).round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hidden_bar_counts_planned_time() {
        let p = Progress::hidden();
        assert!(!p.visible());
        p.extend(Duration::from_secs(2));
        p.start("uds 64 B");
        p.done(Duration::from_millis(500));
        assert_eq!(p.bar.position(), 500);
        p.finish();
    }
}
