//! Times the in-process fingerprint capture (with the counter probe that
//! every run does): `capture_time [N] [ROOT]`.
//! Prints the median, min and max of N captures in milliseconds, and the
//! number of facts. The first capture is reported separately (it may run
//! `ld.so --list-diagnostics` once to fill the on-disk cache).
use perfsleuth_env::Source;
use perfsleuth_runner::capture_environment as capture;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(200);
    let src = match args.next() {
        Some(root) => Source::root(root),
        None => Source::live(),
    };
    let t = Instant::now();
    let first = capture(&src);
    let first_ms = t.elapsed().as_secs_f64() * 1e3;
    let mut times: Vec<f64> = (0..n)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(capture(&src));
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    println!(
        "facts {}  first {:.3} ms  then median {:.3} ms  min {:.3}  max {:.3}  (n = {n})",
        first.facts.len(),
        first_ms,
        times[n / 2],
        times[0],
        times[n - 1]
    );
}
