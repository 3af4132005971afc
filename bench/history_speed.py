#!/usr/bin/env python3
"""Speed of `perfsleuth history` (issue 16): a store of RUNS runs × SAMPLES
samples answered by `history --format json`, and `history fit` on a
POINTS-point series beside Apache Otava's `compute_change_points` on the
same series (pip package apache-otava, if importable by OTAVA_PYTHON).

The store is a real perfsleuth SQLite file: one `perfsleuth run` makes it
(schema, environment), then its run is copied RUNS times with seeded
samples and a +5 % step half-way. Usage:
  python3 bench/history_speed.py [RUNS] [SAMPLES] [POINTS] [REPS]
(default 10000 100 10000 5; target/release/perfsleuth, built first, or
the binary $PERFSLEUTH names).
"""
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# PERFSLEUTH names another binary (e.g. an older build) to time instead.
EXE = os.environ.get("PERFSLEUTH") or os.path.join(ROOT, "target/release/perfsleuth")


def timed(cmd, reps):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times), min(times), max(times)


def main():
    runs, samples, points, reps = (list(map(int, sys.argv[1:5])) + [10000, 100, 10000, 5][len(sys.argv) - 1:])[:4]
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "perfsleuth"], cwd=ROOT, check=True)
    work = tempfile.mkdtemp(prefix="perfsleuth-history-speed-")
    db = os.path.join(work, "r.db")
    subprocess.run([EXE, "run", "--store", db, "--runs", "2", "--warmup", "0", "--rounds", "1",
                    "-n", "work", "true"], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    con = sqlite3.connect(db)
    run = con.execute("SELECT started_at, ended_at, status, tool_version, mode, options, environment_id, context FROM runs").fetchone()
    bench = con.execute("SELECT name, command, argv, parameters, facts FROM benchmarks").fetchone()
    rng = random.Random(1)
    with con:
        for i in range(1, runs):
            cur = con.execute("INSERT INTO runs (started_at, ended_at, status, tool_version, git_commit, git_branch, git_dirty, mode, options, environment_id, context) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                              (run[0], run[1], run[2], run[3], f"{i:040x}", "main", 0, run[4], run[5], run[6], run[7]))
            rid = cur.lastrowid
            b = con.execute("INSERT INTO benchmarks (run_id, position, name, command, argv, parameters, facts) VALUES (?,?,?,?,?,?,?)",
                            (rid, 0, *bench)).lastrowid
            level = 1e7 * (1.05 if i > runs // 2 else 1.0) * (1 + rng.gauss(0, 0.01))
            con.executemany("INSERT INTO samples (benchmark_id, iteration, wall_ns, user_ns, sys_ns, peak_rss_bytes, minor_faults, major_faults, voluntary_cs, involuntary_cs, exit_code, signal, counters, round) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                            [(b, k, int(level * (1 + rng.gauss(0, 0.02))), 1000, 1000, 4 << 20, 100, 0, 1, 1, 0, None, None, 0) for k in range(samples)])
    con.close()
    size = os.path.getsize(db) / 2**20
    med, lo, hi = timed([EXE, "history", "--store", db, "--all-branches", "--format", "json"], reps)
    print(f"history over {runs} runs x {samples} samples ({size:.0f} MiB store): median {med*1000:.0f} ms (min {lo*1000:.0f}, max {hi*1000:.0f}) of {reps}")

    csv = os.path.join(work, "series.csv")
    rng = random.Random(2)
    series = [(1.0 if i < points * 2 // 3 else 1.05) * (1 + rng.gauss(0, 0.01)) for i in range(points)]
    with open(csv, "w") as f:
        f.write("v\n" + "".join(f"{v}\n" for v in series))
    med, lo, hi = timed([EXE, "history", "fit", csv, "--format", "json"], reps)
    print(f"history fit of {points} points (whole process): median {med*1000:.0f} ms (min {lo*1000:.0f}, max {hi*1000:.0f})")
    out = subprocess.run([EXE, "history", "fit", csv, "--format", "json", "--min-change", "0"], check=True, capture_output=True, text=True).stdout
    import json
    ours = [c["index"] for c in json.loads(out)["series"][0].get("change_points", [])]
    print(f"  perfsleuth change points (no floor): {ours}")
    py = os.environ.get("OTAVA_PYTHON", sys.executable)
    code = f"""
import time, json
from otava.analysis import compute_change_points
s = json.load(open({csv + '.json'!r}))
ts = []
for _ in range({reps}):
    t = time.perf_counter(); cps, _ = compute_change_points(s); ts.append(time.perf_counter() - t)
ts.sort()
print(f"otava compute_change_points of {{len(s)}} points (in-process, no start-up): median {{ts[len(ts)//2]*1000:.0f}} ms (min {{ts[0]*1000:.0f}})")
print("  otava change points:", [int(c.index) for c in cps])
"""
    json.dump(series, open(csv + ".json", "w"))
    r = subprocess.run([py, "-c", code], capture_output=True, text=True)
    print(r.stdout.strip() or f"otava not run: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else 'no output'}")


if __name__ == "__main__":
    main()
