//! Shared pieces of the `tests/fuzz_*.rs` targets: their proptest
//! configuration, byte-level mutations of a valid input, and a hang guard.
//!
//! Each target builds a *valid* input from a generator (so the parser gets
//! past its first line) and then damages it with [`mutations`]: that reaches
//! far deeper than random bytes would. `cargo test` runs a short pass; the
//! long pass sets `PROPTEST_CASES` (see `bench/fuzz.sh`).

use proptest::prelude::*;
use proptest::test_runner::Config;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The environment variable that sets the number of cases of every target
/// (proptest's own name for it).
pub const CASES_VAR: &str = "PROPTEST_CASES";

/// The environment variable that multiplies every target's default number
/// of cases: the targets differ a hundredfold in the cost of a case, so a
/// long pass scales each (`bench/fuzz.sh`) rather than giving all one count.
pub const SCALE_VAR: &str = "PERFSLEUTH_FUZZ_SCALE";

/// The config of a target: `default_cases` (sized for about a second in a
/// debug build), times [`SCALE_VAR`], or exactly [`CASES_VAR`]; and no
/// regression files (a real finding becomes a named regression test).
pub fn config(default_cases: u32) -> Config {
    let var = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
    };
    let cases = match (var(CASES_VAR), var(SCALE_VAR)) {
        (Some(n), _) => n,
        (None, Some(k)) => default_cases.saturating_mul(k),
        (None, None) => default_cases,
    };
    if cases != default_cases {
        // Seen with --nocapture: what a long pass ran.
        eprintln!("fuzz: {cases} cases");
    }
    Config {
        cases,
        failure_persistence: None,
        // A failing case of a long pass shrinks for at most a minute, so
        // one that hangs (see `within`) does not hang the shrinking too.
        max_shrink_time: 60_000,
        ..Config::default()
    }
}

/// How long one case may take before [`within`] calls it a hang. Generous:
/// debug builds on a busy 2-core machine are slow, and a real hang or a
/// quadratic blow-up on these input sizes takes far longer.
pub const CASE_LIMIT: Duration = Duration::from_secs(10);

/// Runs `f` on another thread and returns its result; panics when it takes
/// longer than `limit` (a hang would otherwise stall `cargo test` without a
/// word) and re-raises its panic.
pub fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    let start = Instant::now();
    let handle = std::thread::spawn(move || {
        let out = f();
        let _ = tx.send(());
        out
    });
    match rx.recv_timeout(limit) {
        // Sent: the result is ready. Disconnected: `f` panicked.
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => match handle.join() {
            Ok(v) => v,
            Err(panic) => std::panic::resume_unwind(panic),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("case still running after {:?}: a hang", start.elapsed())
        }
    }
}

/// One damage done to an input.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Cut the input at a position.
    Truncate(usize),
    /// XOR one byte with a non-zero value.
    Flip(usize, u8),
    /// Insert bytes at a position.
    Insert(usize, Vec<u8>),
    /// Remove up to this many bytes from a position.
    Remove(usize, usize),
    /// Repeat a line.
    DuplicateLine(usize),
    /// Drop a line.
    DropLine(usize),
    /// Swap two lines.
    SwapLines(usize, usize),
    /// Insert a whole line (a newline is added).
    InsertLine(usize, Vec<u8>),
    /// Replace a run of digits with another number-like word.
    Number(usize, Vec<u8>),
}

/// Words that break number parsing: beyond `u64`, `f64` specials, signs, empties.
pub const NUMBERS: &[&[u8]] = &[
    b"0",
    b"-0",
    b"-1",
    b"18446744073709551615",
    b"18446744073709551616",
    b"99999999999999999999999999999999",
    b"9223372036854775808",
    b"4294967296",
    b"NaN",
    b"nan",
    b"inf",
    b"-inf",
    b"1e308",
    b"1e309",
    b"-1e308",
    b"5e-324",
    b"0x",
    b"0xffffffffffffffffff",
    b"",
    b"1.5",
    b"1,5",
];

/// Lines that every text format should refuse or ignore cleanly.
pub const GARBAGE_LINES: &[&[u8]] = &[
    b"",
    b" ",
    b"\t\t",
    b"#",
    b"\xff\xfe\x00\x01",
    b"\xc3\x28 invalid UTF-8",
    b"\r",
    b"\x00\x00\x00\x00",
    b"=",
    b":",
    b"a=b=c",
    b"key: value: more",
    b"\xef\xbb\xbf",
    b"\xf0\x9f\x98\x80 emoji",
];

fn byte_string() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..16),
        prop::sample::select(NUMBERS).prop_map(<[u8]>::to_vec),
        prop::sample::select(GARBAGE_LINES).prop_map(<[u8]>::to_vec),
    ]
}

