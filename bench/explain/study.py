#!/usr/bin/env python3
"""Validation of `perfsleuth explain`'s experiment rule (issue 17; method
and results in docs/EXPLAIN.md, "The study").

The "other machine" is this one as a fingerprint (`env show --json`) with
three recorded facts changed, so every difference is known:

  env.GOGC=50        a variable the C program never reads: no effect
  env.PYTHONHASHSEED=0  the same: no effect
  env.GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-AVX,-AVX_Fast_Unaligned_Load
                     glibc's SSE2 string functions instead of AVX2: a real
                     wall-time effect on bench/explain/memops.c

K times: `perfsleuth explain FINGERPRINT RUN --format json` (RUN: one
stored wall-time run of memops), default options (10 rounds, 3 s per
set-up). The experiments' outcomes are read from the document; the peer is
hyperfine's Welch t-test (scripts/welch_ttest.py, p < 0.05) on the same
samples (base vs experiment, from the stored run of each explain).

"flagged": an outcome other than `no effect` / `inconclusive` for a
no-effect variable; "detected": `changes` with the effect > 1 for the mask.
Usage: python3 bench/explain/study.py [--k 20] [--perfsleuth PATH].
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "validation"))
import study  # noqa: E402  (Welch's test, Wilson intervals)

MASK = "glibc.cpu.hwcaps=-AVX2,-AVX,-AVX_Fast_Unaligned_Load"
NULLS = {"env.GOGC": "50", "env.PYTHONHASHSEED": "0"}


def sh(argv, **kw):
    return subprocess.run(argv, check=True, capture_output=True, text=True, **kw)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--k", type=int, default=20)
    ap.add_argument("--perfsleuth", default=os.path.join(study.ROOT, "target/release/perfsleuth"))
    args = ap.parse_args()
    ps = args.perfsleuth
    tmp = tempfile.mkdtemp(prefix="explain-study-")
    env = {k: v for k, v in os.environ.items()
           if k not in ("GLIBC_TUNABLES", "GOGC", "PYTHONHASHSEED")}
    prog = os.path.join(tmp, "memops")
    sh(["gcc", "-O2", "-o", prog, os.path.join(HERE, "memops.c")])
    db = os.path.join(tmp, "s.db")
    cmd = f"{prog} 20000"
    sh([ps, "run", "--store", db, cmd], env=env)
    here = json.loads(sh([ps, "env", "show", "--json"], env=env).stdout)
    for key, value in list(NULLS.items()) + [("env.GLIBC_TUNABLES", MASK)]:
        here["facts"][key] = {"value": value, "class": "performance"}
    fp = os.path.join(tmp, "other.json")
    with open(fp, "w") as f:
        json.dump(here, f)

    rec = {name: {"flag": 0, "welch": 0, "effects": []}
           for name in list(NULLS) + ["glibc.cpu.hwcaps"]}
    seconds = []
    samples = []
    for i in range(args.k):
        t0 = time.monotonic()
        out = sh([ps, "explain", "--store", db, fp, "1", "--format", "json"], env=env)
        seconds.append(time.monotonic() - t0)
        doc = json.loads(out.stdout)
        run = json.loads(sh([ps, "show", "--json", "--store", db, str(doc["run"])]).stdout)
        walls = {}
        for b in run["run"]["benchmarks"]:
            v = b["parameters"].get("variant")
            walls[v] = [s["wall_ns"] for s in b["samples"]]
        samples.append(len(walls.get("base", [])))
        for f in doc["benchmarks"][0]["findings"]:
            name = f["experiment"]
            if name not in rec:
                continue
            r = rec[name]
            r["effects"].append(f["effect"]["ratio"] if f["effect"] else float("nan"))
            t, p = study.welch_t_test(walls[name], walls["base"])
            if name in NULLS:
                r["flag"] += f["outcome"] not in ("no effect", "inconclusive")
                r["welch"] += p < 0.05
            else:
                r["flag"] += f["outcome"] == "changes" and f["effect"]["ratio"] > 1
                r["welch"] += p < 0.05 and t > 0
        study.log(f"{i + 1}/{args.k}: " + ", ".join(
            f"{f['experiment']} {f['outcome']}" for f in doc["benchmarks"][0]["findings"]))

    k = args.k
    print(f"\nexplain FINGERPRINT RUN, {k} times, memops 20000, default options")
    print("| experiment | truth | explain | Welch peer (same samples) | median effect |")
    print("|---|---|---|---|---|")
    for name, r in rec.items():
        truth = "no effect" if name in NULLS else "slower"
        what = "flagged" if name in NULLS else "detected"
        eff = sorted(x for x in r["effects"] if x == x)
        median = eff[len(eff) // 2] if eff else float("nan")
        lo, hi = study.wilson(r["flag"], k)
        plo, phi = study.wilson(r["welch"], k)
        print(f"| `{name}` | {truth} | {what} {r['flag']}/{k} ({100*lo:.0f}–{100*hi:.0f} %) "
              f"| {r['welch']}/{k} ({100*plo:.0f}–{100*phi:.0f} %) | {median:.3f}× |")
    seconds.sort()
    print(f"\ntime per explain: median {seconds[len(seconds)//2]:.1f} s "
          f"(min {seconds[0]:.1f}, max {seconds[-1]:.1f}); "
          f"timed runs of the base per explain: median {sorted(samples)[len(samples)//2]}")


if __name__ == "__main__":
    main()
