#!/usr/bin/env python3
"""Lock tracing's overhead and what each tool names (docs/PERFORMANCE.md,
"Lock tracing").

Runs each contended program untraced, under perfsleuth's tracer (the
`trace_locks` example: the same `perfsleuth_locks::Tracer` that `run --locks`
starts, on a child of its own), under `strace -f -c -e trace=futex` and
under `perf lock contention` (tracepoint mode, in a private mount namespace
with tracefs mounted), interleaved round by round so that drift hits every
configuration alike. Prints, per program and configuration, the median
program time (the program's own `seconds` where it prints one, else the
wall time of the command), the ratio to untraced, the median wall time of the
whole command (attach, symbolise, report), and what the tool named.

Usage, as root, from the repository root after
`cargo build --release --example counters --example trace_locks -p perfsleuth -p perfsleuth-locks`:
    python3 bench/locks_overhead.py [ROUNDS]
"""

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 10
TARGET = "target/release/examples"
COUNTERS = f"{TARGET}/counters"
TRACE = f"{TARGET}/trace_locks"
TWO_SRC = "crates/perfsleuth-locks/tests/data/two_locks.c"


def build_two_locks(dir):
    exe = os.path.join(dir, "two_locks")
    subprocess.run(["gcc", "-O2", "-g", "-pthread", "-o", exe, TWO_SRC], check=True)
    return exe


def run(cmd):
    start = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        raise SystemExit(f"{cmd} failed: {p.returncode}\n{p.stderr[-2000:]}")
    return wall, p.stdout, p.stderr


def perfsleuth_run(cmd, locks, rounds):
    """Per-run wall times of `perfsleuth run` (its own measurement)."""
    out = os.path.join(tempfile.mkdtemp(), "run.json")
    args = ["target/release/perfsleuth", "run", "--no-store", "--runs", "5", "--warmup", "1",
            "--export-json", out, " ".join(cmd)]
    if locks:
        args.insert(2, "--locks")
    run(args)
    doc = json.load(open(out))
    b = doc["run"]["benchmarks"][0]
    return [s["wall_ns"] / 1e9 for s in b["samples"]], b.get("locks")


def ratio_ci(num, den, resamples=2000):
    """Bootstrap 95 % interval of median(num) / median(den)."""
    import random
    rng = random.Random(7)
    ratios = sorted(
        statistics.median(rng.choices(num, k=len(num))) / statistics.median(rng.choices(den, k=len(den)))
        for _ in range(resamples)
    )
    return ratios[int(0.025 * resamples)], ratios[int(0.975 * resamples) - 1]


def own_seconds(stdout):
    m = re.search(r'"seconds":([0-9.]+)', stdout)
    return float(m.group(1)) if m else None


def named_by_perfsleuth(stdout):
    """The report is the pretty JSON after the program's own output."""
    start = stdout.find("{\n")
    r = json.loads(stdout[start:])
    locks = [s for s in r["sites"] if s["kind"] not in ("join", "condvar", "park", "runtime")]
    total = r["lock_wait_ns"] or 1
    names = "; ".join(
        f"{100 * s['wait_ns'] / total:.0f} % {s['function']} ({s['location']})" for s in locks[:2]
    )
    e = r["events"]
    lost = e["dropped_waits"] + e["dropped_samples"] + e["dropped_switches"] + e["dropped_processes"]
    return names, e["waits"], e["samples"], lost


def named_by_strace(path):
    text = open(path).read()
    m = re.search(r"^\s*[0-9.]+\s+([0-9.]+)\s+\d+\s+(\d+)\s+(\d+)?\s*futex", text, re.M)
    if not m:
        return "no futex line"
    return f"futex: {m.group(2)} calls, {m.group(3) or 0} errors; no address, no caller"


def named_by_perf(stderr):
    """The first row of `perf lock contention`: a kernel lock and its caller."""
    rows = [l.split() for l in stderr.splitlines() if re.match(r"\s*\d+\s+[0-9.]+ [mun]?s", l)]
    if not rows:
        return "no contention rows"
    r = rows[0]
    return f"{len(rows)} kernel lock(s); first: {r[-2]} at {r[-1]} ({r[0]}×, {r[1]} {r[2]}); no user lock"


