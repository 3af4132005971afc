#!/usr/bin/env python3
"""Size and time of `perfsleuth report` on 100 benchmarks x 1 000 samples
(issue 18; numbers in docs/PERFORMANCE.md), beside hyperfine's own plot
script drawing the same samples.

The run: a real `perfsleuth run --export-json` of `true` (its environment,
options and layout), its one benchmark copied to 100 with 1 000 samples
each in 5 rounds, wall times drawn from a log-normal around 1-100 ms (fixed
seed). The report is written 5 times from that export with the release
binary (no store involved); the median wall time and the file size are
reported. The peer: hyperfine's `scripts/plot_whisker.py` (matplotlib) on
the same samples in hyperfine's JSON, one PNG with all 100 commands.

Usage: python3 bench/report_size.py [--perfsleuth PATH] [--scripts DIR]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--perfsleuth", default=os.path.join(ROOT, "target/release/perfsleuth"))
    ap.add_argument("--scripts", default=os.path.join(ROOT, "target/hyperfine-scripts"))
    ap.add_argument("--benchmarks", type=int, default=100)
    ap.add_argument("--samples", type=int, default=1000)
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="report-size-")
    seed = os.path.join(tmp, "seed.json")
    subprocess.run([args.perfsleuth, "run", "--no-store", "--runs", "3", "--export-json", seed, "true"],
                   check=True, capture_output=True)
    doc = json.load(open(seed))
    template = doc["run"]["benchmarks"][0]
    sample = template["samples"][0]
    rng = random.Random(18)
    benches = []
    hyperfine = {"results": []}
    for b in range(args.benchmarks):
        centre = 1e6 * (1 + 99 * b / max(1, args.benchmarks - 1))
        bench = json.loads(json.dumps(template))
        bench["name"] = f"bench-{b:03d}"
        bench["command"] = f"./prog --case {b}"
        samples = []
        times = []
        for i in range(args.samples):
            s = dict(sample)
            s["iteration"] = i
            s["round"] = i * 5 // args.samples
            s["wall_ns"] = int(centre * rng.lognormvariate(0, 0.05))
            times.append(s["wall_ns"] / 1e9)
            samples.append(s)
        bench["samples"] = samples
        benches.append(bench)
        hyperfine["results"].append({
            "command": bench["command"], "mean": statistics.fmean(times),
            "stddev": statistics.stdev(times), "median": statistics.median(times),
            "user": 0.0, "system": 0.0, "min": min(times), "max": max(times),
            "times": times, "exit_codes": [0] * len(times),
        })
    doc["run"]["benchmarks"] = benches
    # The summary is the seed run's; the report computes its own from the samples.
    big = os.path.join(tmp, "big.json")
    json.dump(doc, open(big, "w"))
    out = os.path.join(tmp, "report.html")
    walls = []
    for _ in range(5):
        t0 = time.monotonic()
        subprocess.run([args.perfsleuth, "report", big, "-o", out], check=True, capture_output=True)
        walls.append(time.monotonic() - t0)
    size = os.path.getsize(out)
    print(f"perfsleuth report: {args.benchmarks} benchmarks x {args.samples} samples "
          f"(export {os.path.getsize(big) / 1e6:.1f} MB): {size / 1e6:.2f} MB, "
          f"median {statistics.median(walls):.3f} s (min {min(walls):.3f}, max {max(walls):.3f}) over 5")
    whisker = os.path.join(args.scripts, "plot_whisker.py")
    if os.path.exists(whisker):
        hf = os.path.join(tmp, "hyperfine.json")
        json.dump(hyperfine, open(hf, "w"))
        png = os.path.join(tmp, "whisker.png")
        walls = []
        for _ in range(5):
            t0 = time.monotonic()
            subprocess.run([sys.executable, whisker, hf, "-o", png], check=True,
                           capture_output=True, env={**os.environ, "MPLBACKEND": "Agg"})
            walls.append(time.monotonic() - t0)
        print(f"hyperfine plot_whisker.py on the same samples: {os.path.getsize(png) / 1e6:.2f} MB PNG, "
              f"median {statistics.median(walls):.3f} s (min {min(walls):.3f}) over 5")
    else:
        print(f"peer skipped: {whisker} not found (tests/hyperfine-scripts.sh fetches it)")


if __name__ == "__main__":
    main()
