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
    assert_eq!(charts.len(), 4, "per-thread and aggregate, shm and uds");
    for c in charts {
        assert!(
            c.contains("before: one process, pinned"),
            "no 'before' series"
        );
        assert!(
            c.contains("after: one process, unpinned"),
            "no 'after' series"
        );
        assert!(c.contains("QNX 8.0"), "no QNX reference");
    }
    let s = section(&page, "adder");
    assert!(s.contains("<h3>before</h3>") && s.contains("<h3>after</h3>"));
}

#[test]
fn the_adder_charts_draw_the_pool_beside_the_two_modes() {
    let dir = Dir::new("pool");
    let page = sample_page(&dir, "adder");
    let charts = chart_figures(&page);
    assert_eq!(charts.len(), 4, "per-thread and aggregate, shm and uds");
    for c in charts {
        for (series, shape, line) in [
            ("one process, unpinned", "dot", "dashed"),
            ("multi-process, unpinned", "triangle", "dashed"),
            ("thread pool (one path), unpinned", "square", "dashed"),
            ("one process, pinned", "dot", "solid"),
            ("thread pool (one path), pinned", "square", "solid"),
        ] {
            let item = c
                .split("<li>")
                .find(|li| li.contains(&format!("</span>{series}</li>")))
                .unwrap_or_else(|| panic!("no {series:?} in the legend: {c}"));
            assert!(item.contains(&format!("swatch {shape}")), "{item}");
            assert!(item.contains(&format!("class=\"line {line}\"")), "{item}");
        }
    }
}

/// The section `id` of `page`.
fn section<'a>(page: &'a str, id: &str) -> &'a str {
    let at = page
        .find(&format!("<section id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no {id} section"));
    let rest = &page[at..];
    &rest[..rest.find("</section>").unwrap()]
}

/// The verdict block of a section, which must come before its first
/// chart.
fn verdict_first(s: &str) -> &str {
    let v = s.find("<div class=\"verdict\">").expect("a verdict block");
    let chart = s.find("<figure").expect("a chart");
    assert!(v < chart, "the verdict after a chart: {s}");
    &s[v..v + s[v..].find("</div>").unwrap()]
}

#[test]
fn every_section_with_an_answer_opens_with_it() {
    let dir = Dir::new("lead");
    let page = page(&load(&every_suite(&dir, "", 1.0)).unwrap()).unwrap();
    for (id, words) in [
        ("adder", "nothing suggests a global lock"),
        ("ipc", "lowest p50"),
        ("rtos", "Summary: 1 passed, 0 failed"),
        ("validate", "2 of 2 comparisons agree"),
        ("smp", "Lesson 1 ("),
        ("broker", "Goal, broker within 2.2x"),
    ] {
        let v = verdict_first(section(&page, id));
        assert!(v.contains(words), "{id}: no {words:?} in {v}");
    }
    assert!(!section(&page, "floor").contains("class=\"verdict\""));
}

/// The sample `suite` run, edited by `edit`, as a page.
fn edited_page(dir: &Dir, suite: &str, edit: impl Fn(&mut serde_json::Value)) -> String {
    let mut run: serde_json::Value =
        serde_json::from_str(&envelope_json(suite, 1.0).unwrap()).unwrap();
    edit(&mut run);
    let p = dir.write(&format!("{suite}.json"), &run.to_string());
    page(&load(&[p]).unwrap()).unwrap()
}

#[test]
fn the_adder_verdict_is_the_one_the_run_kept() {
    // How it comes out either way is judged on typed rows when the run
    // ends (suites/adder/judge.rs's tests); the report shows it as kept.
    let dir = Dir::new("adder-verdict");
    let page = sample_page(&dir, "adder");
    let v = verdict_first(section(&page, "adder"));
    assert!(v.contains("so nothing suggests a global lock"), "{v}");
    assert!(
        v.contains("Server models compared by aggregate rate"),
        "{v}"
    );
    // A row edited after the run changes no verdict.
    let page = edited_page(&dir, "adder", |run| {
        for r in run["rows"].as_array_mut().unwrap() {
            r["efficiency"] = 0.55.into();
        }
    });
    let v = verdict_first(section(&page, "adder"));
    assert!(v.contains("nothing suggests a global lock"), "{v}");
    let page = edited_page(&dir, "adder", |run| {
        run.as_object_mut().unwrap().remove("verdicts");
    });
    assert!(
        !section(&page, "adder").contains("global lock"),
        "{}",
        section(&page, "adder")
    );
}

