//! The MEM tests (see ../shared/spec/rtos.md).

use super::catalogue::TestDef;

/// The group's tests.
pub fn tests() -> Vec<TestDef> {
    Vec::new()
}
