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
overhead     Wall time of the cpu and alloc validation programs and of the
             waiting programs (waits.c: requests, lock) under `perfsleuth
             run` plain, with `--profile=cpu` and with `--profile` (wall),
             rounds interleaved; beside the wall time of the same programs
             under `perf record -F 997 --call-graph dwarf` (cpu-clock) and
             with the context-switch event too (`-e cs -c 1`, what a wall
             profile adds), against plain, timed from inside by a launcher
             so perf's own start-up is not counted.
wall         Off the CPU. Totals: each run's time off the CPU from
             `perfsleuth run --profile` beside `perf sched timehist` (wait
             time + scheduling delay of the program's threads, from the
             sched tracepoints, tracefs mounted in a private mount
             namespace) of as many runs of the same program, and beside
             wall − CPU for the one-thread program. Attribution: `perfsleuth
             ab --profile` of a git repository whose candidate waits 50 %
             longer (poll in `fetch_row`; the lock held longer by `holder`),
             N times: the function named first, and the share of the wall
             change it carries.

alloc        Allocations. Counts: `perfsleuth run --profile=alloc` (N runs)
             of four programs — allocs.c (C), widgets.cpp (C++: new, a
             growing vector), the allocation-heavy validation program
             alloc.c, and threads.c (four threads allocating at once) —
             beside valgrind's DHAT on the same program: blocks and bytes
             exact? Shares: each function's share of the bytes by sampled
             stack beside DHAT's exact per-point bytes. Overhead: plain and
             `--profile=alloc` as `perfsleuth run` measures them; heaptrack
             and DHAT against plain, all three timed from outside, whole
             (heaptrack does not follow a launcher's child); rounds
             shuffled.

Usage, from the repository root, after `cargo build --release -p perfsleuth`:
    python3 bench/profiles/study.py [attribution|accuracy|overhead|wall|alloc|all] [N]
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
    # On the CPU only, as perf report and callgrind count.
    sh([PS, "run", "--no-store", "--runs", "10", "--warmup", "1", "--profile=cpu", "--export-json", out,
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


def build_waits(work, wait=100, name="waits"):
    exe = os.path.join(work, name)
    sh(["gcc", "-O2", "-g", "-pthread", f"-DWAIT={wait}", "-o", exe, os.path.join(HERE, "waits.c")])
    return exe


WAIT_ARGS = {"requests": ["requests", "20", "400", "2000"], "lock": ["lock", "30", "2000"]}

# perf record of what each perfsleuth profile records: cpu-clock samples,
# and for a wall profile a sample at every context switch too.
PERF_EVENTS = {
    "cpu": ["-e", "cpu-clock", "-F", "997"],
    "wall": ["-e", "cpu-clock/freq=997/", "-e", "cs/period=1/"],
}


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
    waits = build_waits(work)
    for name, args in WAIT_ARGS.items():
        progs[name] = [waits, *args]
    # --locks: the eBPF tracer on sched_switch and the futex calls, the
    # other way to time waits (docs/ARCHITECTURE.md, "Off-CPU time").
    configs = {"plain": None, "--profile=cpu": "--profile=cpu", "--profile (wall)": "--profile",
               "--locks": "--locks"}
    results = {}
    for name, cmd in progs.items():
        ours = {c: [] for c in configs}
        peers = {c: [] for c in ["timed", "perf record cpu", "perf record wall"]}
        for r in range(rounds):
            order = list(configs) + list(peers)
            random.Random(r).shuffle(order)
            for cfg in order:
                if cfg in configs:
                    out = os.path.join(work, "o.json")
                    args = [PS, "run", "--no-store", "--runs", "5", "--warmup", "1", "--export-json", out]
                    if configs[cfg]:
                        args.append(configs[cfg])
                    sh(args + [" ".join(cmd)])
                    walls = [s["wall_ns"] for s in json.load(open(out))["run"]["benchmarks"][0]["samples"]]
                    ours[cfg].append(statistics.median(walls))
                else:
                    walls = []
                    for _ in range(5):
                        if cfg.startswith("perf"):
                            p = sh(["perf", "record", "-q", *PERF_EVENTS[cfg.split()[-1]], "--call-graph", "dwarf",
                                    "-o", os.path.join(work, "ov.data"), "--", timed, *cmd])
                        else:
                            p = sh([timed, *cmd])
                        walls.append(int(re.search(r"elapsed_ns (\d+)", p.stderr).group(1)))
                    peers[cfg].append(statistics.median(walls))
        results[name] = {
            "perfsleuth --profile=cpu": ratio_ci(list(zip(ours["plain"], ours["--profile=cpu"]))),
            "perfsleuth --profile": ratio_ci(list(zip(ours["plain"], ours["--profile (wall)"]))),
            "perfsleuth --locks": ratio_ci(list(zip(ours["plain"], ours["--locks"]))),
            "perf record": ratio_ci(list(zip(peers["timed"], peers["perf record cpu"]))),
            "perf record -e cs": ratio_ci(list(zip(peers["timed"], peers["perf record wall"]))),
            "plain_ms": statistics.median(ours["plain"]) / 1e6,
        }
        print(f"{name}: {results[name]}", file=sys.stderr)
    return results


def wall_totals(runs):
    """Each run's off-CPU time from a perfsleuth wall profile and, for the
    same runs, from `perf sched timehist`: perfsleuth runs under `perf sched
    record` (tracefs mounted in a private mount namespace), and each run's
    threads (grouped by process) sum their wait time and scheduling delay.
    The lock program's main thread only waits to join the others, which a
    wall profile leaves out, so the reference leaves it out too."""
    work = tempfile.mkdtemp(prefix="perfsleuth-wall-")
    waits = build_waits(work)
    results = {}
    for name, args in WAIT_ARGS.items():
        cmd = [waits, *args]
        out = os.path.join(work, "w.json")
        data = os.path.join(work, "sched.data")
        # Each run appends its threads' own count of their time off the CPU.
        own = os.path.join(work, f"{name}.own")
        script = ("mount -t tracefs nodev /sys/kernel/tracing && "
                  f"perf sched record -q -o {data} -- {PS} run --no-store --runs {runs} --warmup 0 --profile "
                  f"--export-json {out} '{' '.join(cmd)}' >/dev/null && "
                  f"perf sched timehist -i {data}")
        ev = sh(["unshare", "-m", "sh", "-c", script], env={**os.environ, "WAITS_REPORT": own}).stdout
        threads_own = [float(x) for x in open(own).read().split()]
        b = json.load(open(out))["run"]["benchmarks"][0]
        ours = b["stacks"]["off_cpu_ns"]
        wall_less_cpu = [s["wall_ns"] - s["user_ns"] - s["sys_ns"] for s in b["samples"]]
        by_pid = {}
        for line in ev.splitlines():
            # time [cpu] comm[tid(/pid)] wait-time sch-delay run-time (ms)
            m = re.match(r"\s*[\d.]+\s+\[\d+\]\s+(\S+)\[(\d+)(?:/(\d+))?\]\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)", line)
            if not m or m.group(1) != "waits":
                continue
            tid = int(m.group(2))
            pid = int(m.group(3)) if m.group(3) else tid
            if name == "lock" and tid == pid:
                continue
            by_pid[pid] = by_pid.get(pid, 0.0) + (float(m.group(4)) + float(m.group(5))) * 1e6
        ref = [by_pid[p] for p in sorted(by_pid)]
        results[name] = {"perfsleuth": ours, "perf sched timehist": ref, "wall - cpu": wall_less_cpu,
                         "threads' own": threads_own}
        print(f"{name}: ours {[round(x / 1e6, 2) for x in ours]}, perf sched {[round(x / 1e6, 2) for x in ref]}, "
              f"wall-cpu {[round(x / 1e6, 2) for x in wall_less_cpu]}, threads' own {[round(x / 1e6, 2) for x in threads_own]}",
              file=sys.stderr)
    return results


def wall_repo(work, name):
    d = os.path.join(work, name)
    os.makedirs(d)
    with open(os.path.join(HERE, "waits.c")) as src, open(os.path.join(d, "waits.c"), "w") as dst:
        dst.write(src.read())
    git = lambda *a: sh(["git", "-c", "user.name=s", "-c", "user.email=s@s", *a], cwd=d)
    git("init", "-q", "-b", "main")
    for wait in (100, 150):
        with open(os.path.join(d, "Makefile"), "w") as f:
            f.write(f"bench: waits.c\n\tgcc -O2 -g -pthread -DWAIT={wait} -o bench waits.c\n")
        git("add", "-A")
        git("commit", "-qm", f"wait {wait} %")
    return d


def wall_attribution(n):
    work = tempfile.mkdtemp(prefix="perfsleuth-wall-ab-")
    results = {}
    for name, args in WAIT_ARGS.items():
        d = wall_repo(work, name)
        rows = []
        for i in range(n):
            start = time.time()
            p = sh([PS, "ab", "--no-store", "--profile", "--format", "json", "--baseline", "HEAD~1",
                    "--candidate", "HEAD", "--build", "make", "--", "./bench " + " ".join(args)], cwd=d)
            elapsed = time.time() - start
            doc = json.loads(p.stdout)
            wall = next((r for r in doc["rows"] if r["metric"] == "wall"), None)
            row = attribution_row(doc)
            fs = row["time_functions"] if row else []
            first = fs[0] if fs else {}
            shift = wall["candidate_median"] - wall["baseline_median"] if wall else 0
            label = first.get("function", "") + (f" (off CPU: {first['off_cpu']})" if first.get("off_cpu") else "")
            share = first.get("self_shift_ns", 0) / shift if shift else 0
            blocked = [f for f in fs if f.get("off_cpu") not in (None, "runnable")]
            rows.append({"first": label, "share_of_wall_change": share, "verdict": wall and wall["verdict"],
                         "metric": row and row["metric"], "first_blocked": blocked and blocked[0]["function"],
                         "seconds": elapsed})
            print(f"{name} #{i + 1}: {label} {100 * share:.0f}% of {shift / 1e6:+.2f} ms", file=sys.stderr)
        results[name] = rows
    return results


THREADS_C = r"""
/* Four threads allocating at once: each makes N blocks of 32..1055 bytes
 * in `worker`, keeping a window of 64 and freeing the rest. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
static long n;
__attribute__((noinline)) static void *worker(void *arg) {
    long seed = (long)arg;
    char *keep[64] = {0};
    for (long i = 0; i < n; i++) {
        size_t sz = 32 + (size_t)((seed * 2654435761u + i * 40503u) % 1024);
        char *p = malloc(sz);
        memset(p, (int)i, 16);
        free(keep[i % 64]);
        keep[i % 64] = p;
    }
    for (int k = 0; k < 64; k++) free(keep[k]);
    return NULL;
}
int main(int argc, char **argv) {
    n = argc > 1 ? atol(argv[1]) : 200000;
    pthread_t t[4];
    for (long k = 0; k < 4; k++) pthread_create(&t[k], NULL, worker, (void *)(k + 1));
    for (int k = 0; k < 4; k++) pthread_join(t[k], NULL);
    return 0;
}
"""


def alloc_programs(work):
    """The study's programs: name → argv."""
    progs = {}
    exe = os.path.join(work, "allocs")
    sh(["gcc", "-O2", "-g", "-o", exe, os.path.join(HERE, "allocs.c")])
    progs["allocs.c (C)"] = [exe, "200000"]
    exe = os.path.join(work, "widgets")
    sh(["g++", "-O2", "-g", "-o", exe, os.path.join(ROOT, "crates", "perfsleuth-measure", "tests", "progs", "widgets.cpp")])
    progs["widgets.cpp (C++)"] = [exe, "300000"]
    exe = os.path.join(work, "alloc")
    sh(["gcc", "-O2", "-g", "-I", VALIDATION, "-o", exe, os.path.join(VALIDATION, "alloc.c"), "-lm"])
    progs["alloc.c (allocation-heavy)"] = [exe, "1.0", "2100000"]
    src = os.path.join(work, "threads.c")
    with open(src, "w") as f:
        f.write(THREADS_C)
    exe = os.path.join(work, "threads")
    sh(["gcc", "-O2", "-g", "-pthread", "-o", exe, src])
    progs["threads.c (4 threads)"] = [exe, "200000"]
    return progs


def dhat_run(cmd, out):
    """DHAT's totals and exact bytes per function (the innermost frame
    that is not the allocator's) of one run of `cmd`."""
    p = sh(["valgrind", "--tool=dhat", f"--dhat-out-file={out}", *cmd])
    m = re.search(r"Total:\s+([\d,]+) bytes in ([\d,]+) blocks", p.stderr)
    total = (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")))
    d = json.load(open(out))
    by = {}
    for pp in d["pps"]:
        name = None
        for f in pp["fs"]:
            text = d["ftbl"][f]
            fm = re.match(r"0x[0-9A-F]+: (.+?) \(", text)
            fn = fm.group(1) if fm else text
            if "vgpreload" in text or fn.startswith("operator new") or "libstdc++" in text or "libc.so" in text:
                continue
            name = fn
            break
        by[name or "?"] = by.get(name or "?", 0) + pp["tb"]
    return total, by


def alloc_study(n):
    work = tempfile.mkdtemp(prefix="perfsleuth-alloc-")
    progs = alloc_programs(work)
    counts, shares = {}, {}
    for name, cmd in progs.items():
        out = os.path.join(work, "a.json")
        sh([PS, "run", "--no-store", "--runs", str(n), "--warmup", "1", "--profile=alloc", "--export-json", out,
            " ".join(cmd)])
        b = json.load(open(out))["run"]["benchmarks"][0]["allocs"]
        (dhat_bytes, dhat_blocks), dhat_by = dhat_run(cmd, os.path.join(work, "dhat.json"))
        counts[name] = {"perfsleuth allocations": b["allocations"], "perfsleuth bytes": b["bytes"],
                        "dhat blocks": dhat_blocks, "dhat bytes": dhat_bytes}
        # Sampled bytes per function (its own), over all runs, as shares.
        by = {}
        for st in b["stacks"]:
            frames = [b["frames"][i] for i in st["frames"]]
            owner = next((f["function"] for f in reversed(frames)
                          if not (f["module"].startswith(("libc.so", "libstdc++", "ld-linux"))
                                  or f["function"].startswith("operator new"))),
                         frames[-1]["function"] if frames else "?")
            by[owner] = by.get(owner, 0) + sum(st["bytes"])
        # DHAT writes `make_widget(long)` and `allocate`, perfsleuth
        # `make_widget` and `std::__new_allocator<Widget*>::allocate`:
        # compared by the last name, without parameters.
        def bare(n):
            n = re.sub(r"\(.*$", "", n)
            return re.sub(r"<[^<>]*>", "", n).split("::")[-1]
        norm = lambda d: {k2: sum(v for k, v in d.items() if bare(k) == k2) for k2 in {bare(k) for k in d}}
        by, dhat_by = norm(by), norm(dhat_by)
        tot, dtot = sum(by.values()) or 1, sum(dhat_by.values()) or 1
        top = sorted(dhat_by, key=lambda k: -dhat_by[k])[:3]
        shares[name] = {f: (100 * by.get(f, 0) / tot, 100 * dhat_by[f] / dtot) for f in top}
        print(f"{name}: {counts[name]} {shares[name]}", file=sys.stderr)
    # Overhead: rounds shuffled, each configuration's median of 5 runs.
    work2 = tempfile.mkdtemp(prefix="perfsleuth-alloc-ov-")
    timed = os.path.join(work2, "timed")
    with open(timed + ".c", "w") as f:
        f.write(TIMED)
    sh(["gcc", "-O2", "-o", timed, timed + ".c"])
    overhead = {}
    for name in ["allocs.c (C)", "widgets.cpp (C++)", "alloc.c (allocation-heavy)", "threads.c (4 threads)"]:
        cmd = progs[name]
        res = {k: [] for k in ["plain", "alloc", "timed", "heaptrack", "dhat"]}
        for r in range(n):
            order = list(res)
            random.Random(r).shuffle(order)
            for cfg in order:
                if cfg in ("plain", "alloc"):
                    out = os.path.join(work2, "o.json")
                    args = [PS, "run", "--no-store", "--runs", "5", "--warmup", "1", "--export-json", out]
                    if cfg == "alloc":
                        args.append("--profile=alloc")
                    sh(args + [" ".join(cmd)])
                    walls = [s["wall_ns"] for s in json.load(open(out))["run"]["benchmarks"][0]["samples"]]
                    res[cfg].append(statistics.median(walls))
                else:
                    # The peers are timed from outside, whole: heaptrack
                    # does not follow a launcher's child, and its cost is
                    # what a user waits for (its recording and compressing
                    # run beside the program). Plain is timed the same way.
                    walls = []
                    reps = 1 if cfg == "dhat" else 5
                    for _ in range(reps):
                        if cfg == "heaptrack":
                            argv = ["heaptrack", "-o", os.path.join(work2, "ht"), *cmd]
                        elif cfg == "dhat":
                            argv = ["valgrind", "--tool=dhat", f"--dhat-out-file={os.path.join(work2, 'dh.out')}", *cmd]
                        else:
                            argv = cmd
                        t0 = time.perf_counter()
                        sh(argv)
                        walls.append((time.perf_counter() - t0) * 1e9)
                    res[cfg].append(statistics.median(walls))
        overhead[name] = {
            "perfsleuth --profile=alloc": ratio_ci(list(zip(res["plain"], res["alloc"]))),
            "heaptrack": ratio_ci(list(zip(res["timed"], res["heaptrack"]))),
            "DHAT": ratio_ci(list(zip(res["timed"], res["dhat"]))),
            "plain_ms": statistics.median(res["plain"]) / 1e6,
        }
        print(f"{name}: {overhead[name]}", file=sys.stderr)
    return {"counts": counts, "shares": shares, "overhead": overhead}


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
        print("\n| program | plain (ms) | perfsleuth --profile=cpu / plain [95% CI] | perfsleuth --profile (wall) / plain | perfsleuth --locks (eBPF) / plain | perf record -F 997 --call-graph dwarf / plain | perf record, + -e cs -c 1 / plain |")
        print("|---|---|---|---|---|---|---|")
        f = lambda a: f"{a[0]:.3f}× [{a[1]:.3f}, {a[2]:.3f}]"
        for name, r in out["overhead"].items():
            print(f"| {name} | {r['plain_ms']:.1f} | {f(r['perfsleuth --profile=cpu'])} | {f(r['perfsleuth --profile'])} | "
                  f"{f(r['perfsleuth --locks'])} | "
                  f"{f(r['perf record'])} | {f(r['perf record -e cs'])} |")
    if what in ("wall", "all"):
        out["wall_totals"] = wall_totals(n)
        print("\n| program | runs | perfsleuth off-CPU a run (median ms) | the threads' own count, same runs | perfsleuth / own, median [min, max] over runs | perf sched timehist, same runs | perf sched / own, median [min, max] | wall − CPU |")
        print("|---|---|---|---|---|---|---|---|")
        for name, r in out["wall_totals"].items():
            med = {k: statistics.median(v) / 1e6 for k, v in r.items()}
            OWN = "threads' own"
            span = lambda xs: f"{statistics.median(xs):.3f} [{min(xs):.3f}, {max(xs):.3f}]"
            ours = [x / y for x, y in zip(r["perfsleuth"], r["threads' own"]) if y]
            perf = [x / y for x, y in zip(r["perf sched timehist"], r["threads' own"]) if y]
            print(f"| {name} | {len(ours)} | {med['perfsleuth']:.2f} | {med[OWN]:.2f} | {span(ours)} | "
                  f"{med['perf sched timehist']:.2f} | {span(perf)} | {med['wall - cpu']:.2f} |")
        out["wall_attribution"] = wall_attribution(n)
        print("\n| program (candidate waits 50 % longer) | named first | times | share of the wall change in it (median, min) | s a comparison |")
        print("|---|---|---|---|---|")
        for name, rows in out["wall_attribution"].items():
            firsts = {}
            for r in rows:
                firsts[r["first"]] = firsts.get(r["first"], 0) + 1
            top = max(firsts, key=firsts.get)
            shares = [r["share_of_wall_change"] for r in rows if r["first"] == top]
            print(f"| {name} | `{top}` | {firsts[top]}/{len(rows)} | {100 * statistics.median(shares):.0f}%, {100 * min(shares):.0f}% | "
                  f"{statistics.median(r['seconds'] for r in rows):.1f} |")
    if what in ("alloc", "all"):
        out["alloc"] = a = alloc_study(n)
        print("\n| program | perfsleuth allocations a run (every run) | DHAT blocks | perfsleuth bytes a run (every run) | DHAT bytes | equal |")
        print("|---|---|---|---|---|---|")
        for name, c in a["counts"].items():
            al, by = sorted(set(c["perfsleuth allocations"])), sorted(set(c["perfsleuth bytes"]))
            eq = al == [c["dhat blocks"]] and by == [c["dhat bytes"]]
            print(f"| {name} | {', '.join(map(str, al))} | {c['dhat blocks']} | {', '.join(map(str, by))} | {c['dhat bytes']} | {'yes' if eq else 'no'} |")
        print("\n| program | function | perfsleuth share of the bytes (sampled stacks) | DHAT share (exact) | Δ (points) |")
        print("|---|---|---|---|---|")
        for name, sh_ in a["shares"].items():
            for f, (ours, exact) in sh_.items():
                print(f"| {name} | `{f}` | {ours:.1f} | {exact:.1f} | {ours - exact:+.1f} |")
        print("\n| program | plain (ms) | perfsleuth --profile=alloc / plain [95% CI] | heaptrack / plain | DHAT / plain |")
        print("|---|---|---|---|---|")
        fm = lambda x: f"{x[0]:.2f}× [{x[1]:.2f}, {x[2]:.2f}]"
        for name, o in a["overhead"].items():
            print(f"| {name} | {o['plain_ms']:.1f} | {fm(o['perfsleuth --profile=alloc'])} | {fm(o['heaptrack'])} | {fm(o['DHAT'])} |")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
