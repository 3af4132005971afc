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


def named_by_perf(stderr, stdout):
    text = stdout + stderr
    lines = [l for l in text.splitlines() if re.search(r"\d+\s+\d", l) and ("+" in l or "0x" in l)]
    return lines[0].strip() if lines else text.strip().splitlines()[-1][:120]


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
        "perf lock contention": lambda c: [
            "unshare", "-m", "sh", "-c",
            'mount -t tracefs nodev /sys/kernel/tracing && exec perf lock contention -- "$@"',
            "perf",
        ] + c,
    }
    have = {n for n in configs if n == "untraced" or n.startswith("perfsleuth")}
    if shutil.which("strace"):
        have.add("strace -f -c -e trace=futex")
    if shutil.which("perf"):
        have.add("perf lock contention")
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
                    res["named"] = named_by_perf(err, out)
    print(f"{ROUNDS} interleaved rounds; program time = its own `seconds` where printed, else the command's wall time\n")
    for pname in programs:
        base = statistics.median(results[(pname, "untraced")]["prog"])
        print(f"## {pname}")
        print("| tool | program time (median) | × untraced | whole command (median) | names |")
        print("|------|----------------------:|-----------:|-----------------------:|-------|")
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
            print(f"| {cname} | {prog * 1e3:.1f} ms | {prog / base:.2f}× | {wall * 1e3:.1f} ms | {named or ''} |")
        print()


if __name__ == "__main__":
    main()
