//! `calls`: the three loops of case E (inlined arithmetic, a direct call, an
//! indirect call) plus an indirect call whose target is unpredictable.
//!
//! All loops do the same arithmetic on a two-word state (the seed's
//! `x[0] += x[1] + y[0]; x[1] += y[1] + x[0]`); the called variants pass the
//! state by pointer to a function that is never inlined, as the seed's C did
//! (on x86-64 the loops and functions are assembly, see `kernels`).
//! Both indirect loops load their target from a 64 KiB table of selectors
//! (all zero for the predictable loop, random for the other), so they run
//! identical code and differ only in what the branch predictor can learn.

use crate::timing::{self, Plan, measurement};
use crate::{ProbeOptions, ProbeResult};
use std::hint::black_box;

const TABLE: usize = 1 << 16;

/// x86-64: the loops and the called functions in assembly, each function
/// and loop head aligned to 64 bytes, so every build of perfsleuth times the
/// same instructions at the same alignment (compiled Rust moves the call
/// costs by a cycle or so between builds with code placement).
#[cfg(target_arch = "x86_64")]
mod kernels {
    use std::arch::asm;
    use std::hint::black_box;

    /// `a += y0 + b; b += y1 + a` on registers (rax = a, rcx = b, rsi = y0,
    /// rdx = y1) as label 4, the same with y0 and y1 swapped as label 5: the
    /// inlined loop's body behind a call, so a call costs what it adds to it.
    macro_rules! callees {
        () => {
            concat!(
                "jmp 3f\n",
                ".p2align 6\n",
                "4:\n",
                "add rax, rsi\n",
                "add rax, rcx\n",
                "add rcx, rdx\n",
                "add rcx, rax\n",
                "ret\n",
                ".p2align 6\n",
                "5:\n",
                "add rax, rdx\n",
                "add rax, rcx\n",
                "add rcx, rsi\n",
                "add rcx, rax\n",
                "ret\n",
                ".p2align 6\n",
                "3:\n",
            )
        };
    }

    /// The same sums in registers: two dependent adds per iteration.
    #[inline(never)]
    pub fn inline_loop(n: u64, y: &[u64; 2]) -> u64 {
        let (mut a, mut b) = (black_box(1u64), black_box(2u64));
        if n == 0 {
            return a ^ b;
        }
        // SAFETY: register-only arithmetic and a counted loop (n > 0).
        unsafe {
            asm!(
                ".p2align 6",
                "2:",
                "add {a}, {y0}",
                "add {a}, {b}",
                "add {b}, {y1}",
                "add {b}, {a}",
                "dec {n}",
                "jnz 2b",
                a = inout(reg) a,
                b = inout(reg) b,
                y0 = in(reg) y[0],
                y1 = in(reg) y[1],
                n = inout(reg) n => _,
                options(nomem, nostack),
            );
        }
        a ^ b
    }

    /// A direct call per iteration.
    #[inline(never)]
    pub fn direct_loop(n: u64, y: &[u64; 2]) -> u64 {
        let (mut a, mut b) = (black_box(1u64), black_box(2u64));
        if n == 0 {
            return a ^ b;
        }
        // SAFETY: the callee works on rax, rcx, rsi, rdx only; the stack is
        // usable (no `nostack`), so `call` may push.
        unsafe {
            asm!(
                callees!(),
                "2:",
                "call 4b",
                "dec {n}",
                "jnz 2b",
                n = inout(reg) n => _,
                inout("rax") a,
                inout("rcx") b,
                in("rsi") y[0],
                in("rdx") y[1],
                options(nomem),
            );
        }
        a ^ b
    }