#[test]
fn ipc_shows_the_answers_the_run_kept_and_judges_nothing_itself() {
    let dir = Dir::new("ipc-best");
    let page = sample_page(&dir, "ipc");
    let v = verdict_first(section(&page, "ipc"));
    let same = v.find("Same CPU").expect("same CPU first");
    let cross = v.find("Cross CPU").expect("then cross CPU");
    assert!(same < cross, "{v}");
    assert!(
        v.contains("two processes, lowest p50: uds at every size.</p>"),
        "{v}"
    );
    assert!(v.contains("64 B: uds 3.02us (a blocking transport)"), "{v}");
    // A figure edited after the run changes no answer: the report reads
    // the kept verdicts, and a run without any shows none.
    let page = edited_page(&dir, "ipc", |run| {
        for f in run["figures"].as_array_mut().unwrap() {
            f["value"] = 1.0.into();
        }
    });
    let v = verdict_first(section(&page, "ipc"));
    assert!(v.contains("64 B: uds 3.02us"), "{v}");
    let page = edited_page(&dir, "ipc", |run| {
        run.as_object_mut().unwrap().remove("verdicts");
    });
    assert!(
        !section(&page, "ipc").contains("lowest p50:"),
        "{}",
        section(&page, "ipc")
    );
}

#[test]
fn rtos_and_validate_answers_are_the_ones_the_run_kept() {
    // How they come out either way is judged on typed rows when the run
    // ends (suites/rtos/judge.rs, suites/validate/judge.rs); the report
    // shows them as kept, and a row edited afterwards changes nothing.
    let dir = Dir::new("rtos-kept");
    let page = edited_page(&dir, "rtos", |run| {
        let mut failed = run["rows"][2].clone();
        failed["id"] = "SEM-B-PRI".into();
        failed["outcome"]["pass"] = false.into();
        run["rows"].as_array_mut().unwrap().push(failed);
    });
    let v = verdict_first(section(&page, "rtos"));
    assert!(v.contains("Summary: 1 passed, 0 failed"), "{v}");
    let page = edited_page(&dir, "validate", |run| {
        run["verdicts"] = serde_json::json!(["1 of 2 comparisons agree"]);
    });
    let v = verdict_first(section(&page, "validate"));
    assert!(v.contains("1 of 2 comparisons agree"), "{v}");
}

/// The small-multiple grids of a section, each as its HTML.
fn grids(s: &str) -> Vec<&str> {
    s.split("<div class=\"multiples\">")
        .skip(1)
        .map(|g| &g[..g.find("</div>").unwrap()])
        .collect()
}

#[test]
fn the_adder_charts_are_small_multiples_with_unpinned_dashed() {
    let dir = Dir::new("adder-multiples");
    let page = sample_page(&dir, "adder");
    let adder = section(&page, "adder");
    let g = grids(adder);
    assert_eq!(g.len(), 2, "a grid per metric");
    for g in g {
        assert_eq!(g.matches("<svg").count(), 2, "a chart per transport: {g}");
        assert!(g.contains("shm</figcaption>") && g.contains("uds</figcaption>"));
    }
    assert!(
        adder.contains("<polyline stroke-dasharray="),
        "no dashed line"
    );
    assert!(
        adder.contains("<polyline class=\"data-series\""),
        "no solid line"
    );
    assert!(
        adder.contains("solid = pinned"),
        "no key to the line styles"
    );
}

