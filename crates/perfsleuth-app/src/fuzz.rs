//! Fuzz targets for what the binary parses itself: the `compare --config`
//! TOML file and the option values of `crate::parse` (durations,
//! percentages, `--param`, `--ignore-failure`, `--parameter-scan`). They
//! live in the binary crate because these items are private to it.
//!
//! A generated config file gives the options written into it, or a usage
//! error when a value is out of range; damaged files (and deeply nested
//! TOML) are a usage error, never a panic. Each option parser returns
//! values in its documented range or an error, whatever the text.
//! `PERFSLEUTH_FUZZ_SCALE=K` runs K times the default cases, `PROPTEST_CASES=N`
//! exactly N (`bench/fuzz.sh` runs every target so).

use crate::options::VerdictOptions;
use crate::parse;
use crate::verdict::options;
use perfsleuth_model::Metric;
use perfsleuth_testkit::fuzz::{CASE_LIMIT, NUMBERS, apply, config, mutations, within};
use proptest::prelude::*;
use std::path::PathBuf;

fn args(config: PathBuf) -> VerdictOptions {
    VerdictOptions {
        alpha: None,
        threshold: None,
        metric: vec![],
        config: Some(config),
        fail_on: None,
        allow_missing: false,
        require_same_env: false,
        no_history: false,
    }
}

/// A TOML basic string: escapes for what TOML forbids raw (quote,
/// backslash, control characters but tab, DEL).
fn toml_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push('\t'),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A TOML float: `{:?}` always has a `.` or an exponent, and the specials
/// are spelt as TOML spells them.
fn toml_float(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{v:?}")
    }
}

#[derive(Debug, Clone)]
enum Threshold {
    Fraction(f64),
    Text(String),
}

#[derive(Debug, Clone)]
struct Section {
    alpha: Option<f64>,
    threshold: Option<Threshold>,
    gating: Option<Vec<String>>,
}

fn number() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => 0.0001f64..0.9999,
        1 => prop::sample::select(vec![0.0, 1.0, -0.5, 2.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 5e-324, 1e300]),
        1 => any::<f64>(),
    ]
}

fn section() -> impl Strategy<Value = Section> {
    let metric = prop_oneof![
        4 => prop::sample::select(Metric::names()).prop_map(str::to_string),
        1 => prop::sample::select(vec!["speed", "WALL", "", " wall"]).prop_map(str::to_string),
        1 => any::<String>(),
    ];
    let threshold = prop_oneof![
        number().prop_map(Threshold::Fraction),
        prop_oneof![
            (0.001f64..99.9).prop_map(|p| format!("{p}%")),
            (0.001f64..99.9).prop_map(|p| format!("{p}")),
            prop::sample::select(vec!["0%", "100%", "-1%", "NaN%", "inf", "2 %", "%", ""])
                .prop_map(str::to_string),
            any::<String>(),
        ]
        .prop_map(Threshold::Text),
    ];
    (
        prop::option::of(number()),
        prop::option::of(threshold),
        prop::option::of(prop::collection::vec(metric, 0..3)),
    )
        .prop_map(|(alpha, threshold, gating)| Section {
            alpha,
            threshold,
            gating,
        })
}

impl Section {
    fn write(&self, out: &mut String) {
        if let Some(a) = self.alpha {
            out.push_str(&format!("alpha = {}\n", toml_float(a)));
        }
        match &self.threshold {
            Some(Threshold::Fraction(f)) => {
                out.push_str(&format!("threshold = {}\n", toml_float(*f)))
            }
            Some(Threshold::Text(t)) => out.push_str(&format!("threshold = {}\n", toml_string(t))),
            None => {}
        }
        if let Some(g) = &self.gating {
            let items: Vec<String> = g.iter().map(|m| toml_string(m)).collect();
            out.push_str(&format!("gating = [{}]\n", items.join(", ")));
        }
    }

