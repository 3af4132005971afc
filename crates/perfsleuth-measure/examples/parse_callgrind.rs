//! Parses callgrind output files, merges them, and prints the totals and the
//! top functions by inclusive cost of the first event.
//!
//! `cargo run --release -p perfsleuth-measure --example parse_callgrind -- FILE...`

use std::io::Write;

use perfsleuth_measure::callgrind::{Profile, parse_files};

fn main() {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: parse_callgrind FILE...");
        std::process::exit(2);
    }
    let start = std::time::Instant::now();
    let profile = match parse_files(&files) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let elapsed = start.elapsed();
    // A closed pipe (`| head`) just ends the output.
    let _ = print(&profile, elapsed);
}

fn print(profile: &Profile, elapsed: std::time::Duration) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "{} file(s), {} part(s), {} functions, parsed in {:.1} ms",
        profile.files_read,
        profile.parts,
        profile.functions.len(),
        elapsed.as_secs_f64() * 1e3
    )?;
    for (event, total) in profile.events.iter().zip(&profile.totals) {
        writeln!(out, "{event:>6} {total:>16}")?;
    }
    let Some(first) = profile.events.first() else {
        return Ok(());
    };
    writeln!(
        out,
        "\ntop 10 by inclusive {first} (inclusive / self / calls):"
    )?;
    for f in profile.top_by_inclusive(first, 10) {
        writeln!(
            out,
            "{:>16} {:>16} {:>10}  {} [{}]",
            f.inclusive[0], f.self_cost[0], f.calls, f.function, f.object
        )?;
    }
    Ok(())
}
