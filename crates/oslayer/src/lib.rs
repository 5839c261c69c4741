//! The one system-call layer of msgpass and msgbench.
//!
//! Maintained crates first (rustix, nix); what they lack is wrapped here
//! once, one module per kernel interface, as safe functions over
//! `OwnedFd`/`BorrowedFd`. Nothing above this crate calls `libc` for a
//! system call, except where a measurement needs the raw call itself (and
//! says so where it does).

pub mod clock;
pub mod mem;
pub mod pmutex;
pub mod process;
pub mod pthread;
pub mod sched;
pub mod sem;
pub mod system;