def main():
    if os.geteuid() != 0:
        raise SystemExit("run as root: the tracer and perf's tracepoints need it")
    tmp = tempfile.mkdtemp()
    two = build_two_locks(tmp)
    programs = {
        "counters --mode mutex, 4 threads": [COUNTERS, "--mode", "mutex", "--threads", "4", "--ops", "2000000"],
        "two_locks (9:1), 2000 ops": [two, "2000", "200"],
    }
    strace_out = os.path.join(tmp, "strace.txt")
    perf_data = os.path.join(tmp, "perf.data")
    configs = {
        "untraced": lambda c: c,
        "perfsleuth (eBPF)": lambda c: [TRACE] + c,
        "strace -f -c -e trace=futex": lambda c: ["strace", "-f", "-c", "-e", "trace=futex", "-o", strace_out] + c,
        # perf 6.1 as Debian builds it has no BPF mode (-b): it records the
        # kernel's lock tracepoints, then reports from the file.
        "perf lock record + contention": lambda c: [
            "unshare", "-m", "sh", "-c",
            'mount -t tracefs nodev /sys/kernel/tracing && perf lock record -q -o "$0" -- "$@" '
            '&& perf lock contention -i "$0" >&2',
            perf_data,
        ] + c,
    }
    have = {n for n in configs if n == "untraced" or n.startswith("perfsleuth")}
    if shutil.which("strace"):
        have.add("strace -f -c -e trace=futex")
    if shutil.which("perf"):
        have.add("perf lock record + contention")
    results = {(p, c): {"prog": [], "wall": [], "named": None} for p in programs for c in configs if c in have}
    for r in range(ROUNDS):
        for pname, cmd in programs.items():
            order = [c for c in configs if c in have]
            # Rotate the order each round so no configuration is always first.
            order = order[r % len(order):] + order[: r % len(order)]
            for cname in order:
                wall, out, err = run(configs[cname](cmd))
                res = results[(pname, cname)]
                sec = own_seconds(out)
                res["prog"].append(sec if sec is not None else wall)
                res["wall"].append(wall)
                if cname.startswith("perfsleuth"):
                    res["named"] = named_by_perfsleuth(out)
                elif cname.startswith("strace"):
                    res["named"] = named_by_strace(strace_out)
                elif cname.startswith("perf"):
                    res["named"] = named_by_perf(err)
    # Through perfsleuth itself: the same program timed by `run`, with and
    # without --locks, alternating.
    through = {False: [], True: []}
    report = None
    for r in range(max(2, ROUNDS // 2)):
        for locks in ((False, True) if r % 2 == 0 else (True, False)):
            walls, rep = perfsleuth_run(programs["counters --mode mutex, 4 threads"], locks, r)
            through[locks].extend(walls)
            report = rep or report
    print(f"{ROUNDS} interleaved rounds; program time = its own `seconds` where printed, else the command's wall time\n")
    for pname in programs:
        base = statistics.median(results[(pname, "untraced")]["prog"])
        print(f"## {pname}")
        print("| tool | program time (median) | × untraced [95 % CI] | whole command (median) | names |")
        print("|------|----------------------:|---------------------:|-----------------------:|-------|")
        for cname in configs:
            if (pname, cname) not in results:
                continue
            res = results[(pname, cname)]
            prog = statistics.median(res["prog"])
            wall = statistics.median(res["wall"])
            named = res["named"]
            if isinstance(named, tuple):
                names, waits, samples, lost = named
                named = f"{names} — {waits} waits, {samples} samples, {lost} lost"
            lo, hi = ratio_ci(res["prog"], results[(pname, "untraced")]["prog"])
            print(f"| {cname} | {prog * 1e3:.1f} ms | {prog / base:.2f}× [{lo:.2f}–{hi:.2f}] | {wall * 1e3:.1f} ms | {named or ''} |")
        print()
    off, on = statistics.median(through[False]), statistics.median(through[True])
    print("## counters --mode mutex through `perfsleuth run` (5 runs + 1 warmup a round)")
    lo, hi = ratio_ci(through[True], through[False])
    print("| | per-run wall (median) | runs | × without [95 % CI] |")
    print("|-|----------------------:|-----:|--------------------:|")
    print(f"| run | {off * 1e3:.1f} ms | {len(through[False])} | 1.00× |")
    print(f"| run --locks | {on * 1e3:.1f} ms | {len(through[True])} | {on / off:.2f}× [{lo:.2f}–{hi:.2f}] |")
    if report:
        e = report["events"]
        print(f"\nlast --locks report: {e['waits']} waits, {e['samples']} samples, "
              f"{e['dropped_waits'] + e['dropped_samples']} dropped")


if __name__ == "__main__":
    main()