#[test]
fn many_ipc_transports_split_into_panels_of_five() {
    let dir = Dir::new("ipc-multiples");
    // Eight blocking transports: uds, pipe and six copies of uds.
    let page = edited_page(&dir, "ipc", |run| {
        let figures = run["figures"].as_array_mut().unwrap();
        let uds: Vec<serde_json::Value> = figures
            .iter()
            .filter(|f| f["key"]["transport"] == "uds")
            .cloned()
            .collect();
        for n in 0..6 {
            for f in &uds {
                let mut f = f.clone();
                f["key"]["transport"] = format!("t{n}").into();
                f["value"] = (f["value"].as_f64().unwrap() * (2.0 + f64::from(n))).into();
                figures.push(f);
            }
        }
    });
    let ipc = section(&page, "ipc");
    let g = grids(ipc);
    assert_eq!(
        g.len(),
        4,
        "by size and distribution, same and cross: {ipc}"
    );
    let by_size = g[0];
    assert_eq!(by_size.matches("<svg").count(), 2, "{by_size}");
    assert!(by_size.contains("<figcaption>blocking, 1 to 5 by p50, placement same"));
    assert!(by_size.contains("<figcaption>blocking, 6 to 8 by p50, placement same"));
    let second = &by_size[by_size.find("6 to 8").unwrap()..];
    for t in ["t4 p50", "t5 p50", "t3 p50"] {
        assert!(second.contains(t), "the slowest three together: no {t}");
    }
    assert!(!second.contains("uds p50"), "the fastest apart");
    assert!(
        ipc.contains("solid lines p50, dashed p99"),
        "no key to the line styles"
    );
}

#[test]
fn the_floor_is_drawn_where_the_run_has_one() {
    let dir = Dir::new("ipc-floor");
    let page = sample_page(&dir, "ipc");
    let s = section(&page, "ipc");
    let by_size = chart_figures(s)
        .into_iter()
        .find(|c| c.contains("blocking, placement same, two processes</figcaption>"))
        .expect("the blocking panel of one CPU");
    assert!(by_size.contains("class=\"floor\""), "no floor line");
    assert!(
        by_size.contains("floor: futex wait/wake, 1.50us"),
        "{by_size}"
    );
    let page = edited_page(&dir, "ipc", |run| run["floor"] = serde_json::Value::Null);
    let s = section(&page, "ipc");
    assert!(!s.contains("class=\"floor\""), "a floor drawn without one");
    assert!(
        !s.contains("floor: futex"),
        "a floor in the legend without one"
    );
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
    let lessons = verdict_first(s);
    for n in 1..=3 {
        assert!(
            lessons.contains(&format!("<p>Lesson {n} (")),
            "no lesson {n}"
        );
    }
}

#[test]
fn smp_runs_overlay_and_the_kernel_is_a_flat_grey_line() {
    let dir = Dir::new("smp-two");
    let a = dir.write("before.json", &envelope_json("smp", 1.0).unwrap());
    let mut run: serde_json::Value =
        serde_json::from_str(&envelope_json("smp", 1.3).unwrap()).unwrap();
    use crate::suites::smp::{Forwarder, PortsMode, SmpRow};
    let kernel = SmpRow::new(PortsMode::Memory, Forwarder::Kernel, None, 64, 2, 900_000.0);
    let kernel = serde_json::to_value(kernel).unwrap();
    run["rows"].as_array_mut().unwrap().push(kernel);
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
    let lessons = verdict_first(s);
    assert!(lessons.contains("<h3>before</h3>") && lessons.contains("<h3>after</h3>"));
}

#[test]
fn smp_rows_are_read_as_the_suite_wrote_them() {
    let dir = Dir::new("smp-typed");
    // A row from before the books and lock figures were kept still reads;
    // its lock wait cell is empty.
    let page = edited_page(&dir, "smp", |run| {
        for field in ["locks", "rx_ports", "tx_ports", "search", "unrouted"] {
            run["rows"][0].as_object_mut().unwrap().remove(field);
        }
    });
    let s = smp_section(&page);
    assert!(s.contains("<td>skipped: 4 workers on 2 CPUs</td>"), "{s}");
    assert!(
        s.contains("<td>24.0</td>"),
        "the lock wait of 2 workers: {s}"
    );
    // A forwarder msgbench does not have is refused, naming the run.
    let mut run: serde_json::Value =
        serde_json::from_str(&envelope_json("smp", 1.0).unwrap()).unwrap();
    run["rows"][3]["forwarder"] = "spinlock".into();
    let p = dir.write("bad.json", &run.to_string());
    let err = format!("{:#}", page_of(&p));
    assert!(
        err.contains("smp run: row 3 is not one of its rows"),
        "{err}"
    );
    assert!(err.contains("unknown forwarder `spinlock`"), "{err}");
    assert!(!err.contains('\n'), "{err}");
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
    let answer = verdict_first(s);
    assert!(answer
        .contains("<p>GetInteger(1), libdbus (the study&#39;s library): dbus-daemon takes 56.0us"));
    assert!(answer.contains("<p>GetInteger(1), libdbus: dbus-daemon adds 31.0us per call"));
    assert!(answer
        .contains("<p>Goal, broker within 2.2x of direct over uds (GetInteger(1)): met: 1.85x"));
    assert!(answer.contains("NOT met: 3.8x"));
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
    let answer = verdict_first(s);
    assert!(answer.contains("<h3>before</h3>") && answer.contains("<h3>after</h3>"));
}

