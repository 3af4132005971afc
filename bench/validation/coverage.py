#!/usr/bin/env python3
"""Coverage of perfsleuth's intervals across invocations (issue 52; method and
results in docs/STATISTICS.md §9).

An interval is a promise about the next invocation too: "+1.0 % [+0.6, +1.4]"
should contain the true change in 95 of 100 invocations, not only describe the
variation inside one. This study measures that, at the defaults, on four
program shapes (bench/validation/progs): cpu (a serial LCG chain), alloc
(malloc/free of mixed sizes), mem (dependent loads over 64 MiB, huge pages
asked for) and io (pwrite/pread through the page cache), each at A/A, +1 %
and +3 % more work, in two modes:

  ab    perfsleuth ab --baseline c0 --candidate cN --build 'gcc ...' -- ./app
        (a scratch repository per shape: c0 factor 1.0; c1 the same program
        with only a comment changed, so a byte-identical binary in another
        worktree: the true change is exactly 0; c2 factor 1.01; c3 1.03; the
        factor is a string literal parsed at run time, so every commit
        compiles to the same code)
  run   perfsleuth run 'prog 1.0 BASE' 'prog F BASE'  (one binary, two
        commands; the summary's comparison)

K invocations per shape, change and mode, all shuffled together so the host's
noise falls on every cell alike. The true change of +1 % and +3 % is the
mean of R long reference invocations (`run --time-budget 20s`, each with a
fresh copy of the binary); A/A is exactly 0.

Reported per cell: coverage of the stated level (truth inside the interval),
wrong directions (a verdict of the opposite sign, or an interval wholly on
the wrong side of 0), flagged (A/A) or caught (+1 %, +3 %), the sd of the
estimates between invocations beside the sd the intervals imply within one
(half-width / 1.96), and the seconds per invocation.

`--paths` adds the mechanism experiment: an A/A of one binary reached by two
paths whose lengths differ by 0..15 bytes (hard links), as ab's worktrees
"baseline" and "candidate" did before issue 52.

Usage: python3 bench/validation/coverage.py [--k 12] [--k-mem 6] [--refs 2]
       [--shapes cpu,alloc,mem,io] [--modes ab,run] [--paths]
       [--perfsleuth PATH] [--out FILE] [--seed N]
Writes Markdown (default bench/validation/results-coverage.md) and the raw
records as JSON beside it. Needs gcc and git; Python standard library only.
"""
import argparse
import json
import math
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
import study  # noqa: E402  (calibration, git helpers, Wilson intervals, logging)
import ab as ab_study  # noqa: E402  (the gating row of an `ab` document)

log = study.log
SHAPES = ["cpu", "alloc", "mem", "io"]
CHANGES = [("A/A", "1.0"), ("+1%", "1.01"), ("+3%", "1.03")]
TARGET_MS = 25

WRAP = r"""/* The study program with its work factor compiled in as a string, parsed
   at run time like the command-line one, so every factor is the same code. */
#include "factor.h"
#define main prog_main
#include "prog.c"
#undef main
int main(void) {
    char *argv[] = {"app", FACTOR, BASE, 0};
    return prog_main(3, argv);
}
"""


def steal_ticks():
    with open("/proc/stat") as f:
        return int(f.readline().split()[8])


def make_repo(work, shape, base):
    repo = os.path.join(work, "repo-" + shape)
    study.init_repo(repo)
    shutil.copy(os.path.join(study.PROGS_DIR, shape + ".c"), os.path.join(repo, "prog.c"))
    shutil.copy(os.path.join(study.PROGS_DIR, "common.h"), os.path.join(repo, "common.h"))
    with open(os.path.join(repo, ".gitignore"), "w") as f:
        f.write("app\n")
    commits = {}
    for label, factor, note in [("c0", "1.0", ""), ("c1", "1.0", "/* an A/A commit */\n"),
                                ("c2", "1.01", ""), ("c3", "1.03", "")]:
        with open(os.path.join(repo, "wrap.c"), "w") as f:
            f.write(note + WRAP)
        with open(os.path.join(repo, "factor.h"), "w") as f:
            f.write('#define FACTOR "%s"\n#define BASE "%d"\n' % (factor, base))
        study.git(repo, "add", "-A")
        study.git(repo, "commit", "-qm", "%s: factor %s" % (label, factor))
        commits[factor if label != "c1" else "aa"] = study.git(repo, "rev-parse", "HEAD")
    return repo, commits


