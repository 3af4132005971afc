#!/usr/bin/env python3
"""The peer of bisect's real study: what users write today — `git bisect run`
with a threshold script around one hyperfine timing (10 runs per commit,
as hyperfine's default minimum), the threshold halfway between the ends'
means measured first. Same generated repositories and culprits as
real_study.py.

    python3 bench/bisect/git_bisect_peer.py [TRIES]
"""
import json, os, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from real_study import COMMITS as commits, SCENARIOS as scenarios, make_repo  # noqa: E402

tries = int(sys.argv[1]) if len(sys.argv) > 1 else 10

def mean_time(d):
    subprocess.run(["gcc", "-O2", "-o", "prog", "prog.c"], cwd=d, check=True)
    out = os.path.join(d, ".t.json")
    subprocess.run(["hyperfine", "-N", "--runs", "10", "--warmup", "1", "--style", "none",
                    "--export-json", out, "./prog"], cwd=d, check=True, capture_output=True)
    return json.load(open(out))["results"][0]["mean"]

print(f"| scenario ({commits} commits, {tries} tries) | right (one of the culprits) | time per bisection (median) |")
print("|---|---|---|")
for name, culprits_of in scenarios:
    right, times = 0, []
    for t in range(tries):
        culprits = culprits_of(t)
        d = make_repo(culprits)
        started = time.time()
        subprocess.run(["git", "checkout", "-q", f"HEAD~{commits}"], cwd=d, check=True)
        good = mean_time(d)
        subprocess.run(["git", "checkout", "-q", "main"], cwd=d, check=True)
        bad = mean_time(d)
        threshold = (good + bad) / 2
        script = os.path.join(d, ".step.sh")
        open(script, "w").write(
            "#!/bin/sh\ngcc -O2 -o prog prog.c || exit 125\n"
            "hyperfine -N --runs 10 --warmup 1 --style none --export-json .t.json ./prog >/dev/null || exit 125\n"
            f"python3 -c \"import json,sys; sys.exit(0 if json.load(open('.t.json'))['results'][0]['mean'] < {threshold} else 1)\"\n")
        os.chmod(script, 0o755)
        subprocess.run(["git", "bisect", "start", "main", f"main~{commits}"], cwd=d, check=True, capture_output=True)
        out = subprocess.run(["git", "bisect", "run", script], cwd=d, capture_output=True, text=True)
        took = time.time() - started
        line = next((l for l in out.stdout.splitlines() if "is the first bad commit" in l), "")
        sha = line.split()[0] if line else ""
        subject = subprocess.run(["git", "log", "-1", "--format=%s", sha], cwd=d, capture_output=True, text=True).stdout.strip() if sha else ""
        named = int(subject.split(":")[0].split()[1]) if subject else None
        right += named in culprits
        times.append(took)
        print(f"  try {t}: truth {sorted(culprits)} named {named} in {took:.0f} s", file=sys.stderr)
    times.sort()
    print(f"| {name} | {right} of {tries} | {times[len(times) // 2]:.0f} s |")
