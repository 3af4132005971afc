//! Fuzz targets for the callgrind parser and the `/proc/stat` parser.
//!
//! A generator writes valid callgrind files (name compression on or off,
//! one or two position columns, subposition compression, calls, several
//! parts) whose costs it knows, so a valid file must parse to exactly those
//! totals and self costs; then the same files are damaged (see
//! `perfsleuth_testkit::fuzz`) and must parse to a consistent profile or be
//! refused with a line inside the file, never panic and never hang.
//! `PERFSLEUTH_FUZZ_SCALE=K` runs K times the default cases, `PROPTEST_CASES=N`
//! exactly N (`bench/fuzz.sh` runs every target so).

use perfsleuth_measure::CpuTimes;
use perfsleuth_measure::callgrind::{ParseError, Profile, parse_reader};
use perfsleuth_testkit::fuzz::{CASE_LIMIT, apply, config, mutations, within};
use proptest::prelude::*;
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;

const EVENT_NAMES: [&str; 6] = ["Ir", "Dr", "Dw", "I1mr", "Bc", "Bcm"];

/// One function of a generated file.
#[derive(Debug, Clone)]
struct GenFn {
    obj: usize,
    file: usize,
    /// Cost lines: positions, then one cost per event.
    lines: Vec<(Vec<u64>, Vec<u64>)>,
    /// Calls: callee index, count, inclusive cost per event.
    calls: Vec<(usize, u64, Vec<u64>)>,
}

/// A whole generated file.
#[derive(Debug, Clone)]
struct GenFile {
    events: Vec<&'static str>,
    positions: usize,
    compress: bool,
    /// Subpositions written relative (`+N`, `-N`, `*`) where possible.
    relative: bool,
    /// A `totals:` line per part (as callgrind writes), or none.
    totals_line: bool,
    /// Parts; each lists functions by index into `functions`.
    parts: Vec<Vec<usize>>,
    functions: Vec<GenFn>,
    crlf: bool,
}

fn gen_file() -> impl Strategy<Value = GenFile> {
    (
        prop::sample::subsequence(EVENT_NAMES.to_vec(), 1..=EVENT_NAMES.len()),
        1usize..=2,
        1usize..=6,
    )
        .prop_flat_map(|(events, positions, nfn)| {
            let k = events.len();
            // Costs up to 2^40 keep every sum of this size below u64::MAX.
            let cost = prop::collection::vec(0u64..(1 << 40), k);
            let pos = prop::collection::vec(0u64..100_000, positions);
            let function = (
                0usize..2,
                0usize..3,
                prop::collection::vec((pos.clone(), cost.clone()), 0..6),
                prop::collection::vec((0..nfn, 1u64..1000, cost), 0..3),
            )
                .prop_map(|(obj, file, lines, calls)| GenFn {
                    obj,
                    file,
                    lines,
                    calls,
                });
            (
                Just(events),
                Just(positions),
                any::<bool>(),
                any::<bool>(),
                any::<bool>(),
                prop::collection::vec(function, nfn),
                1usize..=3,
                any::<bool>(),
            )
        })
        .prop_map(
            |(events, positions, compress, relative, totals_line, functions, nparts, crlf)| {
                let n = functions.len();
                // Every function appears in exactly one part, part p
                // taking the functions with index ≡ p (mod nparts).
                let parts = (0..nparts.min(n))
                    .map(|p| (0..n).filter(|i| i % nparts.min(n) == p).collect())
                    .collect();
                GenFile {
                    events,
                    positions,
                    compress,
                    relative,
                    totals_line,
                    parts,
                    functions,
                    crlf,
                }
            },
        )
}

/// Writes names with or without compression, as callgrind does: the first
/// use of a name in its id space is `(id) name`, later ones `(id)`.
struct Names {
    compress: bool,
    seen: [HashSet<String>; 3],
    ids: [BTreeMap<String, usize>; 3],
}

impl Names {
    fn name(&mut self, space: usize, name: &str) -> String {
        if !self.compress {
            return name.to_string();
        }
        let next = self.ids[space].len() + 1;
        let id = *self.ids[space].entry(name.to_string()).or_insert(next);
        if self.seen[space].insert(name.to_string()) {
            format!("({id}) {name}")
        } else {
            format!("({id})")
        }
    }
}

