#!/usr/bin/env python3
"""Every command that reads a user-named file, on a ~50 MB input (issue 13,
item 7: "every command on a 50 MB input finishes in seconds").

Builds the inputs from one short real run: two run exports of N samples
(default 160 000, ~50 MB each), a 50 MB CSV for `scale fit`, and a store
holding the big run (imported by `run --export-json` then re-stored is not
possible, so the store case measures `show`/`runs` on a store whose one run
has the samples, written through perfsleuth's own `run`). Prints one line
per command: wall seconds, peak RSS, exit code.
Usage: python3 bench/big_inputs.py [N] [PERFSLEUTH]
"""
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def timed(argv, cwd):
    start = time.monotonic()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M"] + argv, cwd=cwd,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    rss_kib = int(proc.stderr.strip().splitlines()[-1])
    return wall, rss_kib, proc.returncode


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 160_000
    exe = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "target/release/perfsleuth")
    work = tempfile.mkdtemp(prefix="perfsleuth-big-")
    small = os.path.join(work, "small.json")
    subprocess.run([exe, "run", "--no-store", "--runs", "20", "--warmup", "0", "-n", "work",
                    "--export-json", small, "sleep 0.001"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    doc = json.load(open(small))
    template = doc["run"]["benchmarks"][0]["samples"]
    rng = random.Random(13)
    for name, factor in (("a", 1.0), ("b", 1.02)):
        samples = []
        for i in range(n):
            s = dict(template[i % len(template)])
            s["wall_ns"] = int(s["wall_ns"] * factor * rng.uniform(0.97, 1.03))
            s["iteration"] = i
            s["round"] = i * 5 // n
            samples.append(s)
        doc["run"]["benchmarks"][0]["samples"] = samples
        with open(os.path.join(work, name + ".json"), "w") as f:
            json.dump(doc, f)
    with open(os.path.join(work, "big.csv"), "w") as f:
        f.write("N,X\n")
        while f.tell() < 50_000_000:
            k = rng.choice([1, 2, 4, 8, 16, 32])
            x = 1000 * k / (1 + 0.05 * (k - 1) + 0.001 * k * (k - 1)) * rng.uniform(0.95, 1.05)
            f.write("%d,%.3f\n" % (k, x))
    size = lambda p: os.path.getsize(os.path.join(work, p)) / 1e6
    print("inputs: a.json %.1f MB, b.json %.1f MB (%d samples each), big.csv %.1f MB"
          % (size("a.json"), size("b.json"), n, size("big.csv")))
    cases = [
        ("compare a.json b.json", [exe, "compare", "a.json", "b.json", "--no-history"]),
        ("compare --format json", [exe, "compare", "a.json", "b.json", "--format", "json", "--no-history"]),
        ("env diff a.json b.json", [exe, "env", "diff", "a.json", "b.json"]),
        ("probe diff a.json b.json", [exe, "probe", "diff", "a.json", "b.json"]),
        ("scale fit big.csv", [exe, "scale", "fit", "big.csv"]),
        ("compare --config big.csv", [exe, "compare", "--config", "big.csv", "a.json", "b.json"]),
        ("env show --cpuid big.csv", [exe, "env", "show", "--cpuid", "big.csv"]),
    ]
    for label, argv in cases:
        wall, rss, code = timed(argv, work)
        print("%-28s %6.2f s  %7.1f MiB  exit %d" % (label, wall, rss / 1024, code))
    subprocess.run(["rm", "-rf", work])


if __name__ == "__main__":
    main()