#[test]
fn broker_rows_are_read_as_the_suite_wrote_them() {
    let dir = Dir::new("broker-typed");
    // A failed row shows why; a row from before the fault and repeat
    // fields existed still reads.
    let page = edited_page(&dir, "broker", |run| {
        run["rows"][0]["error"] = "service died".into();
        for field in ["fault", "timeouts", "p50_repeats_ns", "histogram"] {
            run["rows"][1].as_object_mut().unwrap().remove(field);
        }
    });
    let s = broker_section(&page);
    assert!(
        s.contains("<td>direct/uds</td><td>FAILED: service died</td>"),
        "{s}"
    );
    assert!(s.contains("<td>broker/uds</td><td>14.8us</td>"), "{s}");
    assert!(
        s.contains(
            "<td>dbus-broker/libdbus</td><td>skipped: dbus-broker-launch not installed</td>"
        ),
        "{s}"
    );
    // An arrangement msgbench does not have is refused, naming the run
    // and the row, in one line (never shown, escaped or not).
    let mut run: serde_json::Value =
        serde_json::from_str(&envelope_json("broker", 1.0).unwrap()).unwrap();
    run["rows"][2]["via"] = "<b>odd</b>".into();
    let p = dir.write("odd.json", &run.to_string());
    let err = format!("{:#}", page_of(&p));
    assert!(
        err.contains("broker run: row 2 is not one of its rows"),
        "{err}"
    );
    assert!(err.contains("unknown variant `<b>odd</b>`"), "{err}");
    assert!(!err.contains('\n'), "{err}");
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
        .find(|c| c.contains("<figcaption>blocking, placement same, two processes</figcaption>"))
        .expect("the size chart");
    assert_eq!(by_size.matches("<circle").count(), 2 * 4, "{by_size}");
}

#[test]
fn an_answer_shows_its_first_sentence_and_folds_the_figures() {
    let (head, rest) = first_sentence(
        "GetInteger(1), libdbus: dbus-daemon adds 31.0us (56.0us against 25.0us. Not here), 4% of it validation. The broker takes 14.8us, 3.8x faster. So on.",
    );
    assert_eq!(
        head,
        "GetInteger(1), libdbus: dbus-daemon adds 31.0us (56.0us against 25.0us. Not here), 4% of it validation."
    );
    assert_eq!(rest, "The broker takes 14.8us, 3.8x faster. So on.");
    assert_eq!(first_sentence("One only, 1.5x."), ("One only, 1.5x.", ""));
    let html = verdicts(&[("run", vec!["Short. Long tail: 1 + 2 = 3.".into()])]);
    assert!(
        html.contains("<p>Short.</p>\n<details><summary>how</summary>\n<p>Long tail: 1 + 2 = 3.</p>\n</details>"),
        "{html}"
    );
    let html = verdicts(&[("run", vec!["Just one sentence.".into()])]);
    assert!(!html.contains("<details>"), "{html}");
}

