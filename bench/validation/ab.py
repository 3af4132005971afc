#!/usr/bin/env python3
"""Validation of `perfsleuth ab` (issue 14; method and results in
docs/STATISTICS.md §7).

A scratch git repository holds a CPU-bound C program (a serial LCG chain,
like bench/validation/progs/cpu.c) whose work factor is compiled in:

  c0   factor 1.00                       the baseline
  c1   factor 1.00, another tag string   an A/A pair: a different binary,
                                         the same work
  c2   factor 1.03 (--step)               3 % more work (--step 1.01: 1 %)

K comparisons per condition, all conditions shuffled together so the host's
noise falls on each alike, every one with default options:

  ab A/A        perfsleuth ab --baseline c0 --candidate c1 --build make
  ab +3 %       perfsleuth ab --baseline c0 --candidate c2 --build make
  runs A/A      perfsleuth run (c0), perfsleuth run (c1), perfsleuth compare
  runs +3 %     the same with c2 (the two-separate-CI-jobs way)
  hyperfine     hyperfine -N c0 c1 / c0 c2, judged by Welch's t-test
                (hyperfine's scripts/welch_ttest.py, p < 0.05)

"flagged" is a verdict of regressed or improved on the gating time (wall,
or since issue 34 CPU time for a program that keeps one CPU busy);
"caught" is regressed. Usage: python3 bench/validation/ab.py [--k 30]
[--quick] [--perfsleuth PATH] [--out FILE]. Needs gcc, make, git, hyperfine.
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import study  # noqa: E402  (Welch's test, Wilson intervals, logging)

ROOT = study.ROOT
log = study.log

PROGRAM = r"""#include <stdio.h>
#include <stdlib.h>
#include <math.h>
#include "factor.h"
/* Read through a volatile so every factor compiles to the same code (with
   a literal 1.00 the multiply was folded away, the loop moved, and the
   "+1 %" binary measured +2.1 %). */
