//! Tests of the page: self-contained, escaped, overlaid.

use std::path::PathBuf;

use super::sample::{envelope_json, SUITES};
use super::*;

/// A private directory of sample files, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("msgbench-report-{}-{tag}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The page of `suite`'s sample run alone.
fn sample_page(dir: &Dir, suite: &str) -> String {
    let p = dir.write(
        &format!("{suite}.json"),
        &envelope_json(suite, 1.0).unwrap(),
    );
    page(&load(&[p]).unwrap()).unwrap()
}

/// A page's charts, each from its `<figure>` on.
fn chart_figures(page: &str) -> Vec<&str> {
    page.split("<figure class=\"chart\">").skip(1).collect()
}

fn every_suite(dir: &Dir, prefix: &str, scale: f64) -> Vec<PathBuf> {
    SUITES
        .iter()
        .map(|s| {
            dir.write(
                &format!("{prefix}{s}.json"),
                &envelope_json(s, scale).unwrap(),
            )
        })
        .collect()
}

#[test]
fn the_page_is_self_contained_and_every_chart_has_data_marks() {
    let dir = Dir::new("self");
    let page = page(&load(&every_suite(&dir, "", 1.0)).unwrap()).unwrap();
    for bad in ["http://", "https://", "<script", "<link", " src=", "url("] {
        assert!(!page.contains(bad), "page holds {bad:?}");
    }
    let charts = page.matches("<svg").count();
    assert!(charts >= 7, "{charts} charts");
    for svg in page.split("<svg").skip(1) {
        let svg = &svg[..svg.find("</svg>").unwrap()];
        assert!(
            svg.contains("class=\"data-series\""),
            "a chart without data marks"
        );
    }
    for id in [
        "adder",
        "ipc",
        "floor",
        "rtos",
        "smp",
        "broker",
        "validate",
        "environment",
    ] {
        assert!(
            page.contains(&format!("<section id=\"{id}\">")),
            "no {id} section"
        );
    }
}

