#!/usr/bin/env python3
"""Re-judges the separate-run, no-history comparisons of a verdicts.py study
from its store with another perfsleuth binary: `compare B X --no-history`
depends on nothing but the stored runs and the rule, so a changed rule (the
assumed noise of a machine) can be judged on the very same measurements.

Usage: python3 bench/validation/rejudge.py STORE.db PERFSLEUTH [--k 30]
       [--programs cpu,alloc] [--seed 20261201]
The run ids are recovered by replaying verdicts.py's seeded order (calibration
runs first, then per round and program B and the shuffled A, C3, C10, E3, IR)
and checked against each run's recorded command.
"""
import argparse
import json
import os
import random
import sqlite3
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import study  # noqa: E402

FACTOR = {"B": "1.00", "A": "1.00", "C3": "1.03", "C10": "1.10", "E3": "1.03"}
CONDS = [("A/A, no history", "A"), ("+3 %, no history", "C3"), ("+10 %, no history", "C10")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("perfsleuth")
    ap.add_argument("--k", type=int, default=30)
    ap.add_argument("--programs", default="cpu,alloc")
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args()
    programs = args.programs.split(",")
    con = sqlite3.connect("file:%s?mode=ro" % args.db, uri=True)
    commands = {rid: json.loads(o)["commands"] for rid, o in con.execute("SELECT id, options FROM runs")}
    rng = random.Random(args.seed)
    next_id = 1 + 5 * len(programs)
    counts = {}
    for rnd in range(args.k):
        for p in programs:
            ids = {"B": next_id}
            next_id += 1
            order = ["A", "C3", "C10", "E3", "IR"]
            rng.shuffle(order)
            for role in order:
                ids[role] = next_id
                next_id += 1
            for role, rid in ids.items():
                cmd = commands.get(rid)
                if cmd is None:
                    sys.exit("run %d (round %d %s %s) is not in the store" % (rid, rnd, p, role))
                want = 3 if role == "IR" else 1
                ok = len(cmd) == want and all(os.path.basename(c.split()[0]) == p for c in cmd)
                if role != "IR":
                    ok = ok and cmd[0].split()[1] == FACTOR[role]
                if not ok:
                    sys.exit("run %d is %r, expected %s %s" % (rid, cmd, p, role))
            for cond, role in CONDS:
                r = subprocess.run([args.perfsleuth, "compare", str(ids["B"]), str(ids[role]), "--store",
                                    "sqlite:" + args.db, "--format", "json", "--no-history"],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                if r.returncode not in (0, 1):
                    sys.exit("compare failed: " + r.stderr)
                v = study.parse_compare(json.loads(r.stdout), p)["verdict"]
                counts.setdefault((p, cond), []).append(v)
    print("| program | condition | flagged / caught | wrong direction | regressed · improved · no change · inconclusive |")
    print("|---|---|---|---|---|")
    for p in programs + ["overall"]:
        for cond, _ in CONDS:
            vs = [v for (q, c), l in counts.items() if c == cond and (p == "overall" or q == p) for v in l]
            aa = cond.startswith("A/A")
            hit = sum(v in ("regressed", "improved") for v in vs) if aa else sum(v == "regressed" for v in vs)
            wrong = 0 if aa else sum(v == "improved" for v in vs)
            n = [sum(v == x for v in vs) for x in ("regressed", "improved", "no change", "inconclusive")]
            print("| %s | %s | %s | %d | %s |" % (p, cond, study.rate(hit, len(vs)), wrong,
                                                 " · ".join(map(str, n))))


if __name__ == "__main__":
    main()