static volatile double work_factor = WORK_FACTOR;
int main(int argc, char **argv) {
    long long n = llround(atoll(argc > 1 ? argv[1] : "1000000") * work_factor);
    unsigned long long s = 0x9E3779B97F4A7C15ULL, h = 0;
    for (long long i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        unsigned long long x = s;
        x ^= x >> 31; x *= 0xBF58476D1CE4E5B9ULL; x ^= x >> 27;
        h = ((h << 7) | (h >> 57)) ^ x;
    }
    printf("%s %llu\n", TAG, h);
    return 0;
}
"""
MAKEFILE = "app: main.c factor.h\n\tgcc -O2 -o app main.c -lm\n"


def git(repo, *args):
    subprocess.run(["git", "-C", repo, "-c", "user.name=study", "-c", "user.email=s@example.com"]
                   + list(args), check=True, stdout=subprocess.DEVNULL)


def commit(repo, factor, tag, message):
    with open(os.path.join(repo, "factor.h"), "w") as f:
        f.write('#define WORK_FACTOR %s\n#define TAG "%s"\n' % (factor, tag))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    out = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], check=True,
                         stdout=subprocess.PIPE, text=True)
    return out.stdout.strip()


def build_at(repo, rev, dest):
    """The program of `rev`, built into `dest` (for the peers)."""
    subprocess.run(["git", "-C", repo, "worktree", "add", "--detach", "-q", dest, rev], check=True)
    subprocess.run(["make", "-s", "-C", dest], check=True)
    return os.path.join(dest, "app")


def calibrate(app, target_ms):
    base = 2_000_000
    for _ in range(3):
        t = min(study.time_once([app, str(base)], None) for _ in range(5))
        base = max(1, int(base * target_ms / 1000.0 / t))
    return base


ROW_METRIC = "gating"


def wall_row(doc):
    """The judged row: the gating one (the judged time: CPU time for this
    CPU-bound program since issue 34, wall time before), or the metric given
    by --row."""
    for row in doc.get("rows", []):
        if (row.get("gating") if ROW_METRIC == "gating" else row.get("metric") == ROW_METRIC):
            ch = row.get("change") or {}
            return {"verdict": row.get("verdict"), "change": ch.get("change"),
                    "ci_low": ch.get("ci_low"), "ci_high": ch.get("ci_high"),
                    "p": row.get("p_value"), "confidence": ch.get("confidence"),
                    "metric": row.get("metric")}
    return {"verdict": "missing"}


def judged(r, t0):
    """The wall row of a compare document on stdout (exit 0 or 1: 1 is a
    gate, not a failure), with the seconds since t0; or the error."""
    secs = time.perf_counter() - t0
    if r.returncode not in (0, 1):
        return {"error": r.stderr.strip()[-400:], "seconds": secs}
    out = wall_row(json.loads(r.stdout))
    out["seconds"] = secs
    return out


def run_ab(ps, db, repo, base, cand, work, extra=()):
    t0 = time.perf_counter()
    r = subprocess.run([ps, "ab", "--store", "sqlite:" + db, "--baseline", base, "--candidate", cand,
                        "--build", "make -s", "--format", "json", "--color", "never", "-n", "app"]
                       + list(extra) + ["--", "./app %d" % work],
                       cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return judged(r, t0)


def run_separate(ps, db, repo, base_app, cand_app, work):
    t0 = time.perf_counter()
    ids = []
    for app in (base_app, cand_app):
        r = subprocess.run([ps, "run", "--store", "sqlite:" + db, "--color", "never", "-n", "app",
                            "%s %d" % (app, work)], cwd=repo, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, text=True)
        if r.returncode != 0:
            return {"error": r.stderr.strip()[-400:], "seconds": time.perf_counter() - t0}
        out = subprocess.run([ps, "runs", "--json", "--limit", "1", "--store", "sqlite:" + db],
                             stdout=subprocess.PIPE, text=True, check=True)
        ids.append(str(json.loads(out.stdout)["runs"][0]["id"]))
    r = subprocess.run([ps, "compare", "--store", "sqlite:" + db, "--format", "json", "--no-history"]
                       + ids, cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return judged(r, t0)


def run_hyperfine(tmp, base_app, cand_app, work):
    export = os.path.join(tmp, "hf.json")
    t0 = time.perf_counter()
    subprocess.run(["hyperfine", "-N", "--style", "none", "--export-json", export,
                    "%s %d" % (base_app, work), "%s %d" % (cand_app, work)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    secs = time.perf_counter() - t0
    with open(export) as f:
        res = json.load(f)["results"]
    b, c = res[0]["times"], res[1]["times"]
    t, p = study.welch_t_test(b, c)
    return {"p": p, "t_cand_minus_base": -t, "seconds": secs,
            "change": (sum(c) / len(c)) / (sum(b) / len(b)) - 1}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, default=30)
    ap.add_argument("--quick", action="store_true", help="K = 2, to test the script")
    ap.add_argument("--target-ms", type=float, default=20.0)
    ap.add_argument("--perfsleuth", default=os.path.join(ROOT, "target/release/perfsleuth"))
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--out", default=os.path.join(HERE, "results-ab.md"))
    ap.add_argument("--step", type=float, default=1.03,
                    help="the candidate's work factor (default 1.03: +3 %%; 1.01 for the +1 %% target)")
    ap.add_argument("--only", help="comma-separated methods to run: ab,runs,hyperfine")
    ap.add_argument("--ab-args", default="", help="extra options of every ab, e.g. '--max-time 30s'")
    ap.add_argument("--row", default="gating", help="the metric row judged: the gating row (default), or a metric (e.g. task_clock_ns with --ab-args '--metric task_clock_ns')")
    args = ap.parse_args()
    global ROW_METRIC
    ROW_METRIC = args.row
    k = 2 if args.quick else args.k
    step = "%+g %%" % round(100 * (args.step - 1), 2)
    ps = os.path.abspath(args.perfsleuth)
    work_dir = tempfile.mkdtemp(prefix="perfsleuth-ab-study-")
    repo = os.path.join(work_dir, "repo")
    os.makedirs(repo)
    git(repo, "init", "-q", "-b", "main")
    with open(os.path.join(repo, "main.c"), "w") as f:
        f.write(PROGRAM)
    with open(os.path.join(repo, "Makefile"), "w") as f:
        f.write(MAKEFILE)
    with open(os.path.join(repo, ".gitignore"), "w") as f:
        f.write("app\n")
    revs = {"c0": commit(repo, "1.00", "base", "baseline"),
            "c1": commit(repo, "1.00", "same", "A/A: another binary, the same work"),
            "c2": commit(repo, "%.2f" % args.step, "more", step + " work")}
    apps = {name: build_at(repo, rev, os.path.join(work_dir, name)) for name, rev in revs.items()}
    work = calibrate(apps["c0"], args.target_ms)
    log("work units %d (~%.0f ms); perfsleuth %s" % (work, args.target_ms, ps))
    env_show = subprocess.run([ps, "env", "show"], stdout=subprocess.PIPE, text=True).stdout
    machine = [l.strip() for l in env_show.splitlines()
               if any(k in l for k in ("cpu.model ", "kernel.release", "cpu.logical_cores", "virt.container",
                                       "noise.steal_pct"))]
    methods = (args.only or "ab,runs,hyperfine").split(",")
    plan = [(cond, i) for cond in ("ab A/A", "ab " + step, "runs A/A", "runs " + step, "hyperfine A/A",
                                   "hyperfine " + step) for i in range(k)
            if cond.split()[0] in methods]
    random.Random(args.seed).shuffle(plan)
    records = []
    start = time.perf_counter()
    for n, (cond, i) in enumerate(plan):
        cand = "c1" if cond.endswith("A/A") else "c2"
        if cond.startswith("ab"):
            rec = run_ab(ps, os.path.join(work_dir, "ab.db"), repo, revs["c0"], revs[cand], work,
                         args.ab_args.split())
        elif cond.startswith("runs"):
            rec = run_separate(ps, os.path.join(work_dir, "runs.db"), repo, apps["c0"], apps[cand], work)
        else:
            rec = run_hyperfine(work_dir, apps["c0"], apps[cand], work)
        rec["condition"] = cond
        records.append(rec)
        log("%d/%d %s: %s" % (n + 1, len(plan), cond,
                              rec.get("verdict", "p=%.3g" % rec["p"] if "p" in rec else rec)))
    total = time.perf_counter() - start
    shutil.rmtree(work_dir, ignore_errors=True)

    def flagged(r):
        if "error" in r:
            return False
        if "verdict" in r:
            return r["verdict"] in ("regressed", "improved")
        return r["p"] == r["p"] and r["p"] < 0.05

    def caught(r):
        if "error" in r:
            return False
        if "verdict" in r:
            return r["verdict"] == "regressed"
        return flagged(r) and r["t_cand_minus_base"] > 0

    def wrong(r):
        if "error" in r:
            return False
        if "verdict" in r:
            return r["verdict"] == "improved"
        return flagged(r) and r["t_cand_minus_base"] < 0

    lines = ["# `perfsleuth ab` validation (issue 14)", "",
             "K = %d per condition, shuffled; %.0f min in all; work %d units (~%.0f ms a run)."
             % (k, total / 60, work, args.target_ms), "", "Machine (`perfsleuth env show`):", ""]
    lines += ["    " + m for m in machine]
    if args.ab_args:
        lines += ["", "ab options: `%s`" % args.ab_args]
    lines += ["", "| method | A/A flagged | %s caught | %s wrong direction | seconds per comparison (median: all · A/A · %s) |" % (step, step, step),
              "|---|---|---|---|---|"]
    for method in methods:
        aa = [r for r in records if r["condition"] == method + " A/A"]
        p3 = [r for r in records if r["condition"] == method + " " + step]
        secs = sorted(r["seconds"] for r in aa + p3)
        errors = sum("error" in r for r in aa + p3)
        label = {"ab": "`perfsleuth ab` (one job, interleaved, paired rounds)",
                 "runs": "two `perfsleuth run`s + `compare --no-history`",
                 "hyperfine": "`hyperfine -N` both + Welch's t-test"}[method]
        def median_s(rs):
            xs = sorted(r["seconds"] for r in rs)
            return xs[len(xs) // 2] if xs else float("nan")
        lines.append("| %s | %s | %s | %d | %.1f · %.1f · %.1f |%s" % (
            label, study.rate(sum(map(flagged, aa)), len(aa)), study.rate(sum(map(caught, p3)), len(p3)),
            sum(map(wrong, p3)), secs[len(secs) // 2] if secs else float("nan"), median_s(aa), median_s(p3),
            " %d errors" % errors if errors else ""))
    ab3 = [r for r in records if r["condition"] == "ab " + step and r.get("change") is not None]
    if ab3:
        ch = sorted(r["change"] for r in ab3)
        widths = sorted(r["ci_high"] - r["ci_low"] for r in ab3 if r.get("ci_low") is not None)
        lines += ["", "ab " + step + ": measured change median %+.1f %% (range %+.1f … %+.1f %%), CI width median %.1f points."
                  % (100 * ch[len(ch) // 2], 100 * ch[0], 100 * ch[-1],
                     100 * widths[len(widths) // 2] if widths else float("nan"))]
    text = "\n".join(lines) + "\n"
    with open(args.out, "w") as f:
        f.write(text)
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump({"k": k, "work": work, "seconds": total, "ab_args": args.ab_args,
                   "records": records}, f, indent=1)
    print(text)


if __name__ == "__main__":
    main()
