#!/usr/bin/env python3
"""Where the timing offset between two runs of the same binary comes from on
this machine (issue 12, step 1; results in docs/STATISTICS.md).

Program: bench/validation/progs/cpu.c at SLOWDOWN 1.0 (~20 ms). Three parts:

1. M separate invocations of `perfsleuth run --runs R --warmup 2` (default
   M = 20, R = 60): the sd of the invocation medians (between invocations),
   the sd of the medians of consecutive blocks of B samples inside one
   invocation (between "rounds" of one process), and the sd a block median
   would have from the within-block spread alone (bootstrap of the pooled
   within-block residuals).
2. One long invocation (`--runs L`, default 1500, ~30 s): medians of
   consecutive blocks of B samples, their lag-k autocorrelation, and how the
   sd of the mean of k consecutive block medians falls with k (1/sqrt(k) if
   the blocks were independent).
3. M invocations each with a fresh spawner started every round: the same as
   part 1 but with `--rounds` when the binary has it (skipped otherwise).

Usage: python3 bench/validation/noise_sources.py [--perfsleuth PATH] [--m 20] [--r 60] [--block 10] [--long 1500]
Python standard library only; needs gcc.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def run(perfsleuth, prog, runs, extra=()):
    out = tempfile.mktemp(suffix=".json")
    cmd = [perfsleuth, "run", "--no-store", "--warmup", "2", "--runs", str(runs),
           *extra, "--export-json", out, f"{prog} 1.0"]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    doc = json.load(open(out))
    os.unlink(out)
    samples = doc["run"]["benchmarks"][0]["samples"]
    return [s["wall_ns"] / 1e6 for s in sorted(samples, key=lambda s: s["iteration"])]


def blocks(xs, b):
    return [xs[i:i + b] for i in range(0, len(xs) - b + 1, b)]


def rel_sd(values):
    m = statistics.median(values)
    return 100.0 * statistics.stdev(values) / m if len(values) > 1 else float("nan")


def within_only_sd(block_lists, b, rng, reps=2000):
    """sd (%) of a block median if the blocks differed only by within-block noise:
    residuals (sample / its block median) pooled, resampled into blocks of b."""
    resid = [x / statistics.median(bl) for bl in block_lists for x in bl]
    meds = [statistics.median(rng.choices(resid, k=b)) for _ in range(reps)]
    return 100.0 * statistics.stdev(meds)


def autocorr(xs, lag):
    n = len(xs)
    m = statistics.fmean(xs)
    var = sum((x - m) ** 2 for x in xs)
    return sum((xs[i] - m) * (xs[i + lag] - m) for i in range(n - lag)) / var


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--perfsleuth", default=os.path.join(ROOT, "target/release/perfsleuth"))
    ap.add_argument("--m", type=int, default=20)
    ap.add_argument("--r", type=int, default=60)
    ap.add_argument("--block", type=int, default=10)
    ap.add_argument("--long", type=int, default=1500)
    args = ap.parse_args()
    rng = random.Random(1)
    work = tempfile.mkdtemp(prefix="perfsleuth-noise-")
    prog = os.path.join(work, "cpu")
    subprocess.run(["gcc", "-O2", "-o", prog, os.path.join(HERE, "progs", "cpu.c"), "-lm"], check=True)

    print("## 1. Separate invocations (R = %d, blocks of %d)" % (args.r, args.block))
    invocations = [run(args.perfsleuth, prog, args.r) for _ in range(args.m)]
    medians = [statistics.median(x) for x in invocations]
    all_blocks = [blocks(x, args.block) for x in invocations]
    block_sd_within_inv = statistics.median(
        rel_sd([statistics.median(b) for b in bl]) for bl in all_blocks)
    halves = [(statistics.median(x[: len(x) // 2]), statistics.median(x[len(x) // 2:])) for x in invocations]
    half_diff_sd = 100.0 * statistics.stdev([(b - a) / a for a, b in halves]) / (2 ** 0.5)
    flat = [b for bl in all_blocks for b in bl]
    print(f"- invocation medians: {min(medians):.2f} … {max(medians):.2f} ms, sd {rel_sd(medians):.2f} %")
    print(f"- block medians inside one invocation: sd {block_sd_within_inv:.2f} % (median over invocations)")
    print(f"- halves of one invocation: sd of one half's offset {half_diff_sd:.2f} %")
    print(f"- a block median from within-block noise alone: sd {within_only_sd(flat, args.block, rng):.2f} %")
    print(f"- an invocation median ({args.r} samples) from within-run noise alone: "
          f"sd {within_only_sd([x for x in invocations], args.r, rng):.2f} %")
    lag1 = autocorr(medians, 1) if len(medians) > 2 else float('nan')
    print(f"- lag-1 autocorrelation of consecutive invocation medians: {lag1:.2f}")

    print("\n## 2. One long invocation (%d runs, blocks of %d)" % (args.long, args.block))
    long = run(args.perfsleuth, prog, args.long)
    bm = [statistics.median(b) for b in blocks(long, args.block)]
    ms_per_block = statistics.median(long) * args.block
    print(f"- {len(bm)} blocks of ~{ms_per_block:.0f} ms; block medians sd {rel_sd(bm):.2f} %")
    print("- autocorrelation of block medians: " + ", ".join(
        f"lag {k} ({k * ms_per_block / 1000:.1f} s) {autocorr(bm, k):+.2f}" for k in (1, 2, 4, 8, 16, 32) if k < len(bm) // 2))
    print("- sd of the mean of k consecutive blocks vs independent blocks (sd1/sqrt(k)):")
    sd1 = statistics.stdev(bm)
    for k in (1, 2, 4, 8, 16, 32):
        if len(bm) // k < 4:
            break
        means = [statistics.fmean(bm[i:i + k]) for i in range(0, len(bm) - k + 1, k)]
        print(f"  k = {k:2d} ({k * ms_per_block / 1000:5.1f} s): {100 * statistics.stdev(means) / statistics.median(bm):.2f} %"
              f"  vs {100 * sd1 / k ** 0.5 / statistics.median(bm):.2f} %")

    help_text = subprocess.run([args.perfsleuth, "run", "--help"], capture_output=True, text=True).stdout
    if "--rounds" in help_text:
        print("\n## 3. Invocations with rounds (--rounds 5)")
        inv = [run(args.perfsleuth, prog, args.r, ("--rounds", "5")) for _ in range(args.m)]
        meds = [statistics.median(x) for x in inv]
        print(f"- invocation medians sd {rel_sd(meds):.2f} %")


if __name__ == "__main__":
    main()
