//! The seed's published QNX figures, which every adder table, the
//! `client-adder` summary and the HTML report print beside ours: rate per
//! thread (msg/s) for 1 to 6 threads, `adder -n$X -I`, 2,000,000 round
//! trips per thread, QNX 8.0 and QNX 7.1 on one Raspberry Pi 4 (four
//! Cortex-A72 cores). The study and its whole table:
//! docs/methodology.md, "The adder benchmark (QNX devctl)".

/// How the seed laid out its X server threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One `dev-adder` process with X threads, a path each (`-nX`).
    OneProcess,
    /// X `dev-adder` processes, a path each.
    Processes,
}

impl Layout {
    /// The report's key of the same mode of `msgbench adder`: `one`, `multi`.
    pub fn key(self) -> &'static str {
        match self {
            Layout::OneProcess => "one",
            Layout::Processes => "multi",
        }
    }
}

/// One operating system's figures in one server mode.
#[derive(Debug, Clone, Copy)]
pub struct SeedSeries {
    /// "QNX 8.0" or "QNX 7.1".
    pub os: &'static str,
    /// One process with X threads, or X processes (the seed has no pool).
    pub layout: Layout,
    /// Rate per thread, msg/s, at 1 to 6 threads.
    pub rates: [f64; 6],
}

/// The cores of the seed's machine: its 5- and 6-thread rows ran more
/// client/server pairs than it had cores.
pub const SEED_CORES: u32 = 4;

/// The seed's machine and method, in a few words.
pub const SOURCE: &str =
    "QNX on a Raspberry Pi 4 (4 cores), adder -nX -I, 2,000,000 round trips per thread";

/// The operating systems of the seed's figures, newest first.
pub const OSES: [&str; 2] = ["QNX 8.0", "QNX 7.1"];

/// The seed's figures.
pub const QNX: [SeedSeries; 4] = [
    SeedSeries {
        os: "QNX 8.0",
        layout: Layout::OneProcess,
        rates: [
            165_300.0, 133_050.0, 124_770.0, 143_450.0, 95_225.0, 81_870.0,
        ],
    },
    SeedSeries {
        os: "QNX 8.0",
        layout: Layout::Processes,
        rates: [
            166_681.0, 132_890.0, 124_062.0, 147_690.0, 91_651.0, 76_432.0,
        ],
    },
    SeedSeries {
        os: "QNX 7.1",
        layout: Layout::OneProcess,
        rates: [264_550.0, 129_282.0, 74_783.0, 54_990.0, 41_401.0, 34_541.0],
    },
    SeedSeries {
        os: "QNX 7.1",
        layout: Layout::Processes,
        rates: [247_893.0, 127_299.0, 73_621.0, 53_496.0, 39_164.0, 32_606.0],
    },
];

/// The seed's rate per thread on `os` laid out as `layout` at `threads`
/// threads; `None` where it published none (past 6 threads).
pub fn rate(os: &str, layout: Layout, threads: u32) -> Option<f64> {
    let i = usize::try_from(threads.checked_sub(1)?).ok()?;
    QNX.iter()
        .find(|s| s.os == os && s.layout == layout)
        .and_then(|s| s.rates.get(i).copied())
}

/// The seed's aggregate (threads x rate per thread) on `os` laid out as
/// `layout` at `threads` threads.
pub fn aggregate(os: &str, layout: Layout, threads: u32) -> Option<f64> {
    rate(os, layout, threads).map(|r| r * f64::from(threads))
}

/// The column title of `os`'s figures in an adder table.
pub fn column(os: &str) -> String {
    format!("{os} Pi 4")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_found_by_os_mode_and_threads_and_absent_elsewhere() {
        assert_eq!(rate("QNX 8.0", Layout::OneProcess, 1), Some(165_300.0));
        assert_eq!(rate("QNX 7.1", Layout::Processes, 6), Some(32_606.0));
        assert_eq!(rate("QNX 8.0", Layout::Processes, 5), Some(91_651.0));
        assert_eq!(rate("QNX 8.0", Layout::OneProcess, 0), None);
        assert_eq!(rate("QNX 8.0", Layout::OneProcess, 7), None);
        assert_eq!(rate("Linux", Layout::OneProcess, 2), None);
        assert_eq!(aggregate("QNX 8.0", Layout::OneProcess, 4), Some(573_800.0));
    }
}
