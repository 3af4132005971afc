#!/usr/bin/env python3
"""Portable simulation counts (issue 21): Ir of the repository's example
programs under `perfsleuth run --mode simulation` with the x86-64-v3 and
x86-64-v2 profiles and with this CPU's own dispatch (`--no-portable`), and
the same with a `GLIBC_TUNABLES` mask standing in for a runner whose
valgrind presents no ERMS (an AMD Zen 2, say): it moves the native count and
must not move the portable one. Also the cost of the profile's check.

Every count is from a real run (two runs each; they must agree). Prints a
Markdown table for docs/SIMULATION.md. Usage:
  python3 bench/simulation/portable.py     (builds target/release first)
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXE = os.path.join(ROOT, "target/release/perfsleuth")
NO_ERMS = "glibc.cpu.hwcaps=-ERMS,"


def build(work):
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "perfsleuth", "--example", "counters"],
                   cwd=ROOT, check=True)
    progs = []
    for name, src, args in [
        ("strings", "bench/simulation/strings.c", ["50"]),
        ("workload", "bench/callgrind/workload.c", []),
        ("alloc", "bench/validation/progs/alloc.c", ["1", "20000"]),
        ("cpu", "bench/validation/progs/cpu.c", ["1", "200000"]),
        ("io", "bench/validation/progs/io.c", ["1", "300"]),
    ]:
        out = os.path.join(work, name)
        subprocess.run(["gcc", "-O2", "-o", out, os.path.join(ROOT, src), "-lm"], check=True)
        progs.append((name, " ".join([out] + args)))
    progs.append(("counters (Rust)", os.path.join(ROOT, "target/release/examples/counters")
                  + " --mode padded --threads 1 --ops 100000"))
    return progs


def ir(work, cmd, flags, tunables=None):
    env = dict(os.environ)
    env.pop("GLIBC_TUNABLES", None)
    if tunables:
        env["GLIBC_TUNABLES"] = tunables
    out = os.path.join(work, "run.json")
    r = subprocess.run([EXE, "run", "--mode", "simulation", "--no-store", "--export-json", out] + flags + [cmd],
                       env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit(f"perfsleuth failed for {cmd} {flags}: {r.stderr}")
    doc = json.load(open(out))
    counts = [s["counters"]["Ir"] for s in doc["run"]["benchmarks"][0]["samples"]]
    portable = doc["run"]["environment"]["sim.portable"]["value"]
    return int(counts[0]), len(set(counts)) == 1, portable


def timed(cmd, reps=9):
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main():
    work = tempfile.mkdtemp(prefix="perfsleuth-portable-")
    progs = build(work)
    print("| program | v3 portable | v3, runner without ERMS | v2 portable | this CPU's dispatch | this CPU without ERMS | runs agree |")
    print("|---|--:|--:|--:|--:|--:|---|")
    for name, cmd in progs:
        v3, ok1, p1 = ir(work, cmd, ["--portable"])
        v3e, ok2, _ = ir(work, cmd, ["--portable"], NO_ERMS)
        v2, ok3, p3 = ir(work, cmd, ["--portable=x86-64-v2"])
        nat, ok4, p4 = ir(work, cmd, ["--no-portable"])
        nate, ok5, _ = ir(work, cmd, ["--no-portable"], NO_ERMS)
        assert (p1, p3, p4) == ("x86-64-v3", "x86-64-v2", "off"), (p1, p3, p4)
        agree = "yes" if all([ok1, ok2, ok3, ok4, ok5]) else "**no**"
        print(f"| {name} | {v3:,} | {v3e:,} | {v2:,} | {nat:,} | {nate:,} | {agree} |")
    true = subprocess.run(["sh", "-c", "command -v true"], capture_output=True, text=True).stdout.strip()
    base = [EXE, "run", "--mode", "simulation", "--no-store", "--runs", "1"]
    a = timed(base + [true])
    b = timed(base + ["--no-portable", true])
    print(f"\nwall time of `perfsleuth run --mode simulation --runs 1 --no-store true`, median of 9: "
          f"portable {a * 1000:.0f} ms, --no-portable {b * 1000:.0f} ms (the check: {(a - b) * 1000:.0f} ms)")


if __name__ == "__main__":
    main()
