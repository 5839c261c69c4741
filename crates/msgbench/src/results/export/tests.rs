//! The exports' shapes on figures made here: names, units, labels and
//! their escapes, bounds, duplicates. (Real runs, and the real consumers
//! reading them, are in tests/export*.rs.)

use super::*;
use crate::results::envelope::Better;

fn fig(key: &[(&str, &str)], metric: &str, value: f64, unit: &str, better: Better) -> Figure {
    let key: Vec<(&str, String)> = key.iter().map(|(k, v)| (*k, v.to_string())).collect();
    Figure::new(&key, metric, value, unit, better)
}

fn ipc_figures() -> Vec<Figure> {
    let row = [("transport", "uds"), ("size", "64"), ("placement", "same")];
    vec![
        fig(&row, "p50_ns", 1234.0, "ns", Better::Lower).with_repeats(vec![1200.0, 1300.0]),
        fig(&row, "throughput", 500000.0, "msg/s", Better::Higher),
        fig(&row, "cpu_busy", 50.0, "%", Better::Neither),
        fig(&row, "mean_ns", f64::NAN, "ns", Better::Lower),
    ]
}

fn subject(figures: &[Figure]) -> Subject<'_> {
    Subject {
        suite: "ipc",
        host: "board-1",
        kernel: "Linux 6.1",
        figures,
    }
}

#[test]
fn openmetrics_names_base_units_labels_and_eof() {
    let f = ipc_figures();
    let text = Export::Openmetrics.export(&subject(&f)).unwrap();
    let labels = r#"suite="ipc",host="board-1",kernel="Linux 6.1",placement="same",size="64",transport="uds""#;
    let want = format!(
        "# HELP msgbench_ipc_cpu_busy_ratio msgbench ipc figure cpu_busy, in ratio\n\
         # TYPE msgbench_ipc_cpu_busy_ratio gauge\n\
         # UNIT msgbench_ipc_cpu_busy_ratio ratio\n\
         msgbench_ipc_cpu_busy_ratio{{{labels}}} 0.5\n\
         # HELP msgbench_ipc_p50_seconds msgbench ipc figure p50_ns, in seconds, lower is better\n\
         # TYPE msgbench_ipc_p50_seconds gauge\n\
         # UNIT msgbench_ipc_p50_seconds seconds\n\
         msgbench_ipc_p50_seconds{{{labels}}} 0.000001234\n\
         # HELP msgbench_ipc_throughput_messages_per_second msgbench ipc figure throughput, in messages per second, higher is better\n\
         # TYPE msgbench_ipc_throughput_messages_per_second gauge\n\
         # UNIT msgbench_ipc_throughput_messages_per_second messages_per_second\n\
         msgbench_ipc_throughput_messages_per_second{{{labels}}} 500000\n\
         # EOF\n"
    );
    assert_eq!(text, want);
}

#[test]
fn hostile_label_values_are_escaped_and_odd_fields_renamed() {
    let f = vec![fig(
        &[
            ("transport", "a\"b\\c\nd"),
            ("host", "x"),
            ("9lives", "y"),
            ("__name__", "z"),
        ],
        "pass",
        1.0,
        "",
        Better::Higher,
    )];
    let s = Subject {
        host: "evil\"host\\\n",
        ..subject(&f)
    };
    let text = Export::Openmetrics.export(&s).unwrap();
    let sample = text.lines().find(|l| !l.starts_with('#')).unwrap();
    assert_eq!(
        sample,
        r#"msgbench_ipc_pass{suite="ipc",host="evil\"host\\\n",kernel="Linux 6.1",key9lives="y",key__name__="z",key_host="x",transport="a\"b\\c\nd"} 1"#
    );
    assert!(
        !text.contains("# UNIT"),
        "a plain number has no unit: {text}"
    );
}

