//! `--vs-ipc-bench`: the reference programs' table, each beside
//! msgbench's process row of the same mechanism, size and placement, and
//! their figures (keyed `peer`, so compare and history follow them).

use crate::measure::hist::fmt_ns;
use crate::results::envelope::{Better, Figure};
use crate::results::peer::{PeerRun, PeerStatus};
use crate::results::table::{Align, Table};
use crate::results::thousands;

/// The columns of the table.
const HEAD: [&str; 11] = [
    "Program",
    "msgbench",
    "Size",
    "Placement",
    "Their avg",
    "Our avg",
    "Ours / theirs",
    "Their min",
    "Their max",
    "Their rate",
    "What it does",
];

/// The table of every program run, in run order; `None` when none ran.
pub fn table(peers: &[PeerRun]) -> Option<Table> {
    let first = peers.first()?;
    let title = format!(
        "ipc-bench's own programs beside msgbench's process rows ({} round trips each, two processes \
         on one CPU)",
        first.count
    );
    let mut align = vec![Align::Right; HEAD.len()];
    for i in [0, 1, 3, 10] {
        align[i] = Align::Left;
    }
    let mut t = Table::new(title, &HEAD).aligned(&align);
    for p in peers {
        t.row(cells(p));
    }
    t.notes = vec![
        "  Their avg, min, max and rate as they print them (rigtorp's programs print half a round trip: \
         doubled here; they print no min, max or rate).\n  Run on one CPU only: a program's two processes cannot \
         be pinned apart from outside.\n  Our avg: the mean round trip of msgbench's \
         --layout process row of that transport, size and placement (none without one)."
            .to_string(),
    ];
    Some(t)
}

/// One program's cells.
fn cells(p: &PeerRun) -> Vec<String> {
    let ns = |v: Option<f64>| v.map_or("-".to_string(), fmt_ns);
    let mut c = vec![
        p.program.clone(),
        p.transport.clone(),
        p.size.to_string(),
        p.placement.clone(),
    ];
    if p.status != PeerStatus::Ok {
        c.resize(HEAD.len() - 1, "-".to_string());
        let status = match p.status {
            PeerStatus::Hung => "HUNG",
            _ => "FAILED",
        };
        c.push(format!("{status}: {}", p.reason.as_deref().unwrap_or("")));
        return c;
    }
    let ratio = match (p.ours_mean_ns, p.mean_ns) {
        (Some(o), Some(t)) if t > 0.0 && o / t >= 0.1 => format!("{:.2}x", o / t),
        (Some(o), Some(t)) if t > 0.0 => format!("{:.4}x", o / t),
        _ => "-".to_string(),
    };
    c.extend([
        ns(p.mean_ns),
        ns(p.ours_mean_ns),
        ratio,
        ns(p.min_ns),
        ns(p.max_ns),
        p.rate_per_s.map_or("-".to_string(), thousands),
        p.differs.clone(),
    ]);
    c
}

/// The figures of the programs that printed theirs: mean round trip,
/// keyed by program, transport, size and placement.
pub fn figures(peers: &[PeerRun]) -> Vec<Figure> {
    peers
        .iter()
        .filter(|p| p.status == PeerStatus::Ok)
        .filter_map(|p| {
            let key = [
                ("peer", p.program.clone()),
                ("transport", p.transport.clone()),
                ("size", p.size.to_string()),
                ("placement", p.placement.clone()),
                ("layout", "process".to_string()),
            ];
            p.mean_ns
                .map(|v| Figure::new(&key, "mean_ns", v, "ns", Better::Lower))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(status: PeerStatus, mean: Option<f64>, ours: Option<f64>) -> PeerRun {
        PeerRun {
            program: "ipc-bench domain".into(),
            upstream: "github.com/goldsborough/ipc-bench@x".into(),
            command: "domain -c 1000 -s 64".into(),
            transport: "uds-stream".into(),
            size: 64,
            placement: "same".into(),
            count: 1000,
            status,
            reason: (status != PeerStatus::Ok).then(|| "printed nothing".into()),
            mean_ns: mean,
            min_ns: None,
            max_ns: None,
            rate_per_s: None,
            ours_mean_ns: ours,
            differs: "the same mechanism".into(),
        }
    }

    #[test]
    fn the_ratio_is_ours_over_theirs_and_a_hung_program_says_so() {
        use crate::results::table::{render, Format, Section};
        let peers = vec![
            run(PeerStatus::Ok, Some(10_000.0), Some(8_000.0)),
            run(PeerStatus::Hung, None, Some(8_000.0)),
        ];
        let text = render(&[Section::Table(table(&peers).unwrap())], Format::Table);
        assert!(text.contains("0.80x"), "{text}");
        assert!(text.contains("HUNG: printed nothing"), "{text}");
        let f = figures(&peers);
        assert_eq!(f.len(), 1);
        assert_eq!(
            f[0].key_text(),
            "layout=process peer=ipc-bench domain placement=same size=64 transport=uds-stream"
        );
        assert!(table(&[]).is_none());
    }
}
