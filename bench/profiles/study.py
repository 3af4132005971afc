#!/usr/bin/env python3
"""The studies behind docs/PROFILES.md: attribution, accuracy and overhead
of `--profile`, each beside `perf` measured on the same machine in the same
session.

attribution  Three programs (three.c; three.rs, whose functions are inlined
             into `work`; main_three.c calling libthree.so), each a git
             repository with two commits: the candidate gives `alpha` 20 %
             more work and `beta` 5 % less, `gamma` unchanged. `perfsleuth ab
             --profile` compares the commits N times; a comparison passes
             when the first function of the judged row's time attribution is
             alpha, slower, beta is named faster or is in the noise, and
             gamma is in the noise. The peer: `perf record` (997 Hz, DWARF
             stacks) of one run of each side, the functions ranked by the
             change of their self time (share × samples × period), as one
             would read `perf diff`.
accuracy     Self shares of alpha, beta and gamma from `perfsleuth run
             --profile` (10 runs), from `perf report` on `perf record` of the
             same 10 runs, and from callgrind's instruction counts.
overhead     Wall time of the cpu and alloc validation programs under
             `perfsleuth run` with and without `--profile`, rounds
             interleaved; beside the wall time of the same programs under
             `perf record -F 997 --call-graph dwarf` against plain, timed
             from inside by a launcher so perf's own start-up is not counted.

Usage, from the repository root, after `cargo build --release -p perfsleuth`:
    python3 bench/profiles/study.py [attribution|accuracy|overhead|all] [N]
Prints Markdown tables, and the raw numbers as JSON on the last line.
"""

import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HERE = os.path.join(ROOT, "bench", "profiles")
PS = os.path.join(os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "perfsleuth")
VALIDATION = os.path.join(ROOT, "bench", "validation", "progs")

KINDS = {
    "C": {
        "files": ["three.c"],
        "make": "bench: three.c\n\tgcc -O2 -g $(FLAGS) -o bench three.c\n",
        "flags": lambda a, b: f"-DALPHA={a} -DBETA={b}",
        "names": ("alpha", "beta", "gamma_"),
    },
    "Rust (inlined)": {
        "files": ["three.rs"],
        "make": "bench: three.rs\n\t$(FLAGS) rustc -C opt-level=2 -g -o bench three.rs\n",
        "flags": lambda a, b: f"ALPHA={a} BETA={b}",
        "names": ("three::alpha", "three::beta", "three::gamma"),
    },
    "shared library": {
        "files": ["libthree.c", "main_three.c"],
        "make": "bench: libthree.c main_three.c\n"
        "\tgcc -O2 -g -fPIC -shared $(FLAGS) -o libthree.so libthree.c\n"
        "\tgcc -O2 -g -o bench main_three.c -L. -lthree -Wl,-rpath,'$$ORIGIN'\n",
        "flags": lambda a, b: f"-DALPHA={a} -DBETA={b}",
        "names": ("lib_alpha", "lib_beta", "lib_gamma"),
    },
}


