//! The workload of case B ("8 cores are slower than 4"): worker threads
//! that each process packets and count them, with the counters kept four
//! ways. Used to demonstrate `perfsleuth scale`:
//!
//! ```text
//! cargo build --release --example counters
//! perfsleuth scale --param threads=1..8 --work-per-thread 2000000 -- \
//!     target/release/examples/counters --mode mutex --threads {threads} --ops 2000000
//! ```
//!
//! Modes:
//! - `mutex`: one global counter behind one `Mutex` (the daemon before the fix);
//! - `atomic`: one shared `AtomicU64` (no lock, but the cache line still bounces);
//! - `padded`: one counter per thread, each on its own 128-byte-aligned line (the fix);
//! - `unpadded`: one counter per thread, packed together (false sharing).
//!
//! Prints `ops/s: X` and a JSON line `{"ops":…,"seconds":…,"ops_per_sec":…}`
//! so either `--throughput-regex` or `--throughput-json` can read it.

use std::hint::black_box;
use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Mutex,
    Atomic,
    Padded,
    Unpadded,
}

/// A counter alone on its cache line (128 bytes: adjacent-line prefetch pairs lines).
#[repr(align(128))]
struct Padded(AtomicU64);

fn main() {
    let (mode, threads, ops, rounds) = match parse(std::env::args().skip(1).collect()) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("counters: {e}");
            eprintln!(
                "usage: counters --mode mutex|atomic|padded|unpadded --threads N --ops OPS_PER_THREAD [--work ROUNDS]"
            );
            std::process::exit(2);
        }
    };
    let global = Mutex::new(0u64);
    let shared = AtomicU64::new(0);
    let padded: Vec<Padded> = (0..threads).map(|_| Padded(AtomicU64::new(0))).collect();
    let unpadded: Vec<AtomicU64> = (0..threads).map(|_| AtomicU64::new(0)).collect();

    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let (global, shared, padded, unpadded) = (&global, &shared, &padded, &unpadded);
            s.spawn(move || {
                let mut packet = 0x9e37_79b9_7f4a_7c15u64 ^ t as u64;
                for _ in 0..ops {
                    // "Parse a packet": a little private work per count.
                    packet = process(packet, rounds);
                    match mode {
                        Mode::Mutex => count_locked(global),
                        Mode::Atomic => {
                            shared.fetch_add(1, Ordering::Relaxed);
                        }
                        Mode::Padded => {
                            padded[t].0.fetch_add(1, Ordering::Relaxed);
                        }
                        Mode::Unpadded => {
                            unpadded[t].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
                black_box(packet);
            });
        }
    });
    let seconds = start.elapsed().as_secs_f64();

    let counted = match mode {
        Mode::Mutex => *global.lock().unwrap_or_else(|e| e.into_inner()),
        Mode::Atomic => shared.load(Ordering::Relaxed),
        Mode::Padded => padded.iter().map(|c| c.0.load(Ordering::Relaxed)).sum(),
        Mode::Unpadded => unpadded.iter().map(|c| c.load(Ordering::Relaxed)).sum(),
    };
    let total = ops * threads as u64;
    if counted != total {
        eprintln!("counters: counted {counted}, expected {total}");
        std::process::exit(1);
    }
    let rate = total as f64 / seconds;
    // A closed pipe (`| head -1`) is not an error worth a panic.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "ops/s: {rate:.1}");
    let _ = writeln!(
        out,
        "{{\"ops\":{total},\"seconds\":{seconds:.6},\"ops_per_sec\":{rate:.1}}}"
    );
}

/// Counts one packet under the global lock: its own function, so that
/// `run --locks` names the lock's call site (docs/LOCKS.md).
#[inline(never)]
fn count_locked(global: &Mutex<u64>) {
    *global.lock().unwrap_or_else(|e| e.into_inner()) += 1;
}

/// Private work per packet (a few cycles per round) that the compiler
/// cannot remove: how much of each operation happens outside the lock.
#[inline(never)]
fn process(mut x: u64, rounds: u32) -> u64 {
    for _ in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    black_box(x)
}

fn parse(args: Vec<String>) -> Result<(Mode, usize, u64, u32), String> {
    let (mut mode, mut threads, mut ops, mut rounds) = (None, None, None, None);
    let mut it = args.into_iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--mode" => {
                mode = Some(match value.as_str() {
                    "mutex" => Mode::Mutex,
                    "atomic" => Mode::Atomic,
                    "padded" => Mode::Padded,
                    "unpadded" => Mode::Unpadded,
                    other => return Err(format!("unknown mode `{other}`")),
                })
            }
            "--threads" => {
                threads = Some(
                    value
                        .parse::<usize>()
                        .ok()
                        .filter(|t| *t > 0)
                        .ok_or_else(|| {
                            format!("--threads must be a positive integer, got `{value}`")
                        })?,
                )
            }
            "--ops" => {
                ops = Some(
                    value
                        .parse::<u64>()
                        .ok()
                        .filter(|o| *o > 0)
                        .ok_or_else(|| {
                            format!("--ops must be a positive integer, got `{value}`")
                        })?,
                )
            }
            "--work" => {
                rounds = Some(
                    value
                        .parse::<u32>()
                        .map_err(|_| format!("--work must be a whole number, got `{value}`"))?,
                )
            }
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    Ok((
        mode.ok_or("--mode is required")?,
        threads.unwrap_or(1),
        ops.unwrap_or(1_000_000),
        rounds.unwrap_or(8),
    ))
}
