#!/usr/bin/env python3
"""Reads at scale (issue 53): a store filled through the product's own write
path (`examples/fill_store.rs`: runs of 20 benchmarks × 10 samples, 5
machine classes, 2 branches) to each size in turn, and at each size the
median of 3 calls of: `compare latest~1 latest` (its default baseline and
the noise it learns from history), `runs --limit 20`, `show latest --json`,
and `history bench-07` over every run; then the listing of every run: the
time to its first two lines, to its end, and its peak RSS.

Usage: python3 bench/store_scale.py STORE_URL FILL_BINARY PERFSLEUTH N[,N...]
       python3 bench/store_scale.py --measure PERFSLEUTH N=STORE_URL [...]
The first fills the store (which should start empty) to each size in turn;
the second measures stores filled before (a copy per size). Prints one
Markdown row per size.
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


def listing(ps, url):
    """Seconds to the first two lines of `runs` (all), to its end, and its
    peak RSS in MiB (GNU time)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(["/usr/bin/time", "-f", "%M", ps, "runs", "--store", url],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.readline()
    p.stdout.readline()
    first = time.perf_counter() - t0
    for _ in p.stdout:
        pass
    err = p.stderr.read().decode()
    p.wait()
    return first, time.perf_counter() - t0, int(err.strip().splitlines()[-1]) / 1024.0


def row(ps, url, n, rate):
    cells = ["%.0f" % (1000 * median_seconds([ps] + args + ["--store", url])) for _, args in CALLS]
    first, whole, rss = listing(ps, url)
    print("| %d | %s | %s | %.0f | %.2f | %.0f |" % (
        n, rate, " | ".join(cells), 1000 * first, whole, rss), flush=True)


def header():
    print("| stored runs | fill, runs/s | " + " | ".join(name + ", ms" for name, _ in CALLS)
          + " | runs (all): first lines, ms | runs (all), s | runs (all) peak RSS, MiB |")
    print("|---:|---:|" + "---:|" * (len(CALLS) + 3))


def main():
    if sys.argv[1] == "--measure":
        ps = sys.argv[2]
        header()
        for pair in sys.argv[3:]:
            n, url = pair.split("=", 1)
            row(ps, url, int(n), "–")
        return
    url, fill, ps = sys.argv[1:4]
    sizes = [int(x) for x in sys.argv[4].split(",")]
    header()
    done = 0
    for n in sizes:
        t0 = time.perf_counter()
        subprocess.run([fill, url, str(done), str(n)], check=True)
        rate = (n - done) / (time.perf_counter() - t0)
        done = n
        row(ps, url, n, "%.0f" % rate)


if __name__ == "__main__":
    main()