    /// An indirect call per iteration: byte `i` of `selectors` (0 or 1,
    /// cycling) picks label 4 or 5 with a conditional move, then `call r10`.
    #[inline(never)]
    pub fn indirect_loop(n: u64, y: &[u64; 2], selectors: &[u8]) -> u64 {
        let (mut a, mut b) = (black_box(1u64), black_box(2u64));
        assert!(selectors.len().is_power_of_two());
        if n == 0 {
            return a ^ b;
        }
        // SAFETY: as in `direct_loop`; the selector index is masked to the
        // table's power-of-two length.
        unsafe {
            asm!(
                callees!(),
                "lea r8, [rip + 4b]",
                "lea r9, [rip + 5b]",
                "xor {i:e}, {i:e}",
                ".p2align 5",
                "2:",
                "movzx {t:e}, byte ptr [{sel} + {i}]",
                "mov r10, r8",
                "test {t:e}, {t:e}",
                "cmovnz r10, r9",
                "call r10",
                "inc {i}",
                "and {i}, {mask}",
                "dec {n}",
                "jnz 2b",
                n = inout(reg) n => _,
                i = out(reg) _,
                t = out(reg) _,
                sel = in(reg) selectors.as_ptr(),
                mask = in(reg) selectors.len() - 1,
                inout("rax") a,
                inout("rcx") b,
                in("rsi") y[0],
                in("rdx") y[1],
                out("r8") _,
                out("r9") _,
                out("r10") _,
                options(readonly),
            );
        }
        a ^ b
    }
}

/// Elsewhere: the same loops in Rust (`#[inline(never)]` callees, zero-cost
/// barriers); their costs may move with code placement between builds.
#[cfg(not(target_arch = "x86_64"))]
mod kernels {
    use std::hint::black_box;

    /// An optimisation barrier for a register value that costs no instruction
    /// (unlike `black_box`, which forces the value through memory).
    #[inline(always)]
    fn opaque(mut x: u64) -> u64 {
        #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
        // SAFETY: an empty asm block that only claims to read and write a register.
        unsafe {
            std::arch::asm!("/* {0} */", inout(reg) x, options(nomem, nostack, preserves_flags));
        }
        #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
        {
            x = std::hint::black_box(x);
        }
        x
    }

    type Kernel = fn(&mut [u64; 2], &[u64; 2]);

    #[inline(never)]
    fn add(x: &mut [u64; 2], y: &[u64; 2]) {
        x[0] = x[0].wrapping_add(x[1].wrapping_add(y[0]));
        x[1] = x[1].wrapping_add(y[1].wrapping_add(x[0]));
    }

    /// A second target with different code, so the two cannot be merged.
    #[inline(never)]
    fn add_alt(x: &mut [u64; 2], y: &[u64; 2]) {
        x[0] = x[0].wrapping_add(x[1].wrapping_add(y[1]));
        x[1] = x[1].wrapping_add(y[0].wrapping_add(x[0]));
    }

    #[inline(never)]
    pub fn inline_loop(n: u64, y: &[u64; 2]) -> u64 {
        let (mut a, mut b) = (black_box(1u64), black_box(2u64));
        let (y0, y1) = (y[0], y[1]);
        for _ in 0..n {
            // Associated so the loop-carried chain is two adds; the
            // barriers pin that order and keep the recurrence a loop.
            a = opaque(a.wrapping_add(y0)).wrapping_add(b);
            b = opaque(b.wrapping_add(y1)).wrapping_add(a);
        }
        a ^ b
    }

    #[inline(never)]
    pub fn direct_loop(n: u64, y: &[u64; 2]) -> u64 {
        let mut x = [black_box(1u64), black_box(2u64)];
        for _ in 0..n {
            add(&mut x, y);
        }
        x[0] ^ x[1]
    }

    #[inline(never)]
    pub fn indirect_loop(n: u64, y: &[u64; 2], selectors: &[u8]) -> u64 {
        let targets: [Kernel; 2] = black_box([add, add_alt]);
        let mut x = [black_box(1u64), black_box(2u64)];
        let mask = selectors.len() - 1;
        for i in 0..n as usize {
            let f = targets[(selectors[i & mask] & 1) as usize];
            f(&mut x, y);
        }
        x[0] ^ x[1]
    }
}

use kernels::{direct_loop, indirect_loop, inline_loop};

