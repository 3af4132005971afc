#!/usr/bin/env python3
"""`compare` and `import` of many benchmarks with samples (issue 53): two
hyperfine JSON files of N commands, 5 run times each (the second side the
same distribution: every row inconclusive or no change, the most text),
imported into one SQLite store per binary, then `compare latest~1 latest`
(terminal output to /dev/null). Wall seconds and peak RSS of each call,
one call per size and binary (a slow binary at 100 000 takes minutes).

Usage: python3 bench/compare_scale.py N[,N...] BINARY [BINARY...]
Prints one Markdown row per N and binary.
"""
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import compare_many  # noqa: E402  (argument parsing, the two sides' files)


def hyperfine(n, seed):
    rng = random.Random(seed)
    results = []
    for i in range(n):
        base = 0.001 * (1 + (i % 97) / 100)
        times = [base * rng.uniform(0.97, 1.03) for _ in range(5)]
        results.append({"command": "bench-%06d" % i, "mean": sum(times) / 5,
                        "stddev": 0.00001, "median": sorted(times)[2], "user": 0.0005,
                        "system": 0.0001, "min": min(times), "max": max(times),
                        "times": times, "exit_codes": [0] * 5})
    return {"results": results}


def timed(cmd):
    """Wall seconds and peak RSS (MiB) of one child, by GNU time."""
    t0 = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M"] + cmd, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    secs = time.perf_counter() - t0
    return secs, int(r.stderr.strip().splitlines()[-1]) / 1024.0


def main():
    sizes, binaries, work = compare_many.arguments("perfsleuth-compare-scale-")
    print("| benchmarks | binary | import (one side), s | compare, s | compare peak RSS, MiB |")
    print("|---:|---|---:|---:|---:|")
    for n in sizes:
        files = compare_many.two_sides(work, "hf", n, lambda k: hyperfine(n, k))
        for b in binaries:
            store = "sqlite:" + os.path.join(work, "s-%d-%s.db" % (n, os.path.basename(b)))
            imported = [timed([b, "import", "--store", store, p])[0] for p in files]
            secs, rss = timed([b, "compare", "--store", store, "latest~1", "latest"])
            print("| %d | %s | %.2f | %.2f | %.0f |" % (
                n, os.path.basename(b), imported[1], secs, rss), flush=True)


if __name__ == "__main__":
    main()