/// A strategy for 1–4 mutations; `lines` are extra lines that mean
/// something in the target's format (its keywords, edge cases).
pub fn mutations(lines: &'static [&'static [u8]]) -> impl Strategy<Value = Vec<Mutation>> {
    let line = prop_oneof![
        3 => prop::sample::select(if lines.is_empty() { GARBAGE_LINES } else { lines })
            .prop_map(<[u8]>::to_vec),
        1 => prop::sample::select(GARBAGE_LINES).prop_map(<[u8]>::to_vec),
        1 => byte_string(),
        // One very long line: limits on line length and allocation.
        1 => (1usize..200_000, any::<u8>()).prop_map(|(n, b)| vec![b | 0x20; n]),
    ];
    let one = prop_oneof![
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 1u8..=255).prop_map(|(i, x)| Mutation::Flip(i, x)),
        (any::<usize>(), byte_string()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        (any::<usize>(), 1usize..64).prop_map(|(i, n)| Mutation::Remove(i, n)),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        any::<usize>().prop_map(Mutation::DropLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        (any::<usize>(), line).prop_map(|(i, l)| Mutation::InsertLine(i, l)),
        (
            any::<usize>(),
            prop::sample::select(NUMBERS).prop_map(<[u8]>::to_vec)
        )
            .prop_map(|(i, n)| Mutation::Number(i, n)),
    ];
    prop::collection::vec(one, 1..=4)
}

/// `data` with every mutation applied in order.
pub fn apply(data: &[u8], mutations: &[Mutation]) -> Vec<u8> {
    let mut data = data.to_vec();
    for m in mutations {
        apply_one(&mut data, m);
    }
    data
}

fn apply_one(data: &mut Vec<u8>, m: &Mutation) {
    // Positions are raw numbers taken modulo the length at the time, so
    // they shrink towards the start of the input.
    let pos = |i: &usize, len: usize| i % (len + 1);
    match m {
        Mutation::Truncate(i) => {
            let at = pos(i, data.len());
            data.truncate(at);
        }
        Mutation::Flip(i, x) => {
            if !data.is_empty() {
                let at = i % data.len();
                data[at] ^= x;
            }
        }
        Mutation::Insert(i, bytes) => {
            let at = pos(i, data.len());
            data.splice(at..at, bytes.iter().copied());
        }
        Mutation::Remove(i, n) => {
            let at = pos(i, data.len());
            let end = (at + n).min(data.len());
            data.drain(at..end);
        }
        Mutation::Number(i, word) => {
            let runs = digit_runs(data);
            if !runs.is_empty() {
                let (a, b) = runs[i % runs.len()];
                data.splice(a..b, word.iter().copied());
            }
        }
        line_mutation => {
            let mut lines: Vec<Vec<u8>> = data
                .split_inclusive(|b| *b == b'\n')
                .map(<[u8]>::to_vec)
                .collect();
            match line_mutation {
                Mutation::DuplicateLine(i) if !lines.is_empty() => {
                    let at = i % lines.len();
                    let l = lines[at].clone();
                    lines.insert(at, l);
                }
                Mutation::DropLine(i) if !lines.is_empty() => {
                    lines.remove(i % lines.len());
                }
                Mutation::SwapLines(a, b) if !lines.is_empty() => {
                    let (a, b) = (a % lines.len(), b % lines.len());
                    lines.swap(a, b);
                }
                Mutation::InsertLine(i, l) => {
                    let at = i % (lines.len() + 1);
                    let mut l = l.clone();
                    l.push(b'\n');
                    // Inserted after a last line without newline, it would
                    // merge into that line: give that one its newline.
                    if at == lines.len() {
                        if let Some(last) = lines.last_mut() {
                            if !last.ends_with(b"\n") {
                                last.push(b'\n');
                            }
                        }
                    }
                    lines.insert(at, l);
                }
                _ => {}
            }
            *data = lines.concat();
        }
    }
}

fn digit_runs(data: &[u8]) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut start = None;
    for (i, b) in data.iter().enumerate() {
        match (b.is_ascii_digit(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                runs.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push((s, data.len()));
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutations_do_what_they_say() {
        let data = b"a 12\nb 345\nc\n";
        let idx = |n: usize| n;
        assert_eq!(apply(data, &[Mutation::Truncate(idx(0))]), b"");
        assert_eq!(
            apply(data, &[Mutation::Number(idx(1), b"9999".to_vec())]),
            b"a 12\nb 9999\nc\n"
        );
        assert_eq!(apply(data, &[Mutation::DropLine(idx(0))]), b"b 345\nc\n");
        assert_eq!(
            apply(
                b"x",
                &[Mutation::InsertLine(idx(usize::MAX), b"y".to_vec())]
            ),
            b"x\ny\n"
        );
        assert_eq!(apply(b"", &[Mutation::Flip(idx(3), 1)]), b"");
    }

    #[test]
    fn within_returns_and_propagates_panics() {
        assert_eq!(within(Duration::from_secs(5), || 7), 7);
        let r = std::panic::catch_unwind(|| within(Duration::from_secs(5), || panic!("boom")));
        assert!(r.is_err());
        let r = std::panic::catch_unwind(|| {
            within(Duration::from_millis(10), || {
                std::thread::sleep(Duration::from_millis(500))
            })
        });
        assert!(r.is_err());
    }
}