def sh(args, cwd=None, check=True, **kw):
    p = subprocess.run(args, cwd=cwd, capture_output=True, text=True, **kw)
    if check and p.returncode not in (0, 1):
        raise SystemExit(f"{args} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def repo(kind, work):
    """A git repository: the baseline commit, then the candidate (alpha
    +20 %, beta −5 %) as the working tree's last commit."""
    k = KINDS[kind]
    d = os.path.join(work, re.sub(r"\W+", "_", kind))
    os.makedirs(d)
    for f in k["files"]:
        with open(os.path.join(HERE, f)) as src, open(os.path.join(d, f), "w") as dst:
            dst.write(src.read())
    git = lambda *a: sh(["git", "-c", "user.name=s", "-c", "user.email=s@s", *a], cwd=d)
    git("init", "-q", "-b", "main")
    for a, b, msg in [(100, 100, "base"), (120, 95, "alpha +20 %, beta -5 %")]:
        with open(os.path.join(d, "Makefile"), "w") as f:
            f.write(f"FLAGS = {k['flags'](a, b)}\n" + k["make"])
        git("add", "-A")
        git("commit", "-qm", msg)
    return d


def attribution_row(doc):
    """The judged time row that carries a time attribution."""
    rows = [r for r in doc["rows"] if r.get("time_functions")]
    gating = [r for r in rows if r.get("gating")]
    return (gating or rows or [None])[0]


def perf_self(cmd, cwd, data):
    """perf record (cpu-clock, 997 Hz, DWARF stacks) of one run: self time
    per function, ns."""
    sh(["perf", "record", "-q", "-e", "cpu-clock", "-F", "997", "--call-graph", "dwarf",
        "-o", data, "--", *cmd], cwd=cwd)
    out = sh(["perf", "report", "-i", data, "--stdio", "--no-children", "-q",
              "--sort", "symbol", "-F", "overhead,period,symbol"], cwd=cwd).stdout
    by = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+(\d+)\s+\[[.k]\]\s+(\S+)", line)
        if m:
            by[m.group(3)] = by.get(m.group(3), 0) + int(m.group(2))
    return by


def attribution(n):
    work = tempfile.mkdtemp(prefix="perfsleuth-profiles-")
    results = {}
    for kind, k in KINDS.items():
        d = repo(kind, work)
        alpha, beta, gamma = k["names"]
        ours, peer = [], []
        for i in range(n):
            start = time.time()
            p = sh([PS, "ab", "--no-store", "--profile", "--format", "json", "--baseline", "HEAD~1",
                    "--candidate", "HEAD", "--build", "make", "--", "./bench"], cwd=d)
            elapsed = time.time() - start
            doc = json.loads(p.stdout)
            row = attribution_row(doc)
            fs = row["time_functions"] if row else []
            by = {f["function"]: f for f in fs}
            first = fs[0] if fs else None
            ok_alpha = bool(first) and first["function"] == alpha and first["self_shift_ns"] > 0 and not first["in_the_noise"]
            b = by.get(beta)
            ok_beta = b is None or b["in_the_noise"] or b["self_shift_ns"] < 0
            g = by.get(gamma)
            ok_gamma = g is None or g["in_the_noise"]
            ours.append({
                "metric": row and row["metric"], "verdict": row and row["verdict"],
                "first": first and first["function"], "alpha_ms": by.get(alpha, {}).get("self_shift_ns", 0) / 1e6,
                "beta_ms": b and b["self_shift_ns"] / 1e6, "beta_noise": b and b["in_the_noise"],
                "gamma_noise": g and g["in_the_noise"], "pass": ok_alpha and ok_beta and ok_gamma,
                "alpha_ok": ok_alpha, "beta_ok": ok_beta, "gamma_ok": ok_gamma, "seconds": elapsed,
            })
            # The peer: perf record of one run of each side, built in a
            # worktree of each commit.
            sides = []
            for rev in ("HEAD~1", "HEAD"):
                wt = os.path.join(work, f"wt-{i}-{rev.replace('~', '_')}")
                sh(["git", "worktree", "add", "-q", "--detach", wt, rev], cwd=d)
                sh(["make", "-s"], cwd=wt)
                start = time.time()
                sides.append((perf_self(["./bench"], wt, os.path.join(wt, "perf.data")), time.time() - start))
                sh(["git", "worktree", "remove", "--force", wt], cwd=d)
            (before, t0), (after, t1) = sides
            keys = set(before) | set(after)
            delta = sorted(((after.get(f, 0) - before.get(f, 0), f) for f in keys), key=lambda x: -abs(x[0]))
            pfirst = delta[0][1] if delta else None
            peer.append({"first": pfirst, "pass": pfirst == alpha and delta[0][0] > 0,
                         "alpha_ms": dict((f, d) for d, f in delta).get(alpha, 0) / 1e6,
                         "seconds": t0 + t1})
            print(f"{kind} #{i + 1}: perfsleuth first {ours[-1]['first']} (pass {ours[-1]['pass']}), "
                  f"perf first {pfirst}", file=sys.stderr)
        results[kind] = {"perfsleuth": ours, "perf": peer}
    return results


def self_shares_perfsleuth(cmd, cwd, names):
    out = os.path.join(cwd, "run.json")
    sh([PS, "run", "--no-store", "--runs", "10", "--warmup", "1", "--profile", "--export-json", out,
        " ".join(cmd)], cwd=cwd)
    st = json.load(open(out))["run"]["benchmarks"][0]["stacks"]
    by = {}
    for s in st["stacks"]:
        leaf = st["frames"][s["frames"][-1]]["function"]
        by[leaf] = by.get(leaf, 0) + sum(s["counts"])
    total = sum(by.values())
    return {f: 100.0 * by.get(f, 0) / total for f in names}


def self_shares_perf(cmd, cwd, names):
    data = os.path.join(cwd, "acc.data")
    loop = "for i in 1 2 3 4 5 6 7 8 9 10; do " + " ".join(cmd) + " >/dev/null; done"
    sh(["perf", "record", "-q", "-e", "cpu-clock", "-F", "997", "--call-graph", "dwarf", "-o", data,
        "--", "sh", "-c", loop], cwd=cwd)
    out = sh(["perf", "report", "-i", data, "--stdio", "--no-children", "-q", "--sort", "symbol"],
             cwd=cwd).stdout
    by = {}
    for line in out.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[[.k]\]\s+(\S+)", line)
        if m:
            by[m.group(2)] = by.get(m.group(2), 0) + float(m.group(1))
    return {f: by.get(f, 0.0) for f in names}


def self_shares_callgrind(cmd, cwd, names):
    out = os.path.join(cwd, "callgrind.out")
    sh(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *cmd], cwd=cwd)
    text = sh(["callgrind_annotate", "--inclusive=no", out], cwd=cwd).stdout
    total = None
    by = {}
    for line in text.splitlines():
        m = re.match(r"\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+PROGRAM TOTALS", line) or re.match(r"\s*([\d,]+)\s+PROGRAM TOTALS", line)
        if m:
            total = int(m.group(1).replace(",", ""))
            continue
        m = re.match(r"\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?(?:(?:/[^:]*|[^ :]*\.[a-z]+):)?(\S+)", line)
        if m and total:
            name = m.group(2)
            for f in names:
                if name == f or name.endswith("::" + f) or name.endswith(":" + f):
                    by[f] = by.get(f, 0) + int(m.group(1).replace(",", ""))
    return {f: 100.0 * by.get(f, 0) / total for f in names} if total else {}