    /// Whether every value is one `options` accepts.
    fn valid(&self) -> bool {
        let alpha = self.alpha.is_none_or(|a| a > 0.0 && a < 1.0);
        let threshold = match &self.threshold {
            None => true,
            Some(Threshold::Fraction(f)) => *f > 0.0 && *f < 1.0,
            Some(Threshold::Text(t)) => parse::percent(t).is_ok(),
        };
        let gating = self
            .gating
            .iter()
            .flatten()
            .all(|m| Metric::parse(m).is_some());
        alpha && threshold && gating
    }

    fn fraction(&self) -> Option<f64> {
        match &self.threshold {
            Some(Threshold::Fraction(f)) => Some(*f),
            Some(Threshold::Text(t)) => parse::percent(t).ok(),
            None => None,
        }
    }
}

fn config_file() -> impl Strategy<Value = (Section, Vec<(String, Section)>)> {
    (
        section(),
        prop::collection::btree_map(
            prop_oneof!["[a-z ./]{1,12}", any::<String>()],
            section(),
            0..3,
        )
        .prop_map(|m| m.into_iter().collect::<Vec<_>>()),
    )
}

fn write_config(top: &Section, benches: &[(String, Section)]) -> String {
    let mut out = String::from("# perfsleuth.toml\n[compare]\n");
    top.write(&mut out);
    for (name, s) in benches {
        out.push_str(&format!("\n[compare.benchmark.{}]\n", toml_string(name)));
        s.write(&mut out);
    }
    out
}

const TOML_LINES: &[&[u8]] = &[
    b"[compare]",
    b"[compare.benchmark]",
    b"[compare.benchmark.\"x\"]",
    b"[[compare]]",
    b"[other]",
    b"alpha = 0.05",
    b"alpha = \"0.05\"",
    b"alpha = nan",
    b"alpha = 1e999",
    b"alpha = 99999999999999999999",
    b"threshold = \"2%\"",
    b"threshold = [1]",
    b"threshold = {a = 1}",
    b"gating = \"wall\"",
    b"gating = [1, 2]",
    b"alpa = 0.01",
    b"compare = 1",
    b"a = \"\\ud800\"",
    b"a = '''",
    b"a = \"\"\"",
    b"a = 1979-05-27T07:32:00Z",
    b"a.b.c.d.e.f = 1",
];

proptest! {
    #![proptest_config(config(128))]

    /// A config file gives the options written into it, or a usage error
    /// exactly when one of its values is out of range.
    #[test]
    fn config_files_give_their_options((top, benches) in config_file()) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("perfsleuth.toml");
        let text = write_config(&top, &benches);
        std::fs::write(&path, &text).expect("write the config");
        let valid = top.valid() && benches.iter().all(|(_, s)| s.valid());
        match options(&args(path)) {
            Ok(opts) => {
                prop_assert!(valid, "accepted:\n{}", text);
                if let Some(a) = top.alpha {
                    prop_assert_eq!(opts.rule.alpha, a);
                }
                if let Some(f) = top.fraction() {
                    prop_assert_eq!(opts.rule.noise_threshold, f);
                }
                if let Some(g) = &top.gating {
                    let want: Vec<Metric> = g.iter().filter_map(|m| Metric::parse(m)).collect();
                    prop_assert_eq!(&opts.gating, &want);
                }
                prop_assert_eq!(opts.per_benchmark.len(), benches.len());
                for (name, s) in &benches {
                    let b = &opts.per_benchmark[name];
                    prop_assert_eq!(b.alpha, s.alpha);
                    prop_assert_eq!(b.threshold, s.fraction());
                }
            }
            Err(e) => {
                prop_assert!(!valid, "refused: {}\n{}", e.message, text);
                prop_assert!(!e.message.is_empty());
            }
        }
    }

    /// Damaged config files: options or a usage error, never a panic.
    #[test]
    fn damaged_config_files_are_read_or_refused(
        (top, benches) in config_file(),
        m in mutations(TOML_LINES),
        depth in prop_oneof![Just(0usize), 1usize..5000],
    ) {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("perfsleuth.toml");
        let mut text = apply(write_config(&top, &benches).as_bytes(), &m);
        if depth > 0 {
            // Deep nesting: a recursive parser must refuse it, not overflow its stack.
            let nested = format!("\nx = {}1{}\n", "[".repeat(depth), "]".repeat(depth));
            text.extend_from_slice(nested.as_bytes());
        }
        std::fs::write(&path, &text).expect("write the config");
        within(CASE_LIMIT, move || {
            let _ = options(&args(path));
        });
    }
}

