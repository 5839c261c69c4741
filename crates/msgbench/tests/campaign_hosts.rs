//! Campaigns of two machines, and on PostgreSQL: the same campaign run
//! here and on "another machine" (a UTS namespace with a host name of
//! its own: the runs record it, as a board's would), then `msgbench
//! report --campaign NAME --host A --host B` with both passes in each
//! suite's section; and a campaign recorded in a real PostgreSQL server
//! (tests/store/cluster.rs) that resumes from it.

#[path = "common/mod.rs"]
mod common;

#[path = "store/cluster.rs"]
mod cluster;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::{is_root, run_cmd, serial, skip, Bin, Output, Proc, TestDir};

/// Longest a campaign of the tests may run.
const LIMIT: Duration = Duration::from_secs(120);

/// A campaign of two short entries.
const TWO: &str = "campaign = \"two\"\n\
    [[entry]]\nname = \"floor\"\nrun = \"floor --quick\"\n\
    [[entry]]\nname = \"adder\"\nrun = \"adder --threads 1 -t uds --modes one --row-secs 0.2 --idle-secs 0\"\n";

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// `msgbench ARGS` recording in (and reading) `store`, in `dir`.
fn msgbench(dir: &TestDir, args: &[&str], store: &str) -> Command {
    let mut c = Bin::Msgbench.cmd_with_store(args, store);
    c.current_dir(dir.path());
    c
}

/// Runs `cmd` to its end, within [`LIMIT`].
fn run_long(cmd: Command) -> Output {
    Proc::spawn_for("msgbench", cmd, LIMIT).wait()
}

