//! Argument groups more than one suite flattens into its options, as
//! [`crate::measure::sched::SchedArgs`] is: `-r/--repeats`, `--cpus` and
//! `--seconds`. The option's name, syntax and value parser are written
//! here once; what differs between suites (what the option means there,
//! its default, its bound, a set or an ordered list of CPUs) is the
//! suite's own spec type, so each suite's `--help` still says what the
//! option does in that suite.
//!
//! A default that does not depend on another option is clap's (shown in
//! `--help` as `[default: N]`); one that does (`--quick`) is left to the
//! plan and said in the help text.

use std::marker::PhantomData;

use clap::Args;

use super::parse::{self, ValueError};

/// What one suite's `-r/--repeats` means and takes.
pub trait RepeatsSpec: Clone + Send + Sync + 'static {
    /// The help text: what a run is in this suite.
    const HELP: &'static str;
    /// The default clap shows and fills in, or `None` when the plan
    /// picks it (then [`RepeatsSpec::HELP`] says what it is).
    const DEFAULT: Option<&'static str>;
    /// The most runs.
    const MAX: usize;
}

/// `-r/--repeats N`: runs of a suite's measurements, 1 to `S::MAX`.
#[derive(Debug, Clone, Args)]
pub struct Repeats<S: RepeatsSpec> {
    #[arg(
        short = 'r',
        long = "repeats",
        value_name = "N",
        allow_hyphen_values = true,
        help = S::HELP,
        default_value = S::DEFAULT,
        value_parser = repeats::<S>
    )]
    runs: Option<usize>,
    #[arg(skip)]
    spec: PhantomData<S>,
}

impl<S: RepeatsSpec> Repeats<S> {
    /// The runs given, clap's default, or `otherwise` when the suite's
    /// default is the plan's to pick.
    pub fn or(&self, otherwise: usize) -> usize {
        self.runs.unwrap_or(otherwise)
    }
}

fn repeats<S: RepeatsSpec>(s: &str) -> Result<usize, ValueError> {
    parse::repeats_to(s, S::MAX)
}

/// What one suite's `--cpus` means and how its list is read.
pub trait CpusSpec: Clone + Send + Sync + 'static {
    /// A set ([`crate::measure::placement::CpuSet`]: repeats dropped) or
    /// an ordered list ([`crate::measure::placement::CpuList`]: thread k
    /// on the k-th entry).
    type Cpus: Clone + Send + Sync + std::fmt::Debug + 'static;
    /// The help text: what the CPUs are for, and the default.
    const HELP: &'static str;
    /// Reads the list.
    fn parse(list: &str) -> Result<Self::Cpus, ValueError>;
}

/// `--cpus LIST`: the CPUs a suite runs on (its default is the plan's).
#[derive(Debug, Clone, Args)]
pub struct Cpus<S: CpusSpec> {
    #[arg(
        long = "cpus",
        value_name = "LIST",
        allow_hyphen_values = true,
        help = S::HELP,
        value_parser = S::parse
    )]
    cpus: Option<S::Cpus>,
    #[arg(skip)]
    spec: PhantomData<S>,
}

impl<S: CpusSpec> Cpus<S> {
    /// `--cpus` as if given on the command line.
    pub fn of(cpus: S::Cpus) -> Self {
        Cpus {
            cpus: Some(cpus),
            spec: PhantomData,
        }
    }

    /// The CPUs given, if any.
    pub fn given(&self) -> Option<&S::Cpus> {
        self.cpus.as_ref()
    }
}

impl<S: CpusSpec> Default for Cpus<S> {
    fn default() -> Self {
        Cpus {
            cpus: None,
            spec: PhantomData,
        }
    }
}

/// What one suite's `--seconds` means.
pub trait SecondsSpec: Clone + Send + Sync + 'static {
    /// The help text: what is timed, and the default.
    const HELP: &'static str;
}

/// `--seconds SECS`: how long each measurement lasts, 0.01 to 600 s (its
/// default is the plan's).
#[derive(Debug, Clone, Args)]
pub struct Seconds<S: SecondsSpec> {
    #[arg(
        long = "seconds",
        value_name = "SECS",
        allow_hyphen_values = true,
        help = S::HELP,
        value_parser = parse::seconds_to_600
    )]
    secs: Option<f64>,
    #[arg(skip)]
    spec: PhantomData<S>,
}