def run_ab(ps, db, repo, commits, factor):
    cand = commits["aa"] if factor == "1.0" else commits[factor]
    t0 = time.perf_counter()
    r = subprocess.run([ps, "ab", "--store", "sqlite:" + db, "--baseline", commits["1.0"],
                        "--candidate", cand, "--build", "gcc -O2 -o app wrap.c -lm",
                        "--format", "json", "--color", "never", "-n", "app", "--", "./app"],
                       cwd=repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # ab.py's reading of the gating row, its interval named as run_two names it.
    out = ab_study.judged(r, t0)
    if "ci_low" in out:
        out["lo"], out["hi"] = out.pop("ci_low"), out.pop("ci_high")
    return out


def run_two(ps, db, work, binary, base, factor, extra=(), paths=None):
    a, b = paths or (binary, binary)
    cmds = ["%s 1.0 %d" % (a, base), "%s %s %d" % (b, factor, base)]
    export = os.path.join(work, "run.json")
    t0 = time.perf_counter()
    r = subprocess.run([ps, "run", "--store", "sqlite:" + db, "--color", "never",
                        "--export-json", export, "-n", "a", "-n", "b"] + list(extra) + cmds,
                       cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    secs = time.perf_counter() - t0
    if r.returncode != 0:
        return {"error": r.stderr.strip()[-400:], "seconds": secs}
    with open(export) as f:
        doc = json.load(f)
    os.remove(export)
    t = doc["summary"]["comparisons"][0].get("time") or {}
    out = {"change": t["ratio"] - 1 if t.get("ratio") else None,
           "lo": t["ci_low"] - 1 if t.get("ci_low") else None,
           "hi": t["ci_high"] - 1 if t.get("ci_high") else None,
           "confidence": t.get("confidence"), "metric": t.get("metric"),
           "significant": bool(t.get("significant")), "pairs": t.get("pairs"), "seconds": secs}
    if out["significant"] and out["change"] is not None:
        out["verdict"] = "regressed" if out["change"] > 0 else "improved"
    else:
        out["verdict"] = "no change"
    return out


def reference(ps, db, work, binary, base, factor, refs):
    """The true change: the mean of `refs` long invocations, each with a fresh copy of the binary."""
    ests = []
    for i in range(refs):
        copy = os.path.join(work, "ref-%d-%s" % (i, os.path.basename(binary)))
        shutil.copy(binary, copy)
        r = run_two(ps, db, work, copy, base, factor, ["--time-budget", "20s"])
        os.remove(copy)
        if "error" in r:
            raise RuntimeError(r["error"])
        ests.append(r["change"])
        log("  reference %s %s: %+.3f %% [%+.3f, %+.3f] on %s" % (
            os.path.basename(binary), factor, 100 * r["change"], 100 * r["lo"], 100 * r["hi"],
            r["metric"]))
    return statistics.mean(ests), ests


def wrong_direction(rec, truth):
    if rec.get("change") is None:
        return False
    v = rec.get("verdict")
    if truth > 0 and v == "improved" or truth < 0 and v == "regressed":
        return True
    if truth == 0:
        return False
    lo, hi = rec["lo"], rec["hi"]
    return (truth > 0 and hi is not None and hi < 0) or (truth < 0 and lo is not None and lo > 0)


def summarize(records, truths):
    lines = ["| mode | shape | change | truth | n | covered | wrong direction | flagged / caught | "
             "estimates: mean, sd between | sd within (median) | s per invocation (median) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    totals = {}
    pooled = [0.0, 0]  # sum of (k - 1) * (between / within)^2, and of k - 1
    for mode in ("ab", "run"):
        for shape in SHAPES:
            for cond, factor in CHANGES:
                recs = [r for r in records if r["mode"] == mode and r["shape"] == shape
                        and r["cond"] == cond and "error" not in r and r.get("change") is not None]
                if not recs:
                    continue
                truth = 0.0 if factor == "1.0" else truths[shape][factor]
                cov = sum(1 for r in recs if r["lo"] <= truth <= r["hi"])
                wrong = sum(1 for r in recs if wrong_direction(r, truth))
                if factor == "1.0":
                    hit = sum(1 for r in recs if r["verdict"] in ("regressed", "improved"))
                else:
                    hit = sum(1 for r in recs if r["verdict"] == "regressed")
                ests = [r["change"] for r in recs]
                # An `ab` that looked on states a wider level (0.975, 0.997…):
                # its half-width is that level's z, not 1.96, sds.
                within = statistics.median((r["hi"] - r["lo"]) / 2 / z_of(r) for r in recs)
                between = statistics.stdev(ests) if len(ests) > 1 else float("nan")
                if len(recs) > 1 and within > 0:
                    pooled[0] += (len(recs) - 1) * (between / within) ** 2
                    pooled[1] += len(recs) - 1
                t = totals.setdefault(mode, [0, 0, 0])
                t[0] += cov
                t[1] += len(recs)
                t[2] += wrong
                lines.append("| %s | %s | %s | %+.2f %% | %d | %s | %d | %s | %+.2f %%, %.2f %% | %.2f %% | %.1f |" % (
                    mode, shape, cond, 100 * truth, len(recs), study.rate(cov, len(recs)), wrong,
                    study.rate(hit, len(recs)), 100 * statistics.mean(ests), 100 * between,
                    100 * within, statistics.median(r["seconds"] for r in recs)))
    for mode, (cov, n, wrong) in totals.items():
        lines.append("")
        lines.append("%s, all cells: covered %s, wrong direction %d of %d" % (
            mode, study.rate(cov, n), wrong, n))
    if pooled[1]:
        ratio, upper = pooled_ratio(*pooled)
        lines.append("")
        lines.append("sd between / sd within, pooled over the cells: %.2f (95 %% upper bound %.2f, "
                     "%d degrees of freedom)" % (ratio, upper, pooled[1]))
    return "\n".join(lines)


def z_of(rec):
    """The two-sided normal quantile of a record's stated level (95 % if absent)."""
    return statistics.NormalDist().inv_cdf((1 + (rec.get("confidence") or 0.95)) / 2)


def pooled_ratio(weighted, df):
    """The pooled ratio of spread between invocations to the spread the
    intervals state, and its one-sided 95 % upper bound (a chi-square bound
    on a pooled variance; Wilson-Hilferty's approximation of the quantile).
    The CI guard (`the_interval_covers_at_the_largest_between_invocation_
    component_the_study_cannot_exclude`, crates/perfsleuth-stats/src/paired.rs)
    simulates at that bound."""
    ratio = math.sqrt(weighted / df)
    z = 1.6448536
    chi = df * (1 - 2 / (9 * df) - z * math.sqrt(2 / (9 * df))) ** 3
    return ratio, ratio * math.sqrt(df / chi)


def paths_experiment(ps, db, work, binaries, bases):
    """A/A of one binary under two path lengths (hard links)."""
    out = []
    for shape in ("cpu", "alloc"):
        for extra in range(16):
            d = os.path.join(work, "p" + "x" * extra)
            os.makedirs(d, exist_ok=True)
            link = os.path.join(d, "app")
            if not os.path.exists(link):
                os.link(binaries[shape], link)
            short = os.path.join(work, "p", "app")
            os.makedirs(os.path.dirname(short), exist_ok=True)
            if not os.path.exists(short):
                os.link(binaries[shape], short)
            r = run_two(ps, db, work, None, bases[shape], "1.0", paths=(short, link))
            r.update(shape=shape, extra=extra)
            out.append(r)
            log("paths %s +%d bytes: %+.2f %% [%+.2f, %+.2f] %s" % (
                shape, extra, 100 * r.get("change", 0), 100 * (r.get("lo") or 0),
                100 * (r.get("hi") or 0), r.get("verdict")))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=12)
    ap.add_argument("--k-mem", type=int, default=6,
                    help="invocations per cell of mem, whose ~0.1 s runs make each take 10-60 s")
    ap.add_argument("--refs", type=int, default=2)
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--modes", default="ab,run")
    ap.add_argument("--paths", action="store_true")
    ap.add_argument("--perfsleuth", default=os.path.join(study.ROOT, "target/release/perfsleuth"))
    ap.add_argument("--out", default=os.path.join(HERE, "results-coverage.md"))
    ap.add_argument("--seed", type=int, default=52)
    ap.add_argument("--summarize", metavar="JSON",
                    help="only rewrite --out's table from the raw records of an earlier study")
    args = ap.parse_args()
    if args.summarize:
        with open(args.summarize) as f:
            doc = json.load(f)
        write_report(args.out, doc)
        return
    shapes = args.shapes.split(",")
    ps = os.path.abspath(args.perfsleuth)
    work = tempfile.mkdtemp(prefix="coverage-")
    db = os.path.join(work, "study.db")
    env = dict(os.environ)
    binaries = study.compile_programs(shapes, work)
    # mem is not calibrated: shortening it would leave mostly its setup
    # (64 MiB of page faults), not the dependent loads it is there for.
    bases = {s: study.default_base(s) if s == "mem" else
             study.calibrate(binaries[s], s, TARGET_MS, env) for s in shapes}
    log("bases: %s" % bases)
    machine = subprocess.run([ps, "env", "show"], stdout=subprocess.PIPE, text=True).stdout
    steal0, t0 = steal_ticks(), time.time()
    truths, refs = {}, {}
    for s in shapes:
        truths[s], refs[s] = {}, {}
        for _, factor in CHANGES[1:]:
            truths[s][factor], refs[s][factor] = reference(ps, db, work, binaries[s], bases[s],
                                                           factor, args.refs)
    repos = {s: make_repo(work, s, bases[s]) for s in shapes} if "ab" in args.modes else {}
    jobs = [(m, s, c, f) for m in args.modes.split(",") for s in shapes for c, f in CHANGES
            for _ in range(args.k_mem if s == "mem" else args.k)]
    random.Random(args.seed).shuffle(jobs)
    records = []
    for i, (mode, shape, cond, factor) in enumerate(jobs):
        before = steal_ticks()
        if mode == "ab":
            repo, commits = repos[shape]
            rec = run_ab(ps, db, repo, commits, factor)
        else:
            rec = run_two(ps, db, work, binaries[shape], bases[shape], factor)
        rec.update(mode=mode, shape=shape, cond=cond, steal_ticks=steal_ticks() - before)
        records.append(rec)
        log("%d/%d %s %s %s: %s" % (i + 1, len(jobs), mode, shape, cond,
                                    rec.get("error") or "%+.2f %% [%+.2f, %+.2f] %s on %s, %.1f s" % (
                                        100 * rec["change"], 100 * rec["lo"], 100 * rec["hi"],
                                        rec["verdict"], rec.get("metric"), rec["seconds"])))
    paths = paths_experiment(ps, db, work, binaries, bases) if args.paths else []
    elapsed, steal = time.time() - t0, steal_ticks() - steal0
    doc = {"machine": machine, "bases": bases, "truths": truths, "references": refs,
           "records": records, "paths": paths, "seconds": elapsed, "steal_ticks": steal}
    with open(os.path.splitext(args.out)[0] + ".json", "w") as f:
        json.dump(doc, f, indent=1)
    write_report(args.out, doc)
    shutil.rmtree(work, ignore_errors=True)


def write_report(out, doc):
    text = "# Coverage across invocations (issue 52)\n\n```\n%s```\n\n%s\n\n%d s in all, %d ticks of steal.\n" % (
        doc["machine"], summarize(doc["records"], doc["truths"]), doc["seconds"], doc["steal_ticks"])
    with open(out, "w") as f:
        f.write(text)
    print(text)


if __name__ == "__main__":
    main()
