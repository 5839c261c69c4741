//! The units figures are written in, as the exports need them: the base
//! unit Prometheus names a metric after (seconds, bytes, a rate per
//! second, a ratio) and the factor to it, and the words of a metric's
//! name that already say its unit (`p50_ns`, `calls_per_s`), so that a
//! name says its unit once.

/// One unit of the envelope's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unit {
    /// As the envelope writes it: `ns`, `msg/s`, `%`...
    pub name: &'static str,
    /// Words (`_`-separated tokens) of a metric's name that say this unit,
    /// the longest first.
    pub words: &'static [&'static str],
    /// The base unit's suffix in a Prometheus name (`seconds`,
    /// `messages_per_second`), empty for a plain number.
    pub base: &'static str,
    /// A figure divided by this is in the base unit (1e9 for ns: exact
    /// powers of ten, so the quotient is rounded once).
    pub per_base: f64,
    /// Appended to a name (BMF's measure) that does not say the unit yet;
    /// empty for a plain number.
    pub slug: &'static str,
}

const fn unit(
    name: &'static str,
    words: &'static [&'static str],
    base: &'static str,
    per_base: f64,
    slug: &'static str,
) -> Unit {
    Unit {
        name,
        words,
        base,
        per_base,
        slug,
    }
}

/// Every unit a suite writes (docs/results.md, "Figures").
pub const UNITS: [Unit; 13] = [
    unit("ns", &["ns"], "seconds", 1e9, "ns"),
    unit("us", &["us"], "seconds", 1e6, "us"),
    unit("ms", &["ms"], "seconds", 1e3, "ms"),
    unit("s", &["seconds", "secs", "s"], "seconds", 1.0, "s"),
    unit("bytes", &["bytes"], "bytes", 1.0, "bytes"),
    unit(
        "msg/s",
        &["msgs_per_s", "msg_per_s", "per_s"],
        "messages_per_second",
        1.0,
        "msg_per_s",
    ),
    unit(
        "calls/s",
        &["calls_per_s", "per_s"],
        "calls_per_second",
        1.0,
        "calls_per_s",
    ),
    unit("pps", &["pps"], "packets_per_second", 1.0, "pps"),
    unit("%", &["percent", "pct"], "ratio", 100.0, "pct"),
    unit("ratio", &["ratio"], "ratio", 1.0, "ratio"),
    unit("fds", &["fds"], "", 1.0, "fds"),
    unit("count", &[], "", 1.0, ""),
    unit("", &[], "", 1.0, ""),
];

/// The unit named `name`; a unit no suite writes is a plain number
/// (its name kept in the HELP text and the lines).
pub fn of(name: &str) -> Unit {
    UNITS
        .iter()
        .find(|u| u.name == name)
        .copied()
        .unwrap_or(unit("", &[], "", 1.0, ""))
}

/// Where `word`'s tokens stand in `tokens`, if they do.
fn find(tokens: &[&str], word: &str) -> Option<(usize, usize)> {
    let w: Vec<&str> = word.split('_').collect();
    (0..tokens.len())
        .find(|&i| tokens[i..].starts_with(&w))
        .map(|i| (i, w.len()))
}

/// True when `metric`'s name says unit `u` already.
pub fn named_in(metric: &str, u: &Unit) -> bool {
    let tokens: Vec<&str> = metric.split('_').collect();
    u.words.iter().any(|w| find(&tokens, w).is_some())
}

/// `metric` without the words that say its unit (when the unit has a
/// base: a plain number's name is kept whole), and without a `per` left
/// at either end: `p50_ns` -> `p50`, `ns_per_call` -> `call`,
/// `calls_per_s` -> `` (the base unit says it all).
pub fn stem(metric: &str, u: &Unit) -> String {
    let mut tokens: Vec<&str> = metric.split('_').filter(|t| !t.is_empty()).collect();
    if !u.base.is_empty() {
        if let Some((at, n)) = u.words.iter().find_map(|w| find(&tokens, w)) {
            tokens.drain(at..at + n);
        }
        while tokens.first() == Some(&"per") {
            tokens.remove(0);
        }
        while tokens.last() == Some(&"per") {
            tokens.pop();
        }
    }
    tokens.join("_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stem_drops_the_unit_words_and_a_dangling_per() {
        let cases = [
            ("p50_ns", "ns", "p50"),
            ("ns_per_round_trip", "ns", "round_trip"),
            ("cpu_ns_per_msg", "ns", "cpu_per_msg"),
            ("calls_per_s", "calls/s", ""),
            ("aggregate_msgs_per_s", "msg/s", "aggregate"),
            ("rate_per_thread", "msg/s", "rate_per_thread"),
            ("zero_loss_pps", "pps", "zero_loss"),
            ("rss_bytes_per_conn", "bytes", "rss_per_conn"),
            ("fds_per_conn", "fds", "fds_per_conn"),
            ("avg", "us", "avg"),
            ("ratio", "ratio", ""),
            ("pass", "", "pass"),
        ];
        for (metric, u, want) in cases {
            assert_eq!(stem(metric, &of(u)), want, "{metric} in {u}");
        }
    }

    #[test]
    fn every_unit_of_the_docs_is_known_and_others_are_plain_numbers() {
        for u in [
            "ns", "us", "ms", "msg/s", "calls/s", "pps", "%", "ratio", "bytes",
        ] {
            assert!(!of(u).base.is_empty(), "{u}");
        }
        let odd = of("furlongs");
        assert_eq!((odd.base, odd.per_base, odd.slug), ("", 1.0, ""));
        assert!(named_in("p50_ns", &of("ns")));
        assert!(!named_in("throughput", &of("msg/s")));
        assert!(!named_in("snsx", &of("ns")), "whole words only");
    }
}
