//! The sentences each suite's section opens with, from the envelope
//! alone, as the run judged and kept them (`verdicts`, made by each
//! suite's `Suite::judge` from its typed rows): the adder's verdict and
//! server models, ipc's best transport per placement and layout, rtos's
//! summary line, validate's verdicts counted, smp's lessons and broker's
//! answers. Nothing here recomputes a verdict.

use crate::results::envelope::Run;

/// The adder's verdict (does messaging scale, or is there a global
/// lock?) and which server model scales best, as the run judged them from
/// its typed rows and kept them (`Suite::judge`, the sentences the
/// terminal prints under the tables): none for a run from before.
pub fn adder(run: &Run) -> Vec<String> {
    run.verdicts.clone()
}

/// Ipc's answers as the run judged them from its typed rows (the best
/// transport per placement and layout; `suites/ipc/judge.rs`), kept in
/// the envelope: none for a run from before they were kept.
pub fn ipc(run: &Run) -> Vec<String> {
    run.verdicts.clone()
}

/// Rtos's summary line as the terminal prints it (`Summary: 3 passed, 1
/// failed, ...`) and the tests that failed by name, as the run judged
/// them (`suites/rtos/judge.rs`).
pub fn rtos(run: &Run) -> Vec<String> {
    run.verdicts.clone()
}

/// Validate's comparisons counted by verdict (agree, DISAGREE, missing,
/// error), as the run judged them (`suites/validate/judge.rs`).
pub fn validate(run: &Run) -> Vec<String> {
    run.verdicts.clone()
}

/// Smp's lessons and broker's answers as the run judged them; a run from
/// before `verdicts` were kept carried them as its `notes`.
pub fn kept(run: &Run) -> Vec<String> {
    if run.verdicts.is_empty() {
        run.notes.clone()
    } else {
        run.verdicts.clone()
    }
}
