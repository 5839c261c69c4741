//! The printed results of `msgbench smp`: one table of rows, what the
//! columns mean, the study's lessons judged, and the rows' notes; and the
//! generic figures for `compare` and `report`.

use super::options::{describe_flows, PortsMode, SmpPlan};
use super::row::SmpRow;
use crate::results::envelope::{Better, Figure};
use crate::results::table::{Align, Section, Table};

/// `12.3M`, `456k`, `789`.
fn si(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// Per-worker figures joined with `/`.
fn each(v: &[f64], digits: usize) -> String {
    if v.is_empty() {
        return "-".into();
    }
    v.iter()
        .map(|x| format!("{x:.digits$}"))
        .collect::<Vec<_>>()
        .join("/")
}

/// `1.93x 97%`: the scaling and its efficiency (scaling over N).
fn scale(r: &SmpRow) -> String {
    match (r.scaling, r.workers) {
        (Some(s), Some(n)) if n > 1 => format!("{s:.2}x {:.0}%", 100.0 * s / n as f64),
        (Some(s), _) => format!("{s:.2}x"),
        _ => "-".into(),
    }
}

/// The results table; `tolerance` is the loss a trial may have and pass.
pub fn table(rows: &[SmpRow], tolerance: f64) -> Table {
    use Align::{Left, Right};
    let rate = if tolerance > 0.0 {
        format!("<={}% loss pps", tolerance * 100.0)
    } else {
        "Zero-loss pps".to_string()
    };
    let mut t = Table::new(
        "",
        &[
            "Size",
            "Forwarder",
            "N",
            &rate,
            "Per port",
            "Mbit/s",
            "Scale",
            "Flat out",
            "Wait ns",
            "Hold ns",
            "Busy",
            "Stall us",
            "Trials",
            "QNX study, per port",
        ],
    )
    .aligned(&[
        Right, Left, Right, Right, Right, Right, Right, Right, Right, Right, Right, Right, Right,
        Left,
    ]);
    for r in rows {
        let n = r.workers.map_or("-".into(), |n| n.to_string());
        let reference = r.reference.as_ref().map_or("-".into(), |q| {
            if q.line_rate {
                format!("line rate ({})", q.column)
            } else {
                format!("{} ({})", si(q.pps_per_port), q.column)
            }
        });
        if let Some(e) = &r.error {
            let what = if r.skipped { "skipped" } else { "FAILED" };
            let mut cells = vec![r.size.to_string(), r.forwarder.name().into(), n];
            cells.push(format!("{what}: {e}"));
            cells.extend(std::iter::repeat_n(String::new(), 9));
            cells.push(reference);
            t.row(cells);
            continue;
        }
        let line = if r.at_line_rate() { " (line)" } else { "" };
        t.row(vec![
            r.size.to_string(),
            r.forwarder.name().into(),
            n,
            format!("{}{line}", si(r.pps)),
            si(r.pps_per_port),
            format!("{:.0}", r.mbit_s),
            scale(r),
            r.capacity_pps.map_or("-".into(), si),
            each(&r.wait_ns(), 0),
            each(&r.hold_ns(), 0),
            r.cpu_busy
                .map_or("-".into(), |b| format!("{:.0}%", b * 100.0)),
            each(&r.max_gap_us, 0),
            format!("{}", r.search.trial_count()),
            reference,
        ]);
    }
    t
}

/// What the columns mean, for this plan.
pub fn legend(plan: &SmpPlan) -> String {
    let busy = match plan.ports {
        PortsMode::Memory => "share of the workers' polls that found packets (they spin: the rest is headroom)",
        PortsMode::Veth => "the whole machine's CPU time (/proc/stat), generator, workers or kernel, and sink together",
    };
    let mut s = format!(
        "Zero-loss pps: the RFC 2544 throughput over all input ports, the highest offered rate with no frame\n\
         lost{} over a {} s trial (binary search to {}% of the rate, then confirmed; Trials: how many it took).\n\
         Per port: the same per input port, the study's unit. Mbit/s: frame bytes, FCS included.\n\
         Scale: against the same forwarder with 1 worker, and as an efficiency (scale / N).\n\
         Flat out: what the workers forwarded with full rings (the search's upper bound).\n\
         Wait/Hold ns: per packet, per worker, time taking and holding the table's lock (rcu: loading the\n\
         snapshot). Busy: {busy}.\n\
         Stall us: each worker's longest time away from its rings; a ring of {} frames overflows when a stall\n\
         is longer than its size over the offered rate.\n\
         Traffic: {} over {} routes; {} route changes/s applied throughout. QNX study: dual-core 600 MHz\n\
         MIPS, QNX 6.2.1, two 1 Gbit/s ports (the study's figures), packets/s per port.",
        if plan.loss_tolerance > 0.0 {
            format!(" beyond {}% (--loss-tolerance)", plan.loss_tolerance * 100.0)
        } else {
            String::new()
        },
        plan.trial_secs,
        plan.resolution * 100.0,
        plan.ring,
        describe_flows(plan.flows),
        plan.routes,
        plan.updates,
    );
    if plan.ports == PortsMode::Veth {
        s.push_str(
            "\nveth: the generator and the sink are threads of msgbench on the same CPUs as the workers (and the\n\
             kernel's softirqs): every veth figure includes that competition. kernel: the kernel's own IPv4\n\
             forwarding between the same namespaces, the reference row.",
        );
    }
    s
}

/// How long a worker's rings last at the loss trial's rate, us: what a
/// stall must exceed to explain the loss alone.
fn stall_budget_us(ring: usize, r: &SmpRow, f: &super::measured::FirstLoss) -> f64 {
    let per_port = f.pps / r.input_ports.max(1) as f64;
    ring as f64 / per_port.max(1.0) * 1e6
}

/// The lessons (the verdicts' sentences, judged once by the run), then
/// every row's note.
pub fn summary(plan: &SmpPlan, rows: &[SmpRow], lessons: &[String]) -> String {
    let mut lines: Vec<String> = lessons.to_vec();
    for r in rows.iter().filter(|r| r.measured()) {
        let who = match r.workers {
            Some(n) => format!("{} x{n}", r.forwarder.name()),
            None => r.forwarder.name().to_string(),
        };
        if let Some(n) = &r.search.note {
            lines.push(format!("{} B, {who}: {n}.", r.size));
        }
        if let Some(f) = r
            .first_loss
            .filter(|f| f.stall_us > stall_budget_us(plan.ring, r, f))
        {
            lines.push(format!(
                "{} B, {who}: the trial at {} pps lost {} frames; a worker stalled {:.0} us in it, longer than its rings hold at that rate.",
                r.size,
                si(f.pps),
                f.lost,
                f.stall_us
            ));
        }
    }
    lines.join("\n")
}

/// All sections.
pub fn sections(plan: &SmpPlan, rows: &[SmpRow], lessons: &[String]) -> Vec<Section> {
    vec![
        Section::Table(table(rows, plan.loss_tolerance)),
        Section::Text(legend(plan)),
        Section::Text(summary(plan, rows, lessons)),
    ]
}

/// A row's key.
fn key(r: &SmpRow) -> Vec<(&'static str, String)> {
    vec![
        ("ports", r.ports.name().to_string()),
        ("forwarder", r.forwarder.name().to_string()),
        ("workers", r.workers.map_or("-".into(), |n| n.to_string())),
        ("size", r.size.to_string()),
    ]
}

/// The generic figures: zero-loss pps (with the repeats) and, where
/// measured, the flat-out rate and the lock wait.
pub fn figures(rows: &[SmpRow]) -> Vec<Figure> {
    let mut out = Vec::new();
    for r in rows.iter().filter(|r| r.measured()) {
        let k = key(r);
        out.push(
            Figure::new(&k, "zero_loss_pps", r.pps, "pps", Better::Higher)
                .with_repeats(r.repeats_pps.clone()),
        );
        if let Some(c) = r.capacity_pps {
            out.push(Figure::new(&k, "flat_out_pps", c, "pps", Better::Higher));
        }
        if let Some(mean) = r.lock_wait_ns() {
            out.push(Figure::new(
                &k,
                "lock_wait_ns_per_packet",
                mean,
                "ns",
                Better::Lower,
            ));
        }
    }
    out
}