fn fn_name(i: usize) -> String {
    // Spaces, punctuation and non-ASCII as C++ and Rust symbols have them.
    format!("ns::f{i}<int, 'é'>(char const*)")
}

impl GenFile {
    fn write(&self) -> Vec<u8> {
        let mut names = Names {
            compress: self.compress,
            seen: Default::default(),
            ids: Default::default(),
        };
        let positions = ["line", "instr line"][self.positions - 1];
        let mut out = String::new();
        out.push_str("# callgrind format\nversion: 1\ncreator: callgrind-3.22.0\n");
        for (p, part) in self.parts.iter().enumerate() {
            let _ = writeln!(out, "pid: 4242\npart: {}\n", p + 1);
            let _ = writeln!(out, "positions: {positions}");
            let _ = writeln!(out, "events: {}", self.events.join(" "));
            let _ = writeln!(out, "cmd: ./prog --arg\n");
            for &i in part {
                let f = &self.functions[i];
                let _ = writeln!(
                    out,
                    "ob={}",
                    names.name(2, &format!("/lib/obj{}.so", f.obj))
                );
                let _ = writeln!(
                    out,
                    "fl={}",
                    names.name(0, &format!("src/file{}.c", f.file))
                );
                let _ = writeln!(out, "fn={}", names.name(1, &fn_name(i)));
                let mut last: Option<Vec<u64>> = None;
                for (pos, costs) in &f.lines {
                    out.push_str(&self.positions_text(pos, &mut last));
                    for c in costs {
                        let _ = write!(out, " {c}");
                    }
                    out.push('\n');
                }
                for (callee, count, costs) in &f.calls {
                    let g = &self.functions[*callee];
                    let _ = writeln!(
                        out,
                        "cob={}",
                        names.name(2, &format!("/lib/obj{}.so", g.obj))
                    );
                    let _ = writeln!(
                        out,
                        "cfi={}",
                        names.name(0, &format!("src/file{}.c", g.file))
                    );
                    let _ = writeln!(out, "cfn={}", names.name(1, &fn_name(*callee)));
                    let _ = writeln!(out, "calls={count} 0x10");
                    out.push_str(&self.positions_text(&vec![7; self.positions], &mut last));
                    for c in costs {
                        let _ = write!(out, " {c}");
                    }
                    out.push('\n');
                }
                out.push('\n');
            }
            if self.totals_line {
                let totals = self.part_totals(part);
                let words: Vec<String> = totals.iter().map(u64::to_string).collect();
                let _ = writeln!(out, "totals: {}", words.join(" "));
            }
        }
        if !self.totals_line {
            // Only callgrind's own files must end in `totals:`.
            out = out.replace("creator: callgrind-3.22.0", "creator: a converter");
        }
        if self.crlf {
            out = out.replace('\n', "\r\n");
        }
        out.into_bytes()
    }

    fn positions_text(&self, pos: &[u64], last: &mut Option<Vec<u64>>) -> String {
        let words: Vec<String> = pos
            .iter()
            .enumerate()
            .map(|(j, &p)| match last.as_ref().map(|l| l[j]) {
                Some(l) if self.relative && l == p => "*".to_string(),
                Some(l) if self.relative && p > l => format!("+{}", p - l),
                Some(l) if self.relative => format!("-{}", l - p),
                // Hex as callgrind writes instruction addresses.
                _ if j == 0 && self.positions == 2 => format!("0x{p:x}"),
                _ => p.to_string(),
            })
            .collect();
        *last = Some(pos.to_vec());
        words.join(" ")
    }

    /// Self cost of a function, per event.
    fn self_cost(&self, i: usize) -> Vec<u64> {
        let mut v = vec![0; self.events.len()];
        for (_, costs) in &self.functions[i].lines {
            for (d, c) in v.iter_mut().zip(costs) {
                *d += c;
            }
        }
        v
    }

    fn part_totals(&self, part: &[usize]) -> Vec<u64> {
        let mut v = vec![0; self.events.len()];
        for &i in part {
            for (d, c) in v.iter_mut().zip(self.self_cost(i)) {
                *d += c;
            }
        }
        v
    }
}

