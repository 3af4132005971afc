#!/usr/bin/env python3
"""`compare` of many benchmarks (issue 37): two imported BMF files of N
benchmarks each (Bencher Metric Format, one latency value per benchmark),
compared with `--no-history`, for each perfsleuth binary given, alternated.

Usage: python3 bench/compare_many.py N[,N...] BINARY [BINARY...]
Prints one Markdown row per N and binary: the median of 3 calls (wall
seconds), or "> 60" where a call ran past 60 s and was stopped (once).
"""
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

LIMIT = 60


def bmf(n, factor, seed):
    rng = random.Random(seed)
    doc = {}
    for i in range(n):
        v = 1000.0 * (1 + (i % 97) / 100) * factor * (1 + rng.gauss(0, 0.01))
        doc["bench_%06d" % i] = {"latency": {"value": v, "lower_value": v * 0.99,
                                             "upper_value": v * 1.01}}
    return doc


def arguments(prefix):
    """Sizes, binaries (from argv) and a fresh working directory."""
    sizes = [int(x) for x in sys.argv[1].split(",")]
    return sizes, sys.argv[2:], tempfile.mkdtemp(prefix=prefix)


def two_sides(work, stem, n, document):
    """The two sides' files of size n: document(k) for k = 0, 1, as JSON."""
    files = []
    for k in range(2):
        path = os.path.join(work, "%s-%d-%d.json" % (stem, n, k))
        with open(path, "w") as f:
            json.dump(document(k), f)
        files.append(path)
    return files


def main():
    sizes, binaries, work = arguments("perfsleuth-compare-many-")
    print("| benchmarks | binary | compare, s (median of 3) |")
    print("|---|---|---|")
    for n in sizes:
        files = two_sides(work, "bmf", n, lambda k: bmf(n, [1.0, 1.02][k], k))
        stores = {}
        for b in binaries:
            store = os.path.join(work, "s-%d-%d.db" % (n, len(stores)))
            for path in files:
                subprocess.run([b, "import", "--store", store, "--format", "bmf", path],
                               check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            stores[b] = store
        times = {b: [] for b in binaries}
        for _ in range(3):
            for b in binaries:
                if times[b] and times[b][-1] == float("inf"):
                    continue  # past the limit once: not again
                t0 = time.perf_counter()
                try:
                    subprocess.run([b, "compare", "latest~1", "latest", "--no-history",
                                    "--store", stores[b], "--format", "json"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   timeout=LIMIT, check=True)
                    times[b].append(time.perf_counter() - t0)
                except subprocess.TimeoutExpired:
                    times[b].append(float("inf"))
        for b in binaries:
            m = statistics.median(times[b])
            shown = "> %d" % LIMIT if m == float("inf") else "%.2f" % m
            print("| %d | `%s` | %s |" % (n, b, shown))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