pub(crate) fn run(opts: &ProbeOptions, ctx: &mut crate::Ctx) -> Vec<ProbeResult> {
    let y = black_box([3u64, 5u64]);
    let same = vec![0u8; TABLE];
    let mut rng = perfsleuth_stats::Rng::new(0x5eed_ca11);
    let random: Vec<u8> = (0..TABLE).map(|_| (rng.next_u64() >> 63) as u8).collect();
    let (same, random) = (black_box(same), black_box(random));

    let plan = Plan::short(opts.quick, 61);
    type Loop<'a> = Box<dyn Fn(u64) -> u64 + 'a>;
    let loops: [(&str, Loop); 4] = [
        ("inline_loop", Box::new(|n| inline_loop(n, &y))),
        ("direct_call", Box::new(|n| direct_loop(n, &y))),
        ("indirect_call", Box::new(|n| indirect_loop(n, &y, &same))),
        (
            "indirect_call_unpredictable",
            Box::new(|n| indirect_loop(n, &y, &random)),
        ),
    ];
    // Iteration counts per loop, then interleaved rounds (one sample of each
    // per round) so drift hits all four alike.
    let iters: Vec<u64> = loops
        .iter()
        .map(|(_, f)| {
            timing::iterations_for(plan.sample, |n| {
                black_box(f(n));
            })
        })
        .collect();
    let mut per_iter: Vec<Vec<f64>> = vec![Vec::new(); loops.len()];
    for _ in 0..plan.samples {
        for (k, (_, f)) in loops.iter().enumerate() {
            let ns = timing::time_clean(&mut ctx.intr, || {
                black_box(f(iters[k]));
            });
            per_iter[k].push(ns / iters[k] as f64);
        }
    }
    let ghz = ctx.ghz();
    let mut out = Vec::new();
    for (k, (name, _)) in loops.iter().enumerate() {
        let s = timing::summarize(&per_iter[k]).expect("samples");
        let mut m = measurement("calls", name, &s, "ns", true, ghz);
        m.headline = true;
        out.push(m);
    }
    // Ratios to the inlined loop, per round, so their spread is honest.
    for (k, name) in [
        (1, "direct_call_ratio"),
        (2, "indirect_call_ratio"),
        (3, "indirect_call_unpredictable_ratio"),
    ] {
        let ratios: Vec<f64> = per_iter[k]
            .iter()
            .zip(&per_iter[0])
            .map(|(c, i)| c / i)
            .collect();
        let s = timing::summarize(&ratios).expect("samples");
        let mut m = measurement("calls", name, &s, "ratio", true, None);
        m.headline = true;
        m.note = Some(format!(
            "{} per iteration relative to the inlined loop",
            name.trim_end_matches("_ratio").replace('_', " ")
        ));
        out.push(m);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_loops_compute_the_same_recurrence() {
        let y = [3u64, 5];
        let step = |x: &mut [u64; 2], y0: u64, y1: u64| {
            x[0] = x[0].wrapping_add(x[1]).wrapping_add(y0);
            x[1] = x[1].wrapping_add(y1).wrapping_add(x[0]);
        };
        let mut x = [1u64, 2];
        for _ in 0..1000 {
            step(&mut x, y[0], y[1]);
        }
        let reference = x[0] ^ x[1];
        assert_eq!(inline_loop(1000, &y), reference);
        assert_eq!(direct_loop(1000, &y), reference);
        let same = vec![0u8; TABLE];
        assert_eq!(indirect_loop(1000, &y, &same), reference);
        // The other target swaps y[0] and y[1].
        let other = vec![1u8; 64];
        assert_eq!(indirect_loop(1000, &[5, 3], &other), reference);
        // Mixed selectors: each step picks its target.
        let sel: Vec<u8> = (0..64).map(|i| (i % 3 == 0) as u8).collect();
        let mut x = [1u64, 2];
        for i in 0..1000 {
            if sel[i % 64] == 1 {
                step(&mut x, y[1], y[0]);
            } else {
                step(&mut x, y[0], y[1]);
            }
        }
        assert_eq!(indirect_loop(1000, &y, &sel), x[0] ^ x[1]);
        assert_eq!(inline_loop(0, &y), 1 ^ 2);
        assert_eq!(direct_loop(0, &y), 1 ^ 2);
    }
}
