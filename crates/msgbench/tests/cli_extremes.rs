//! Command-line extremes, through the real binaries: CPU lists and ranges
//! up to `u32::MAX` and beyond, durations of `1e300`, `inf` and `NaN`,
//! sizes and spin budgets near `u64::MAX`. Each must be refused at once
//! with one line naming the option (exit 1, or 2 when clap's value parser
//! refuses it: a usage error), never a panic, an abort, a huge allocation or a hang
//! (the common watchdog turns a hang into a failure).

mod common;

use common::*;

/// Runs `bin args` (plus `--ns DIR` for the programs that take it) and
/// expects exit 1 with one stderr line `<prog>: error: <option>...`
/// mentioning `bound`; returns that line.
fn refused(bin: Bin, args: &[&str], option: &str, bound: &str) -> String {
    refused_with(bin, args, option, bound, 1)
}

/// As [`refused`], for a value clap's value parser refuses: exit 2.
fn refused_usage(bin: Bin, args: &[&str], option: &str, bound: &str) -> String {
    refused_with(bin, args, option, bound, 2)
}

fn refused_with(bin: Bin, args: &[&str], option: &str, bound: &str, code: i32) -> String {
    let dir = TestDir::new("extreme");
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let takes_ns = !matches!(bin, Bin::Msgbench) || args.first() == Some(&"adder");
    if takes_ns {
        a.extend(dir.ns_args());
    }
    let o = run(bin, &a);
    assert!(!o.stderr.contains("panicked"), "{args:?}: {o}");
    let line = o.assert_one_line_error(code);
    let prefix = format!("{}: error: {option}", bin.name());
    assert!(
        line.starts_with(&prefix),
        "{args:?}: want {prefix:?}: {line}"
    );
    assert!(
        line.contains(bound),
        "{args:?}: must say the bound {bound:?}: {line}"
    );
    assert!(
        line.len() < 300,
        "{args:?}: the line must stay short: {line}"
    );
    assert!(
        !dir.ns().exists(),
        "{args:?}: a refused command line created the namespace"
    );
    line
}

/// CPU lists far beyond any machine, for every option that takes one.
#[test]
fn huge_cpu_numbers_and_ranges_are_refused() {
    let lists = ["0-4294967295", "4294967295", "18446744073709551616", "1024"];
    for list in lists {
        for bin in [Bin::DevAdder, Bin::ClientAdder] {
            refused_usage(bin, &["--cpus", list], &format!("--cpus {list}"), "maximum");
        }
        for (suite, flag) in [("adder", "--client-cpus"), ("adder", "--server-cpus")] {
            refused_usage(
                Bin::Msgbench,
                &[suite, flag, list],
                &format!("{flag} {list}"),
                "maximum",
            );
        }
        for suite in ["floor", "validate", "smp", "broker"] {
            refused_usage(
                Bin::Msgbench,
                &[suite, "--cpus", list],
                &format!("--cpus {list}"),
                "maximum",
            );
        }
    }
    // Thread counts are ranges too, bounded by the instance limit; a
    // count beyond u32 must not wrap round to a small one.
    for list in ["1-4294967295", "4294967297"] {
        refused_usage(
            Bin::Msgbench,
            &["adder", "--threads", list],
            &format!("--threads {list}"),
            "128",
        );
    }
}

/// Durations in seconds: non-finite, negative and absurdly large values.
#[test]
fn absurd_durations_are_refused_with_their_bound() {
    for w in ["1e300", "inf", "NaN", "86401", "-1"] {
        refused(
            Bin::ClientAdder,
            &[&format!("--wait={w}")],
            &format!("--wait {w}"),
            "86400",
        );
    }
    for v in ["1e300", "inf", "NaN", "-1"] {
        refused(
            Bin::Msgbench,
            &["adder", &format!("--row-secs={v}")],
            &format!("--row-secs {v}"),
            "3600",
        );
        refused(
            Bin::Msgbench,
            &["adder", &format!("--idle-secs={v}")],
            &format!("--idle-secs {v}"),
            "600",
        );
        refused_usage(
            Bin::Msgbench,
            &["ipc", "--row-secs", v],
            &format!("--row-secs {v}"),
            "60",
        );
        refused_usage(
            Bin::Msgbench,
            &["ipc", "--warmup", v],
            &format!("--warmup {v}"),
            "60",
        );
        refused_usage(
            Bin::Msgbench,
            &["rtos", "--duration", v],
            &format!("--duration {v}"),
            "86400",
        );
    }
    // A baseline shorter than /proc/stat's tick would measure nothing.
    refused(
        Bin::Msgbench,
        &["adder", "--idle-secs", "0.001"],
        "--idle-secs 0.001",
        "0.1 to 600",
    );
    refused_usage(
        Bin::Msgbench,
        &["rtos", "--duration", "86401"],
        "--duration 86401",
        "86400",
    );
    refused_usage(
        Bin::Msgbench,
        &["ipc", "--rate", "1e300"],
        "--rate 1e300",
        "1e8",
    );
}

/// Spin budgets, message sizes and loop counts near u64::MAX.
#[test]
fn huge_counts_and_sizes_are_refused() {
    let max = u64::MAX.to_string();
    for bin in [Bin::DevAdder, Bin::ClientAdder] {
        refused(
            bin,
            &["--spin-us", &max],
            &format!("--spin-us {max}"),
            "1000000",
        );
    }
    refused(
        Bin::Msgbench,
        &["adder", "--spin-us", &max],
        &format!("--spin-us {max}"),
        "1000000",
    );
    refused_usage(
        Bin::Msgbench,
        &["ipc", "--spin-us", &max],
        &format!("--spin-us {max}"),
        "1000000",
    );
    for size in [max.as_str(), "100000000000", "99999999999999999999999"] {
        refused_usage(
            Bin::Msgbench,
            &["ipc", "--sizes", size],
            &format!("--sizes {size}"),
            "16777216",
        );
    }
    refused_usage(
        Bin::Msgbench,
        &["validate", "--loops", &max],
        &format!("--loops {max}"),
        "1000000",
    );
}

/// Values clap itself cannot hold (beyond the option's integer type) are
/// clap usage errors: exit 2, the first line naming the option.
#[test]
fn values_beyond_the_integer_type_are_usage_errors() {
    let huge = "99999999999999999999999";
    let cases: [(Bin, Vec<&str>, &str); 4] = [
        (Bin::ClientAdder, vec!["-S", huge], "-S"),
        (Bin::DevAdder, vec!["--spin-us", huge], "--spin-us"),
        (Bin::ClientAdder, vec!["--wait", "1e999x"], "--wait"),
        (
            Bin::Msgbench,
            vec!["adder", "--row-secs", "x"],
            "--row-secs",
        ),
    ];
    for (bin, args, option) in cases {
        let o = run(bin, &args);
        assert_eq!(o.code(), 2, "{args:?}: {o}");
        assert!(!o.stderr.contains("panicked"), "{args:?}: {o}");
        let first = o.stderr.lines().next().unwrap_or("");
        // Every program prints clap's usage errors in one line of its own.
        let lead = format!("{}: error: ", bin.name());
        assert!(
            first.starts_with(&lead) && first.contains(option),
            "{args:?}: the first line must name {option}: {o}"
        );
        assert_eq!(o.stderr.lines().count(), 1, "{args:?}: one line: {o}");
        assert!(o.stdout.is_empty(), "{o}");
    }
}