fn check_consistent(p: &Profile) {
    let n = p.events.len();
    assert!(n > 0 && n <= 64, "{n} events");
    assert_eq!(p.totals.len(), n);
    for f in &p.functions {
        assert_eq!(f.self_cost.len(), n, "{f:?}");
        assert_eq!(f.inclusive.len(), n, "{f:?}");
        for (s, i) in f.self_cost.iter().zip(&f.inclusive) {
            assert!(i >= s, "inclusive below self: {f:?}");
        }
    }
}

fn check_refused(e: &ParseError, data: &[u8]) {
    let lines = data.split(|b| *b == b'\n').count();
    assert_eq!(e.file, "fuzz.out");
    assert!(
        (1..=lines).contains(&e.line),
        "line {} of {lines}: {e}",
        e.line
    );
    assert!(!e.message.is_empty());
}

/// Lines that mean something to the parser, placed where they do not belong.
const CALLGRIND_LINES: &[&[u8]] = &[
    b"events: Ir",
    b"events: Ir Dr Dw I1mr Bc Bcm X Y Z",
    b"events: Ir Ir",
    b"events:",
    b"positions: instr line",
    b"positions: bogus",
    b"positions:",
    b"version: 2",
    b"version: x",
    b"creator: callgrind-3.22.0",
    b"summary: 1 2 3",
    b"totals: 18446744073709551615 18446744073709551615",
    b"totals: 1 2 3 4 5 6 7 8 9 10",
    b"part: 2",
    b"fn=(1)",
    b"fn=(999999)",
    b"fn=(12",
    b"fn=(18446744073709551616) x",
    b"fl=(3) y.c",
    b"cfn=(1)",
    b"cfn=",
    b"cob=(7)",
    b"calls=1",
    b"calls=1 0x10",
    b"calls=18446744073709551615 1",
    b"jump=1 +2",
    b"jcnd=1/2 *",
    b"jcnd=/ *",
    b"fi=(1)",
    b"fe=(2) z.h",
    b"jfi=(9) j.c",
    b"jfn=(9) j",
    b"bogus=1",
    b"0x 1",
    b"+1 18446744073709551615 18446744073709551615",
    b"* 1 2 3 4 5 6 7 8 9 10",
    b"-99999999999999999999 1",
    b"0 1 2",
];

proptest! {
    #![proptest_config(config(384))]

    /// A valid file parses to the totals, self costs and call counts the
    /// generator wrote, whatever the compression and layout.
    #[test]
    fn generated_files_parse_to_their_costs(g in gen_file()) {
        let data = g.write();
        let p = parse_reader(data.as_slice(), "fuzz.out")
            .unwrap_or_else(|e| panic!("{e}\n{}", String::from_utf8_lossy(&data)));
        check_consistent(&p);
        prop_assert_eq!(&p.events, &g.events);
        prop_assert_eq!(p.parts, g.parts.len());
        let all: Vec<usize> = (0..g.functions.len()).collect();
        prop_assert_eq!(&p.totals, &g.part_totals(&all));
        for i in 0..g.functions.len() {
            let name = fn_name(i);
            let f = p.functions.iter().find(|f| f.function == name).expect("every function");
            prop_assert_eq!(&f.self_cost, &g.self_cost(i));
            prop_assert_eq!(&f.object, &format!("/lib/obj{}.so", g.functions[i].obj));
            let calls: u64 = g
                .functions
                .iter()
                .flat_map(|c| &c.calls)
                .filter(|(callee, _, _)| *callee == i)
                .map(|(_, n, _)| n)
                .sum();
            prop_assert_eq!(f.calls, calls);
        }
    }

    /// A damaged file gives a consistent profile or an error on one of its lines.
    #[test]
    fn damaged_files_are_parsed_or_refused(g in gen_file(), m in mutations(CALLGRIND_LINES)) {
        let data = apply(&g.write(), &m);
        let checked = data.clone();
        let result = within(CASE_LIMIT, move || parse_reader(data.as_slice(), "fuzz.out"));
        match result {
            Ok(p) => check_consistent(&p),
            Err(e) => check_refused(&e, &checked),
        }
    }

    /// Arbitrary bytes, for what no generator thought of.
    #[test]
    fn arbitrary_bytes_are_parsed_or_refused(data in prop::collection::vec(any::<u8>(), 0..512)) {
        match parse_reader(data.as_slice(), "fuzz.out") {
            Ok(p) => check_consistent(&p),
            Err(e) => check_refused(&e, &data),
        }
    }
}

