//! The D-Bus study's arithmetic, done on our rows. The study ran the same
//! brokered call over local sockets and over QNX's native message
//! passing: a raw round trip took 324 us over the socket and 177 us
//! natively, 147 us saved, which it counted per leg; a brokered call has 4
//! legs (client to daemon, daemon to service, and the replies back), so it
//! expected 147 x 4 = 588 us saved and measured 462 us (docs/methodology.md,
//! "The D-Bus broker study"). A brokered call is two round trips, though,
//! so the saving of two round trips (294 us) is the other yardstick; the
//! study's 462 us lies between them. Here the socket is uds and the
//! native transport shm: the direct calls give the saving a round trip,
//! the brokered rows what a brokered call saved, by the mean (the study's
//! averages) and by the p50.

use super::options::Via;
use super::row::BrokerRow;
use crate::measure::hist::{fmt_ns, LatencySummary};
use crate::results::table::{Align, Table};

/// The study's saving a round trip ("a leg"), us.
const STUDY_LEG_US: f64 = 147.0;
/// The study's measured saving of a brokered call, us.
const STUDY_MEASURED_US: f64 = 462.0;
/// Legs of a brokered call, as the study counted them.
const LEGS: f64 = 4.0;
/// Round trips of a brokered call.
const ROUND_TRIPS: f64 = 2.0;
/// The socket and the native transport compared.
const SOCKET: &str = "uds";
const NATIVE: &str = "shm";

/// One statistic's arithmetic, ns.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sums {
    /// What the native transport saves a round trip (the study's "leg").
    pub per_leg: f64,
    /// Four of them: what the study expected a brokered call to save.
    pub expected: f64,
    /// What the brokered call saved.
    pub measured: f64,
}

impl Sums {
    /// Of the direct and brokered calls over the socket and the native
    /// transport, by `stat` (a latency summary's mean or p50).
    fn of(calls: &Calls, stat: fn(&LatencySummary) -> f64) -> Sums {
        let per_leg = stat(calls.direct.0) - stat(calls.direct.1);
        Sums {
            per_leg,
            expected: per_leg * LEGS,
            measured: stat(calls.broker.0) - stat(calls.broker.1),
        }
    }

    /// The share of the study's expected saving that was measured.
    fn share(&self) -> f64 {
        self.measured / self.expected
    }

    /// The share of two round trips' saving that was measured.
    fn share_of_round_trips(&self) -> f64 {
        self.measured / (self.per_leg * ROUND_TRIPS)
    }
}

/// The four calls the arithmetic needs: (socket, native) each.
struct Calls<'a> {
    direct: (&'a LatencySummary, &'a LatencySummary),
    broker: (&'a LatencySummary, &'a LatencySummary),
}

/// The latency of the measured, fault-free row `via`/`transport` at `ints`.
fn latency<'a>(
    rows: &'a [BrokerRow],
    via: Via,
    transport: &str,
    ints: u32,
) -> Option<&'a LatencySummary> {
    rows.iter()
        .find(|r| {
            r.via == via
                && r.transport.as_deref() == Some(transport)
                && r.ints == ints
                && r.fault.is_none()
                && r.measured()
        })
        .map(|r| &r.latency)
}

/// The mean's and the p50's arithmetic at `ints`; `None` unless direct
/// and broker rows ran over both uds and shm.
pub fn sums(rows: &[BrokerRow], ints: u32) -> Option<(Sums, Sums)> {
    let at = |via, t| latency(rows, via, t, ints);
    let calls = Calls {
        direct: (at(Via::Direct, SOCKET)?, at(Via::Direct, NATIVE)?),
        broker: (at(Via::Broker, SOCKET)?, at(Via::Broker, NATIVE)?),
    };
    Some((
        Sums::of(&calls, |l| l.mean_ns),
        Sums::of(&calls, |l| l.p50_ns),
    ))
}

/// The sentence at `ints`, by the mean as the study gave it.
pub fn sentence(rows: &[BrokerRow], ints: u32) -> Option<String> {
    let (mean, _) = sums(rows, ints)?;
    let verb = if mean.per_leg >= 0.0 {
        "saves"
    } else {
        "costs"
    };
    Some(format!(
        "The study's arithmetic, GetInteger({ints}), the same call over local sockets ({SOCKET}) \
         and over a native transport ({NATIVE}): {NATIVE} {verb} {} a round trip (mean), the \
         study's leg, so a brokered call's 4 legs should save {}; it saved {} ({:.0}% of that, \
         {:.0}% of its two round trips' saving). The study: {STUDY_LEG_US:.0} us x 4 = {:.0} us \
         expected, {STUDY_MEASURED_US:.0} us measured ({:.0}%, {:.0}% of two round trips).",
        fmt_ns(mean.per_leg.abs()),
        signed_ns(mean.expected),
        signed_ns(mean.measured),
        mean.share() * 100.0,
        mean.share_of_round_trips() * 100.0,
        STUDY_LEG_US * LEGS,
        STUDY_MEASURED_US / (STUDY_LEG_US * LEGS) * 100.0,
        STUDY_MEASURED_US / (STUDY_LEG_US * ROUND_TRIPS) * 100.0,
    ))
}

