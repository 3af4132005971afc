#!/usr/bin/env python3
"""bisect's real study (docs/BISECT.md, "Study (real)"): generated git
repositories of a ~30 ms C program (bench/bisect/make_repo.sh), bisected by
perfsleuth with its defaults, TRIES times per scenario; whether the named
culprits are the right commits, and the time each bisection took.

    python3 bench/bisect/real_study.py [TRIES] [PERFSLEUTH]
"""
import json, os, subprocess, sys, tempfile, time

here = os.path.dirname(os.path.abspath(__file__))
# The study's scenarios (shared with git_bisect_peer.py): try -> {commit: percent}.
SCENARIOS = [
    ("one +3 % culprit", lambda t: {4 + (t * 7) % 27: 3.0}),
    ("two culprits, +2 % and +3 %", lambda t: {3 + (t * 5) % 13: 2.0, 17 + (t * 3) % 14: 3.0}),
]
COMMITS = 32


def make_repo(culprits):
    """A generated repository of the ~30 ms program with these culprits."""
    d = tempfile.mkdtemp(prefix="bisect-study-")
    spec = " ".join(f"{c}:{p}" for c, p in culprits.items())
    subprocess.run([os.path.join(here, "make_repo.sh"), d, str(COMMITS), spec], check=True)
    # 27 M iterations: ~30 ms on the study's machine.
    subprocess.run(["sed", "-i", "s/20000000/27000000/", "work.h"], cwd=d, check=False)
    return d


def main():
    tries = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    exe = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else "target/release/perfsleuth")
    study(tries, exe)


def study(tries, exe):
    commits = COMMITS
    scenarios = SCENARIOS
    print(f"| scenario ({commits} commits, {tries} tries) | right | a wrong commit named | time per bisection (median, max) | steps (median) | runs (median) |")
    print("|---|---|---|---|---|---|")
    for name, culprits_of in scenarios:
        right = wrong = 0
        times, steps, runs = [], [], []
        for t in range(tries):
            culprits = culprits_of(t)
            d = make_repo(culprits)
            started = time.time()
            out = subprocess.run(
                [exe, "bisect", "--no-store", "--baseline", f"HEAD~{commits}", "--candidate", "HEAD",
                 "--build", "gcc -O2 -o prog prog.c", "--format", "json", "--", "./prog"],
                cwd=d, capture_output=True, text=True)
            took = time.time() - started
            if out.returncode != 0:
                print(f"  try {t}: exit {out.returncode}: {out.stderr.strip()[-300:]}", file=sys.stderr)
                continue
            doc = json.loads(out.stdout)
            subjects = {c["commit"]: c["subject"] for c in doc["commits"]}
            named = sorted(int(subjects[c["commit"]].split(":")[0].split()[1])
                           for c in doc["culprits"] if c["confirmed"])
            truth = sorted(culprits)
            right += named == truth
            wrong += any(n not in truth for n in named)
            times.append(took)
            steps.append(len(doc["steps"]))
            runs.append(doc["runs"])
            print(f"  try {t}: truth {truth} named {named} in {took:.0f} s, {len(doc['steps'])} steps, "
                  f"{doc['runs']} runs; undecided {[(subjects[u['from']], subjects[u['to']]) for u in doc['undecided']]}",
                  file=sys.stderr)
        med = lambda v: sorted(v)[len(v) // 2] if v else float("nan")
        print(f"| {name} | {right} of {tries} | {wrong} of {tries} | {med(times):.0f} s, {max(times, default=0):.0f} s | {med(steps)} | {med(runs)} |")


if __name__ == "__main__":
    main()
