//! Fuzz targets for `scale fit FILE.csv`: `read_csv`, and what the binary
//! does with its observations (the USL fit, the terminal table, the JSON
//! document, the SVG chart).
//!
//! A generated file with k valid rows (any separator, decimal commas with
//! `;`, a header naming the columns anywhere or no header, quotes, a
//! byte-order mark, comments, CRLF) gives exactly k runs at the values
//! written; damaged files give valid observations or an error on one of
//! their lines; nothing downstream panics or hangs on what `read_csv`
//! accepts, however extreme the numbers.
//! `PERFSLEUTH_FUZZ_SCALE=K` runs K times the default cases, `PROPTEST_CASES=N`
//! exactly N (`bench/fuzz.sh` runs every target so).

use perfsleuth_scale::{Machine, Observation, analyze, chart, read_csv, render_terminal, to_json};
use perfsleuth_testkit::fuzz::{CASE_LIMIT, apply, config, mutations, within};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct GenCsv {
    sep: char,
    /// Column names (a header is written when set), N's and X's positions.
    header: Option<(Vec<String>, usize, usize)>,
    rows: Vec<(f64, f64, Vec<f64>)>,
    bom: bool,
    quote: bool,
    crlf: bool,
    comments: bool,
}

fn positive() -> impl Strategy<Value = f64> {
    prop_oneof![
        4 => (1u32..512).prop_map(f64::from),
        2 => 1e-3f64..1e9,
        1 => prop::sample::select(vec![f64::MIN_POSITIVE, 5e-324, 1e-300, 1e300, f64::MAX]),
    ]
}

fn gen_csv() -> impl Strategy<Value = GenCsv> {
    (
        prop::sample::select(vec![',', ';', '\t', ' ']),
        0usize..3,
        any::<bool>(),
        prop::collection::vec((positive(), positive()), 1..40),
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
    )
        .prop_flat_map(|(sep, extra, with_header, rows, flags)| {
            let width = 2 + extra;
            let order = Just((0..width).collect::<Vec<usize>>()).prop_shuffle();
            let names = (
                prop::sample::select(vec![
                    "N",
                    "n",
                    "Concurrency",
                    "threads",
                    "clients",
                    "load",
                    "size",
                ]),
                prop::sample::select(vec!["X", "x", "Throughput", "tput", "RATE"]),
            );
            let extras =
                prop::collection::vec(prop::collection::vec(0.5f64..100.0, extra), rows.len());
            (Just((sep, with_header, rows, flags)), order, names, extras)
        })
        .prop_map(
            |((sep, with_header, rows, flags), order, (nn, xn), extras)| {
                let width = order.len();
                let (nc, xc) = if with_header {
                    (order[0], order[1])
                } else {
                    (0, 1)
                };
                let header = with_header.then(|| {
                    let mut names: Vec<String> = (0..width).map(|i| format!("extra{i}")).collect();
                    names[nc] = nn.to_string();
                    names[xc] = xn.to_string();
                    (names, nc, xc)
                });
                GenCsv {
                    sep,
                    header,
                    rows: rows
                        .into_iter()
                        .zip(extras)
                        .map(|((n, x), e)| (n, x, e))
                        .collect(),
                    bom: flags.0,
                    quote: flags.1 && sep != ' ',
                    crlf: flags.2,
                    comments: flags.3,
                }
            },
        )
}

impl GenCsv {
    fn cell(&self, v: f64) -> String {
        // `{}` is the shortest text that reads back as the same f64.
        let mut s = format!("{v}");
        if self.sep == ';' {
            s = s.replace('.', ",");
        }
        if self.quote {
            s = format!("\"{s}\"");
        }
        s
    }

