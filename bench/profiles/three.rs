//! The Rust twin of three.c for the profile studies (docs/PROFILES.md):
//! `alpha`, `beta` and `gamma` are inlined into `work` (#[inline(always)]),
//! so a profile can name them only from the line tables' inlining records;
//! each has its own loop (a macro, not a shared function), as three.c's do.
//! ALPHA and BETA (percent, read at build time from the environment,
//! default 100) scale alpha's and beta's work.
//! Usage: three [A B C]  (millions of iterations; default 40 30 30)

use std::hint::black_box;

fn percent(v: Option<&str>) -> u64 {
    v.and_then(|s| s.parse().ok()).unwrap_or(100)
}

/// A dependent multiply-add chain of `n` steps; black_box keeps the
/// optimiser from folding it.
macro_rules! spin {
    ($n:expr, $seed:expr) => {{
        let mut x = $seed;
        for i in 0..$n {
            x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
        }
        x
    }};
}

#[inline(always)]
fn alpha(n: u64, seed: u64) -> u64 {
    spin!(n * percent(option_env!("ALPHA")) / 100, seed)
}

#[inline(always)]
fn beta(n: u64, seed: u64) -> u64 {
    spin!(n * percent(option_env!("BETA")) / 100, seed ^ 1)
}

#[inline(always)]
fn gamma(n: u64, seed: u64) -> u64 {
    spin!(n, seed ^ 2)
}

#[inline(never)]
fn work(a: u64, b: u64, c: u64) -> u64 {
    let mut h = black_box(7u64);
    for _ in 0..20 {
        h = alpha(black_box(a / 20), h);
        h = beta(black_box(b / 20), h);
        h = gamma(black_box(c / 20), h);
    }
    h
}

fn main() {
    let arg = |i: usize, d: u64| {
        std::env::args()
            .nth(i)
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
            * 1_000_000
    };
    println!("{}", work(arg(1, 40), arg(2, 30), arg(3, 30)));
}
