//! The interleaved sweep shared by the suites that repeat a grid of
//! cells (`smp`, `broker`): every cell once, then every cell again, `-r`
//! times, so a slow minute of the machine falls on every cell alike. A
//! cell that cannot run here is skipped from the start; a cell that
//! failed is not tried again; a stop (SIGINT/SIGTERM) ends the sweep
//! before the next cell. Each cell's repeats are kept for its row, which
//! is made from the median repeat ([`Tally::median`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Result;

use crate::results::progress::Progress;
use crate::suites::RunContext;

/// What the sweep found for one cell.
#[derive(Debug)]
pub struct Tally<M> {
    /// Its measured repeats, in run order (until [`Tally::median`] sorts
    /// them).
    pub runs: Vec<M>,
    /// The error that ended its repeats, if one did.
    pub error: Option<String>,
    /// Why it was not run here, if it was not.
    pub skipped: Option<String>,
}

impl<M> Tally<M> {
    /// Whether the sweep got to this cell: measured, failed or skipped
    /// (false only for a cell a stop came before).
    pub fn reached(&self) -> bool {
        !self.runs.is_empty() || self.error.is_some() || self.skipped.is_some()
    }

    /// The median repeat by `key` (the upper one of an even count), with
    /// the repeats sorted by `key`; `None` when nothing was measured.
    pub fn median(&mut self, key: impl Fn(&M) -> f64) -> Option<&M> {
        self.runs.sort_by(|a, b| key(a).total_cmp(&key(b)));
        self.runs.get(self.runs.len() / 2)
    }
}

/// The sweep's result: one tally per cell, in the cells' order.
#[derive(Debug)]
pub struct Swept<M> {
    /// One per cell.
    pub cells: Vec<Tally<M>>,
    /// Whether a stop ended the sweep early.
    pub interrupted: bool,
}

/// The grid and how it is run.
pub struct Sweep<'a, C> {
    /// The cells, in the order each repeat runs them.
    pub cells: &'a [C],
    /// How many times each cell is measured.
    pub repeats: usize,
    /// About how long one cell takes once (for the progress bar).
    pub each: Duration,
    /// The progress bar.
    pub progress: &'a Progress,
    /// The stop flag (set by SIGINT/SIGTERM).
    pub stop: &'a AtomicBool,
}

impl<'a, C> Sweep<'a, C> {
    /// `cells` repeated `repeats` times, each about `each` long, with the
    /// run's progress bar and stop flag.
    pub fn new(cells: &'a [C], repeats: usize, each: Duration, cx: &'a RunContext) -> Self {
        Sweep {
            cells,
            repeats,
            each,
            progress: &cx.progress,
            stop: &cx.stop,
        }
    }

    /// Runs the sweep: `skip` says once per cell why it cannot run here
    /// (`None` when it can), `label` names a cell's repeat for the
    /// progress bar, `measure` measures cell `i` once in repeat `rep`. A
    /// measurement that fails once the stop is set is the stop's doing,
    /// not the cell's: it ends the sweep without an error.
    pub fn run<M>(
        &self,
        skip: impl Fn(&C) -> Option<String>,
        label: impl Fn(&C, usize) -> String,
        mut measure: impl FnMut(usize, &C, usize) -> Result<M>,
    ) -> Swept<M> {
        let mut cells: Vec<Tally<M>> = self
            .cells
            .iter()
            .map(|c| Tally {
                runs: Vec::new(),
                error: None,
                skipped: skip(c),
            })
            .collect();
        let stopped = || self.stop.load(Ordering::Relaxed);
        let mut interrupted = false;
        'sweep: for rep in 0..self.repeats {
            for (i, (c, tally)) in self.cells.iter().zip(&mut cells).enumerate() {
                if stopped() {
                    interrupted = true;
                    break 'sweep;
                }
                if tally.error.is_some() || tally.skipped.is_some() {
                    self.progress.done(self.each);
                    continue;
                }
                self.progress.start(label(c, rep));
                let measured = measure(rep, c, i);
                self.progress.done(self.each);
                match measured {
                    Ok(m) => tally.runs.push(m),
                    Err(_) if stopped() => {
                        interrupted = true;
                        break 'sweep;
                    }
                    Err(e) => tally.error = Some(format!("{e:#}")),
                }
            }
        }
        Swept { cells, interrupted }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::bail;
    use std::cell::RefCell;