def accuracy():
    work = tempfile.mkdtemp(prefix="perfsleuth-accuracy-")
    results = {}
    for kind, k in KINDS.items():
        d = repo(kind, work)
        sh(["git", "checkout", "-q", "HEAD~1"], cwd=d)
        sh(["make", "-s"], cwd=d)
        names = k["names"]
        ours = self_shares_perfsleuth(["./bench"], d, names)
        perf = self_shares_perf(["./bench"], d, names + ("three::work",))
        cg = self_shares_callgrind(["./bench"], d, names + ("three::work",))
        if kind.startswith("Rust"):
            # perf report and callgrind give inlined code to the function it
            # is inlined into: compare the three together with `work`.
            trio = "alpha+beta+gamma (inlined into three::work)"
            ours[trio] = sum(ours[f] for f in names)
            perf[trio] = perf.get("three::work", 0.0)
            cg[trio] = cg.get("three::work", 0.0)
        results[kind] = {"perfsleuth": ours, "perf report": perf, "callgrind Ir": cg}
        print(f"{kind}: {results[kind]}", file=sys.stderr)
    return results


TIMED = r"""
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
int main(int argc, char **argv) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pid_t p = fork();
    if (p == 0) { execvp(argv[1], argv + 1); _exit(127); }
    int st;
    waitpid(p, &st, 0);
    clock_gettime(CLOCK_MONOTONIC, &b);
    fprintf(stderr, "elapsed_ns %lld\n", (long long)(b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
    return WEXITSTATUS(st);
}
"""


def ratio_ci(pairs, resamples=4000):
    """Median of per-round ratios with a percentile-bootstrap 95 % interval."""
    r = [b / a for a, b in pairs]
    rng = random.Random(1)
    boot = sorted(statistics.median(rng.choice(r) for _ in r) for _ in range(resamples))
    return statistics.median(r), boot[int(0.025 * resamples)], boot[int(0.975 * resamples)]


