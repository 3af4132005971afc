//! Parsers for option values; each error says what was wrong and what would work.

use perfsleuth_measure::Tolerate;
use std::time::Duration;

/// Parses `500ms`, `1.5s`, `2m`, `250us`, `100ns` or a bare number of seconds.
pub fn duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration `{s}` (use e.g. 500ms, 2s, 1.5m)"))?;
    let scale = match unit.trim() {
        "" | "s" | "sec" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{s}` (use ns, us, ms, s, m, h or d)"
            ));
        }
    };
    let secs = value * scale;
    if !secs.is_finite() || secs > 1e9 {
        return Err(format!("duration `{s}` is too large (at most 1e9 s)"));
    }
    if secs <= 0.0 {
        return Err(format!("duration `{s}` must be positive"));
    }
    let d = Duration::from_secs_f64(secs);
    // Positive but under a nanosecond rounds to zero.
    if d.is_zero() {
        return Err(format!("duration `{s}` is shorter than 1 ns"));
    }
    Ok(d)
}

/// Parses a finite number greater than zero (`2e6` and `2_000_000` both work).
pub fn positive_number(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .replace('_', "")
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("`{s}` must be a positive number"))
    }
}

/// Most concurrency levels `scale` accepts.
const MAX_LEVELS: usize = 1000;

/// Parses `scale --param NAME=VALUES`: comma-separated numbers and integer
/// ranges `A..B`, e.g. `threads=1,2,4..8`. Returns the name and the values
/// as written (they are substituted into the command) with their numbers.
pub fn scale_param(spec: &str) -> Result<(String, Vec<(String, f64)>), String> {
    let (name, values) = spec.split_once('=').ok_or_else(|| {
        format!("--param `{spec}` has no `=`: write NAME=VALUES, e.g. threads=1,2,4,8")
    })?;
    let name = name.trim();
    if name.is_empty() || !name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return Err(format!(
            "invalid parameter name `{name}`: use letters, digits and _"
        ));
    }
    let mut out: Vec<(String, f64)> = Vec::new();
    for item in values.split(',') {
        let item = item.trim();
        if item.is_empty() {
            return Err(format!("--param {name} has an empty value in `{values}`"));
        }
        if let Some((a, b)) = item.split_once("..") {
            let parse = |t: &str| {
                t.trim().parse::<u64>().map_err(|_| {
                    format!("range `{item}` needs whole numbers on both sides, e.g. 1..16")
                })
            };
            let (a, b) = (parse(a)?, parse(b)?);
            if a == 0 || a > b {
                return Err(format!(
                    "range `{item}` must go up from at least 1, e.g. 1..16"
                ));
            }
            if b - a >= MAX_LEVELS as u64 {
                return Err(format!("range `{item}` has more than {MAX_LEVELS} values"));
            }
            out.extend((a..=b).map(|v| (v.to_string(), v as f64)));
        } else {
            let v: f64 = item
                .parse()
                .map_err(|_| format!("--param {name} value `{item}` is not a number"))?;
            if !(v.is_finite() && v > 0.0) {
                return Err(format!(
                    "--param {name} value `{item}` must be greater than zero"
                ));
            }
            out.push((item.to_string(), v));
        }
        if out.len() > MAX_LEVELS {
            return Err(format!("--param {name} has more than {MAX_LEVELS} values"));
        }
    }
    for (i, (text, v)) in out.iter().enumerate() {
        if out[..i].iter().any(|(_, w)| w == v) {
            return Err(format!("--param {name} lists {text} twice"));
        }
    }
    if out.len() < 2 {
        return Err(format!(
            "--param {name} has one value: scaling needs several, e.g. {name}=1,2,4,8"
        ));
    }
    Ok((name.to_string(), out))
}

/// Parses a percentage such as `1`, `0.5` or `2%` into a fraction.
pub fn percent(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("invalid percentage `{s}` (use e.g. 1 or 0.5%)"))?;
    // Checked after dividing: 5e-324 % is positive, its fraction is 0.
    let f = v / 100.0;
    if !(f > 0.0 && v < 100.0) {
        return Err(format!("percentage `{s}` must be between 0 and 100"));
    }
    Ok(f)
}

/// Parses `--min-change` and `--precision`: a percentage (`2`, `2%`,
/// `0.5%`) into a fraction; unlike [`percent`], 0 is allowed (no floor, no
/// early stop).
pub fn percentage(s: &str) -> Result<f64, String> {
    if s.trim().trim_end_matches('%').parse::<f64>() == Ok(0.0) {
        return Ok(0.0);
    }
    percent(s)
}

/// Parses a probability strictly between 0 and 1 (`--max-p`).
pub fn probability(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("invalid probability `{s}` (use e.g. 0.001)"))?;
    if !(v > 0.0 && v < 1.0) {
        return Err(format!("probability `{s}` must be between 0 and 1"));
    }
    Ok(v)
}

/// Parses the `--ignore-failure[=CODES]` value (`None`: the option was not given).
pub fn ignore_failure(v: Option<&str>) -> Result<Tolerate, String> {
    match v {
        None => Ok(Tolerate::Nothing),
        // hyperfine 1.20 spells "every non-zero exit" `all-non-zero`.
        Some("all" | "all-non-zero") => Ok(Tolerate::Everything),
        Some("") => Err("--ignore-failure= needs codes after `=` (e.g. --ignore-failure=1,2), or drop the `=` to ignore every failure".into()),
        Some(list) => list
            .split(',')
            .map(|c| {
                c.trim().parse::<i32>().ok().filter(|c| (1..=255).contains(c)).ok_or_else(|| {
                    format!("invalid exit code `{c}` in --ignore-failure={list} (use codes 1-255, e.g. --ignore-failure=1,2)")
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Tolerate::ExitCodes),
    }
}

/// Expands `--parameter-scan VAR MIN MAX [--step S]` into its values, printed
/// without float noise (`0.1, 0.2, 0.3`, not `0.30000000000000004`).
pub fn scan_values(min: &str, max: &str, step: Option<&str>) -> Result<Vec<String>, String> {
    let num = |s: &str, what: &str| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("--parameter-scan {what} `{s}` is not a number"))
    };
    let (lo, hi) = (num(min, "MIN")?, num(max, "MAX")?);
    let step_v = match step {
        Some(s) => num(s, "--step")?,
        None => 1.0,
    };
    if step_v <= 0.0 {
        return Err("--step must be positive".into());
    }
    if lo > hi {
        return Err(format!(
            "--parameter-scan MIN {min} is greater than MAX {max}"
        ));
    }
    // In floating point: `1 1e308` or `--step 1e-300` is a count no
    // integer holds (and `as u64` would saturate, then overflow).
    let steps = ((hi - lo) / step_v + 1e-9).floor();
    if steps.is_nan() || steps >= 100_000.0 {
        let count = if steps.is_finite() && steps < 1e15 {
            format!("{}", steps as u64 + 1)
        } else {
            format!("{:.1e}", steps + 1.0)
        };
        return Err(format!(
            "--parameter-scan would make {count} benchmarks (at most 100000)"
        ));
    }
    let count = steps as u64 + 1;
    let decimals = [min, max, step.unwrap_or("1")]
        .iter()
        .map(|s| s.trim().split_once('.').map_or(0, |(_, f)| f.len()))
        .max()
        .unwrap_or(0);
    let values: Vec<String> = (0..count)
        .map(|i| format!("{:.*}", decimals, lo + i as f64 * step_v))
        .collect();
    // A step below the numbers' precision repeats values (`1e16 … --step 1`).
    if let Some(w) = values.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!(
            "--parameter-scan repeats the value {}: the step is below the precision of {min} … {max}",
            w[0]
        ));
    }
    Ok(values)
}

/// A byte size for options such as `--body-limit`: "32MiB", "512 KiB", "1048576".
pub fn byte_size(s: &str) -> Result<u64, String> {
    perfsleuth_probe::parse_size(s).ok_or_else(|| {
        format!("`{s}` is not a size: give bytes or a number with KiB, MiB or GiB (e.g. 32MiB)")
    })
}

/// `--listen`: an address and port, a host name resolved to its first
/// address ("localhost:8080"), or a bare port on loopback (":8080").
pub fn listen_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs as _;
    let bad = || {
        format!(
            "`{s}` is not an address and port: give e.g. 127.0.0.1:8080, 0.0.0.0:8080 or localhost:8080"
        )
    };
    let text = match s.strip_prefix(':') {
        Some(port) => format!("127.0.0.1:{port}"),
        None => s.to_string(),
    };
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    text.to_socket_addrs()
        .map_err(|_| bad())?
        .next()
        .ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(duration("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(duration("250us"), Ok(Duration::from_micros(250)));
        assert!(duration("abc").is_err());
        assert!(duration("5 parsecs").is_err());
        assert!(duration("0").is_err());
        assert!(duration("-1s").is_err());
        assert!(
            duration("5000000000000h")
                .unwrap_err()
                .contains("too large")
        );
    }

    #[test]
    fn oversized_and_degenerate_scans_are_refused() {
        for (min, max, step) in [
            ("1", "1e308", None),
            ("0", "1", Some("1e-300")),
            ("0", "18446744073709551615", None),
            ("-1e308", "1e308", None),
        ] {
            let e = scan_values(min, max, step).unwrap_err();
            assert!(e.contains("at most 100000"), "{min} {max} {step:?}: {e}");
        }
        let e = scan_values("1e16", "1.0000000000000004e16", None).unwrap_err();
        assert!(e.contains("repeats"), "{e}");
        assert_eq!(scan_values("1", "3", None).unwrap(), ["1", "2", "3"]);
        assert_eq!(scan_values("-1", "1", None).unwrap(), ["-1", "0", "1"]);
    }

    #[test]
    fn ignore_failure_codes() {
        let exit = |code| perfsleuth_model::Sample {
            exit_code: Some(code),
            ..Default::default()
        };
        let killed = perfsleuth_model::Sample {
            signal: Some(11),
            ..Default::default()
        };
        assert_eq!(ignore_failure(None), Ok(Tolerate::Nothing));
        assert_eq!(ignore_failure(Some("all")), Ok(Tolerate::Everything));
        assert_eq!(
            ignore_failure(Some("all-non-zero")),
            Ok(Tolerate::Everything)
        );
        let codes = ignore_failure(Some("1,3")).unwrap();
        assert!(codes.accepts(&exit(3)) && codes.accepts(&exit(0)));
        assert!(!codes.accepts(&exit(2)));
        assert!(!codes.accepts(&killed));
        assert!(Tolerate::Everything.accepts(&killed));
        assert!(ignore_failure(Some("x")).is_err());
        assert!(ignore_failure(Some("0")).is_err());
        assert!(ignore_failure(Some("")).is_err());
    }

    #[test]
    fn scans() {
        assert_eq!(scan_values("1", "4", None).unwrap(), ["1", "2", "3", "4"]);
        assert_eq!(
            scan_values("0", "0.3", Some("0.1")).unwrap(),
            ["0.0", "0.1", "0.2", "0.3"]
        );
        assert_eq!(
            scan_values("10", "20", Some("5")).unwrap(),
            ["10", "15", "20"]
        );
        assert!(scan_values("5", "1", None).is_err());
        assert!(scan_values("1", "5", Some("0")).is_err());
        assert!(scan_values("a", "5", None).is_err());
    }

    #[test]
    fn a_scan_too_wide_for_u64_is_an_error_not_an_overflow() {
        // Found while writing src/fuzz.rs (which finds it too): the count
        // saturated to u64::MAX and `+ 1` overflowed (a panic in debug
        // builds, an empty scan in release).
        for (min, max, step) in [("-1e308", "1e308", None), ("0", "1", Some("1e-320"))] {
            let e = scan_values(min, max, step).unwrap_err();
            assert!(e.contains("at most 100000"), "{e}");
        }
    }

    #[test]
    fn values_that_round_to_zero_are_refused() {
        // Found by src/fuzz.rs: 5e-324 % is a fraction of 0, and 1e-10 ns a
        // duration of 0, both past the checks for "positive".
        assert!(percent("5e-324%").is_err());
        assert!(percent("1e-300").is_ok());
        assert!(duration("0.0000000001ns").is_err());
        assert_eq!(duration("1ns"), Ok(Duration::from_nanos(1)));
    }

    #[test]
    fn percents() {
        assert_eq!(percent("1"), Ok(0.01));
        assert_eq!(percent("0.5%"), Ok(0.005));
        assert!(percent("0").is_err());
        assert!(percent("x").is_err());
    }

    #[test]
    fn scale_params_lists_ranges_and_errors() {
        let (name, v) = scale_param("threads=1,2,4..6,8").expect("ok");
        assert_eq!(name, "threads");
        let nums: Vec<f64> = v.iter().map(|(_, n)| *n).collect();
        assert_eq!(nums, [1.0, 2.0, 4.0, 5.0, 6.0, 8.0]);
        assert_eq!(v[0].0, "1");
        assert_eq!(scale_param("n=1..3").expect("ok").1.len(), 3);
        let err = |s: &str| scale_param(s).expect_err(s);
        assert!(err("threads").contains("no `=`"));
        assert!(err("threads=4").contains("one value"));
        assert!(err("threads=1,two").contains("not a number"));
        assert!(err("threads=1,,2").contains("empty value"));
        assert!(err("threads=0,1").contains("greater than zero"));
        assert!(err("threads=-1,1").contains("greater than zero"));
        assert!(err("threads=4..1").contains("must go up"));
        assert!(err("threads=1..x").contains("whole numbers"));
        assert!(err("threads=1,2,1").contains("twice"));
        assert!(err("t-x=1,2").contains("invalid parameter name"));
        assert!(err("n=1..100000").contains("more than 1000"));
        assert_eq!(positive_number("2_000_000"), Ok(2e6));
        assert!(positive_number("0").is_err());
        assert!(positive_number("nan").is_err());
    }
}