#[test]
fn ipc_rows_are_read_as_the_suite_wrote_them() {
    let dir = Dir::new("ipc-typed");
    // A run from before layouts were recorded: its rows and figures name
    // none, and read as threads (its server was a thread then).
    let old = edited_page(&dir, "ipc", |run| {
        for r in run["rows"].as_array_mut().unwrap() {
            r.as_object_mut().unwrap().remove("layout");
        }
        for f in run["figures"].as_array_mut().unwrap() {
            f["key"].as_object_mut().unwrap().remove("layout");
        }
    });
    let ipc = section(&old, "ipc");
    assert!(
        ipc.contains("<figcaption>blocking, placement same, two threads</figcaption>"),
        "{ipc}"
    );
    assert!(!ipc.contains("two processes</figcaption>"), "{ipc}");
    // A row that is not one of ipc's is refused, naming it.
    let mut run: serde_json::Value =
        serde_json::from_str(&envelope_json("ipc", 1.0).unwrap()).unwrap();
    run["rows"][1]["size"] = "big".into();
    let p = dir.write("bad.json", &run.to_string());
    let err = format!("{:#}", page(&load(&[p]).unwrap()).unwrap_err());
    assert!(
        err.contains("ipc run: row 1 is not one of its rows"),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
}

#[test]
fn validate_rows_are_read_as_the_suite_wrote_them() {
    let dir = Dir::new("validate-typed");
    let page = sample_page(&dir, "validate");
    let s = section(&page, "validate");
    assert!(
        s.contains("<td>0.67 to 1.5</td>"),
        "the band in the table: {s}"
    );
    assert!(s.contains("<td>agree</td>"), "{s}");
    // A row as first written (`lo`/`hi`, no slack) keeps its band; a
    // DISAGREE reads as the terminal prints it.
    let page = edited_page(&dir, "validate", |run| {
        run["rows"][0]["tolerance"] = serde_json::json!({"lo": 0.5, "hi": 2.0});
        run["rows"][0]["verdict"] = "disagree".into();
    });
    let s = section(&page, "validate");
    assert!(s.contains("<td>0.5 to 2</td>"), "{s}");
    assert!(s.contains("<td>DISAGREE</td>"), "{s}");
    // A row that is not one of validate's is refused, naming the run.
    let mut run: serde_json::Value =
        serde_json::from_str(&envelope_json("validate", 1.0).unwrap()).unwrap();
    run["rows"][0]["verdict"] = "maybe".into();
    let p = dir.write("bad.json", &run.to_string());
    let err = format!("{:#}", page_of(&p));
    assert!(
        err.contains("validate run: row 0 is not one of its rows"),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
}

#[test]
fn rtos_rows_are_read_as_the_suite_wrote_them() {
    let dir = Dir::new("rtos-typed");
    let page = sample_page(&dir, "rtos");
    let s = section(&page, "rtos");
    assert!(s.contains("<td>SEM-P-LAT 2 threads</td>"), "{s}");
    // MUT-B-INV passed, and the lab's figure for it is PASS too.
    assert_eq!(s.matches("<td>PASS</td>").count(), 2, "{s}");
    assert!(s.contains("<td>12.7 / 12.1 us</td>"), "{s}");
    // A behaviour that failed reads FAIL; a test skipped reads so.
    let page = edited_page(&dir, "rtos", |run| {
        run["rows"][2]["outcome"]["pass"] = false.into();
        run["rows"][0]["outcome"] = serde_json::json!({"kind": "skipped", "reason": "r"});
    });
    let s = section(&page, "rtos");
    assert!(s.contains("<td>FAIL</td>"), "{s}");
    assert!(s.contains("<td>skipped</td>"), "{s}");
    assert_eq!(s.matches("<td>PASS</td>").count(), 1, "{s}");
    // A row that is not one of rtos's is refused, naming the run.
    let mut run: serde_json::Value =
        serde_json::from_str(&envelope_json("rtos", 1.0).unwrap()).unwrap();
    run["rows"][1]["outcome"]["kind"] = "maybe".into();
    let p = dir.write("bad.json", &run.to_string());
    let err = format!("{:#}", page_of(&p));
    assert!(
        err.contains("rtos run: row 1 is not one of its rows"),
        "{err}"
    );
    assert!(!err.contains('\n'), "{err}");
}

/// The error the report of file `p` ends with.
fn page_of(p: &std::path::Path) -> anyhow::Error {
    page(&load(&[p.to_path_buf()]).unwrap()).unwrap_err()
}
