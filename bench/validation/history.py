#!/usr/bin/env python3
"""Validation of `perfsleuth history` change points (issue 16; results in
docs/HISTORY.md "Validation on this machine").

A real CPU-bound program (bench/validation/progs/cpu.c, ~20 ms) is run as a
CI job would run it, `perfsleuth run --runs 10 -n work './cpu F'`, once per
"commit", into one store per series:

  A/A     F = 1.00 for all N runs                 no change: any change point is a false alarm
  +S %    F = 1.00 for N/2 runs, then 1 + S/100   one step at index N/2

All series are measured round-robin (run k of every series, then run k+1),
so the host's drift falls on each alike. Then per series:
  perfsleuth   `perfsleuth history --format json` (default method and floor)
  Otava        apache-otava's compute_change_points (its defaults: window 50,
               p 0.001, no magnitude floor) on the same series of medians
A step is "found" when a change point lies within ±2 points of N/2;
anything else is a false change point. Usage:
  python3 bench/validation/history.py [--series 8] [--runs 40] [--step 5]
  [--otava-python PATH] [--out FILE]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EXE = os.path.join(ROOT, "target/release/perfsleuth")

OTAVA = """
import json, sys
from otava.analysis import compute_change_points
for line in sys.stdin:
    s = json.loads(line)
    cps, _ = compute_change_points(s)
    print(json.dumps([int(c.index) for c in cps]))
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--series", type=int, default=8, help="series per condition")
    ap.add_argument("--runs", type=int, default=40, help="runs (points) per series")
    ap.add_argument("--step", type=float, default=5.0, help="step size in percent")
    ap.add_argument("--otava-python", default=sys.executable)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="perfsleuth-history-study-")
    prog = os.path.join(work, "cpu")
    subprocess.run(["gcc", "-O2", "-o", prog, os.path.join(HERE, "progs/cpu.c"), "-lm"], check=True)
    conds = [("A/A", 0.0)] * a.series + [(f"+{a.step:g} %", a.step)] * a.series
    stores = [os.path.join(work, f"s{i}.db") for i in range(len(conds))]
    half = a.runs // 2
    t0 = time.time()
    for k in range(a.runs):
        for i, (_, step) in enumerate(conds):
            f = 1.0 + (step / 100.0 if k >= half else 0.0)
            cmd = [EXE, "run", "--store", stores[i], "--runs", "10", "-n", "work", f"{prog} {f:.4f}"]
            r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                # Said and retried once, not hidden: the series needs every point.
                print(f"run failed ({r.returncode}): {r.stderr.strip()}; retrying", file=sys.stderr)
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        print(f"round {k + 1}/{a.runs} done, {time.time() - t0:.0f} s", file=sys.stderr)
    results = []
    series_values = []
    for i, (name, step) in enumerate(conds):
        t = time.perf_counter()
        out = subprocess.run([EXE, "history", "--store", stores[i], "--all-branches", "--format", "json"],
                             check=True, capture_output=True, text=True).stdout
        took = time.perf_counter() - t
        s = json.loads(out)["series"][0]
        values = [p["value"] for p in s["points"]]
        series_values.append(values)
        results.append({"condition": name, "step": step, "ours": [c["index"] for c in s.get("change_points", [])],
                        "noise": s["noise"], "floor": s["min_change"], "history_s": took,
                        "changes": [c["change"] for c in s.get("change_points", [])]})
    r = subprocess.run([a.otava_python, "-c", OTAVA], input="".join(json.dumps(v) + "\n" for v in series_values),
                       capture_output=True, text=True)
    otava = [json.loads(l) for l in r.stdout.splitlines()] if r.returncode == 0 else None
    for i, res in enumerate(results):
        res["otava"] = otava[i] if otava else None

    def score(cps, step):
        found = any(abs(c - half) <= 2 for c in cps) if step else False
        false = [c for c in cps if not (step and abs(c - half) <= 2)]
        return found, len(false)

    lines = [f"# history validation: {a.series} series per condition, {a.runs} runs each, cpu.c --runs 10", "",
             "| condition | tool | series with a false change point | step found | false change points (total) |",
             "|---|---|---:|---:|---:|"]
    for name in dict.fromkeys(c for c, _ in conds):
        rows = [x for x in results if x["condition"] == name]
        for tool in ("ours", "otava"):
            if rows[0][tool] is None:
                continue
            sc = [score(x[tool], x["step"]) for x in rows]
            found = sum(f for f, _ in sc)
            lines.append(f"| {name} | {'perfsleuth' if tool == 'ours' else 'Otava 0.8.0'} | "
                         f"{sum(1 for _, n in sc if n)}/{len(rows)} | "
                         f"{f'{found}/{len(rows)}' if rows[0]['step'] else '–'} | {sum(n for _, n in sc)} |")
    noise = sorted(x["noise"] for x in results)
    lines += ["", f"learned run-to-run noise (σ of a run's median): median {100 * noise[len(noise) // 2]:.2f} %, "
              f"range {100 * noise[0]:.2f}–{100 * noise[-1]:.2f} %; `history` took "
              f"{1000 * max(x['history_s'] for x in results):.0f} ms at most per series; "
              f"measuring took {time.time() - t0:.0f} s in all", ""]
    if otava is None:
        lines.append(f"Otava not run: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else '?'}")
    text = "\n".join(lines)
    print(text)
    if a.out:
        open(a.out + ".md", "w").write(text + "\n")
        json.dump(results, open(a.out + ".json", "w"), indent=1)


if __name__ == "__main__":
    main()