    fn write(&self) -> String {
        let sep = self.sep.to_string();
        let nl = if self.crlf { "\r\n" } else { "\n" };
        let mut out = String::new();
        if self.bom {
            out.push('\u{feff}');
        }
        if self.comments {
            out.push_str(&format!("# measured elsewhere{nl}{nl}"));
        }
        let (nc, xc) = match &self.header {
            Some((names, nc, xc)) => {
                out.push_str(&names.join(&sep));
                out.push_str(nl);
                (*nc, *xc)
            }
            None => (0, 1),
        };
        for (i, (n, x, extra)) in self.rows.iter().enumerate() {
            let width = 2 + extra.len();
            let mut extra = extra.iter();
            let cells: Vec<String> = (0..width)
                .map(|c| match c {
                    _ if c == nc => self.cell(*n),
                    _ if c == xc => self.cell(*x),
                    _ => self.cell(*extra.next().expect("one per other column")),
                })
                .collect();
            out.push_str(&cells.join(&sep));
            out.push_str(nl);
            if self.comments && i % 7 == 3 {
                out.push_str(&format!("  # a note{nl}"));
            }
        }
        out
    }
}

fn check_valid(obs: &[Observation]) {
    assert!(!obs.is_empty());
    for w in obs.windows(2) {
        assert!(w[0].n < w[1].n, "sorted by N, each N once");
    }
    for o in obs {
        assert!(o.n.is_finite() && o.n > 0.0);
        assert!(!o.runs.is_empty());
        for r in &o.runs {
            assert!(r.throughput.is_finite() && r.throughput > 0.0);
        }
    }
}

/// What `scale fit` does after reading the file: none of it may panic.
fn downstream(obs: &[Observation]) {
    let machine = Machine {
        usable: Some(4.0),
        ..Machine::default()
    };
    let a = analyze("N", obs, &machine);
    let _ = render_terminal(&a, false);
    let doc = to_json(&a, None);
    perfsleuth_model::schema::to_json_pretty(&doc).expect("the document serialises");
    let _ = perfsleuth_report::chart::scaling(&chart(&a, "fuzz"));
}

const CSV_LINES: &[&[u8]] = &[
    b"N,X",
    b"n;x",
    b"threads\tthroughput",
    b"a,b",
    b"1,2,3",
    b"1",
    b",",
    b";;",
    b"0,1",
    b"1,0",
    b"-1,5",
    b"NaN,1",
    b"1,inf",
    b"1e308,1e308",
    b"5e-324,5e-324",
    b"\"1\",\"2\"",
    b"1;2,5",
    b"1 2",
    b"\xef\xbb\xbfN,X",
];

proptest! {
    #![proptest_config(config(128))]

    /// k valid rows are k runs, at the values written, one observation per distinct N.
    #[test]
    fn generated_files_read_back_their_rows(g in gen_csv()) {
        let text = g.write();
        let obs = read_csv(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        check_valid(&obs);
        let runs: usize = obs.iter().map(|o| o.runs.len()).sum();
        prop_assert_eq!(runs, g.rows.len());
        let mut distinct: Vec<f64> = g.rows.iter().map(|r| r.0).collect();
        distinct.sort_by(f64::total_cmp);
        distinct.dedup();
        prop_assert_eq!(obs.len(), distinct.len());
        for (n, x, _) in &g.rows {
            let o = obs.iter().find(|o| o.n == *n).expect("every N");
            prop_assert!(o.runs.iter().any(|r| r.throughput == *x), "{} at {}", x, n);
        }
        within(CASE_LIMIT, move || downstream(&obs));
    }

    /// Damaged files: valid observations (and a pipeline that copes) or an
    /// error on one of their lines.
    #[test]
    fn damaged_files_are_read_or_refused(g in gen_csv(), m in mutations(CSV_LINES)) {
        let bytes = apply(g.write().as_bytes(), &m);
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let lines = text.lines().count();
        match read_csv(&text) {
            Ok(obs) => {
                check_valid(&obs);
                within(CASE_LIMIT, move || downstream(&obs));
            }
            Err(e) => prop_assert!(e.line <= lines, "{} of {}", e, lines),
        }
    }
}
