//! Tells the broker suite which zbus it is built with (`MSGBENCH_ZBUS_VERSION`,
//! read from the workspace's Cargo.lock), so a run can record the version
//! of every D-Bus component it used (suites/broker/dbus/versions.rs).

use std::path::Path;

fn main() {
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    println!("cargo:rerun-if-changed={}", lock.display());
    let Ok(text) = std::fs::read_to_string(&lock) else {
        return;
    };
    if let Some(v) = locked_version(&text, "zbus") {
        println!("cargo:rustc-env=MSGBENCH_ZBUS_VERSION={v}");
    }
}

/// The version Cargo.lock gives package `name`: the `version = "..."` line
/// after its `name = "..."` line.
fn locked_version(lock: &str, name: &str) -> Option<String> {
    let want = format!("name = \"{name}\"");
    let mut lines = lock.lines();
    lines.find(|l| l.trim() == want)?;
    let v = lines.next()?.trim().strip_prefix("version = \"")?;
    Some(v.trim_end_matches('"').to_string())
}