/// Text that looks like an option value: numbers, units, signs, junk.
fn value_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => (
            prop::sample::select(NUMBERS),
            prop::sample::select(vec!["", "s", "ms", "us", "µs", "ns", "m", "min", "h", "%", " s", "sec", "x"]),
        )
            .prop_map(|(n, u)| format!("{}{u}", String::from_utf8_lossy(n))),
        2 => (0u64..1_000_000, 0u32..1000, prop::sample::select(vec!["", "ms", "s", "%", "h"]))
            .prop_map(|(a, b, u)| format!("{a}.{b}{u}")),
        1 => any::<String>(),
    ]
}

/// A number as `--parameter-scan` gets it: any f64, in either notation.
fn scan_text() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => value_text(),
        1 => any::<f64>().prop_map(|v| format!("{v:e}")),
        1 => any::<f64>().prop_map(|v| format!("{v}")),
        1 => (-1000i32..1000).prop_map(|v| v.to_string()),
    ]
}

proptest! {
    #![proptest_config(config(2048))]

    /// Durations are above zero and at most 1e9 s, or an error.
    #[test]
    fn durations_are_in_range_or_refused(s in value_text()) {
        if let Ok(d) = parse::duration(&s) {
            prop_assert!(!d.is_zero() && d.as_secs_f64() <= 1e9, "{:?} from {:?}", d, s);
        }
    }

    /// Percentages are fractions in (0, 1); positive numbers are positive and finite.
    #[test]
    fn percentages_and_numbers_are_in_range_or_refused(s in value_text()) {
        if let Ok(p) = parse::percent(&s) {
            prop_assert!(p > 0.0 && p < 1.0, "{} from {:?}", p, s);
        }
        if let Ok(v) = parse::positive_number(&s) {
            prop_assert!(v.is_finite() && v > 0.0, "{} from {:?}", v, s);
        }
    }

    /// `--param` gives 2 to 1000 distinct positive values, or an error.
    #[test]
    fn scale_params_are_in_range_or_refused(
        name in prop_oneof![Just("threads".to_string()), "[a-z_]{0,6}", any::<String>()],
        items in prop::collection::vec(
            prop_oneof![
                value_text(),
                (0u64..2000, 0u64..2000).prop_map(|(a, b)| format!("{a}..{b}")),
                (any::<u64>(), any::<u64>()).prop_map(|(a, b)| format!("{a}..{b}")),
            ],
            0..6,
        ),
    ) {
        let spec = format!("{name}={}", items.join(","));
        if let Ok((_, values)) = parse::scale_param(&spec) {
            prop_assert!((2..=1000).contains(&values.len()), "{} values from {:?}", values.len(), spec);
            for (i, (_, v)) in values.iter().enumerate() {
                prop_assert!(v.is_finite() && *v > 0.0);
                prop_assert!(values[..i].iter().all(|(_, w)| w != v));
            }
        }
    }

    /// `--ignore-failure=CODES` and `--parameter-scan MIN MAX --step S`:
    /// codes 1–255 and at most 100 000 values, or an error.
    #[test]
    fn codes_and_scans_are_in_range_or_refused(
        codes in prop::option::of(prop_oneof![value_text(), "[0-9,]{0,12}"]),
        min in scan_text(),
        max in scan_text(),
        step in prop::option::of(scan_text()),
    ) {
        let _ = parse::ignore_failure(codes.as_deref());
        let scan = within(CASE_LIMIT, move || parse::scan_values(&min, &max, step.as_deref()));
        if let Ok(values) = scan {
            prop_assert!(!values.is_empty() && values.len() <= 100_000);
        }
    }
}
