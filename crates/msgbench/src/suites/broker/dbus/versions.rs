//! The versions of the D-Bus components a run uses, read once when the
//! plan is made, kept in the envelope's settings (`settings.components`)
//! and printed above the tables: two runs' D-Bus rows can then be told
//! apart by what they ran. The daemons say theirs (`--version`); the
//! libraries, loaded at run time, are named by their Debian packages
//! (`dpkg-query`; libsystemd has no call that gives its version); zbus is
//! the version this executable was built with (from Cargo.lock, by the
//! build script). What cannot be read is `null` and printed `unknown`.

use std::process::{Command, Stdio};

use serde::Serialize;

/// The D-Bus components' versions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Components {
    /// `dbus-daemon --version`: "1.14.10".
    pub dbus_daemon: Option<String>,
    /// `dbus-broker --version`: "33".
    pub dbus_broker: Option<String>,
    /// libdbus (package libdbus-1-3): "1.14.10-1~deb12u1".
    pub libdbus: Option<String>,
    /// libsystemd, whose sd-bus the sd-bus rows use (package
    /// libsystemd0): "252.39-1~deb12u2".
    pub libsystemd: Option<String>,
    /// zbus, built in.
    pub zbus: Option<String>,
}

impl Components {
    /// Reads them now.
    pub fn read() -> Components {
        Components {
            dbus_daemon: program_version("dbus-daemon"),
            dbus_broker: program_version("dbus-broker"),
            libdbus: package_version("libdbus-1-3"),
            libsystemd: package_version("libsystemd0"),
            zbus: option_env!("MSGBENCH_ZBUS_VERSION").map(String::from),
        }
    }

    /// "D-Bus components: dbus-daemon 1.14.10, dbus-broker 33, ...".
    pub fn line(&self) -> String {
        let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "unknown".into());
        format!(
            "D-Bus components: dbus-daemon {}, dbus-broker {}, libdbus {}, libsystemd (sd-bus) {}, zbus {}",
            show(&self.dbus_daemon),
            show(&self.dbus_broker),
            show(&self.libdbus),
            show(&self.libsystemd),
            show(&self.zbus)
        )
    }
}

/// The version `program --version` prints: the last word of its first
/// line, when that starts with a digit.
fn program_version(program: &str) -> Option<String> {
    let out = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    version_of_first_line(&String::from_utf8_lossy(&out.stdout))
}

/// The last word of `text`'s first line, when it starts with a digit.
fn version_of_first_line(text: &str) -> Option<String> {
    let word = text.lines().next()?.split_whitespace().last()?;
    word.starts_with(|c: char| c.is_ascii_digit())
        .then(|| word.to_string())
}

/// The installed version of Debian package `package`.
fn package_version(package: &str) -> Option<String> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f", "${Version}", package])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !v.is_empty()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_is_the_first_lines_last_word_when_it_is_one() {
        assert_eq!(
            version_of_first_line("D-Bus Message Bus Daemon 1.14.10\nCopyright (C) 2002\n"),
            Some("1.14.10".into())
        );
        assert_eq!(version_of_first_line("dbus-broker 33\n"), Some("33".into()));
        assert_eq!(
            version_of_first_line("usage: dbus-broker [OPTIONS]\n"),
            None
        );
        assert_eq!(version_of_first_line(""), None);
    }

    #[test]
    fn unknown_components_are_said_so() {
        let c = Components {
            dbus_daemon: Some("1.14.10".into()),
            ..Components::default()
        };
        assert_eq!(
            c.line(),
            "D-Bus components: dbus-daemon 1.14.10, dbus-broker unknown, libdbus unknown, \
             libsystemd (sd-bus) unknown, zbus unknown"
        );
        assert_eq!(package_version("msgbench-no-such-package"), None);
        assert_eq!(program_version("msgbench-no-such-program"), None);
    }
}