/// This machine's name, as the runs record it.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// `cmd` run in a UTS namespace of its own named `host`.
fn on_host(cmd: &mut Command, host: &'static str) {
    // SAFETY: between fork and exec only two raw system calls on a
    // static name; nothing allocated, no lock taken.
    unsafe {
        cmd.pre_exec(move || {
            if libc::unshare(libc::CLONE_NEWUTS) != 0
                || libc::sethostname(host.as_ptr().cast(), host.len()) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// The body of the section `id` of a report page.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<section id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no {id} section"));
    let rest = &html[start..];
    &rest[..rest.find("</section>").unwrap_or(rest.len())]
}

#[test]
fn report_puts_two_machines_passes_side_by_side() {
    if !is_root() {
        skip("naming another machine takes a UTS namespace (root)");
        return;
    }
    let _one = serial();
    let dir = TestDir::new("campaign-hosts");
    let (file, db) = (dir.file("two.toml"), dir.file("r.db"));
    std::fs::write(&file, TWO).unwrap();
    let store = s(&db);
    let here = hostname();
    run_long(msgbench(
        &dir,
        &["campaign", s(&file), "--output-dir", "here"],
        store,
    ))
    .assert_ok();
    let mut there = msgbench(
        &dir,
        &["campaign", s(&file), "--output-dir", "there"],
        store,
    );
    on_host(&mut there, "board-b");
    let out = run_long(there);
    out.assert_ok();
    assert!(
        out.stdout
            .contains("msgbench campaign two on board-b, pass 1: 2 of 2 entries done"),
        "{out}"
    );
    // Runs 1, 2 here; 3, 4 on board-b.
    let page = dir.file("two.html");
    let args = [
        "report",
        "--campaign",
        "two",
        "--host",
        &here,
        "--host",
        "board-b",
        "-o",
        s(&page),
    ];
    run_cmd("msgbench report", msgbench(&dir, &args, store)).assert_ok();
    let html = std::fs::read_to_string(&page).unwrap();
    for (id, a, b) in [("floor", 1, 3), ("adder", 2, 4)] {
        let body = section(&html, id);
        for label in [
            format!("{here}: {id} (@{a})"),
            format!("board-b: {id} (@{b})"),
        ] {
            assert!(body.contains(&label), "{label} not in the {id} section");
        }
    }
    without_host_and_refused(&dir, store, &page, &here);
}

/// `--campaign` without `--host` (every machine that ran it), the
/// campaign's own report (this machine's pass only), and the refusals.
fn without_host_and_refused(dir: &TestDir, store: &str, page: &Path, here: &str) {
    // Without --host: every machine that ran it.
    let args = ["report", "--campaign", "two", "-o", s(page)];
    run_cmd("msgbench report", msgbench(dir, &args, store)).assert_ok();
    let html = std::fs::read_to_string(page).unwrap();
    assert!(html.contains("board-b: floor (@3)") && html.contains(&format!("{here}: floor (@1)")));
    // The campaign's own report: this machine's pass.
    let own = std::fs::read_to_string(dir.file("here/report.html")).unwrap();
    assert!(own.contains(&format!("{here}: adder (@2)")) && !own.contains("board-b"));
    let args = [
        "report",
        "--campaign",
        "two",
        "--host",
        "board-c",
        "-o",
        s(page),
    ];
    let e = run_cmd("msgbench report", msgbench(dir, &args, store)).assert_one_line_error(1);
    assert!(
        e.contains("--host board-c: no run of campaign two on board-c in the store"),
        "{e}"
    );
    let args = ["report", "--campaign", "three", "-o", s(page)];
    let e = run_cmd("msgbench report", msgbench(dir, &args, store)).assert_one_line_error(1);
    assert!(
        e.contains("--campaign three: no run of campaign three in the store"),
        "{e}"
    );
}

#[test]
fn a_campaign_on_postgres_resumes_from_the_server() {
    let Some(bin) = cluster::binaries() else {
        skip(&format!("no initdb/postgres found: {}", cluster::INSTALL));
        return;
    };
    let _one = serial();
    let dir = TestDir::new("campaign-pg");
    let pg = cluster::Cluster::start(&bin);
    let leftover = pg.dir().to_path_buf();
    let url = pg.url();
    let file = dir.file("c.toml");
    let first = "campaign = \"pg\"\n[[entry]]\nname = \"floor\"\nrun = \"floor --quick\"\n";
    std::fs::write(&file, first).unwrap();
    run_long(msgbench(&dir, &["campaign", s(&file)], &url)).assert_ok();
    // One entry more: the first is done, only the second runs.
    let more =
        format!("{first}[[entry]]\nname = \"floor-again\"\nrun = \"floor --quick --cpus 0\"\n");
    std::fs::write(&file, more).unwrap();
    let out = run_long(msgbench(
        &dir,
        &["campaign", s(&file), "--format", "json"],
        &url,
    ));
    out.assert_ok();
    assert!(
        out.stderr
            .contains("[1/2] floor: done in pass 1 as @1, not run again"),
        "{out}"
    );
    assert!(
        out.stderr
            .contains("[2/2] floor-again: msgbench floor --quick --cpus 0"),
        "{out}"
    );
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let rows = c
        .query(
            "SELECT c.run_id, c.entry, c.pass, r.suite FROM msgbench_campaign_runs c \
             JOIN msgbench_runs r ON r.id = c.run_id ORDER BY c.run_id",
            &[],
        )
        .unwrap();
    let got: Vec<(i64, String, i64)> = rows
        .iter()
        .map(|r| (r.get(0), r.get(1), r.get(2)))
        .collect();
    assert_eq!(got, [(1, "floor".into(), 1), (2, "floor-again".into(), 1)]);
    let n: i64 = c
        .query_one("SELECT count(*) FROM msgbench_runs", &[])
        .unwrap()
        .get(0);
    assert_eq!(n, 2, "a run twice");
    let page = dir.file("pg.html");
    let args = ["report", "--campaign", "pg", "-o", s(&page)];
    run_cmd("msgbench report", msgbench(&dir, &args, &url)).assert_ok();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains("floor-again (@2)"));
    drop(c);
    drop(pg);
    assert!(
        !leftover.exists(),
        "the cluster's directory was left behind"
    );
}
