//! `syscall`: the cost of entering the kernel (getppid through
//! `syscall(2)`, which no libc caches) against the vDSO's clock_gettime,
//! which should not enter the kernel at all, and the same clock_gettime
//! forced through a real system call.

use crate::timing::{self, Plan, measurement};
use crate::{ProbeOptions, ProbeResult};
use std::hint::black_box;

#[inline(never)]
fn getppid_loop(n: u64) {
    for _ in 0..n {
        // SAFETY: getppid takes no arguments and cannot fail.
        black_box(unsafe { libc::syscall(libc::SYS_getppid) });
    }
}

#[inline(never)]
fn vdso_loop(n: u64) {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    for _ in 0..n {
        // SAFETY: ts is a valid timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
        black_box(&mut ts);
    }
}

#[inline(never)]
fn clock_syscall_loop(n: u64) {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    for _ in 0..n {
        // SAFETY: ts is a valid timespec.
        unsafe {
            libc::syscall(
                libc::SYS_clock_gettime,
                libc::CLOCK_MONOTONIC,
                &mut ts as *mut libc::timespec,
            )
        };
        black_box(&mut ts);
    }
}

pub(crate) fn run(opts: &ProbeOptions, ctx: &mut crate::Ctx) -> Vec<ProbeResult> {
    let plan = Plan::short(opts.quick, 61);
    type Kernel = (&'static str, fn(u64), bool);
    let kernels: [Kernel; 3] = [
        ("getppid", getppid_loop, true),
        ("clock_gettime_vdso", vdso_loop, true),
        ("clock_gettime_syscall", clock_syscall_loop, false),
    ];
    let iters: Vec<u64> = kernels
        .iter()
        .map(|(_, f, _)| timing::iterations_for(plan.sample, f))
        .collect();
    let mut per_iter = vec![Vec::new(); kernels.len()];
    for _ in 0..plan.samples {
        for (k, (_, f, _)) in kernels.iter().enumerate() {
            let ns = timing::time_clean(&mut ctx.intr, || f(iters[k]));
            per_iter[k].push(ns / iters[k] as f64);
        }
    }
    let ghz = ctx.ghz();
    let mut out: Vec<ProbeResult> = kernels
        .iter()
        .zip(&per_iter)
        .map(|((name, _, headline), v)| {
            let s = timing::summarize(v).expect("samples");
            let mut m = measurement("syscall", name, &s, "ns", true, ghz);
            m.headline = *headline;
            m
        })
        .collect();
    // A vDSO that falls back to the system call (a clocksource without vDSO
    // support, e.g. some hypervisor clocks) shows up as a ratio near 1.
    let ratios: Vec<f64> = per_iter[2]
        .iter()
        .zip(&per_iter[1])
        .map(|(s, v)| s / v)
        .collect();
    let s = timing::summarize(&ratios).expect("samples");
    let mut m = measurement("syscall", "vdso_speedup", &s, "ratio", false, None);
    m.note = Some(
        "clock_gettime by system call / by vDSO; near 1 means the vDSO falls back to the kernel"
            .into(),
    );
    if s.median < 2.0 {
        ctx.messages.push(format!(
            "clock_gettime through the vDSO is only {:.1}× faster than the system call: the clocksource may not support the vDSO",
            s.median
        ));
    }
    out.push(m);
    out
}