/// `1.23us`, or `-1.23us` for a loss.
fn signed_ns(v: f64) -> String {
    match v < 0.0 {
        true => format!("-{}", fmt_ns(-v)),
        false => fmt_ns(v),
    }
}

/// The table at `ints`: mean, p50 and the study's row.
pub fn table(rows: &[BrokerRow], ints: u32) -> Option<Table> {
    let (mean, p50) = sums(rows, ints)?;
    let mut t = Table::new(
        format!(
            "The study's arithmetic, GetInteger({ints}): {NATIVE} against {SOCKET}, direct and brokered"
        ),
        &[
            "Statistic",
            "Saved a round trip (leg)",
            "x 4 legs (expected)",
            "Brokered call saved",
            "Of expected",
            "Of 2 round trips",
        ],
    )
    .aligned(&[
        Align::Left,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
        Align::Right,
    ]);
    for (name, s) in [("mean", mean), ("p50", p50)] {
        t.row(vec![
            name.to_string(),
            signed_ns(s.per_leg),
            signed_ns(s.expected),
            signed_ns(s.measured),
            format!("{:.0}%", s.share() * 100.0),
            format!("{:.0}%", s.share_of_round_trips() * 100.0),
        ]);
    }
    t.row(vec![
        "the study (mean, QNX 6.4)".to_string(),
        format!("{STUDY_LEG_US:.0}us"),
        format!("{:.0}us", STUDY_LEG_US * LEGS),
        format!("{STUDY_MEASURED_US:.0}us"),
        format!("{:.0}%", STUDY_MEASURED_US / (STUDY_LEG_US * LEGS) * 100.0),
        format!(
            "{:.0}%",
            STUDY_MEASURED_US / (STUDY_LEG_US * ROUND_TRIPS) * 100.0
        ),
    ]);
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(via: Via, transport: &str, mean_us: f64, p50_us: f64) -> BrokerRow {
        BrokerRow::measured_at(via, transport, p50_us, mean_us)
    }

    fn rows(broker_shm_mean: f64) -> Vec<BrokerRow> {
        vec![
            row(Via::Direct, "uds", 12.0, 11.0),
            row(Via::Direct, "shm", 8.0, 7.0),
            row(Via::Broker, "uds", 30.0, 28.0),
            row(Via::Broker, "shm", broker_shm_mean, 20.0),
        ]
    }

    #[test]
    fn a_leg_is_a_direct_round_trips_difference_and_a_brokered_call_has_four() {
        let (mean, p50) = sums(&rows(24.0), 1).expect("all four rows");
        assert_eq!(mean.per_leg, 4_000.0);
        assert_eq!(mean.expected, 16_000.0);
        assert_eq!(mean.measured, 6_000.0);
        assert_eq!(p50.measured, 8_000.0);
        let s = sentence(&rows(24.0), 1).expect("a sentence");
        assert!(s.contains("shm saves 4.00us a round trip (mean)"), "{s}");
        assert!(
            s.contains(
                "should save 16.0us; it saved 6.00us (38% of that, 75% of its two round trips"
            ),
            "{s}"
        );
        assert!(
            s.contains(
                "147 us x 4 = 588 us expected, 462 us measured (79%, 157% of two round trips)"
            ),
            "{s}"
        );
    }

    #[test]
    fn more_than_expected_or_a_loss_is_said_as_it_is() {
        let s = sentence(&rows(8.0), 1).expect("a sentence");
        assert!(s.contains("it saved 22.0us (138% of that"), "{s}");
        let s = sentence(&rows(33.0), 1).expect("a sentence");
        assert!(s.contains("it saved -3.00us (-19% of that"), "{s}");
    }

    #[test]
    fn nothing_without_all_four_rows() {
        let mut r = rows(24.0);
        r.remove(1);
        assert_eq!(sums(&r, 1), None);
        assert!(table(&r, 1).is_none());
        assert!(sentence(&rows(24.0), 8).is_none(), "another size");
    }
}