impl<S: SecondsSpec> Seconds<S> {
    /// The seconds given, or `otherwise`.
    pub fn or(&self, otherwise: f64) -> f64 {
        self.secs.unwrap_or(otherwise)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::placement::{online_cpus, CpuList};
    use clap::{CommandFactory, Parser};

    /// A suite whose repeats default to 2 (clap's), at most 5.
    #[derive(Debug, Clone)]
    struct Fixed;
    impl RepeatsSpec for Fixed {
        const HELP: &'static str = "Runs of the fixed suite";
        const DEFAULT: Option<&'static str> = Some("2");
        const MAX: usize = 5;
    }
    impl CpusSpec for Fixed {
        type Cpus = CpuList;
        const HELP: &'static str = "CPUs of the fixed suite, in order";
        fn parse(list: &str) -> Result<CpuList, ValueError> {
            parse::cpu_list(list)
        }
    }
    impl SecondsSpec for Fixed {
        const HELP: &'static str = "Seconds of the fixed suite";
    }

    /// A suite whose repeats the plan picks.
    #[derive(Debug, Clone)]
    struct Picked;
    impl RepeatsSpec for Picked {
        const HELP: &'static str = "Runs of the picked suite [default: 3]";
        const DEFAULT: Option<&'static str> = None;
        const MAX: usize = 100;
    }

    #[derive(Parser)]
    struct FixedCli {
        #[command(flatten)]
        repeats: Repeats<Fixed>,
        #[command(flatten)]
        cpus: Cpus<Fixed>,
        #[command(flatten)]
        seconds: Seconds<Fixed>,
    }

    #[derive(Parser)]
    struct PickedCli {
        #[command(flatten)]
        repeats: Repeats<Picked>,
    }

    fn refusal(args: &[&str]) -> String {
        let e = FixedCli::try_parse_from(std::iter::once("x").chain(args.iter().copied()))
            .err()
            .unwrap_or_else(|| panic!("{args:?} accepted"));
        crate::cli::one_line(&e)
    }

    #[test]
    fn each_suite_has_its_own_default_bound_and_help() {
        let f = FixedCli::try_parse_from(["x"]).unwrap();
        assert_eq!(f.repeats.or(99), 2, "clap's default");
        assert!(f.cpus.given().is_none());
        assert_eq!(f.seconds.or(0.5), 0.5);
        let p = PickedCli::try_parse_from(["x"]).unwrap();
        assert_eq!(p.repeats.or(3), 3, "the plan's default");
        let p = PickedCli::try_parse_from(["x", "-r", "100"]).unwrap();
        assert_eq!(p.repeats.or(3), 100);
        let help = FixedCli::command().render_long_help().to_string();
        for want in [
            "-r, --repeats <N>",
            "Runs of the fixed suite",
            "[default: 2]",
        ] {
            assert!(help.contains(want), "{want}: {help}");
        }
        assert!(help.contains("--cpus <LIST>") && help.contains("CPUs of the fixed suite"));
        assert!(help.contains("--seconds <SECS>") && help.contains("Seconds of the fixed suite"));
        let help = PickedCli::command().render_long_help().to_string();
        assert!(
            help.contains("Runs of the picked suite [default: 3]"),
            "{help}"
        );
    }

    #[test]
    fn values_are_parsed_and_refused_naming_the_option() {
        let c = online_cpus()[0];
        let list = format!("{c},{c}");
        let f = FixedCli::try_parse_from(["x", "-r", "5", "--cpus", &list, "--seconds", "0.25"])
            .unwrap();
        assert_eq!(f.repeats.or(1), 5);
        assert_eq!(
            f.cpus.given(),
            Some(&CpuList(vec![c, c])),
            "an ordered list"
        );
        assert_eq!(f.seconds.or(1.0), 0.25);
        assert_eq!(
            refusal(&["-r", "6"]),
            "--repeats 6: must be a whole number of runs, 1 to 5"
        );
        assert_eq!(
            refusal(&["--seconds", "0"]),
            "--seconds 0: must be a number of seconds, 0.01 to 600"
        );
        assert!(refusal(&["--cpus", "x"]).starts_with("--cpus x: invalid CPU list"));
        assert_eq!(
            Cpus::<Fixed>::of(CpuList(vec![c])).given(),
            Some(&CpuList(vec![c]))
        );
    }
}
