#!/usr/bin/env python3
"""Reads at scale (issue 53): a store filled through the product's own write
path (`examples/fill_store.rs`: runs of 20 benchmarks × 10 samples, 5
machine classes, 2 branches) to each size in turn, and at each size the
median of 3 calls of: `compare latest~1 latest` (its default baseline and
the noise it learns from history), `runs --limit 20`, `show latest --json`,
and `history bench-07` over every run.

Usage: python3 bench/store_scale.py STORE_URL FILL_BINARY PERFSLEUTH N[,N...]
Prints one Markdown row per size. The store should start empty.
"""
import statistics
import subprocess
import sys
import time

CALLS = [
    ("compare latest~1 latest", ["compare", "latest~1", "latest"]),
    ("runs --limit 20", ["runs", "--limit", "20"]),
    ("show latest --json", ["show", "latest", "--json"]),
    ("history bench-07", ["history", "bench-07"]),
]


def median_seconds(cmd):
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main():
    url, fill, ps = sys.argv[1:4]
    sizes = [int(x) for x in sys.argv[4].split(",")]
    print("| stored runs | fill, runs/s | " + " | ".join(name + ", ms" for name, _ in CALLS) + " |")
    print("|---:|---:|" + "---:|" * len(CALLS))
    done = 0
    for n in sizes:
        t0 = time.perf_counter()
        subprocess.run([fill, url, str(done), str(n)], check=True)
        rate = (n - done) / (time.perf_counter() - t0)
        done = n
        cells = ["%.0f" % (1000 * median_seconds([ps] + args + ["--store", url])) for _, args in CALLS]
        print("| %d | %.0f | %s |" % (n, rate, " | ".join(cells)), flush=True)


if __name__ == "__main__":
    main()
