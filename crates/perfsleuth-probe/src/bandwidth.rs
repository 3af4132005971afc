//! `bandwidth`: single-thread read, write and copy bandwidth on arrays of at
//! least 4× the last-level cache each, by STREAM's rules: every array is
//! touched before timing, each kernel runs several times, the first run is
//! discarded and the best run is reported, and bytes are counted as the
//! kernel names them (copy moves 2 bytes per byte copied: one read, one
//! write; write-allocate traffic is not counted).
//!
//! The kernels are what programs use: a summing loop the compiler
//! vectorises (read), `fill` (write; compiles to memset) and
//! `copy_from_slice` (copy; memcpy), so the C library's choice of
//! instructions (rep movsb, non-temporal stores past its threshold) is part
//! of the number.

use crate::memory::{fmt_bytes, memory_cap, reserve_largest};
use crate::timing::{self, measurement};
use crate::{ProbeOptions, ProbeResult};
use std::hint::black_box;

const MIB: u64 = 1024 * 1024;

#[inline(never)]
fn read(a: &[u64]) -> u64 {
    // Four accumulators so the adds are not one dependency chain.
    let mut s = [0u64; 4];
    let chunks = a.chunks_exact(4);
    let rest = chunks.remainder();
    for c in chunks {
        s[0] = s[0].wrapping_add(c[0]);
        s[1] = s[1].wrapping_add(c[1]);
        s[2] = s[2].wrapping_add(c[2]);
        s[3] = s[3].wrapping_add(c[3]);
    }
    let tail: u64 = rest.iter().fold(0, |x, &y| x.wrapping_add(y));
    s[0].wrapping_add(s[1])
        .wrapping_add(s[2])
        .wrapping_add(s[3])
        .wrapping_add(tail)
}

#[inline(never)]
fn write(a: &mut [u64], v: u64) {
    a.fill(v);
}

#[inline(never)]
fn copy(dst: &mut [u64], src: &[u64]) {
    dst.copy_from_slice(src);
}

pub(crate) fn run(opts: &ProbeOptions, ctx: &mut crate::Ctx) -> Vec<ProbeResult> {
    let llc = opts.caches.l3.or(opts.caches.l2).unwrap_or(32 * MIB);
    // Each pass streams the whole array: capped by time, as the ladder is
    // (on a 105 MiB L3, 420 MiB took 3.0 s for 15 runs, 1.0 s for 3 in
    // quick mode; a 260 MiB L3 asked for 1 GiB and half a minute in all).
    let want = (4 * llc).clamp(64 * MIB, 512 * MIB);
    let cap = memory_cap(opts).map(|c| c / 2); // two arrays
    let Some(mut a) = reserve_largest(want, 8 * MIB, true, cap, "bandwidth", &mut ctx.messages)
    else {
        return Vec::new();
    };
    let Some(mut b) = reserve_largest(
        a.len() as u64,
        8 * MIB,
        true,
        cap,
        "bandwidth",
        &mut ctx.messages,
    ) else {
        return Vec::new();
    };
    let bytes = a.len().min(b.len()) / 8 * 8;
    if (bytes as u64) < 4 * llc {
        ctx.messages.push(format!(
            "bandwidth: arrays of {} (at most 512 MiB, to keep the probe short) are under 4× the last-level cache ({}): caches inflate the numbers",
            fmt_bytes(bytes as u64),
            fmt_bytes(llc)
        ));
    }
    let words = bytes / 8;
    // SAFETY: both buffers have at least `bytes` bytes of capacity, 2 MiB
    // aligned; every word is initialised by the fills below before any read.
    let (sa, sb) = unsafe {
        let pa = a.ptr() as *mut u64;
        let pb = b.ptr() as *mut u64;
        pa.write_bytes(1, words);
        pb.write_bytes(2, words);
        (
            std::slice::from_raw_parts_mut(pa, words),
            std::slice::from_raw_parts_mut(pb, words),
        )
    };
    let runs = if opts.quick { 4 } else { 16 };
    let mut rates: [Vec<f64>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    let gb = |moved: usize, ns: f64| moved as f64 / ns; // bytes per ns = GB/s
    for r in 0..runs {
        let ns = timing::time_clean(&mut ctx.intr, || {
            black_box(read(black_box(&*sa)));
        });
        let read_rate = gb(bytes, ns);
        let ns = timing::time_clean(&mut ctx.intr, || write(black_box(&mut *sb), r as u64));
        let write_rate = gb(bytes, ns);
        let ns = timing::time_clean(&mut ctx.intr, || copy(black_box(&mut *sb), black_box(&*sa)));
        let copy_rate = gb(2 * bytes, ns);
        black_box(&mut *sb);
        if r > 0 {
            rates[0].push(read_rate);
            rates[1].push(write_rate);
            rates[2].push(copy_rate);
        }
    }
    drop((a, b));
    let mut out = Vec::new();
    for (k, name) in ["read_bandwidth", "write_bandwidth", "copy_bandwidth"]
        .into_iter()
        .enumerate()
    {
        let s = timing::summarize(&rates[k]).expect("runs");
        let mut m = measurement("bandwidth", name, &s, "GB/s", false, None);
        // STREAM reports the best run; the spread is that of all runs.
        m.value = s.max;
        m.headline = true;
        m.note = Some(format!(
            "best of {} runs on {} (median {:.1} GB/s){}",
            s.n,
            fmt_bytes(bytes as u64),
            s.median,
            if k == 2 {
                "; 2 bytes per byte copied"
            } else {
                ""
            }
        ));
        out.push(m);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_do_their_work() {
        let a: Vec<u64> = (1..=10).collect();
        assert_eq!(read(&a), 55);
        let mut b = vec![0u64; 10];
        write(&mut b, 7);
        assert!(b.iter().all(|&x| x == 7));
        copy(&mut b, &a);
        assert_eq!(a, b);
    }
}
