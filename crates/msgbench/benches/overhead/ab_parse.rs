//! Reading a row of the overhead bench's table, for its A/B mode
//! (`ab.rs`); tested by `tests/overhead_ab.rs`, since a bench without the
//! test harness runs no `#[test]`.

/// One row of one run: the floor's and the library's median ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figure {
    /// The bare floor's median ns per round trip.
    pub bare: f64,
    /// The library's median ns per round trip.
    pub lib: f64,
}

/// A table row: the label (words up to the cpus `a,b`; a long label runs
/// past its 48 columns), then cpus, rt/run, bare ns, its spread, lib ns, ...
pub fn parse_line(line: &str) -> Option<((String, String), Figure)> {
    let f: Vec<&str> = line.split_whitespace().collect();
    let at = f.iter().position(|w| is_cpus(w))?;
    if at == 0 || f.len() < at + 5 {
        return None;
    }
    let bare = f[at + 2].parse().ok()?;
    let lib = f[at + 4].parse().ok()?;
    Some(((f[..at].join(" "), f[at].to_string()), Figure { bare, lib }))
}

/// `a,b` with two CPU numbers.
fn is_cpus(w: &str) -> bool {
    w.split_once(',')
        .is_some_and(|(a, b)| a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok())
}
