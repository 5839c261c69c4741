//! Measurement building blocks shared by every suite: clocks, histograms,
//! CPU accounting, placement, environment capture, run directories,
//! what this process holds, and the helper processes of a measurement.

pub mod clock;
pub mod costs;
pub mod cpu;
pub mod env;
pub mod footprint;
pub mod hist;
pub mod peers;
pub mod placement;
pub mod rundir;
pub mod sched;
