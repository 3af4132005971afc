#!/usr/bin/env python3
"""Validation of the issue-12 verdicts (method and results: docs/STATISTICS.md §6).

Default options only, separate `perfsleuth run` invocations per side (like two
CI jobs), real programs (bench/validation/progs). Per program, first
`perfsleuth run --repeat 5` of the baseline (the calibration the README
suggests); then K rounds, each measuring, in a shuffled order:

  B    the baseline, SLOWDOWN 1.0            (one run)
  A    an identical candidate, 1.0           (one run)
  C3   a +3 % candidate, 1.03                (one run)
  C10  a +10 % candidate, 1.10               (one run)
  E3   `run --baseline B` of the +3 % candidate: it adds rounds while the
       comparison is inconclusive, up to the default --max-time
  IR   one run of three commands: 1.0 (reference), 1.0 again, 1.03 — the
       in-run comparisons of its summary

and judging:

  A/A, no history       compare B A --no-history
  A/A, with history     compare B A        (same-binary runs of 1.0 in the store)
  +3 %, no history      compare B C3 --no-history
  +3 %, with history    compare B C3
  +10 %, no history     compare B C10 --no-history
  +10 %, with history   compare B C10
  +3 %, run --baseline  compare B E3       (what `run --baseline` reported)
  in-run A/A, +3 %      the run summary of IR (its `significant` flag)

The peer is hyperfine's scripts/welch_ttest.py (Welch's t-test, p < 0.05) on
the same runs' wall-time samples: B against the candidate run (E3 included;
for in-run, the two commands of IR). All runs happen in a clean commit of a
scratch git repository, so the store's same-binary runs at the baseline's
commit join the baseline as `compare` does for any user.

Usage: python3 bench/validation/verdicts.py [--k 30] [--programs cpu,alloc]
       [--quick] [--perfsleuth PATH] [--out FILE]
Writes Markdown (default bench/validation/results-verdicts.md) and raw JSON
next to it. Needs gcc; Python standard library only.
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
import study  # noqa: E402  (shared helpers: Welch peer, programs, git, rates)

ROOT = study.ROOT
log = study.log

JUDGED = [
    ("A/A, no history", "A", ["--no-history"]),
    ("A/A, with history", "A", []),
    ("+3 %, no history", "C3", ["--no-history"]),
    ("+3 %, with history", "C3", []),
    ("+10 %, no history", "C10", ["--no-history"]),
    ("+10 %, with history", "C10", []),
    ("+3 %, run --baseline (extends)", "E3", []),
]
FACTORS = {"B": 1.0, "A": 1.0, "C3": 1.03, "C10": 1.10, "E3": 1.03}


def run_cmd(ps, db, repo, args, env):
    t0 = time.perf_counter()
    r = subprocess.run([ps] + args + ["--store", "sqlite:" + db, "--color", "never"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=repo)
    return r, time.perf_counter() - t0


def measure(ps, db, repo, work, tag, name, argv, env, extra=()):
    """One `perfsleuth run` of `argv` named `name`; returns id, wall samples, seconds."""
    export = os.path.join(work, tag + ".json")
    r, secs = run_cmd(ps, db, repo, ["run", "-n", name, "--export-json", export] + list(extra)
                      + [" ".join(argv)], env)
    if r.returncode not in (0, 1):
        raise RuntimeError("run %s exit %d: %s" % (tag, r.returncode, r.stderr[-600:]))
    with open(export) as f:
        doc = json.load(f)
    b = [x for x in doc["run"]["benchmarks"] if x["name"] == name][0]
    rounds = max((s.get("round", 0) for s in b["samples"]), default=0) + 1
    return {"id": doc["run"]["id"], "samples": [s["wall_ns"] for s in b["samples"]],
            "seconds": secs, "rounds": rounds, "doc": doc}


def judge(ps, db, repo, base_id, cand_id, name, extra, env):
    r, secs = run_cmd(ps, db, repo, ["compare", str(base_id), str(cand_id), "--format", "json"]
                      + extra, env)
    if r.returncode not in (0, 1):
        return {"verdict": "error", "error": r.stderr[-400:], "seconds": secs}
    out = study.parse_compare(json.loads(r.stdout), name)
    row = [x for x in json.loads(r.stdout)["rows"] if x["benchmark"] == name and x["metric"] == "wall"][0]
    out["band"] = row.get("band")
    out["noise"] = row.get("noise")
    out["seconds"] = secs
    return out


def welch(base, cand):
    t, p = study.welch_t_test(base, cand)
    return {"p": p, "slower": -t > 0}


def in_run(doc):
    """The in-run verdicts of IR: index 1 = the 1.0 copy, 2 = the 1.03 command."""
    out = {}
    names = [b["name"] for b in doc["run"]["benchmarks"]]
    for c in doc["summary"]["comparisons"]:
        t = c.get("time") or {}
        out[names[c["benchmark"]]] = {"significant": bool(t.get("significant")),
                                      "ratio": t.get("ratio"), "ci_low": t.get("ci_low"),
                                      "ci_high": t.get("ci_high"), "p": t.get("p_value")}
    samples = {b["name"]: [s["wall_ns"] for s in b["samples"]] for b in doc["run"]["benchmarks"]}
    return out, samples


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--k", type=int, default=30)
    ap.add_argument("--quick", action="store_true", help="K = 2, to test the script")
    ap.add_argument("--programs", default="cpu,alloc")
    ap.add_argument("--target-ms", type=float, default=20.0)
    ap.add_argument("--perfsleuth")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--out")
    ap.add_argument("--max-minutes", type=float)
    args = ap.parse_args()
    k = 2 if args.quick else args.k
    programs = [p for p in args.programs.split(",") if p]
    out_md = os.path.abspath(args.out or os.path.join(
        HERE, "results-verdicts-quick.md" if args.quick else "results-verdicts.md"))
    out_json = os.path.splitext(out_md)[0] + ".json"
    ps_src = os.path.abspath(args.perfsleuth) if args.perfsleuth else study.build_perfsleuth()
    work = tempfile.mkdtemp(prefix="perfsleuth-verdicts-")
    env = dict(os.environ, TMPDIR=work)
    try:
        ps = os.path.join(work, "perfsleuth")
        shutil.copy2(ps_src, ps)
        bins = study.compile_programs(programs, work)
        bases = {p: study.calibrate(bins[p], p, args.target_ms, env) for p in programs}
        repo = study.init_repo(os.path.join(work, "repo"))
        db = os.path.join(work, "results.db")
        facts = {}
        r = subprocess.run([ps, "env", "show", "--json"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, text=True)
        if r.returncode == 0:
            facts = {key: v.get("value") for key, v in json.loads(r.stdout)["facts"].items()}
        started = time.perf_counter()
        argv = lambda p, f: [bins[p], "%.2f" % f, str(bases[p])]  # noqa: E731
        calib = {}
        for p in programs:
            r, secs = run_cmd(ps, db, repo, ["run", "-n", p, "--repeat", "5", " ".join(argv(p, 1.0))], env)
            if r.returncode != 0:
                sys.exit("calibration of %s failed: %s" % (p, r.stderr[-600:]))
            calib[p] = {"seconds": secs, "report": [l for l in r.stderr.splitlines() if "noise for" in l]}
            log("%s: --repeat 5 in %.1f s: %s" % (p, secs, " ".join(calib[p]["report"])))
        rng = random.Random(args.seed)
        records = []
        done_rounds = 0
        for rnd in range(k):
            el = time.perf_counter() - started
            if args.max_minutes and rnd and el + el / rnd > 60 * args.max_minutes:
                log("!! stopping after %d rounds (--max-minutes)" % rnd)
                break
            for p in programs:
                tag = lambda role: "r%02d-%s-%s" % (rnd, p, role)  # noqa: E731
                runs = {"B": measure(ps, db, repo, work, tag("B"), p, argv(p, 1.0), env)}
                order = ["A", "C3", "C10", "E3", "IR"]
                rng.shuffle(order)
                for role in order:
                    if role == "IR":
                        export = os.path.join(work, tag("IR") + ".json")
                        r, secs = run_cmd(ps, db, repo, [
                            "run", "-n", "ref", "-n", "same", "-n", "plus3", "--export-json", export,
                            " ".join(argv(p, 1.0)), " ".join(argv(p, 1.0)), " ".join(argv(p, 1.03))], env)
                        if r.returncode != 0:
                            raise RuntimeError("IR: " + r.stderr[-600:])
                        with open(export) as f:
                            verdicts, samples = in_run(json.load(f))
                        runs["IR"] = {"seconds": secs, "verdicts": verdicts, "samples": samples}
                    elif role == "E3":
                        runs["E3"] = measure(ps, db, repo, work, tag("E3"), p, argv(p, 1.03), env,
                                             ["--baseline", str(runs["B"]["id"])])
                    else:
                        runs[role] = measure(ps, db, repo, work, tag(role), p, argv(p, FACTORS[role]), env)
                base = runs["B"]
                for cond, role, extra in JUDGED:
                    cand = runs[role]
                    v = judge(ps, db, repo, base["id"], cand["id"], p, extra, env)
                    rec = {"round": rnd, "program": p, "condition": cond, "verdict": v,
                           "welch": welch(base["samples"], cand["samples"]),
                           "base_n": len(base["samples"]), "cand_n": len(cand["samples"]),
                           "cand_rounds": cand["rounds"],
                           "seconds": base["seconds"] + cand["seconds"] + v["seconds"]}
                    records.append(rec)
                    log("[%d/%d] %-5s %-31s %-13s %s [%s, %s] band ±%s | welch p=%.3g | %.1f s" % (
                        rnd + 1, k, p, cond, v["verdict"], study.pct(v.get("change")),
                        study.pct(v.get("ci_low")), study.pct(v.get("ci_high")),
                        "–" if v.get("band") is None else "%.1f%%" % (100 * v["band"]),
                        rec["welch"]["p"], rec["seconds"]))
                ir = runs["IR"]
                for cond, name in (("in-run A/A", "same"), ("in-run +3 %", "plus3")):
                    v = ir["verdicts"][name]
                    rec = {"round": rnd, "program": p, "condition": cond,
                           "verdict": {"verdict": ("regressed" if v["ratio"] > 1 else "improved")
                                       if v["significant"] else "not significant", **v},
                           "welch": welch(ir["samples"]["ref"], ir["samples"][name]),
                           "base_n": len(ir["samples"]["ref"]), "cand_n": len(ir["samples"][name]),
                           "cand_rounds": 5, "seconds": ir["seconds"]}
                    records.append(rec)
                    log("[%d/%d] %-5s %-31s %-13s ratio %.4f [%.4f, %.4f] | welch p=%.3g" % (
                        rnd + 1, k, p, cond, rec["verdict"]["verdict"], v["ratio"], v["ci_low"],
                        v["ci_high"], rec["welch"]["p"]))
            done_rounds = rnd + 1
        elapsed = time.perf_counter() - started
        md = report(records, programs, facts, done_rounds, k, bases, calib, elapsed, ps_src)
        log(md)
        with open(out_md, "w") as f:
            f.write(md)
        with open(out_json, "w") as f:
            json.dump({"meta": {"argv": sys.argv[1:], "k": done_rounds, "bases": bases, "facts": facts,
                                "calibration": calib, "elapsed_s": elapsed}, "records": records}, f)
        log("wrote %s and %s" % (os.path.relpath(out_md, ROOT), os.path.relpath(out_json, ROOT)))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def report(records, programs, facts, done, k, bases, calib, elapsed, ps_src):
    conds = [c for c, _, _ in JUDGED] + ["in-run A/A", "in-run +3 %"]
    lines = [
        "# Verdict validation (issue 12)",
        "",
        "Generated by `python3 bench/validation/verdicts.py %s` on %s." % (
            " ".join(sys.argv[1:]), time.strftime("%Y-%m-%d %H:%M %Z")),
        "",
        "- machine: %s (model %s), %s logical cores, kernel %s, virt %s / container %s" % (
            facts.get("cpu.model"), facts.get("cpu.model_id"), facts.get("cpu.logical_cores"),
            facts.get("kernel.release"), facts.get("virt.hypervisor"), facts.get("virt.container")),
        "- perfsleuth: %s; default options; K = %d rounds per program%s" % (
            study.version(os.path.join(ps_src)), done, "" if done == k else " (of %d planned)" % k),
        "- programs: %s" % ", ".join("%s BASE=%d" % (p, bases[p]) for p in programs),
        "- calibration (`run --repeat 5` of each baseline): %s" % "; ".join(
            "%s %.0f s: %s" % (p, c["seconds"], " ".join(c["report"])) for p, c in calib.items()),
        "- total %s" % study.mmss(elapsed),
        "",
        "| program | condition | perfsleuth flagged / caught | wrong direction | regressed · improved · no change · inconclusive · other | Welch flagged / caught | seconds per verdict (median) | candidate rounds (median) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in programs + ["overall"]:
        for cond in conds:
            rs = [r for r in records if r["condition"] == cond and (p == "overall" or r["program"] == p)]
            if not rs:
                continue
            aa = "A/A" in cond
            vs = [r["verdict"]["verdict"] for r in rs]
            if aa:
                hit = sum(v in ("regressed", "improved") for v in vs)
                wrong = 0
                whit = sum(r["welch"]["p"] < 0.05 for r in rs)
            else:
                hit = sum(v == "regressed" for v in vs)
                wrong = sum(v == "improved" for v in vs)
                whit = sum(r["welch"]["p"] < 0.05 and r["welch"]["slower"] for r in rs)
            counts = [sum(v == x for v in vs) for x in ("regressed", "improved", "no change", "inconclusive")]
            other = len(vs) - sum(counts)
            lines.append("| %s | %s | %s | %d | %s · %d | %s | %.1f | %s |" % (
                p, cond, study.rate(hit, len(rs)), wrong, " · ".join(map(str, counts)), other,
                study.rate(whit, len(rs)), statistics.median(r["seconds"] for r in rs),
                statistics.median(r["cand_rounds"] for r in rs)))
    lines += ["",
              "A/A rows count `regressed` or `improved` as flagged; the others count `regressed` as "
              "caught and `improved` as a wrong direction. In-run rows count the run summary's "
              "`significant` flag. Rates are k/K with a 95 % Wilson interval. The Welch peer judges "
              "the same runs' wall samples (baseline run against candidate run), p < 0.05; seconds "
              "are those of the same runs (baseline + candidate + compare).", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
