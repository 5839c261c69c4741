//! Measurement building blocks shared by every suite: clocks, histograms,
//! CPU accounting, placement, environment capture and run directories.

pub mod clock;
pub mod costs;
pub mod cpu;
pub mod env;
pub mod footprint;
pub mod hist;
pub mod placement;
pub mod rundir;
pub mod sched;