def overhead(rounds):
    work = tempfile.mkdtemp(prefix="perfsleuth-overhead-")
    timed = os.path.join(work, "timed")
    with open(timed + ".c", "w") as f:
        f.write(TIMED)
    sh(["gcc", "-O2", "-o", timed, timed + ".c"])
    progs = {}
    for name, base in [("cpu", "75000000"), ("alloc", "2100000")]:
        exe = os.path.join(work, name)
        sh(["gcc", "-O2", "-g", "-I", VALIDATION, "-o", exe, os.path.join(VALIDATION, name + ".c"), "-lm"])
        progs[name] = [exe, "1.0", base]
    results = {}
    for name, cmd in progs.items():
        plain_ps, prof_ps, plain_perf, perf_rec = [], [], [], []
        for r in range(rounds):
            order = ["plain", "profile", "timed", "perf"]
            if r % 2:
                order.reverse()
            for cfg in order:
                if cfg in ("plain", "profile"):
                    out = os.path.join(work, "o.json")
                    args = [PS, "run", "--no-store", "--runs", "5", "--warmup", "1", "--export-json", out]
                    if cfg == "profile":
                        args.append("--profile")
                    sh(args + [" ".join(cmd)])
                    walls = [s["wall_ns"] for s in json.load(open(out))["run"]["benchmarks"][0]["samples"]]
                    (prof_ps if cfg == "profile" else plain_ps).append(statistics.median(walls))
                else:
                    walls = []
                    for _ in range(5):
                        if cfg == "perf":
                            p = sh(["perf", "record", "-q", "-e", "cpu-clock", "-F", "997", "--call-graph", "dwarf",
                                    "-o", os.path.join(work, "ov.data"), "--", timed, *cmd])
                        else:
                            p = sh([timed, *cmd])
                        walls.append(int(re.search(r"elapsed_ns (\d+)", p.stderr).group(1)))
                    (perf_rec if cfg == "perf" else plain_perf).append(statistics.median(walls))
        results[name] = {
            "perfsleuth --profile": ratio_ci(list(zip(plain_ps, prof_ps))),
            "perf record": ratio_ci(list(zip(plain_perf, perf_rec))),
            "plain_ms": statistics.median(plain_ps) / 1e6,
        }
        print(f"{name}: {results[name]}", file=sys.stderr)
    return results


def main():
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    out = {}
    if what in ("attribution", "all"):
        out["attribution"] = attribution(n)
        print("\n| program | perfsleuth ab --profile: alpha first, slower | beta named faster or in the noise | gamma in the noise | all three | s a comparison | perf record, ranked by Δ self: alpha first |")
        print("|---|---|---|---|---|---|---|")
        for kind, r in out["attribution"].items():
            o, p = r["perfsleuth"], r["perf"]
            cnt = lambda xs, k: sum(1 for x in xs if x[k])
            print(f"| {kind} | {cnt(o, 'alpha_ok')}/{len(o)} | {cnt(o, 'beta_ok')}/{len(o)} | {cnt(o, 'gamma_ok')}/{len(o)} | "
                  f"{cnt(o, 'pass')}/{len(o)} | {statistics.median(x['seconds'] for x in o):.1f} | {cnt(p, 'pass')}/{len(p)} |")
    if what in ("accuracy", "all"):
        out["accuracy"] = accuracy()
        print("\n| program | function | perfsleuth self % | perf report self % | Δ (points) | callgrind Ir % | Δ (points) |")
        print("|---|---|---|---|---|---|---|")
        for kind, r in out["accuracy"].items():
            for f in [n for n in r["perfsleuth"] if n in KINDS[kind]["names"] or "inlined" in n]:
                a, b, c = r["perfsleuth"].get(f, 0), r["perf report"].get(f, 0), r["callgrind Ir"].get(f, 0)
                print(f"| {kind} | `{f}` | {a:.1f} | {b:.1f} | {a - b:+.1f} | {c:.1f} | {a - c:+.1f} |")
    if what in ("overhead", "all"):
        out["overhead"] = overhead(n)
        print("\n| program | plain (ms) | perfsleuth --profile / plain [95% CI] | perf record -F 997 --call-graph dwarf / plain [95% CI] |")
        print("|---|---|---|---|")
        for name, r in out["overhead"].items():
            a, b = r["perfsleuth --profile"], r["perf record"]
            print(f"| {name} | {r['plain_ms']:.1f} | {a[0]:.3f}× [{a[1]:.3f}, {a[2]:.3f}] | {b[0]:.3f}× [{b[1]:.3f}, {b[2]:.3f}] |")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
