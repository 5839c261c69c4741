//! D-Bus addresses of Unix sockets, escaped as the D-Bus specification
//! asks: what the C libraries (libdbus, sd-bus) are handed.

use std::path::Path;

/// The D-Bus address of a Unix socket path, its bytes escaped as the
/// D-Bus specification asks (libdbus refuses an address with a byte
/// outside `[-0-9A-Za-z_/.\*]` unescaped).
pub fn unix_address(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut s = String::from("unix:path=");
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"-_/.*".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02x}"));
        }
    }
    s
}

/// A bus address as the C libraries want it: a `unix:path=` address
/// (what [`super::PrivateBus`] hands out, unescaped) escaped again;
/// any other address as it is.
pub fn escaped_bus_address(address: &str) -> String {
    match address.strip_prefix("unix:path=") {
        Some(path) if !path.contains(',') && !path.contains('%') => unix_address(Path::new(path)),
        _ => address.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_escaped() {
        assert_eq!(
            unix_address(Path::new("/run/a b/x%.sock")),
            "unix:path=/run/a%20b/x%25.sock"
        );
        assert_eq!(
            escaped_bus_address("unix:path=/tmp/a,b"),
            "unix:path=/tmp/a,b"
        );
        assert_eq!(
            escaped_bus_address("unix:path=/tmp/a=b"),
            "unix:path=/tmp/a%3db"
        );
    }
}
