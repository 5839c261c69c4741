//! The figures of a row's other clients: what its idle connections cost
//! the server (`--idle-clients`), and what its active clients measured
//! (`--clients`), each client's report as it comes from its process.

use serde::{Deserialize, Serialize};

/// What a row's idle connections cost its server (this process).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IdleCost {
    /// Idle connections, every one connected and answered once.
    pub connections: u32,
    /// Child processes holding them.
    pub processes: u32,
    /// Resident memory of this process before they connected, bytes.
    pub rss_before_bytes: u64,
    /// Resident memory once they all had, bytes.
    pub rss_after_bytes: u64,
    /// Open descriptors of this process before they connected.
    pub fds_before: u64,
    /// Open descriptors once they all had.
    pub fds_after: u64,
    /// (after - before) / connections, bytes (negative if memory was
    /// given back meanwhile).
    pub rss_bytes_per_conn: f64,
    /// (after - before) / connections, descriptors.
    pub fds_per_conn: f64,
    /// Descriptors each connection took in the children, on average.
    pub client_fds_per_conn: f64,
    /// Time from the first connect to the last child's `ready`, s.
    pub connect_secs: f64,
}

/// What one active client measured: one JSON line from its process.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClientReport {
    /// Its index (0 to N-1).
    pub index: u32,
    /// Round trips done, every reply checked.
    pub calls: u64,
    /// Wall time of its run, ns.
    pub elapsed_ns: f64,
    /// Its round trips per second.
    pub msgs_per_s: f64,
    /// Its median round trip, ns (CLOCK_MONOTONIC, one timestamp's cost
    /// taken out).
    pub p50_ns: f64,
    /// Its 99th percentile, ns.
    pub p99_ns: f64,
    /// Its longest round trip, ns.
    pub max_ns: f64,
    /// Why it stopped early (a wrong, lost or stale reply), if it did.
    pub error: Option<String>,
}

/// The figures of an active-clients row.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ActiveRun {
    /// Clients (processes).
    pub clients: u32,
    /// Round trips of all clients.
    pub calls: u64,
    /// Aggregate rate: the clients' round trips per second, summed.
    pub msgs_per_s: f64,
    /// The median of the clients' p50s, ns.
    pub p50_median_ns: f64,
    /// The worst (highest) of the clients' p50s, ns.
    pub p50_worst_ns: f64,
    /// The median of the clients' p99s, ns.
    pub p99_median_ns: f64,
    /// The worst of the clients' p99s, ns.
    pub p99_worst_ns: f64,
    /// Fairness: the slowest client's rate / the fastest's (1 = even).
    pub slowest_over_fastest: f64,
    /// Fairness: the coefficient of variation of the clients' rates
    /// (population standard deviation / mean; 0 = even).
    pub rate_cv: f64,
    /// Every client's report, by index.
    pub per_client: Vec<ClientReport>,
}
