//! Fuzz targets for the probe crate's text parsers: `parse_size` (cache
//! sizes as the fingerprint writes them, or a user's `--max-buffer`) and
//! `parse_names` (`--probes`). A size written with a unit reads back as
//! its bytes or, beyond `u64`, as `None`; no text panics.
//! `PERFSLEUTH_FUZZ_SCALE=K` runs K times the default cases, `PROPTEST_CASES=N`
//! exactly N (`bench/fuzz.sh` runs every target so).

use perfsleuth_probe::{parse_names, parse_size};
use perfsleuth_testkit::fuzz::{NUMBERS, apply, config, mutations};
use proptest::prelude::*;

const UNITS: [(&str, u64); 12] = [
    ("", 1),
    ("b", 1),
    ("bytes", 1),
    ("K", 1 << 10),
    ("KB", 1 << 10),
    ("KiB", 1 << 10),
    ("m", 1 << 20),
    ("MB", 1 << 20),
    ("MiB", 1 << 20),
    ("G", 1 << 30),
    ("gb", 1 << 30),
    ("GiB", 1 << 30),
];

proptest! {
    #![proptest_config(config(2048))]

    /// `N UNIT` is N × the unit's bytes, or `None` when that passes `u64`
    /// (or N is 0).
    #[test]
    fn sizes_read_back_their_bytes(
        n in prop_oneof![0u64..100_000, any::<u64>()],
        unit in prop::sample::select(UNITS.to_vec()),
        space in prop::sample::select(vec!["", " ", "  ", "\t"]),
    ) {
        let text = format!(" {n}{space}{} ", unit.0);
        let want = n.checked_mul(unit.1).filter(|_| n > 0);
        prop_assert_eq!(parse_size(&text), want, "{:?}", text);
    }

    /// Damaged sizes and arbitrary text: a number or `None`, no panic.
    #[test]
    fn damaged_sizes_are_parsed_or_refused(
        n in any::<u64>(),
        unit in prop::sample::select(UNITS.to_vec()),
        m in mutations(NUMBERS),
        junk in ".{0,40}",
    ) {
        let text = apply(format!("{n} {}", unit.0).as_bytes(), &m);
        let _ = parse_size(&String::from_utf8_lossy(&text));
        let _ = parse_size(&junk);
    }

    /// `--probes` lists: known names resolve in the suite's order, without
    /// duplicates; anything else is an error naming the word.
    #[test]
    fn probe_lists_resolve_or_name_the_unknown_word(words in prop::collection::vec(
        prop_oneof![
            prop::sample::select(vec!["all", "ALL", "memory", "Syscall", ",", " , ", ""]).prop_map(str::to_string),
            ".{0,12}",
        ],
        0..6,
    )) {
        match parse_names(&words) {
            Ok(names) => {
                let mut sorted = names.clone();
                sorted.dedup();
                prop_assert_eq!(sorted.len(), names.len());
            }
            Err(e) => prop_assert!(words.iter().any(|w| w.contains(e.name.as_str()))),
        }
    }
}