#[test]
fn strings_from_the_json_are_escaped() {
    let dir = Dir::new("esc");
    let evil = "<script>alert(\"x\")</script>&";
    let quoted = serde_json::to_string(evil).unwrap();
    let inner = &quoted[1..quoted.len() - 1];
    let text = envelope_json("floor", 1.0)
        .unwrap()
        .replace("cache-line ping-pong", inner)
        .replace("Generated sample, not a measurement.", inner);
    let p = dir.write("<b>run&.json", &text);
    let page = page(&load(&[p]).unwrap()).unwrap();
    assert!(!page.contains("<script"), "unescaped script");
    assert!(!page.contains("<b>run"), "unescaped label");
    assert!(page.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;"));
    assert!(page.contains("&lt;b&gt;run&amp;"));
}

#[test]
fn two_runs_overlay_with_both_labels() {
    let dir = Dir::new("two");
    let a = dir.write("before.json", &envelope_json("adder", 1.0).unwrap());
    let b = dir.write("after.json", &envelope_json("adder", 1.3).unwrap());
    let page = page(&load(&[a, b]).unwrap()).unwrap();
    let charts = chart_figures(&page);
    assert_eq!(charts.len(), 2, "per-thread and aggregate charts");
    for c in charts {
        assert!(c.contains("before: shm, one process"), "no 'before' series");
        assert!(c.contains("after: shm, one process"), "no 'after' series");
        assert!(c.contains("QNX 8.0"), "no QNX reference");
    }
}

#[test]
fn the_adder_charts_draw_the_pool_beside_the_two_modes() {
    let dir = Dir::new("pool");
    let page = sample_page(&dir, "adder");
    let charts = chart_figures(&page);
    assert_eq!(charts.len(), 2, "per-thread and aggregate charts");
    for c in charts {
        for (series, shape) in [
            ("shm, one process, unpinned", "dot"),
            ("shm, multi-process, unpinned", "triangle"),
            ("shm, thread pool (one path), unpinned", "square"),
        ] {
            let item = c
                .split("<li>")
                .find(|li| li.contains(&format!("</span>{series}</li>")))
                .unwrap_or_else(|| panic!("no {series:?} in the legend: {c}"));
            assert!(item.contains(&format!("swatch {shape}")), "{item}");
        }
    }
}

#[test]
fn the_same_stem_twice_gets_two_labels() {
    let dir = Dir::new("same");
    let a = dir.write("run.json", &envelope_json("floor", 1.0).unwrap());
    let inputs = load(&[a.clone(), a]).unwrap();
    assert_eq!(inputs[0].label, "run");
    assert_eq!(inputs[1].label, "run (2)");
}

#[test]
fn a_bad_file_is_one_line_naming_it() {
    let dir = Dir::new("bad");
    let missing = dir.0.join("missing.json");
    let junk = dir.write("junk.json", "not json");
    let old = dir.write("old.json", r#"{"schema": 0}"#);
    for p in [missing, junk, old] {
        let e = format!("{:#}", load(std::slice::from_ref(&p)).unwrap_err());
        assert!(e.contains(&p.display().to_string()), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }
}

#[test]
fn missing_sections_are_left_out() {
    let dir = Dir::new("floor-only");
    let page = sample_page(&dir, "floor");
    assert!(page.contains("<section id=\"floor\">"));
    assert!(!page.contains("<section id=\"adder\">"));
    assert!(!page.contains("<section id=\"ipc\">"));
    assert!(!page.contains("<section id=\"smp\">"));
    assert!(!page.contains("<section id=\"broker\">"));
}

/// The smp section of `page`.
fn smp_section(page: &str) -> &str {
    let at = page.find("<section id=\"smp\">").expect("an smp section");
    let rest = &page[at..];
    &rest[..rest.find("</section>").unwrap()]
}

#[test]
fn the_smp_section_has_a_chart_and_table_per_size_and_the_lessons() {
    let dir = Dir::new("smp");
    let page = sample_page(&dir, "smp");
    let s = smp_section(&page);
    let charts = chart_figures(s);
    assert_eq!(charts.len(), 2, "one chart per size: {s}");
    assert!(charts[0].contains("memory ports, 64 B"), "sizes in order");
    assert!(charts[1].contains("memory ports, 1518 B"), "sizes in order");
    for c in &charts {
        assert!(c.contains("class=\"data-series\""), "no data marks");
        assert!(c.contains("class=\"reference\""), "no study crosses");
        for label in [">mutex</li>", ">per-cpu</li>", "QNX study"] {
            assert!(c.contains(label), "no {label} in the legend");
        }
    }
    assert_eq!(s.matches("<table>").count(), 2, "one table per size");
    for cell in [
        "<td>167k (1 CPU)</td>",
        "<td>341k (2 CPU, per-CPU tables)</td>",
        "<td>line rate (1 CPU)</td>",
        "<td>rwlock</td><td>4</td><td>skipped: 4 workers on 2 CPUs</td>",
        "<th>QNX study, per port</th>",
        "<td>mutex</td><td>2</td>",
        "<td>24.0</td>",
    ] {
        assert!(s.contains(cell), "no {cell}");
    }
    for n in 1..=3 {
        assert!(s.contains(&format!("<p>Lesson {n} (")), "no lesson {n}");
    }
}

#[test]
fn smp_runs_overlay_and_the_kernel_is_a_flat_grey_line() {
    let dir = Dir::new("smp-two");
    let a = dir.write("before.json", &envelope_json("smp", 1.0).unwrap());
    let mut run: serde_json::Value =
        serde_json::from_str(&envelope_json("smp", 1.3).unwrap()).unwrap();
    let kernel = serde_json::json!({
        "key": {"ports": "memory", "forwarder": "kernel", "workers": "-", "size": "64"},
        "metric": "zero_loss_pps", "value": 900000.0, "unit": "pps", "better": "higher",
        "repeats": [900000.0]
    });
    run["figures"].as_array_mut().unwrap().push(kernel);
    let b = dir.write("after.json", &run.to_string());
    let page = page(&load(&[a, b]).unwrap()).unwrap();
    let s = smp_section(&page);
    let charts = chart_figures(s);
    assert_eq!(charts.len(), 2, "runs share a chart per size");
    for c in &charts {
        assert!(c.contains("before: mutex"), "no 'before' series");
        assert!(c.contains("after: per-cpu"), "no 'after' series");
    }
    assert!(
        charts[0].contains("after: kernel forwarding"),
        "no kernel line"
    );
    let second = &charts[1][..charts[1].find("</figure>").unwrap()];
    assert!(!second.contains("kernel"), "the kernel only where measured");
    assert!(s.contains("<h3>Lessons: before</h3>") && s.contains("<h3>Lessons: after</h3>"));
}

/// The broker section of `page`.
fn broker_section(page: &str) -> &str {
    let at = page
        .find("<section id=\"broker\">")
        .expect("a broker section");
    let rest = &page[at..];
    &rest[..rest.find("</section>").unwrap()]
}

#[test]
fn the_broker_section_has_its_chart_table_and_answer() {
    let dir = Dir::new("broker");
    let page = sample_page(&dir, "broker");
    assert!(page.contains("<a href=\"#broker\">Broker overhead (D-Bus study)</a>"));
    let s = broker_section(&page);
    let charts = chart_figures(s);
    assert_eq!(charts.len(), 1, "one chart per number of clients: {s}");
    let c = &charts[0][..charts[0].find("</figure>").unwrap()];
    assert!(c.contains("1 client(s): p50 latency"), "chart title");
    assert!(c.contains("class=\"data-series\""), "no data marks");
    for label in [
        ">direct/uds</li>",
        ">broker/uds</li>",
        ">broker-validate/uds</li>",
        ">dbus-p2p/libdbus</li>",
        ">dbus-daemon/libdbus</li>",
        ">dbus-daemon/zbus</li>",
    ] {
        assert!(c.contains(label), "no {label} in the legend");
    }
    assert!(!c.contains("dbus-broker"), "a skipped row has no line");
    assert_eq!(s.matches("<table>").count(), 2, "the rows, the libraries");
    for cell in [
        "<th>p99.9</th>",
        "<th>QNX 6.4 BeagleBoard</th>",
        // ints, via, p50, p99, p99.9, calls/s, CPU/call (summed), parts.
        "<td>1</td><td>broker/uds</td><td>14.8us</td><td>44.4us</td><td>88.8us</td><td>67.6k</td><td>11.3us</td><td>3.1us</td><td>5.2us</td><td>3.0us</td><td></td>",
        "<td>256</td><td>direct/uds</td><td>9.0us</td>",
        "<td>3.3us</td><td>-</td><td>3.3us</td><td>324 us (QNX local socket, 1 KB)</td>",
        "<td>324 us (QNX local socket, 1 KB)</td>",
        "<td>12000 us (QNX dbus-daemon, 1 int)</td>",
        "<td>dbus-broker/libdbus</td><td>skipped: dbus-broker-launch not installed</td><td></td>",
        // The libraries side by side: p50, and what the daemon adds over
        // the same library's peer-to-peer call, or its marshalling.
        "<th>run</th><th>ints</th><th>via</th><th>libdbus</th><th>zbus</th>",
        "<td>1</td><td>dbus-p2p</td><td>25.0us (marshalling 2.1us)</td><td>37.5us (marshalling 2.1us)</td>",
        "<td>1</td><td>dbus-daemon</td><td>56.0us (daemon 31.0us)</td><td>84.0us (daemon 46.5us)</td>",
        "<td>1</td><td>dbus-broker</td><td>skipped: dbus-broker-launch not installed</td><td></td>",
    ] {
        assert!(s.contains(cell), "no {cell} in {s}");
    }
    assert!(
        s.contains("OMAP3530") && s.contains("D-Bus 1.2.4"),
        "no source"
    );
    assert!(s.contains("<h3>Answer</h3>"));
    assert!(
        s.contains("<p>GetInteger(1), libdbus (the study&#39;s library): dbus-daemon takes 56.0us")
    );
    assert!(s.contains("<p>GetInteger(1), libdbus: dbus-daemon adds 31.0us per call"));
    assert!(
        s.contains("<p>Goal, broker within 2.2x of direct over uds (GetInteger(1)): met: 1.85x")
    );
    assert!(s.contains("NOT met: 3.8x"));
}

#[test]
fn broker_runs_overlay_with_both_labels() {
    let dir = Dir::new("broker-two");
    let a = dir.write("before.json", &envelope_json("broker", 1.0).unwrap());
    let b = dir.write("after.json", &envelope_json("broker", 0.7).unwrap());
    let page = page(&load(&[a, b]).unwrap()).unwrap();
    let s = broker_section(&page);
    let charts = chart_figures(s);
    assert_eq!(charts.len(), 1, "runs share the chart");
    for label in [
        "before: broker/uds",
        "after: broker/uds",
        "after: dbus-daemon/zbus",
    ] {
        assert!(charts[0].contains(label), "no {label}");
    }
    assert!(s.contains("<td>before</td><td>1</td><td>broker/uds</td><td>14.8us</td>"));
    assert!(s.contains("<td>after</td><td>1</td><td>broker/uds</td><td>10.4us</td>"));
    assert!(s.contains("<h3>Answer: before</h3>") && s.contains("<h3>Answer: after</h3>"));
}

#[test]
fn odd_broker_rows_are_shown_empty_not_a_panic() {
    let dir = Dir::new("broker-odd");
    let mut run: serde_json::Value =
        serde_json::from_str(&envelope_json("broker", 1.0).unwrap()).unwrap();
    run["rows"] = serde_json::json!([
        {"via": "<b>odd</b>", "ints": 1, "clients": 1, "latency": "junk", "reference": {"us": "x"}},
        {"via": "direct", "transport": "uds", "clients": 1, "error": "service died"},
        {"clients": 1},
    ]);
    let p = dir.write("odd.json", &run.to_string());
    let page = page(&load(&[p]).unwrap()).unwrap();
    let s = broker_section(&page);
    assert!(!s.contains("<b>odd"), "unescaped");
    assert!(
        s.contains("<td>1</td><td>&lt;b&gt;odd&lt;/b&gt;</td><td></td>"),
        "{s}"
    );
    assert!(
        s.contains("<td>direct/uds</td><td>FAILED: service died</td>"),
        "{s}"
    );
}

#[test]
fn every_sample_is_a_valid_envelope() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/results.schema.json"
    );
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    for s in SUITES {
        let doc: serde_json::Value = serde_json::from_str(&envelope_json(s, 1.0).unwrap()).unwrap();
        let errors: Vec<String> = v
            .iter_errors(&doc)
            .map(|e| format!("{}: {e}", e.instance_path))
            .collect();
        assert!(errors.is_empty(), "{s}: {errors:?}");
    }
}

#[test]
fn ipc_scale_axes_get_charts_of_their_own() {
    let dir = Dir::new("ipc-scale");
    let page = sample_page(&dir, "ipc");
    let charts = chart_figures(&page);
    let idle = charts
        .iter()
        .find(|c| c.contains("IPC p50 against idle clients beside the measured one, 256 B"))
        .expect("a chart of p50 against idle clients");
    assert!(idle.contains("uds") && idle.contains("pipe"), "{idle}");
    assert!(charts
        .iter()
        .any(|c| c.contains("IPC aggregate rate of N active clients, 256 B")));
    assert!(
        page.contains("<th>Slowest/fastest</th>"),
        "no fairness table"
    );
    // The size chart: the rows of one client alone (none beside it, at
    // 64, 1024 and 16384 bytes, and 0 idle clients at 256), not those
    // with idle or active clients.
    let by_size = charts
        .iter()
        .find(|c| c.contains("IPC latency p50 and p99 by size, placement same"))
        .expect("the size chart");
    assert_eq!(by_size.matches("<circle").count(), 2 * 4, "{by_size}");
}