// ------------------------------------------------------------- /proc/stat

/// A `/proc/stat` line's ten fields (user … guest_nice).
fn stat_line(label: &str, f: &[u64; 10]) -> String {
    let words: Vec<String> = f.iter().map(u64::to_string).collect();
    format!("{label} {}\n", words.join(" "))
}

fn stat_fields() -> impl Strategy<Value = [u64; 10]> {
    // Mostly realistic tick counts, sometimes anything up to u64::MAX.
    prop_oneof![
        4 => prop::array::uniform10(0u64..(1 << 40)),
        1 => prop::array::uniform10(any::<u64>()),
    ]
}

const STAT_LINES: &[&[u8]] = &[
    b"cpu",
    b"cpu 1 2 3",
    b"cpu 1 2 3 4",
    b"cpu0 1 2 3 4 5 6 7 8 9 10",
    b"cpux 1 2 3 4",
    b"cpu18446744073709551616 1 2 3 4",
    b"cpu 18446744073709551615 18446744073709551615 18446744073709551615 18446744073709551615",
    b"intr 1 2 3",
    b"ctxt 99",
    b"btime 1700000000",
    b"procs_running 3",
];

proptest! {
    #![proptest_config(config(1024))]

    /// The fields written are the fields read; sums that do not fit in
    /// 64 bits are refused, not wrapped or panicked on.
    #[test]
    fn proc_stat_reads_back_its_fields(total in stat_fields(), cpus in prop::collection::vec(stat_fields(), 0..8)) {
        let mut text = stat_line("cpu ", &total);
        for (i, f) in cpus.iter().enumerate() {
            text.push_str(&stat_line(&format!("cpu{i}"), f));
        }
        text.push_str("intr 12345 0 0\nctxt 999\nbtime 1700000000\n");
        let fits = |f: &[u64; 10]| {
            let user = f[0].checked_add(f[1]);
            let system = f[2].checked_add(f[5]).and_then(|s| s.checked_add(f[6]));
            match (user, system) {
                (Some(u), Some(s)) => [u, s, f[3], f[4], f[7]]
                    .iter()
                    .try_fold(0u64, |a, b| a.checked_add(*b))
                    .is_some(),
                _ => false,
            }
        };
        match CpuTimes::parse(&text) {
            Ok(t) => {
                prop_assert!(fits(&total) && cpus.iter().all(fits));
                prop_assert_eq!(t.total.user, total[0] + total[1]);
                prop_assert_eq!(t.total.system, total[2] + total[5] + total[6]);
                prop_assert_eq!(t.total.idle, total[3]);
                prop_assert_eq!(t.total.iowait, total[4]);
                prop_assert_eq!(t.total.steal, total[7]);
                prop_assert_eq!(t.per_cpu.len(), cpus.len());
                for (i, (cpu, ticks)) in t.per_cpu.iter().enumerate() {
                    prop_assert_eq!(*cpu, i);
                    prop_assert_eq!(ticks.idle, cpus[i][3]);
                }
                let _ = t.usage_until(&t);
            }
            Err(e) => {
                prop_assert!(!(fits(&total) && cpus.iter().all(fits)), "{e}");
                prop_assert!(e.to_string().contains("64 bits"), "{e}");
            }
        }
    }

    /// Damaged `/proc/stat` text parses or is refused; two readings of it
    /// give shares in 0..=1 or none.
    #[test]
    fn damaged_proc_stat_is_parsed_or_refused(
        a in stat_fields(),
        b in stat_fields(),
        m in mutations(STAT_LINES),
    ) {
        let before = format!("{}{}", stat_line("cpu ", &a), stat_line("cpu0", &a));
        let after = apply(format!("{}{}", stat_line("cpu ", &b), stat_line("cpu0", &b)).as_bytes(), &m);
        let after = String::from_utf8_lossy(&after);
        if let (Ok(x), Ok(y)) = (CpuTimes::parse(&before), CpuTimes::parse(&after)) {
            if let Some(u) = x.usage_until(&y) {
                for s in std::iter::once(&u.total).chain(u.per_cpu.iter().map(|(_, s)| s)) {
                    for v in [s.user, s.system, s.idle, s.iowait, s.steal] {
                        prop_assert!((0.0..=1.0).contains(&v), "{v} in {s:?}");
                    }
                }
            }
        }
    }
}
