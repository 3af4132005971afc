#!/usr/bin/env python3
"""Per-iteration overhead of perfsleuth against the posix_spawn+wait4 floor and
hyperfine, measured in one run on one machine.

Each tool times N iterations of the same trivial static binary; what is
compared is the whole process's wall time divided by N (start-up, storage and
summary included). The configurations are interleaved and repeated, and the
median of the repetitions is reported.

Usage: python3 bench/overhead.py [N] [REPETITIONS]
Needs gcc with static libc (Debian: libc6-dev) and hyperfine (Debian package
`hyperfine`); builds perfsleuth in release mode.
"""
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
N = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
REPS = int(sys.argv[2]) if len(sys.argv) > 2 else 5


def sh(*args, **kw):
    subprocess.run(args, check=True, **kw)


def main():
    if not shutil.which("hyperfine"):
        sys.exit("hyperfine not found: apt-get install hyperfine")
    work = tempfile.mkdtemp(prefix="perfsleuth-overhead-")
    true_c = os.path.join(work, "true.c")
    with open(true_c, "w") as f:
        f.write("int main(void) { return 0; }\n")
    true_bin = os.path.join(work, "true-static")
    floor_bin = os.path.join(work, "spawn_floor")
    sh("gcc", "-O2", "-static", "-o", true_bin, true_c)
    sh("gcc", "-O2", "-o", floor_bin, os.path.join(ROOT, "bench", "spawn_floor.c"))
    sh("cargo", "build", "--release", "--quiet", "-p", "perfsleuth", cwd=ROOT)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    perfsleuth = os.path.join(target, "release", "perfsleuth")
    db = os.path.join(work, "results.db")

    configs = {
        "floor (C posix_spawn+wait4)": [floor_bin, str(N), true_bin],
        "hyperfine -N": ["hyperfine", "-N", "--style", "none", "--warmup", "0", "--runs", str(N), true_bin],
        "perfsleuth run (SQLite store, default: counters auto → off for a command this short)": [perfsleuth, "run", "--warmup", "1", "--runs", str(N), "--store", "sqlite:" + db, true_bin],
        "perfsleuth run --counters software (SQLite store)": [perfsleuth, "run", "--warmup", "1", "--runs", str(N), "--counters", "software", "--store", "sqlite:" + db, true_bin],
        "perfsleuth run --no-store": [perfsleuth, "run", "--warmup", "0", "--runs", str(N), "--no-store", true_bin],
    }
    times = {k: [] for k in configs}
    for _ in range(REPS):
        for name, cmd in configs.items():
            t0 = time.perf_counter()
            subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append((time.perf_counter() - t0) / N * 1e6)
    floor = statistics.median(times["floor (C posix_spawn+wait4)"])
    print(f"N = {N} iterations of a static `return 0` binary, {REPS} interleaved repetitions, median shown")
    print()
    print("| tool | µs per iteration (median) | min | max | × floor |")
    print("|---|---:|---:|---:|---:|")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"| {name} | {med:.1f} | {min(ts):.1f} | {max(ts):.1f} | {med / floor:.3f} |")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
