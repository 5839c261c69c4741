//! The D-Bus libraries of `msgbench broker --dbus-lib` (libdbus-1 and
//! libsystemd) are loaded at run time, not linked: nothing but Rust and a
//! C compiler is needed to build msgbench, and a machine without one of
//! the libraries skips its rows with one line naming the package.
//!
//! - the built programs link neither library (`ldd`);
//! - neither binding that links them (libdbus-sys, libsystemd-sys, whose
//!   build scripts ask pkg-config for them) is in the workspace's lock
//!   file;
//! - msgbench builds (`cargo check`, which runs every build script of its
//!   dependency tree, as a build does) with pkg-config finding nothing:
//!   `PKG_CONFIG` is /bin/false and its search path an empty directory.
//!   This one is slow the first time (a check of the whole tree, in a
//!   target directory of its own under `CARGO_TARGET_TMPDIR`: minutes on
//!   two CPUs), then takes a second (nothing changed) or a few (msgbench
//!   changed);
//! - a library missing at run time, or one without a function the suite
//!   calls, skips its rows with one line naming its Debian package (the
//!   sonames replaced through the test-only `MSGBENCH_TEST_LIBDBUS` and
//!   `MSGBENCH_TEST_LIBSYSTEMD`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// The workspace's root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The lines of `ldd PROGRAM` naming a D-Bus library, or None when ldd
/// cannot be run here.
fn dbus_libraries_linked(program: &str) -> Option<Vec<String>> {
    let out = Command::new("ldd").arg(program).output().ok()?;
    assert!(
        out.status.success(),
        "ldd {program}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        text.contains("libc.so"),
        "ldd {program} shows no libc: {text}"
    );
    Some(
        text.lines()
            .filter(|l| l.contains("libdbus") || l.contains("libsystemd"))
            .map(str::to_string)
            .collect(),
    )
}

#[test]
fn the_programs_link_neither_libdbus_nor_libsystemd() {
    for bin in [Bin::Msgbench, Bin::DevAdder, Bin::ClientAdder] {
        let Some(linked) = dbus_libraries_linked(bin.path()) else {
            skip("ldd is not here (Debian: libc-bin)");
            return;
        };
        assert!(linked.is_empty(), "{} links {linked:?}", bin.name());
    }
}

#[test]
fn no_crate_binds_the_d_bus_libraries_at_link_time() {
    let lock = std::fs::read_to_string(root().join("Cargo.lock")).expect("Cargo.lock");
    for krate in ["libdbus-sys", "libsystemd-sys"] {
        let entry = format!("name = \"{krate}\"");
        assert!(
            !lock.lines().any(|l| l == entry),
            "{krate} is in Cargo.lock"
        );
    }
}

/// Slow the first time: see the module's doc.
#[test]
fn msgbench_builds_with_pkg_config_finding_nothing() {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    let scratch = Path::new(env!("CARGO_TARGET_TMPDIR")).join("no-pkg-config");
    let empty = scratch.join("empty-pkg-config-dir");
    std::fs::create_dir_all(&empty).expect("the scratch directory");
    let out = Command::new(cargo)
        .args([
            "check",
            "--frozen",
            "--quiet",
            "-p",
            "msgbench",
            "--manifest-path",
        ])
        .arg(root().join("Cargo.toml"))
        .arg("--target-dir")
        .arg(scratch.join("target"))
        .env("PKG_CONFIG", "/bin/false")
        .env("PKG_CONFIG_PATH", &empty)
        .env("PKG_CONFIG_LIBDIR", &empty)
        .env_remove("PKG_CONFIG_SYSROOT_DIR")
        // Lighter: no debug info in the build scripts, no incremental
        // state (neither changes what a build script is asked).
        .env("CARGO_PROFILE_DEV_DEBUG", "false")
        .env("CARGO_INCREMENTAL", "0")
        .output()
        .expect("running cargo");
    assert!(
        out.status.success(),
        "cargo check with pkg-config finding nothing failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `msgbench broker`'s peer-to-peer rows on libdbus and sd-bus, libdbus
/// pointed at a file that is not there and sd-bus at the C library
/// (which has none of its functions): both rows skipped, each with one
/// line naming its package; the run itself succeeds.
#[test]
fn a_library_missing_at_run_time_skips_its_rows_naming_its_package() {
    let dir = TestDir::new("no-dbus-lib");
    let json = dir.path().join("out.json");
    let mut cmd = Bin::Msgbench.cmd([
        "broker",
        "--via",
        "dbus-p2p",
        "--dbus-lib",
        "libdbus,sd-bus",
        "--ints",
        "1",
        "-r",
        "1",
        "--seconds",
        "0.2",
        "--json",
    ]);
    cmd.arg(&json);
    cmd.env("MSGBENCH_NS", dir.ns());
    cmd.env("MSGBENCH_TEST_LIBDBUS", "libmsgbench-nonexistent.so.9");
    cmd.env("MSGBENCH_TEST_LIBSYSTEMD", "libc.so.6");
    let out = run_cmd("msgbench broker without its C libraries", cmd);
    out.assert_ok();
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("parse");
    let rows = v["rows"].as_array().expect("rows");
    let skipped = |lib: &str| -> String {
        let row = rows
            .iter()
            .find(|r| r["dbus_lib"] == lib)
            .unwrap_or_else(|| panic!("no {lib} row: {v}"));
        row["skipped"]
            .as_str()
            .unwrap_or_else(|| panic!("the {lib} row is not skipped: {} calls", row["calls"]))
            .to_string()
    };
    let libdbus = skipped("libdbus");
    assert_eq!(
        libdbus,
        "libdbus: libmsgbench-nonexistent.so.9: cannot open shared object file: \
         No such file or directory (install: apt-get install libdbus-1-3)"
    );
    let sdbus = skipped("sd-bus");
    assert!(sdbus.starts_with("sd-bus: "), "{sdbus}");
    assert!(sdbus.contains("undefined symbol: sd_"), "{sdbus}");
    assert!(
        sdbus.ends_with("(install: apt-get install libsystemd0)"),
        "{sdbus}"
    );
    for line in [&libdbus, &sdbus] {
        assert!(!line.contains('\n'), "{line}");
    }
    dir.assert_ns_clean();
}
