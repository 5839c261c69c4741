//! The scheduling controls every measuring command shares: `--fifo`,
//! `--mlock`, `--dma-latency`. Applying them needs root; by hand without it
//! the tests that apply them print `skipped: <reason>`, under `CI` they fail.

mod common;

use std::os::unix::process::CommandExt;

use common::*;

/// Bad values: one line naming the option, exit 2 (clap's value parser
/// refuses them), for every command.
#[test]
fn bad_values_are_one_line_errors() {
    for cmd in ["floor", "ipc", "adder"] {
        for (args, opt) in [
            (&["--fifo", "0"][..], "--fifo 0"),
            (&["--fifo", "100"][..], "--fifo 100"),
            (&["--fifo", "high"][..], "--fifo high"),
            (&["--dma-latency", "-5"][..], "--dma-latency -5"),
            (&["--dma-latency", "soon"][..], "--dma-latency soon"),
        ] {
            let mut a = vec![cmd, "--quick"];
            if cmd == "adder" {
                a = vec![cmd, "-S", "100"];
            }
            a.extend_from_slice(args);
            let o = run(Bin::Msgbench, &a);
            let line = o.assert_one_line_error(2);
            assert!(line.contains(opt), "{cmd} {args:?}: {line}");
        }
    }
}

/// A spinning transport at real-time priority would never yield its CPU:
/// `msgbench adder` refuses it before starting anything.
#[test]
fn adder_refuses_spinning_at_fifo() {
    let o = run(
        Bin::Msgbench,
        ["adder", "-t", "shm-spin", "-S", "100", "--fifo", "10"],
    );
    let line = o.assert_one_line_error(1);
    assert!(
        line.contains("--fifo") && line.contains("shm-spin"),
        "{line}"
    );
}

/// With the privilege: the controls are applied, recorded in the JSON
/// environment and printed, and spinning rows are skipped with the reason.
#[test]
fn controls_are_applied_and_recorded() {
    if !is_root() {
        return skip("needs root (SCHED_FIFO, mlockall, /dev/cpu_dma_latency)");
    }
    let dir = TestDir::new("sched");
    let json = dir.file("ipc.json");
    let o = run(
        Bin::Msgbench,
        [
            "ipc",
            "--quick",
            "-t",
            "uds,shm-spin",
            "--sizes",
            "1",
            "--fifo",
            "10",
            "--mlock",
            "--dma-latency",
            "0",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    o.assert_ok();
    assert!(
        o.stdout
            .contains("PM-QoS latency request: 0 us held; policy: SCHED_FIFO 10, memory locked"),
        "{o}"
    );
    assert!(o.stdout.contains("idle: driver "), "{o}");
    let v = read_json(&json);
    let c = &v["environment"]["controls"];
    assert_eq!(c["fifo_priority"], 10, "{c}");
    assert_eq!(c["mlocked"], true, "{c}");
    assert_eq!(c["dma_latency_us"], 0, "{c}");
    let rows = v["rows"].as_array().expect("rows");
    for r in rows {
        let spin = r["transport"] == "shm-spin";
        assert_eq!(r["status"] == "skipped", spin, "{r}");
        if spin {
            assert!(r["reason"].as_str().unwrap().contains("SCHED_FIFO"), "{r}");
        }
    }
}

/// Without CAP_SYS_NICE, `--fifo` is an error naming the option and the
/// privilege, never a silent fallback to SCHED_OTHER.
#[test]
fn fifo_without_privilege_is_an_error() {
    if !is_root() {
        return skip("needs root to drop to an unprivileged user");
    }
    let mut cmd = Bin::Msgbench.cmd(["floor", "--quick", "--fifo", "10"]);
    // SAFETY: between fork and exec the child only makes async-signal-safe
    // system calls (setgroups, setgid, setuid).
    unsafe {
        cmd.pre_exec(|| {
            if libc::setgroups(0, std::ptr::null()) != 0
                || libc::setgid(65534) != 0
                || libc::setuid(65534) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = run_cmd("msgbench floor --fifo as nobody", cmd);
    let line = o.assert_one_line_error(1);
    assert!(
        line.contains("--fifo 10") && line.contains("CAP_SYS_NICE"),
        "{line}"
    );
}
