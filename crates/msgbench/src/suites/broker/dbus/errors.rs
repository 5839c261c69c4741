//! Typed errors of the D-Bus arrangements: a wrong answer to
//! `GetInteger`, a daemon or library missing here, a child bus that
//! would not stop. Each Display is the line the suite prints or keeps.

use std::process::ExitStatus;
use std::time::Duration;

use super::dynlib::LoadError;

/// An answer to `GetInteger(num_ints)` that is not the right one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WrongAnswer {
    /// The wrong number of integers.
    #[error("GetInteger({num_ints}) answered {got} integers")]
    Count {
        /// What was asked.
        num_ints: u32,
        /// How many came.
        got: usize,
    },
    /// The first wrong integer.
    #[error("GetInteger({num_ints}): integer {index} is {got}, expected {want}")]
    Value {
        /// What was asked.
        num_ints: u32,
        /// Its index.
        index: usize,
        /// What came.
        got: i32,
        /// What should have.
        want: i32,
    },
    /// A reply body of the wrong size.
    #[error("reply to GetInteger({num_ints}) is {got} bytes, expected {want}")]
    Size {
        /// What was asked.
        num_ints: u32,
        /// Its size.
        got: usize,
        /// The right size.
        want: usize,
    },
    /// A reply body whose array length field is wrong.
    #[error("reply to GetInteger({num_ints}) says {len} array bytes")]
    LengthField {
        /// What was asked.
        num_ints: u32,
        /// What the field says.
        len: u32,
    },
}

/// Why an arrangement cannot run here, with the install line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// A daemon's program is not on PATH.
    #[error("{program} is not on PATH (install: {install})")]
    Program {
        /// The program.
        program: &'static str,
        /// How to install it.
        install: &'static str,
    },
    /// A D-Bus library's C library that cannot be loaded here (missing,
    /// or without a function the suite calls), with its package.
    #[error(transparent)]
    Library(#[from] LoadError),
}

/// Why a child bus daemon did not stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum ChildStop {
    /// Waiting for it failed.
    #[error("waiting: {0}")]
    Wait(std::io::Error),
    /// It had to be killed.
    #[error("killed after {grace:?} without exiting ({status})")]
    Killed {
        /// How long it was given.
        grace: Duration,
        /// How it ended.
        status: ExitStatus,
    },
    /// Waiting after SIGKILL failed.
    #[error("waiting after SIGKILL: {0}")]
    WaitAfterKill(std::io::Error),
}
