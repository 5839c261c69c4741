//! What measuring one cell found, whichever the path (`memory` or
//! `veth`): the search and the figures behind the rate it found. Each path
//! fills in what it measures; the rest stays empty.

use super::ports::{RxCounters, TxCounters};
use super::search::SearchResult;
use super::tables::{LockStats, UpdaterReport};

/// One cell's search, with the figures behind it.
#[derive(Debug, Clone)]
pub struct CellRun {
    /// The search.
    pub search: SearchResult,
    /// Memory mode: the flat-out probe, pps over all ports.
    pub capacity_pps: Option<f64>,
    /// Lock figures per worker, over the trials at the zero-loss rate
    /// (none for the kernel).
    pub locks: Vec<LockStats>,
    /// Busy share over those trials: memory mode, the workers' polls that
    /// found packets; veth mode, the whole machine's CPU time.
    pub busy: Option<f64>,
    /// Memory mode: each worker's longest time away, same trials, us.
    pub max_gap_us: Vec<f64>,
    /// Memory mode: the lowest-rate trial above the zero-loss rate that
    /// lost frames, with its longest stall (what a VM's stalls cost).
    pub first_loss: Option<FirstLoss>,
    /// Packets the forwarder had no route for, same trials.
    pub unrouted: u64,
    /// The route-update thread (none for the kernel).
    pub updates: UpdaterReport,
    /// veth mode: failing trials lost only frames the generator did not
    /// send on time, so the figure is the generator's limit, a lower bound.
    pub generator_limited: bool,
    /// Memory mode: per port, the books of the last trial at the
    /// zero-loss rate (what arrived and what became of it; what left).
    pub books: Option<(Vec<RxCounters>, Vec<TxCounters>)>,
}

impl CellRun {
    /// Nothing measured: a search with no trial at `resolution`.
    pub fn empty(resolution: f64) -> CellRun {
        CellRun {
            search: SearchResult {
                rate: 0.0,
                failed_at: None,
                trials: Vec::new(),
                resolution,
                converged: false,
                note: None,
            },
            capacity_pps: None,
            locks: Vec::new(),
            busy: None,
            max_gap_us: Vec::new(),
            first_loss: None,
            unrouted: 0,
            updates: UpdaterReport::default(),
            generator_limited: false,
            books: None,
        }
    }
}

/// The trial that set the zero-loss rate from above.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FirstLoss {
    /// Its offered rate, pps over all ports.
    pub pps: f64,
    /// Frames it lost.
    pub lost: u64,
    /// The longest stall of any worker in it, microseconds.
    pub stall_us: f64,
}
