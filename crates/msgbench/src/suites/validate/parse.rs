//! Parsers of the reference tools' output. Each returns the figure or an
//! error saying what was missing; the samples in the tests were captured
//! from the real tools (perf 6.x, rt-tests 2.4).

use anyhow::{anyhow, bail, Context, Result};

use super::handover::Latency;

/// `perf bench sched pipe`: microseconds per operation (one round trip),
/// from the `N usecs/op` line.
pub fn perf_pipe(out: &str) -> Result<f64> {
    let line = out
        .lines()
        .find(|l| l.contains("usecs/op"))
        .ok_or_else(|| anyhow!("no 'usecs/op' line in perf's output"))?;
    let v: f64 = line
        .split_whitespace()
        .next()
        .unwrap_or("")
        .parse()
        .with_context(|| format!("bad perf figure in {line:?}"))?;
    positive(v, line)
}

/// rt-tests' ptsematest, pmqtest, svsematest, sigwaittest (`-q`): the
/// `#1 -> #0, Min N, Cur N, Avg N, Max N` line, in microseconds.
pub fn rt_handover(out: &str) -> Result<Latency> {
    // Without -q the tools redraw with cursor escapes: take the last
    // summary, from its start.
    let line = out
        .lines()
        .rev()
        .find_map(|l| l.find("#1 -> #0,").map(|at| &l[at..]))
        .ok_or_else(|| anyhow!("no '#1 -> #0' summary line in the output"))?;
    let samples = out
        .lines()
        .find_map(|l| l.split("Cycles").nth(1))
        .map(|s| number_after(s, ""))
        .transpose()?
        .unwrap_or(0.0);
    Ok(Latency {
        min_us: number_after(line, "Min")?,
        avg_us: number_after(line, "Avg")?,
        max_us: number_after(line, "Max")?,
        samples: samples as u64,
    })
}

/// cyclictest (`-q -t 1`): the `T: 0 ... C: N Min: N ... Avg: N Max: N`
/// line, in microseconds.
pub fn cyclictest(out: &str) -> Result<Latency> {
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("T:") && l.contains("Avg:"))
        .ok_or_else(|| anyhow!("no 'T: ... Avg:' line in cyclictest's output"))?;
    Ok(Latency {
        min_us: number_after(line, "Min:")?,
        avg_us: number_after(line, "Avg:")?,
        max_us: number_after(line, "Max:")?,
        samples: number_after(line, "C:")? as u64,
    })
}

/// The number right after `key` (spaces allowed between) in `line`.
fn number_after(line: &str, key: &str) -> Result<f64> {
    let at = line
        .find(key)
        .ok_or_else(|| anyhow!("no {key:?} in {line:?}"))?;
    let rest = line[at + key.len()..].trim_start();
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    rest[..end]
        .parse()
        .with_context(|| format!("no number after {key:?} in {line:?}"))
}

fn positive(v: f64, line: &str) -> Result<f64> {
    if !(v.is_finite() && v > 0.0) {
        bail!("not a positive figure in {line:?}");
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERF: &str = "# Running 'sched/pipe' benchmark:\n\
# Executed 20000 pipe operations between two threads\n\
\n     Total time: 0.107 [sec]\n\
\n       5.377800 usecs/op\n         185949 ops/sec\n";

    const PTSEM: &str = "#0: ID26304, P80, CPU0, I1000; #1: ID26305, P80, CPU0, Cycles 300\n\
#1 -> #0, Min    2, Cur   54, Avg    3, Max   54\n";

    const PMQ: &str = "#0: ID26309, P80, CPU0, I1000; #1: ID26310, P80, CPU0, TO 0, Cycles 300\n\
#1 -> #0, Min    3, Cur    3, Avg    3, Max   11\n";

    const CYCLIC: &str = "# /dev/cpu_dma_latency set to 0us\n\
T: 0 (26349) P:80 I:1000 C:    300 Min:      9 Act:   14 Avg:   15 Max:      36\n";

    #[test]
    fn perf_usecs_per_op() {
        assert_eq!(perf_pipe(PERF).unwrap(), 5.3778);
        assert!(perf_pipe("# Running 'sched/pipe' benchmark:\n").is_err());
        assert!(perf_pipe("  0.000 usecs/op\n").is_err());
        assert!(perf_pipe("  x usecs/op\n").is_err());
    }

    #[test]
    fn rt_tests_summary() {
        let l = rt_handover(PTSEM).unwrap();
        assert_eq!(
            (l.min_us, l.avg_us, l.max_us, l.samples),
            (2.0, 3.0, 54.0, 300)
        );
        let l = rt_handover(PMQ).unwrap();
        assert_eq!(
            (l.min_us, l.avg_us, l.max_us, l.samples),
            (3.0, 3.0, 11.0, 300)
        );
        assert!(rt_handover("#1 -> #0 (not yet ready)\n").is_err());
        let redrawn = format!("{PTSEM}\x1b[2A{PMQ}");
        assert_eq!(rt_handover(&redrawn).unwrap().max_us, 11.0);
        assert!(rt_handover("").is_err());
    }

    #[test]
    fn cyclictest_summary() {
        let l = cyclictest(CYCLIC).unwrap();
        assert_eq!(
            (l.min_us, l.avg_us, l.max_us, l.samples),
            (9.0, 15.0, 36.0, 300)
        );
        assert!(cyclictest("# /dev/cpu_dma_latency set to 0us\n").is_err());
        assert!(cyclictest("T: 0 (1) P:80 I:1000 C: 3 Min: x Avg: 1 Max: 2\n").is_err());
    }
}
