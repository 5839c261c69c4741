//! The commands that read recorded results back: `msgbench report` (the
//! HTML page, [`html`]) and `msgbench compare` ([`compare`]). They read
//! envelopes, files or the results store, and sit above both.

pub mod compare;
pub mod html;
