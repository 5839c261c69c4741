//! The verdict on one figure measured in two runs: did it change beyond
//! the noise, and which way is that?
//!
//! The rule (also in `msgbench compare --help` and docs/methodology.md):
//!
//! - the change is `(new - base) / |base|` of the figures' values;
//! - a change is called only when it is larger than the threshold
//!   (`--threshold`, [`DEFAULT_THRESHOLD_PCT`] by default);
//! - when both figures carry at least two repeats, it must also be clear
//!   of the runs' own spread: every new repeat lies beyond every base
//!   repeat, on the side the values moved to (the repeats' ranges do not
//!   overlap). For n and m repeats that is the Mann-Whitney outcome U = 0,
//!   whose exact two-sided p is 2 / C(n+m, n): 0.008 for 5 + 5, 0.029 for
//!   4 + 4, 0.1 for 3 + 3, 0.33 for 2 + 2, so with few repeats the
//!   threshold does most of the work;
//! - `better` turns a called change into faster or slower; a `neither`
//!   figure is only "changed", and never trips `--fail-above`.

use serde::Serialize;

use crate::results::envelope::{Better, Figure};

/// The smallest change called without a measured spread, and the
/// smallest called at all, in percent. A figure measured once on a
/// shared or virtual machine routinely moves by a few percent between
/// two runs of the same build (frequency, placement, timer ticks, other
/// tenants); 10 % is well above that, and small enough that a real
/// regression worth gating on is not missed.
pub const DEFAULT_THRESHOLD_PCT: f64 = 10.0;

/// What `msgbench compare` says about one row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Better beyond the noise.
    #[serde(rename = "faster")]
    Faster,
    /// Worse beyond the noise.
    #[serde(rename = "slower")]
    Slower,
    /// Within the noise (or equal).
    #[serde(rename = "no change")]
    NoChange,
    /// A `neither` figure that moved beyond the noise.
    #[serde(rename = "changed")]
    Changed,
    /// The two figures are in different units.
    #[serde(rename = "incomparable")]
    Incomparable,
    /// The row is in the base run only.
    #[serde(rename = "only in base")]
    OnlyBase,
    /// The row is in the new run only.
    #[serde(rename = "only in new")]
    OnlyNew,
}

impl Verdict {
    /// As printed.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::NoChange => "no change",
            Verdict::Changed => "changed",
            Verdict::Incomparable => "incomparable",
            Verdict::OnlyBase => "only in base",
            Verdict::OnlyNew => "only in new",
        }
    }
}

/// The verdict on a pair of figures and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// The change in percent of the base value; `None` when the base is 0
    /// and the new value is not (an infinite change).
    pub change_pct: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why, in a few words: `within threshold`, `repeats overlap 5+5`,
    /// `repeats apart 5+5`, `beyond threshold, single`.
    pub why: String,
}

/// The change from `base` to `new` in percent of `|base|`; `None` when
/// `base` is 0 and `new` is not.
pub fn change_pct(base: f64, new: f64) -> Option<f64> {
    if base == new {
        Some(0.0)
    } else if base == 0.0 {
        None
    } else {
        Some((new - base) / base.abs() * 100.0)
    }
}

/// Whether the repeats are clear of each other in the direction the
/// values moved: all of `new` above all of `base` when `up`, below when
/// not.
fn apart(base: &[f64], new: &[f64], up: bool) -> bool {
    let (b, n) = (lo_hi(base), lo_hi(new));
    if up {
        n.0 > b.1
    } else {
        n.1 < b.0
    }
}

/// `(min, max)` of a non-empty slice.
fn lo_hi(v: &[f64]) -> (f64, f64) {
    (min(v), max(v))
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

fn max(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// Judges `new` against `base` with the rule of this module
/// (`threshold_pct`: the smallest change called).
pub fn judge(base: &Figure, new: &Figure, threshold_pct: f64) -> Judgement {
    let change = change_pct(base.value, new.value);
    if base.unit != new.unit {
        return Judgement {
            change_pct: None,
            verdict: Verdict::Incomparable,
            why: format!("units {} and {}", base.unit, new.unit),
        };
    }
    let beyond = change.is_none_or(|c| c.abs() > threshold_pct);
    let up = new.value > base.value;
    let (called, why) = if !beyond {
        (false, "within threshold".to_string())
    } else if base.repeats.len() >= 2 && new.repeats.len() >= 2 {
        let counts = format!("{}+{}", base.repeats.len(), new.repeats.len());
        if apart(&base.repeats, &new.repeats, up) {
            (true, format!("repeats apart {counts}"))
        } else {
            (false, format!("repeats overlap {counts}"))
        }
    } else {
        (true, "beyond threshold, single".to_string())
    };
    let verdict = match (called, base.better, up) {
        (false, _, _) => Verdict::NoChange,
        (true, Better::Neither, _) => Verdict::Changed,
        (true, Better::Higher, true) | (true, Better::Lower, false) => Verdict::Faster,
        (true, Better::Higher, false) | (true, Better::Lower, true) => Verdict::Slower,
    };
    Judgement {
        change_pct: change,
        verdict,
        why,
    }
}

/// Whether a judged row trips `--fail-above fail_pct`: called slower, by
/// more than `fail_pct` percent of the base value (an infinite change
/// always does).
pub fn trips(verdict: Verdict, change_pct: Option<f64>, fail_pct: f64) -> bool {
    verdict == Verdict::Slower && change_pct.is_none_or(|c| c.abs() > fail_pct)
}
