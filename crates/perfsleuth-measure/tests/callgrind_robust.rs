//! Property-style robustness test of the callgrind parser, without extra
//! crates: thousands of seeded pseudo-random mutations of real callgrind
//! files (truncation, flipped bytes, duplicated, deleted and swapped lines,
//! inserted garbage, huge numbers). Parsing must return `Ok` with a
//! consistent profile or an `Err` naming the file and a line within it —
//! never panic (a panic fails the test) and never hang.

use std::path::Path;

use perfsleuth_measure::callgrind::{ParseError, Profile, parse_reader};

const FIXTURES: [&str; 3] = [
    "toggle-instr-jumps.out",
    "uncompressed.out",
    "combined-parts.out",
];

/// xorshift64*: small, seeded, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn load(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/callgrind")
            .join(name),
    )
    .unwrap()
}

fn lines_of(data: &[u8]) -> Vec<Vec<u8>> {
    data.split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

const GARBAGE: [&[u8]; 14] = [
    b"\xff\xfe\x00garbage\n",
    b"calls=1\n",
    b"calls=99999999999999999999999 1\n",
    b"fn=(999999)\n",
    b"fn=(18446744073709551616) x\n",
    b"+18446744073709551615 18446744073709551615 18446744073709551615\n",
    b"events:\n",
    b"events: A B C D E F G H I J K L\n",
    b"positions: instr line\n",
    b"part: 9\n",
    b"totals: 1 2 3 4 5 6 7 8 9 10\n",
    b"cfn=\n",
    b"0x 1\n",
    b"jcnd=/ *\n",
];

fn mutate(rng: &mut Rng, data: &[u8]) -> Vec<u8> {
    let mut data = data.to_vec();
    for _ in 0..1 + rng.below(3) {
        match rng.below(7) {
            0 => {
                let at = rng.below(data.len());
                data.truncate(at);
            }
            1 => {
                for _ in 0..1 + rng.below(4) {
                    if !data.is_empty() {
                        let at = rng.below(data.len());
                        data[at] ^= 1 + rng.below(255) as u8;
                    }
                }
            }
            k => {
                let mut lines = lines_of(&data);
                if lines.is_empty() {
                    continue;
                }
                let i = rng.below(lines.len());
                match k {
                    2 => {
                        let l = lines[i].clone();
                        lines.insert(i, l);
                    }
                    3 => {
                        lines.remove(i);
                    }
                    4 => {
                        let j = rng.below(lines.len());
                        lines.swap(i, j);
                    }
                    5 => lines.insert(i, GARBAGE[rng.below(GARBAGE.len())].to_vec()),
                    _ => {
                        // A digit run becomes a number beyond u64.
                        let l = &mut lines[i];
                        if let Some(p) = l.iter().position(u8::is_ascii_digit) {
                            l.splice(p..p, b"99999999999999999999".iter().copied());
                        }
                    }
                }
                data = lines.concat();
            }
        }
    }
    data
}

fn check_ok(p: &Profile) {
    let n = p.events.len();
    assert!(n > 0);
    assert_eq!(p.totals.len(), n);
    for f in &p.functions {
        assert_eq!(f.self_cost.len(), n);
        assert_eq!(f.inclusive.len(), n);
        for (s, i) in f.self_cost.iter().zip(&f.inclusive) {
            assert!(i >= s, "{f:?}");
        }
    }
}

fn check_err(e: &ParseError, name: &str, data: &[u8]) {
    let lines = data.split(|b| *b == b'\n').count();
    assert_eq!(e.file, name);
    assert!(
        e.line >= 1 && e.line <= lines,
        "line {} of {lines}: {e}",
        e.line
    );
    assert!(!e.message.is_empty());
    assert!(e.to_string().starts_with(&format!("{name}:{}: ", e.line)));
}

#[test]
fn random_mutations_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut ok, mut err) = (0, 0);
    for fixture in FIXTURES {
        let original = load(fixture);
        assert!(parse_reader(original.as_slice(), fixture).is_ok());
        for case in 0..500 {
            let data = mutate(&mut rng, &original);
            let name = format!("{fixture}#{case}");
            match parse_reader(data.as_slice(), &name) {
                Ok(p) => {
                    check_ok(&p);
                    ok += 1;
                }
                Err(e) => {
                    check_err(&e, &name, &data);
                    err += 1;
                }
            }
        }
    }
    eprintln!("{ok} mutations parsed, {err} refused");
    assert!(ok > 50 && err > 300, "{ok} ok, {err} err");
}

#[test]
fn every_truncation_of_a_callgrind_file_is_an_error_on_its_last_line() {
    let mut rng = Rng(42);
    for fixture in &FIXTURES[..2] {
        let original = load(fixture);
        let mut cuts: Vec<usize> = (0..300).map(|_| rng.below(original.len())).collect();
        cuts.extend([0, 1, original.len() - 1]);
        for cut in cuts {
            let data = &original[..cut];
            let e = parse_reader(data, fixture).expect_err("a truncated file is an error");
            check_err(&e, fixture, data);
            if cut > 0 {
                let last = data.split(|b| *b == b'\n').count() - usize::from(data.ends_with(b"\n"));
                assert!(e.line <= last.max(1), "cut {cut}: {e}");
            }
        }
    }
    // A multi-part file cut exactly after a part's `totals:` line is a
    // valid file with fewer parts; anywhere else it is an error.
    let original = load(FIXTURES[2]);
    for cut in (0..original.len()).step_by(97) {
        let data = &original[..cut];
        if let Ok(p) = parse_reader(data, "parts") {
            assert!(data.ends_with(b"\n"));
            let last = data[..cut - 1].rsplit(|b| *b == b'\n').next().unwrap();
            assert!(last.starts_with(b"totals:") || last.is_empty(), "cut {cut}");
            assert!(p.parts < 3);
        }
    }
}

#[test]
fn thousands_of_events_are_refused_before_every_function_holds_them() {
    // Every function keeps three costs per event: 5 000 events and 2 000
    // one-line functions (0.1 MB of text) took 240 MB before the cap on
    // events, and the 100 000 events of one 1 MiB line 24 GB.
    let mut text = String::from("events:");
    for i in 0..5000 {
        text.push_str(&format!(" e{i}"));
    }
    text.push('\n');
    for i in 0..2000 {
        text.push_str(&format!("fn=f{i}\n0 1\n"));
    }
    let e = parse_reader(text.as_bytes(), "many-events").expect_err("too many events");
    assert_eq!(e.line, 1, "{e}");
    assert!(e.message.contains("events"), "{e}");
    // Up to the cap is still a profile.
    let names: Vec<String> = (0..64).map(|i| format!("e{i}")).collect();
    let text = format!("events: {}\nfn=f\n0 1\n", names.join(" "));
    assert_eq!(
        parse_reader(text.as_bytes(), "64").unwrap().events.len(),
        64
    );
    // The cap counts events over all parts, not per `events:` line.
    let mut text = String::new();
    for part in 0..3 {
        let names: Vec<String> = (0..40).map(|i| format!("p{part}e{i}")).collect();
        text.push_str(&format!("events: {}\nfn=f\n0 1\n", names.join(" ")));
    }
    let e = parse_reader(text.as_bytes(), "parts").expect_err("120 events in all");
    assert_eq!(e.line, 4, "{e}");
}