#[test]
fn two_figures_under_one_name_or_label_are_refused() {
    let row = [("transport", "uds")];
    let twice = vec![
        fig(&row, "p50", 1.0, "ns", Better::Lower),
        fig(&row, "p50_ns", 2.0, "ns", Better::Lower),
    ];
    let e = Export::Openmetrics.export(&subject(&twice)).unwrap_err();
    assert!(matches!(e, ExportError::Duplicate(_)), "{e}");
    let same = vec![
        fig(&row, "p50_ns", 1.0, "ns", Better::Lower),
        fig(&row, "p50_ns", 2.0, "ns", Better::Lower),
    ];
    for x in [Export::Bmf, Export::Lines, Export::Lava] {
        let e = x.export(&subject(&same)).unwrap_err();
        assert!(matches!(e, ExportError::Duplicate(_)), "{x:?}: {e}");
    }
    let clash = vec![fig(
        &[("a-b", "1"), ("a_b", "2")],
        "p50_ns",
        1.0,
        "ns",
        Better::Lower,
    )];
    let e = Export::Openmetrics.export(&subject(&clash)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the key fields a-b and a_b both export as the label a_b"
    );
}

#[test]
fn bmf_one_benchmark_per_row_the_repeats_as_bounds() {
    let f = ipc_figures();
    let text = Export::Bmf.export(&subject(&f)).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let want = serde_json::json!({
        "ipc placement=same size=64 transport=uds": {
            "p50_ns": {"value": 1234.0, "lower_value": 1200.0, "upper_value": 1300.0},
            "throughput_msg_per_s": {"value": 500000.0},
            "cpu_busy_pct": {"value": 50.0}
        }
    });
    assert_eq!(v, want);
    // The value stays within its bounds, repeats or not.
    let wide = vec![fig(&[], "p50_ns", 5.0, "ns", Better::Lower).with_repeats(vec![6.0, 7.0])];
    let v: serde_json::Value =
        serde_json::from_str(&Export::Bmf.export(&subject(&wide)).unwrap()).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"ipc": {"p50_ns": {"value": 5.0, "lower_value": 5.0, "upper_value": 7.0}}})
    );
}

#[test]
fn lines_and_lava_one_safe_name_per_figure() {
    let mut f = ipc_figures();
    f.push(fig(
        &[("floor", "cache line, threads"), ("cpus", "0->1")],
        "ns_per_round_trip",
        1500.5,
        "ns",
        Better::Lower,
    ));
    f.push(fig(
        &[("id", "SEM-1"), ("variant", "a b=c")],
        "pass",
        0.0,
        "",
        Better::Higher,
    ));
    let lines = Export::Lines.export(&subject(&f)).unwrap();
    let want_lines = "\
ipc.placement_same.size_64.transport_uds.p50_ns: 1234 ns
ipc.placement_same.size_64.transport_uds.throughput: 500000 msg/s
ipc.placement_same.size_64.transport_uds.cpu_busy: 50 %
ipc.cpus_0-1.floor_cache-line-threads.ns_per_round_trip: 1500.5 ns
ipc.id_SEM-1.variant_a-b-c.pass: 0
";
    assert_eq!(lines, want_lines);
    let lava = Export::Lava.export(&subject(&f)).unwrap();
    let want_lava = "\
lava-test-case ipc.placement_same.size_64.transport_uds.p50_ns --result pass --measurement 1234 --units ns
lava-test-case ipc.placement_same.size_64.transport_uds.throughput --result pass --measurement 500000 --units msg/s
lava-test-case ipc.placement_same.size_64.transport_uds.cpu_busy --result pass --measurement 50 --units %
lava-test-case ipc.cpus_0-1.floor_cache-line-threads.ns_per_round_trip --result pass --measurement 1500.5 --units ns
lava-test-case ipc.id_SEM-1.variant_a-b-c.pass --result fail --measurement 0
";
    assert_eq!(lava, want_lava);
}

#[test]
fn every_suite_format_is_a_value_of_format() {
    let names: Vec<String> = SuiteFormat::value_variants()
        .iter()
        .filter_map(|f| f.to_possible_value())
        .map(|p| p.get_name().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "table",
            "markdown",
            "csv",
            "json",
            "bmf",
            "openmetrics",
            "lines",
            "lava"
        ]
    );
    assert_eq!(
        SuiteFormat::from_str("openmetrics", false).unwrap(),
        SuiteFormat::Export(Export::Openmetrics)
    );
    assert_eq!(SuiteFormat::default().text(), Format::Table);
    assert_eq!(SuiteFormat::Export(Export::Bmf).text(), Format::Json);
}
