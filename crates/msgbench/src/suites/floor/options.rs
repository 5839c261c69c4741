//! The options of `msgbench floor`: the CPU list, checked with one-line
//! errors naming the option.

use anyhow::{anyhow, Result};

use crate::measure::placement::cpus_option;

/// The CPUs to measure between: `list` (ranges allowed, repeats dropped,
/// every CPU online) or, without it, every online CPU.
pub fn cpus(list: Option<&str>) -> Result<Vec<usize>> {
    cpus_option(list).map_err(|e| anyhow!(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::placement::online_cpus;

    #[test]
    fn default_is_every_online_cpu() {
        assert_eq!(cpus(None).unwrap(), online_cpus());
    }

    #[test]
    fn lists_keep_order_and_drop_repeats() {
        let first = online_cpus()[0];
        let l = format!("{first},{first}");
        assert_eq!(cpus(Some(&l)).unwrap(), vec![first]);
    }

    #[test]
    fn bad_lists_name_the_option() {
        for bad in ["x", "", "99999", "1-0", "0,,1"] {
            let e = cpus(Some(bad)).unwrap_err().to_string();
            assert!(e.starts_with("--cpus "), "{bad}: {e}");
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
    }
}
