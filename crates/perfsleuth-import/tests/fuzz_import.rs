//! Fuzz target for `perfsleuth import` (issue 37): every format's parser
//! and the format detection, on real outputs of the tools (hyperfine 1.20,
//! pytest-benchmark 3.4, Google Benchmark, `go test -bench`, gungraun, BMF)
//! damaged by the shared mutations (truncated, bytes flipped, garbage lines,
//! huge numbers, invalid UTF-8, very long lines). Undamaged, each reads;
//! damaged, each gives benchmarks or a clean error — never a panic or a hang.
//! `PERFSLEUTH_FUZZ_SCALE=K` runs K times the default cases, `PROPTEST_CASES=N`
//! exactly N (`bench/fuzz.sh` runs every target so).

use perfsleuth_import::{Format, broken_json, detect, parse};
use perfsleuth_testkit::fuzz::{CASE_LIMIT, apply, config, mutations, within};
use proptest::prelude::*;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../perfsleuth/tests/fixtures");

/// Real outputs, each with the format it is in.
fn seeds() -> Vec<(Format, String)> {
    let read = |rel: &str| std::fs::read_to_string(format!("{FIXTURES}/{rel}")).unwrap();
    vec![
        (Format::Hyperfine, read("hyperfine/v1.20.0.json")),
        (Format::PytestBenchmark, read("pytest-benchmark/v3.4.1.json")),
        (
            Format::GoogleBenchmark,
            r#"{"context": {"date": "2026-12-02T18:34:05+00:00", "host_name": "vm", "num_cpus": 2,
              "caches": [{"type": "Data", "level": 1, "size": 49152, "num_sharing": 1}]},
              "benchmarks": [{"name": "BM_a/64", "run_name": "BM_a/64", "run_type": "iteration",
              "repetitions": 2, "repetition_index": 0, "threads": 1, "iterations": 100,
              "real_time": 21.5, "cpu_time": 21.0, "time_unit": "ns", "items": 64}]}"#
                .to_string(),
        ),
        (
            Format::GoTest,
            "goos: linux\ngoarch: amd64\npkg: example.com/fib\n\
             BenchmarkFib10-8   \t 3870352\t       309.9 ns/op\t       0 B/op\t       0 allocs/op\n\
             BenchmarkSort/size=100-8 \t   10000\t    104523 ns/op\t    12.00 swaps/op\n\
             PASS\nok  \texample.com/fib\t3.456s\n"
                .to_string(),
        ),
        (
            Format::Gungraun,
            "bench::fib short:10\n  Instructions:                1734|N/A             (*********)\n  \
             L1 Hits:                     2359|N/A             (*********)\n"
                .to_string(),
        ),
        (
            Format::Bmf,
            r#"{"sort/100": {"latency": {"value": 88.0, "lower_value": 87.4, "upper_value": 88.2}}}"#
                .to_string(),
        ),
    ]
}

const LINES: &[&[u8]] = &[
    b"{\"benchmarks\": [",
    b"\"mean\": 1e308,",
    b"\"times\": [1, 2, -3, NaN],",
    b"BenchmarkX-2 \t 1 \t 1e400 ns/op",
    b"  Instructions: 18446744073709551616|N/A",
    b"{\"a\": {\"latency\": {\"value\": 1e-320}}}",
    b"]}",
];

#[test]
fn every_real_output_reads_as_its_format() {
    for (format, text) in seeds() {
        let imported = parse(format, &text).unwrap_or_else(|e| panic!("{format:?}: {e}"));
        assert!(!imported.benchmarks.is_empty(), "{format:?}");
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Damaged outputs: detection and every parser answer without panicking.
    #[test]
    fn damaged_outputs_are_read_or_refused(pick in 0usize..6, m in mutations(LINES)) {
        let (_, seed) = seeds().swap_remove(pick);
        let bytes = apply(seed.as_bytes(), &m);
        within(CASE_LIMIT, move || {
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let _ = detect(&text);
            let _ = broken_json(&text);
            for format in Format::ALL {
                if let Ok(imported) = parse(format, &text) {
                    for b in &imported.benchmarks {
                        // What is accepted is usable: finite, non-negative times.
                        for s in &b.samples {
                            assert!(s.wall_exact_ns.is_none_or(|w| w.is_finite() && w >= 0.0));
                        }
                    }
                }
            }
        });
    }
}
