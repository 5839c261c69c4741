//! Measurement building blocks shared by every suite: clocks, histograms,
//! CPU accounting, placement and environment capture.

pub mod placement;
