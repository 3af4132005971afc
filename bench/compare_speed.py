#!/usr/bin/env python3
"""Time of `perfsleuth compare` on two exported runs of N samples per side
(issue 12: 200 000 samples a side within 1 s).

A short real run is exported, then its samples are repeated with a seeded
jitter to N per side (the candidate 2 % slower) and split into five rounds
(what `run` records by default), and the whole process
`perfsleuth compare A.json B.json --format json` is timed REPS times per
binary. Usage: python3 bench/compare_speed.py [N] [REPS] [PERFSLEUTH ...]
(default: target/release/perfsleuth, built first).
"""
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
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    binaries = sys.argv[3:] or [os.path.join(ROOT, "target/release/perfsleuth")]
    if len(sys.argv) <= 3:
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "perfsleuth"],
                       cwd=ROOT, check=True)
    work = tempfile.mkdtemp(prefix="perfsleuth-compare-speed-")
    small = os.path.join(work, "small.json")
    subprocess.run([binaries[0], "run", "--no-store", "--runs", "20", "--warmup", "0",
                    "-n", "work", "--export-json", small, "sleep 0.001"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    doc = json.load(open(small))
    template = doc["run"]["benchmarks"][0]["samples"]
    rng = random.Random(1)
    for name, factor in (("a", 1.0), ("b", 1.02)):
        samples = []
        for i in range(n):
            s = dict(template[i % len(template)])
            s["iteration"] = i
            # In five rounds, as `run` measures by default: five groups a side.
            s["round"] = i * 5 // n
            s["wall_ns"] = int(s["wall_ns"] * factor * (1 + rng.gauss(0, 0.02)))
            samples.append(s)
        d = json.loads(json.dumps(doc))
        d["run"]["benchmarks"][0]["samples"] = samples
        json.dump(d, open(os.path.join(work, name + ".json"), "w"))
    for exe in binaries:
        times = []
        for _ in range(reps):
            t = time.perf_counter()
            subprocess.run([exe, "compare", os.path.join(work, "a.json"),
                            os.path.join(work, "b.json"), "--format", "json"],
                           check=True, stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - t)
        print(f"{exe}: N = {n} per side, median of {reps}: {statistics.median(times):.3f} s "
              f"(min {min(times):.3f}, max {max(times):.3f})")


if __name__ == "__main__":
    main()
