//! The overhead bench's A/B mode reads the other build's table by its
//! rows (`benches/overhead/ab_parse.rs`): rows, long labels, and nothing
//! else.

#[path = "../benches/overhead/ab_parse.rs"]
mod ab_parse;

use ab_parse::{parse_line, Figure};

#[test]
fn reads_a_row_of_the_table_and_nothing_else() {
    let row = format!(
        "{:<48} {:>5} {:>9} {:>10.1} {:>6.0} {:>10.1} {:>6.0} {:>7.2}x {:>6.2}x {:>7}  {}",
        "uds 4B copy / seqpacket ping-pong",
        "0,1",
        1000,
        9000.5,
        3.0,
        9500.3,
        4.0,
        1.06,
        1.05,
        "1.10x",
        "ok"
    );
    let ((label, cpus), f) = parse_line(&row).expect("a row");
    assert_eq!(
        (label.as_str(), cpus.as_str()),
        ("uds 4B copy / seqpacket ping-pong", "0,1")
    );
    assert_eq!(
        f,
        Figure {
            bare: 9000.5,
            lib: 9500.3
        }
    );
    assert!(parse_line("msgbench overhead: library vs bare floor, medians of 5").is_none());
    assert!(parse_line(&"-".repeat(120)).is_none());
    let long =
        "shm-spin 4096B in-place unpaced / two-process cache line 0,1 1000 70.0 3 99.5 2 1.42x";
    let ((label, _), f) = parse_line(long).expect("a long row");
    assert_eq!(
        label,
        "shm-spin 4096B in-place unpaced / two-process cache line"
    );
    assert_eq!((f.bare, f.lib), (70.0, 99.5));
    assert!(parse_line("uds 4B copy / seqpacket ping-pong 0,1 FAILED: refused").is_none());
}
