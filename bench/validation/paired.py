#!/usr/bin/env python3
"""Validation of the issue-34 verdicts: paired estimates from interleaved
runs, and the judged time (CPU time where it measures the code). Method and
results: docs/STATISTICS.md §8.

Default options only. Per program (bench/validation/progs: cpu, alloc, io,
calibrated to ~25 ms) first `perfsleuth run --repeat 5` of the baseline (the
same-binary history the README suggests), then K rounds; in each round, per
program, these jobs in a seeded random order, all programs' jobs shuffled
together so the host's noise falls on every condition alike:

  IR-AA   perfsleuth run 'P 1.0' 'P 1.0'           two commands in one run
  IR-3    perfsleuth run 'P 1.0' 'P 1.03'
  IR-1    perfsleuth run --time-budget 10s 'P 1.0' 'P 1.01'   (+1 % within 60 s;
          --budget-1 sets the budget, --conditions picks conditions)
  B, A, C separate runs of P 1.0, P 1.0 and P 1.10 (three CI jobs)

judged as:

  in one run     the run summary's comparison (its `significant` flag and
                 direction, the judged metric, the pairs)
  A/A separate   compare B A --no-history, and compare B A (with history)
  +10 % separate compare B C --no-history, and compare B C (with history)

The peer is hyperfine's scripts/welch_ttest.py (Welch's t-test on wall time,
p < 0.05; reimplemented in study.py) on the same runs' samples: the two
commands of an in-run job, or the two separate runs.

Usage: python3 bench/validation/paired.py [--k 30] [--programs cpu,alloc,io]
       [--perfsleuth PATH] [--out FILE] [--seed N] [--only in-run]
Writes Markdown (default bench/validation/results-paired.md) and the raw
records as JSON next to it. Needs gcc; Python standard library only.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import study  # noqa: E402  (Welch's test, Wilson intervals, programs, calibration)

log = study.log

IN_RUN = [("IR-AA", 1.0, []), ("IR-3", 1.03, []), ("IR-1", 1.01, ["--time-budget", "10s"])]
SEPARATE = [("A/A, no history", "A", ["--no-history"]), ("A/A, with history", "A", []),
            ("+10 %, no history", "C", ["--no-history"]), ("+10 %, with history", "C", [])]
FACTORS = {"B": 1.0, "A": 1.0, "C": 1.10}


def steal_ticks():
    with open("/proc/stat") as f:
        fields = f.readline().split()
    # cpu user nice system idle iowait irq softirq steal ...
    ticks = [int(x) for x in fields[1:9]]
    return ticks[7], sum(ticks)


def ps_run(ps, db, work, tag, args, env):
    export = os.path.join(work, tag + ".json")
    cmd = [ps, "run", "--store", "sqlite:" + db, "--color", "never", "--export-json", export] + args
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                       cwd=work)
    secs = time.perf_counter() - t0
    if r.returncode != 0:
        return None, secs, r.stderr.strip()[-300:]
    with open(export) as f:
        doc = json.load(f)
    os.remove(export)
    return doc, secs, None


def in_run(ps, db, work, binary, base, prog, cond, factor, extra, env):
    cmds = ["%s 1.0 %d" % (binary, base), "%s %s %d" % (binary, factor, base)]
    if factor == 1.0:
        # Two commands with the same text would be one benchmark: name them.
        args = extra + ["-n", prog + "-a", "-n", prog + "-b"] + cmds
    else:
        args = extra + cmds
    doc, secs, err = ps_run(ps, db, work, "%s-%s" % (prog, cond), args, env)
    rec = {"program": prog, "condition": cond, "seconds": secs}
    if err:
        rec["error"] = err
        return rec
    c = doc["summary"]["comparisons"][0]
    t = c.get("time") or {}
    rec["perfsleuth"] = {
        "significant": bool(t.get("significant")),
        "ratio": t.get("ratio"),
        "ci": [t.get("ci_low"), t.get("ci_high")],
        "p": t.get("p_value"),
        "metric": t.get("metric", "wall"),
        "pairs": t.get("pairs"),
    }
    walls = [[s["wall_ns"] for s in b["samples"]] for b in doc["run"]["benchmarks"]]
    rec["runs"] = [len(w) for w in walls]
    tt, p = study.welch_t_test(walls[1], walls[0])
    rec["welch"] = {"p": p, "t_cand_minus_base": tt}
    return rec


def separate_run(ps, db, work, binary, base, prog, tag, factor, env):
    doc, secs, err = ps_run(ps, db, work, "%s-%s" % (prog, tag),
                            ["-n", prog, "%s %s %d" % (binary, factor, base)], env)
    if err:
        return {"error": err, "seconds": secs}
    b = doc["run"]["benchmarks"][0]
    return {"id": doc["run"]["id"], "seconds": secs,
            "walls": [s["wall_ns"] for s in b["samples"]]}


def compare(ps, db, work, b, c, prog, extra):
    cmd = [ps, "compare", str(b["id"]), str(c["id"]), "--store", "sqlite:" + db,
           "--format", "json"] + extra
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=work)
    secs = time.perf_counter() - t0
    if r.returncode not in (0, 1):
        return {"verdict": "error", "error": r.stderr.strip()[-300:], "seconds": secs}
    doc = json.loads(r.stdout)
    rows = [x for x in doc["rows"] if x["benchmark"] == prog and x.get("gating")]
    if not rows:
        return {"verdict": "error", "error": "no gating row", "seconds": secs}
    row = rows[0]
    ch = row.get("change") or {}
    notes = row.get("notes", [])
    return {"verdict": row["verdict"], "metric": row["metric"], "seconds": secs,
            "change": ch.get("change"), "ci": [ch.get("ci_low"), ch.get("ci_high")],
            "advice": any("no number of runs in one invocation" in n for n in notes),
            "more_runs": any("more runs per side" in n for n in notes)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=30)
    ap.add_argument("--programs", default="cpu,alloc,io")
    ap.add_argument("--perfsleuth")
    ap.add_argument("--target-ms", type=float, default=25.0)
    ap.add_argument("--seed", type=int, default=34)
    ap.add_argument("--only", choices=["in-run"],
                    help="only the in-run conditions (no separate runs, no calibration history)")
    ap.add_argument("--conditions", help="in-run conditions to run, e.g. IR-AA,IR-1 (default: all)")
    ap.add_argument("--budget-1", default="10s",
                    help="IR-1's --time-budget per command (the issue allows 60 s a comparison)")
    ap.add_argument("--max-time-1", help="IR-1's --max-time (default: the run's own, 3× its budgets)")
    ap.add_argument("--out", default=os.path.join(HERE, "results-paired.md"))
    a = ap.parse_args()
    global IN_RUN
    one = ["--time-budget", a.budget_1] + (["--max-time", a.max_time_1] if a.max_time_1 else [])
    IN_RUN = [(c, f, one if c == "IR-1" else x) for c, f, x in IN_RUN
              if not a.conditions or c in a.conditions.split(",")]
    programs = a.programs.split(",")
    ps = os.path.abspath(a.perfsleuth) if a.perfsleuth else study.build_perfsleuth()
    work = tempfile.mkdtemp(prefix="perfsleuth-paired-")
    db = os.path.join(work, "store.db")
    env = dict(os.environ, TMPDIR=work)
    rng = random.Random(a.seed)
    t_start = time.time()
    steal0 = steal_ticks()
    env_show = subprocess.run([ps, "env", "show"], stdout=subprocess.PIPE, text=True).stdout
    binaries = study.compile_programs(programs, work)
    bases = {p: study.calibrate(binaries[p], p, a.target_ms, env) for p in programs}
    log("programs: " + ", ".join("%s BASE=%d" % kv for kv in bases.items()))
    calib = {}
    for p in programs if a.only != "in-run" else []:
        t0 = time.perf_counter()
        r = subprocess.run([ps, "run", "--store", "sqlite:" + db, "--color", "never", "-n", p,
                            "--repeat", "5", "%s 1.0 %d" % (binaries[p], bases[p])],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=work)
        calib[p] = {"seconds": time.perf_counter() - t0, "rc": r.returncode}
    records = []
    for k in range(a.k):
        sep = [] if a.only == "in-run" else ["SEP"]
        jobs = [(p, j) for p in programs for j in [c[0] for c in IN_RUN] + sep]
        rng.shuffle(jobs)
        for p, j in jobs:
            s0 = steal_ticks()
            if j == "SEP":
                order = ["B", "A", "C"]
                rng.shuffle(order)
                runs = {t: separate_run(ps, db, work, binaries[p], bases[p], p, t, FACTORS[t], env)
                        for t in order}
                for cond, cand, extra in SEPARATE:
                    rec = {"round": k, "program": p, "condition": cond}
                    b, c = runs["B"], runs[cand]
                    if "error" in b or "error" in c:
                        rec["error"] = b.get("error") or c.get("error")
                    else:
                        rec["perfsleuth"] = compare(ps, db, work, b, c, p, extra)
                        tt, pv = study.welch_t_test(c["walls"], b["walls"])
                        rec["welch"] = {"p": pv, "t_cand_minus_base": tt}
                        rec["seconds"] = b["seconds"] + c["seconds"] + rec["perfsleuth"]["seconds"]
                    records.append(rec)
            else:
                cond, factor, extra = [c for c in IN_RUN if c[0] == j][0]
                rec = in_run(ps, db, work, binaries[p], bases[p], p, cond, factor, extra, env)
                rec["round"] = k
                s1 = steal_ticks()
                rec["steal_pct"] = 100.0 * (s1[0] - s0[0]) / max(1, s1[1] - s0[1])
                records.append(rec)
        log("round %d/%d done (%s)" % (k + 1, a.k, mmss(time.time() - t_start)))
        write(a, records, programs, bases, calib, env_show, ps, t_start, steal0)
    shutil.rmtree(work, ignore_errors=True)


def mmss(s):
    return "%d:%02d" % (s // 60, s % 60)


def summary_in_run(recs, cond):
    ok = [r for r in recs if "perfsleuth" in r]
    sig = [r for r in ok if r["perfsleuth"]["significant"]]
    up = [r for r in sig if (r["perfsleuth"]["ratio"] or 1) > 1]
    down = [r for r in sig if (r["perfsleuth"]["ratio"] or 1) < 1]
    welch = [r for r in ok if r["welch"]["p"] == r["welch"]["p"] and r["welch"]["p"] < 0.05]
    welch_up = [r for r in welch if r["welch"]["t_cand_minus_base"] > 0]
    aa = cond == "IR-AA"
    flagged = len(sig) if aa else len(up)
    wflag = len(welch) if aa else len(welch_up)
    wrong = 0 if aa else len(down)
    wwrong = 0 if aa else len(welch) - len(welch_up)
    metrics = sorted({r["perfsleuth"]["metric"] for r in ok})
    ratios = [r["perfsleuth"]["ratio"] for r in ok if r["perfsleuth"]["ratio"]]
    widths = [r["perfsleuth"]["ci"][1] - r["perfsleuth"]["ci"][0] for r in ok
              if None not in r["perfsleuth"]["ci"]]
    return [study.rate(flagged, len(ok)), str(wrong), study.rate(wflag, len(ok)), str(wwrong),
            "/".join(metrics), "%+.2f %%" % (100 * (statistics.median(ratios) - 1)) if ratios else "–",
            "%.2f" % (100 * statistics.median(widths)) if widths else "–",
            "%.1f" % statistics.median(r["seconds"] for r in ok) if ok else "–",
            "%.0f" % statistics.median(min(r["runs"]) for r in ok) if ok else "–",
            "%.1f" % statistics.median(r.get("steal_pct", 0) for r in ok) if ok else "–"]


def summary_separate(recs, cond):
    ok = [r for r in recs if "perfsleuth" in r and r["perfsleuth"]["verdict"] != "error"]
    v = [r["perfsleuth"]["verdict"] for r in ok]
    aa = cond.startswith("A/A")
    flagged = sum(x in ("regressed", "improved") for x in v) if aa else v.count("regressed")
    wrong = 0 if aa else v.count("improved")
    welch = [r for r in ok if r["welch"]["p"] == r["welch"]["p"] and r["welch"]["p"] < 0.05]
    welch_up = [r for r in welch if r["welch"]["t_cand_minus_base"] > 0]
    wflag = len(welch) if aa else len(welch_up)
    counts = " · ".join(str(v.count(x)) for x in
                        ("regressed", "improved", "no change", "inconclusive"))
    metrics = sorted({r["perfsleuth"]["metric"] for r in ok})
    advice = sum(r["perfsleuth"]["advice"] for r in ok)
    more = sum(r["perfsleuth"]["more_runs"] for r in ok)
    return [study.rate(flagged, len(ok)), str(wrong), counts, study.rate(wflag, len(ok)),
            "/".join(metrics), "%d · %d" % (advice, more),
            "%.1f" % statistics.median(r["seconds"] for r in ok) if ok else "–"]


def write(a, records, programs, bases, calib, env_show, ps, t_start, steal0):
    s1 = steal_ticks()
    steal = 100.0 * (s1[0] - steal0[0]) / max(1, s1[1] - steal0[1])
    version = subprocess.run([ps, "--version"], stdout=subprocess.PIPE, text=True).stdout.strip()
    out = ["# Issue 34 validation: paired verdicts and the judged time", "",
           "- perfsleuth: %s; default options; K = %d rounds per program" % (version, a.k),
           "- programs: " + ", ".join("%s BASE=%d" % (p, bases[p]) for p in programs),
           "- calibration (`run --repeat 5` of each baseline): " +
           ", ".join("%s %.0f s" % (p, c["seconds"]) for p, c in calib.items()),
           "- hypervisor steal over the whole study (/proc/stat): %.1f %%" % steal,
           "- elapsed: %s" % mmss(time.time() - t_start), "",
           "## Two commands in one `perfsleuth run`", "",
           "| program | condition | perfsleuth flagged / caught | wrong direction | Welch flagged / caught |"
           " Welch wrong direction | judged metric | median change | median CI width (points) |"
           " seconds a run (median) | runs a command (median) | steal % during the run (median) |",
           "|" + "---|" * 12]
    for p in programs + ["overall"]:
        for cond, _, _ in IN_RUN:
            recs = [r for r in records if r.get("condition") == cond and p in (r["program"], "overall")]
            if recs:
                out.append("| %s | %s | %s |" % (p, cond, " | ".join(summary_in_run(recs, cond))))
    out += ["", "## Separate runs (two CI jobs)", "",
            "| program | condition | perfsleuth flagged / caught | wrong direction |"
            " regressed · improved · no change · inconclusive | Welch flagged / caught | judged metric |"
            " notes naming the interleaved command · 'N more runs' notes | seconds (median) |",
            "|" + "---|" * 9]
    for p in programs + ["overall"]:
        for cond, _, _ in SEPARATE:
            recs = [r for r in records if r.get("condition") == cond and p in (r["program"], "overall")]
            if recs:
                out.append("| %s | %s | %s |" % (p, cond, " | ".join(summary_separate(recs, cond))))
    errors = [r for r in records if "error" in r]
    out += ["", "Errors: %d" % len(errors)] + ["- %s" % r["error"] for r in errors[:10]]
    out += ["", "## Machine (`perfsleuth env show` at the start)", "", "```", env_show.strip(), "```", ""]
    with open(a.out, "w") as f:
        f.write("\n".join(out))
    with open(os.path.splitext(a.out)[0] + ".json", "w") as f:
        json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