    fn sweep<'a>(cells: &'a [char], repeats: usize, stop: &'a AtomicBool) -> Sweep<'a, char> {
        static HIDDEN: std::sync::OnceLock<Progress> = std::sync::OnceLock::new();
        let progress = HIDDEN.get_or_init(Progress::hidden);
        Sweep {
            cells,
            repeats,
            each: Duration::from_millis(1),
            progress,
            stop,
        }
    }

    #[test]
    fn the_cells_are_interleaved_repeat_by_repeat() {
        let stop = AtomicBool::new(false);
        let order = RefCell::new(Vec::new());
        let s = sweep(&['a', 'b', 'c'], 2, &stop).run(
            |_| None,
            |c, rep| format!("{c}{rep}"),
            |rep, &c, i| {
                order.borrow_mut().push(format!("{c}{rep}"));
                Ok(i * 10 + rep)
            },
        );
        assert_eq!(order.into_inner(), ["a0", "b0", "c0", "a1", "b1", "c1"]);
        assert!(!s.interrupted);
        let runs: Vec<Vec<usize>> = s.cells.into_iter().map(|t| t.runs).collect();
        assert_eq!(runs, [vec![0, 1], vec![10, 11], vec![20, 21]]);
    }

    #[test]
    fn a_stop_ends_the_sweep_before_the_next_cell() {
        let stop = AtomicBool::new(false);
        let mut calls = 0;
        let s = sweep(&['a', 'b', 'c'], 3, &stop).run(
            |_| None,
            |c, _| c.to_string(),
            |_, &c, _| {
                calls += 1;
                if c == 'b' {
                    stop.store(true, Ordering::Relaxed);
                }
                Ok(())
            },
        );
        assert_eq!(calls, 2, "nothing measured after the stop");
        assert!(s.interrupted);
        assert!(s.cells[1].reached() && !s.cells[2].reached());
    }

    #[test]
    fn a_failure_under_a_stop_is_the_stops_not_the_cells() {
        let stop = AtomicBool::new(false);
        let s = sweep(&['a', 'b'], 2, &stop).run(
            |_| None,
            |c, _| c.to_string(),
            |_, _, _| -> Result<()> {
                stop.store(true, Ordering::Relaxed);
                bail!("broken by the stop")
            },
        );
        assert!(s.interrupted);
        assert!(s.cells.iter().all(|t| t.error.is_none()), "{s:?}");
    }

    #[test]
    fn a_failed_cell_is_not_retried_and_a_skipped_one_never_runs() {
        let stop = AtomicBool::new(false);
        let tried = RefCell::new(Vec::new());
        let s = sweep(&['a', 'b', 'c'], 3, &stop).run(
            |&c| (c == 'c').then(|| "no daemon here".to_string()),
            |c, _| c.to_string(),
            |rep, &c, _| {
                tried.borrow_mut().push(c);
                match c {
                    'b' if rep == 1 => bail!("wrong reply"),
                    _ => Ok(rep),
                }
            },
        );
        assert_eq!(tried.into_inner(), ['a', 'b', 'a', 'b', 'a']);
        assert!(!s.interrupted);
        let [a, b, c] = &s.cells[..] else {
            panic!("three tallies: {s:?}")
        };
        assert_eq!((a.runs.len(), a.error.as_deref()), (3, None));
        assert_eq!((b.runs.len(), b.error.as_deref()), (1, Some("wrong reply")));
        assert_eq!(c.skipped.as_deref(), Some("no daemon here"));
        assert!(c.runs.is_empty() && c.error.is_none() && c.reached());
    }

    #[test]
    fn the_median_repeat_is_the_middle_by_key() {
        let mut t = Tally {
            runs: vec![(0, 30.0), (1, 10.0), (2, 20.0)],
            error: None,
            skipped: None,
        };
        assert_eq!(t.median(|r| r.1), Some(&(2, 20.0)));
        t.runs.push((3, 40.0));
        assert_eq!(
            t.median(|r| r.1),
            Some(&(0, 30.0)),
            "the upper middle of four"
        );
        t.runs.clear();
        assert_eq!(t.median(|r| r.1), None);
    }
}
