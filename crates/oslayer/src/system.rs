//! What the system is: uname, page size, clock ticks (rustix).

/// The kernel's uname fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uname {
    /// `sysname` ("Linux").
    pub sysname: String,
    /// `release` ("6.8.0-...").
    pub release: String,
    /// `version` (build string).
    pub version: String,
    /// `machine` ("x86_64").
    pub machine: String,
}

/// uname(2), fields decoded lossily as UTF-8.
pub fn uname() -> Uname {
    let u = rustix::system::uname();
    let s = |c: &std::ffi::CStr| c.to_string_lossy().into_owned();
    Uname {
        sysname: s(u.sysname()),
        release: s(u.release()),
        version: s(u.version()),
        machine: s(u.machine()),
    }
}

/// The page size in bytes.
#[inline]
pub fn page_size() -> usize {
    rustix::param::page_size()
}

/// Clock ticks per second (`_SC_CLK_TCK`, the unit of /proc tick counts).
#[inline]
pub fn clock_ticks_per_second() -> u64 {
    rustix::param::clock_ticks_per_second()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uname_is_linux() {
        let u = uname();
        assert_eq!(u.sysname, "Linux");
        assert!(!u.release.is_empty() && !u.machine.is_empty());
    }

    #[test]
    fn page_size_is_a_power_of_two() {
        assert!(page_size().is_power_of_two() && page_size() >= 4096);
    }

    #[test]
    fn clock_ticks_are_positive() {
        assert!(clock_ticks_per_second() > 0);
    }
}
