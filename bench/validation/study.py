#!/usr/bin/env python3
"""Validation study for `perfsleuth compare` (issue 4; method in docs/STATISTICS.md).

For each real program (bench/validation/progs: cpu, alloc, io) and each
condition (A/A, and injected slowdowns of 1 %, 3 %, 10 %), K comparisons are
made. One comparison = one `perfsleuth run` of the baseline (SLOWDOWN 1.0) and
one `perfsleuth run` of the candidate (SLOWDOWN 1.0 for A/A, else 1.01 / 1.03 /
1.10) as two separate invocations (like two CI jobs), at perfsleuth's default
settings, then `perfsleuth compare BASELINE CANDIDATE --format json`.

The same two runs' wall-time samples are also judged by the peer: hyperfine's
scripts/welch_ttest.py, i.e. scipy.stats.ttest_ind(X, Y, equal_var=False) with
"different" at p < 0.05. It is reimplemented here in pure Python (Student-t CDF
through the regularized incomplete beta function); `--self-test` checks it
against scipy when scipy is installed.

Design: K rounds; in each round every program gets a fresh baseline run for
every condition (so comparisons are independent, as the issue asks), and all
runs of a round are executed in a seeded random order, interleaved across
programs and conditions, so slow drift of the machine hits every condition
alike. `--shared-baseline` uses one baseline run per program and round for
all four conditions instead (5 runs instead of 8 per program and round, about
40 % less time; comparisons of different conditions then share a baseline).

Usage:
  python3 bench/validation/study.py            # full study, K = 30 (~15-25 min on the 2-core VM)
  python3 bench/validation/study.py --quick    # K = 3, to test the script (~2-3 min)
  python3 bench/validation/study.py --self-test
Options: --k N, --programs cpu,alloc,io, --target-ms 20, --shared-baseline,
  --compare-by ids|files, --run-arg ARG (repeatable, passed to `perfsleuth run`),
  --compare-arg ARG (repeatable), --stub-compare, --seed N, --out FILE, --keep.

Output: Markdown tables (per program and overall, perfsleuth and the Welch
peer) printed and written to bench/validation/results.md (--quick:
results-quick.md), raw per-comparison records next to it as JSON.

Needs gcc and a release build of perfsleuth (built here with cargo unless
--perfsleuth PATH is given). Python standard library only.
"""
import argparse
import json
import math
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROGS_DIR = os.path.join(HERE, "progs")
ALL_PROGRAMS = ["cpu", "alloc", "io"]
# Condition name -> SLOWDOWN factor of the candidate (the baseline is always 1.0).
CONDITIONS = [("A/A", 1.0), ("+1%", 1.01), ("+3%", 1.03), ("+10%", 1.10)]
ALPHA = 0.05  # the peer's significance level (hyperfine's script: p < 0.05)


# ---------------------------------------------------------------------------
# Welch's t-test (the peer), pure Python
# ---------------------------------------------------------------------------

def _betacf(a, b, x):
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def reg_inc_beta(x, a, b):
    """Regularized incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                + a * math.log(x) + b * math.log1p(-x))
    front = math.exp(ln_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def student_t_two_sided_p(t, df):
    """P(|T| >= |t|) for Student's t with df degrees of freedom."""
    if math.isnan(t) or math.isnan(df) or df <= 0:
        return float("nan")
    if math.isinf(t):
        return 0.0
    return reg_inc_beta(df / (df + t * t), df / 2.0, 0.5)


def welch_t_test(x, y):
    """Same as scipy.stats.ttest_ind(x, y, equal_var=False): returns (t, p).
    t > 0 when mean(x) > mean(y). NaN p when both variances are 0 or n < 2."""
    nx, ny = len(x), len(y)
    if nx < 2 or ny < 2:
        return float("nan"), float("nan")
    mx, my = statistics.fmean(x), statistics.fmean(y)
    vx, vy = statistics.variance(x, mx), statistics.variance(y, my)
    ax, ay = vx / nx, vy / ny
    se2 = ax + ay
    if se2 == 0.0:
        return float("nan"), float("nan")
    t = (mx - my) / math.sqrt(se2)
    df = se2 * se2 / (ax * ax / (nx - 1) + ay * ay / (ny - 1))
    return t, student_t_two_sided_p(t, df)


# ---------------------------------------------------------------------------
# `perfsleuth compare` output: the ONE function to adapt if the schema moves
# ---------------------------------------------------------------------------

def parse_compare(doc, benchmark):
    """Extracts the gating wall-time row of `benchmark` from the JSON of
    `perfsleuth compare --format json`. Expected shape (issue 4, interface
    announced by the compare authors):
      {"schema": "perfsleuth/compare", "rows": [{"benchmark": NAME, "metric": "wall",
        "gating": true, "change": {"change": f, "ci_low": f, "ci_high": f},
        "p_value": f, "verdict": "regressed" | "improved" | "no change" |
        "inconclusive" | "insufficient data" | "environment changed", ...}], ...}
    Tolerates a benchmark given as {"name": ...}, a flat numeric "change" with
    "ci_low"/"ci_high" on the row, and metric "time" for "wall".
    Returns {"verdict", "change", "ci_low", "ci_high", "p_value"}."""
    if doc.get("schema") not in ("perfsleuth/compare", None):
        raise ValueError("unexpected schema %r" % doc.get("schema"))
    rows = doc.get("rows") or []
    found = []
    for row in rows:
        name = row.get("benchmark")
        if isinstance(name, dict):
            name = name.get("name")
        if name == benchmark and row.get("metric") in ("wall", "time"):
            found.append(row)
    if not found:
        raise ValueError("no wall row for benchmark %r among %d rows" % (benchmark, len(rows)))
    row = found[0]
    ch = row.get("change")
    if isinstance(ch, dict):
        change, lo, hi = ch.get("change"), ch.get("ci_low"), ch.get("ci_high")
    else:
        change, lo, hi = ch, row.get("ci_low"), row.get("ci_high")
    return {"verdict": row.get("verdict"), "change": change, "ci_low": lo,
            "ci_high": hi, "p_value": row.get("p_value"), "p_adjusted": row.get("p_adjusted"),
            "n_baseline": row.get("n_baseline"), "n_candidate": row.get("n_candidate"),
            "notes": list(row.get("notes") or []) + list(doc.get("notes") or [])}


# ---------------------------------------------------------------------------
# STUB compare (used ONLY while `perfsleuth compare` does not exist yet).
# It imitates the announced JSON shape and the verdict rule (median change,
# seeded percentile bootstrap CI, Mann-Whitney U normal approximation, p < 0.05
# AND whole CI beyond +/-1 %) so the rest of the script can be exercised.
# Its numbers are NOT perfsleuth's; results produced with it are marked STUB.
# ---------------------------------------------------------------------------

def _mann_whitney_p(x, y):
    n1, n2 = len(x), len(y)
    allv = sorted([(v, 0) for v in x] + [(v, 1) for v in y])
    ranks = [0.0] * len(allv)
    tie_term = 0.0
    i = 0
    while i < len(allv):
        j = i
        while j + 1 < len(allv) and allv[j + 1][0] == allv[i][0]:
            j += 1
        r = (i + j) / 2.0 + 1.0
        for k in range(i, j + 1):
            ranks[k] = r
        t = j - i + 1
        tie_term += t ** 3 - t
        i = j + 1
    r1 = sum(r for r, (_, g) in zip(ranks, allv) if g == 0)
    u1 = r1 - n1 * (n1 + 1) / 2.0
    n = n1 + n2
    mu = n1 * n2 / 2.0
    var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)))
    if var <= 0:
        return float("nan")
    z = (abs(u1 - mu) - 0.5) / math.sqrt(var)
    return max(0.0, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2.0))))


def stub_compare(base_samples, cand_samples, benchmark, seed=1):
    """STUB of `perfsleuth compare --format json` for one benchmark (see above)."""
    rng = random.Random(seed)
    mb, mc = statistics.median(base_samples), statistics.median(cand_samples)
    ratios = []
    for _ in range(2000):
        rb = statistics.median(rng.choices(base_samples, k=len(base_samples)))
        rc = statistics.median(rng.choices(cand_samples, k=len(cand_samples)))
        ratios.append(rc / rb)
    ratios.sort()
    lo, hi = ratios[int(0.025 * len(ratios))] - 1, ratios[int(0.975 * len(ratios)) - 1] - 1
    p = _mann_whitney_p(base_samples, cand_samples)
    change = mc / mb - 1
    if len(base_samples) < 3 or len(cand_samples) < 3 or math.isnan(p):
        verdict = "insufficient data"
    elif p < 0.05 and lo > 0.01:
        verdict = "regressed"
    elif p < 0.05 and hi < -0.01:
        verdict = "improved"
    elif lo >= -0.01 and hi <= 0.01:
        verdict = "no change"
    else:
        verdict = "inconclusive"
    return {"schema": "perfsleuth/compare", "stub": True, "rows": [{
        "benchmark": benchmark, "metric": "wall", "gating": True,
        "change": {"change": change, "ci_low": lo, "ci_high": hi},
        "p_value": p, "verdict": verdict}]}


# ---------------------------------------------------------------------------
# Running things
# ---------------------------------------------------------------------------

def log(msg):
    print(msg, flush=True)


def build_perfsleuth():
    log("building perfsleuth (cargo build --release -p perfsleuth) ...")
    subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "perfsleuth"], cwd=ROOT, check=True)
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    return os.path.abspath(os.path.join(target, "release", "perfsleuth"))


def has_compare(perfsleuth):
    r = subprocess.run([perfsleuth, "compare", "--help"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return r.returncode == 0


def compile_programs(programs, bindir):
    paths = {}
    for p in programs:
        out = os.path.join(bindir, p)
        subprocess.run(["gcc", "-O2", "-Wall", "-o", out, os.path.join(PROGS_DIR, p + ".c"), "-lm"],
                       check=True)
        paths[p] = out
    return paths


def default_base(prog):
    with open(os.path.join(PROGS_DIR, prog + ".c")) as f:
        for line in f:
            if line.startswith("#define BASE_DEFAULT"):
                return int(line.split()[2].rstrip("LL"))
    raise RuntimeError("no BASE_DEFAULT in %s.c" % prog)


def time_once(argv, env):
    t0 = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, env=env)
    return time.perf_counter() - t0


def calibrate(binary, prog, target_ms, env):
    """Scales BASE so that SLOWDOWN 1.0 takes about target_ms (median of 7)."""
    base = default_base(prog)
    for _ in range(2):
        time_once([binary, "1.0", str(base)], env)  # warm
        t = statistics.median(time_once([binary, "1.0", str(base)], env) for _ in range(7))
        base = max(1, int(round(base * target_ms / 1000.0 / t)))
    return base


def perfsleuth_run(ps, db, export, name, argv, extra, env, cwd=None):
    cmd = [ps, "run", "--store", "sqlite:" + db, "--export-json", export, "--color", "never",
           "-n", name] + extra + [" ".join(argv)]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        return {"error": "perfsleuth run exit %d: %s" % (r.returncode, r.stderr.strip()[-400:]),
                "seconds": wall}
    with open(export) as f:
        doc = json.load(f)
    bench = [b for b in doc["run"]["benchmarks"] if b["name"] == name][0]
    samples = [s["wall_ns"] for s in bench["samples"]]
    return {"id": doc["run"]["id"], "export": export, "samples": samples, "seconds": wall}


def combine(runs):
    """One side of a comparison from its perfsleuth runs (one, or --runs-per-side)."""
    bad = [r["error"] for r in runs if "error" in r]
    out = {"seconds": sum(r["seconds"] for r in runs), "runs": len(runs)}
    if bad:
        out["error"] = bad[0]
        return out
    out.update(ids=[r["id"] for r in runs], exports=[r["export"] for r in runs],
               samples=[x for r in runs for x in r["samples"]],
               per_run_medians=[statistics.median(r["samples"]) for r in runs])
    return out


def perfsleuth_compare(ps, db, base, cand, name, by, extra, stub, repo=None):
    """`perfsleuth compare` of two sides; a side of several runs is named by its
    git commit in the scratch repository `repo` (compare takes all complete runs
    of a revision), a side of one run by its run id or exported file."""
    t0 = time.perf_counter()
    if stub:
        doc = stub_compare(base["samples"], cand["samples"], name)
        return {"seconds": time.perf_counter() - t0, **parse_compare(doc, name)}
    if "commit" in base:
        sides = [base["commit"], cand["commit"]]
    elif by == "files":
        sides = [base["exports"][0], cand["exports"][0]]
    else:
        sides = [str(base["ids"][0]), str(cand["ids"][0])]
    cmd = [ps, "compare"] + sides + ["--store", "sqlite:" + db, "--format", "json"] + extra
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=repo)
    secs = time.perf_counter() - t0
    # Exit 1 is reserved for "a gating metric regressed" (--fail-on); both 0 and 1 carry a report.
    if r.returncode not in (0, 1):
        return {"seconds": secs, "verdict": "error",
                "error": "compare exit %d: %s" % (r.returncode, r.stderr.strip()[-400:])}
    try:
        return {"seconds": secs, **parse_compare(json.loads(r.stdout), name)}
    except (ValueError, KeyError, TypeError) as e:
        return {"seconds": secs, "verdict": "error",
                "error": "cannot parse compare output (%s): %s" % (e, r.stdout[:400])}


# ---------------------------------------------------------------------------
# Summaries
# ---------------------------------------------------------------------------

GIT_ENV = dict(GIT_AUTHOR_NAME="study", GIT_AUTHOR_EMAIL="study@localhost", GIT_COMMITTER_NAME="study",
               GIT_COMMITTER_EMAIL="study@localhost", GIT_CONFIG_NOSYSTEM="1")


def git(repo, *args):
    env = dict(os.environ, **GIT_ENV)
    return subprocess.run(["git", "-C", repo] + list(args), check=True, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True).stdout.strip()


def init_repo(path):
    os.makedirs(path)
    git(path, "init", "-q")
    git(path, "commit", "-q", "--allow-empty", "-m", "root")
    return path


def side_dir(repo, label):
    """A new empty commit for one side and a detached worktree at it: runs made
    there record that commit, and compare (run in `repo`) selects them by it."""
    tree = git(repo, "hash-object", "-t", "tree", "/dev/null")
    commit = git(repo, "commit-tree", tree, "-m", label)
    d = os.path.join(os.path.dirname(repo), "wt-" + label)
    git(repo, "worktree", "add", "-q", "--detach", d, commit)
    return d, commit


def wilson(k, n, z=1.959963984540054):
    """95 % Wilson score interval of a proportion k/n."""
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    den = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return max(0.0, centre - half), min(1.0, centre + half)


def rate(k, n):
    if n == 0:
        return "–"
    lo, hi = wilson(k, n)
    return "%d/%d = %.0f %% [%.0f, %.0f]" % (k, n, 100.0 * k / n, 100 * lo, 100 * hi)


def perfsleuth_flagged(rec):
    return rec["perfsleuth"]["verdict"] in ("regressed", "improved")


def perfsleuth_detected(rec):
    return rec["perfsleuth"]["verdict"] == "regressed"


def welch_flagged(rec):
    p = rec["welch"]["p"]
    return not math.isnan(p) and p < ALPHA


def welch_detected(rec):
    # hyperfine's script only says "there is a difference"; a detection of a
    # slowdown is counted when it says so AND the candidate's mean is larger.
    return welch_flagged(rec) and rec["welch"]["t_cand_minus_base"] > 0


def med(xs, fmt="%.0f"):
    return fmt % statistics.median(xs) if xs else "–"


def tables(records, programs):
    out = []
    groups = [(p, [r for r in records if r["program"] == p]) for p in programs]
    groups.append(("overall", records))

    def by_cond(rs, cond):
        return [r for r in rs if r["condition"] == cond]

    for tool, flagged, detected in (("perfsleuth compare", perfsleuth_flagged, perfsleuth_detected),
                                    ("Welch t-test (hyperfine scripts/welch_ttest.py)",
                                     welch_flagged, welch_detected)):
        out.append("### %s\n" % tool)
        out.append("| program | A/A flagged (target ≤ 5 %) | detected +1 % | detected +3 % (target ≥ 95 %) "
                   "| detected +10 % (target ≥ 95 %) | timed runs (samples) per side, median (base / cand) "
                   "| seconds per comparison, median |")
        out.append("|---|---|---|---|---|---|---|")
        for name, rs in groups:
            ok = [r for r in rs if r["perfsleuth"]["verdict"] != "error"] if tool.startswith("perfsleuth") else rs
            aa = by_cond(ok, "A/A")
            cells = [rate(sum(flagged(r) for r in aa), len(aa))]
            for cond in ("+1%", "+3%", "+10%"):
                c = by_cond(ok, cond)
                cells.append(rate(sum(detected(r) for r in c), len(c)))
            nb = [r["base_n"] for r in rs]
            nc = [r["cand_n"] for r in rs]
            cells.append("%s / %s" % (med(nb), med(nc)))
            cells.append(med([r["seconds"] for r in rs], "%.1f"))
            out.append("| %s | %s |" % (name, " | ".join(cells)))
        out.append("")
    out.append("Rates are k/K with a 95 % Wilson interval in brackets. The Welch peer judges exactly "
               "the same runs' wall-time samples as perfsleuth compare (all of a side's runs pooled), "
               "so its samples and seconds are those of the same runs. \"Seconds per comparison\" = "
               "baseline run(s) + candidate run(s) + compare, as if done alone.\n")

    out.append("### Verdicts by condition (perfsleuth compare)\n")
    verdicts = ["regressed", "improved", "no change", "inconclusive",
                "insufficient data", "environment changed", "error"]
    out.append("| program | condition | measured change (pooled medians) | "
               + " | ".join(verdicts) + " | note \"possibly environmental\" |")
    out.append("|---|---|---|" + "---|" * (len(verdicts) + 1))
    for name, rs in groups:
        for cond, _ in CONDITIONS:
            c = by_cond(rs, cond)
            if not c:
                continue
            counts = [sum(r["perfsleuth"]["verdict"] == v for r in c) for v in verdicts]
            other = len(c) - sum(counts)
            eff = measured_effect(c) if name != "overall" else None
            envnote = sum(any("possibly environmental" in n for n in r["perfsleuth"].get("notes", []))
                          for r in c)
            out.append("| %s | %s | %s | %s | %d |" % (
                name, cond, "–" if eff is None else "%+.2f %%" % (100 * eff),
                " | ".join(str(x) for x in counts), envnote) + (" (+%d other)" % other if other else ""))
    out.append("")
    out.append("\"Measured change\": median of all candidate samples / median of all baseline "
               "samples of that condition − 1; below the injected factor because process start-up "
               "is not scaled.\n")
    return "\n".join(out)


def measured_effect(recs):
    b = [x for r in recs for x in r["base_samples"]]
    c = [x for r in recs for x in r["cand_samples"]]
    if not b or not c:
        return None
    return statistics.median(c) / statistics.median(b) - 1


# ---------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------

def self_test():
    data = [
        ([1.0, 2.0, 3.0, 4.0, 5.0], [2.0, 3.0, 4.0, 5.0, 9.0]),
        ([20.1, 20.3, 20.2, 20.5, 20.4, 20.2], [20.9, 21.0, 20.8, 21.3]),
        ([5.0, 5.1, 4.9] * 20, [5.05, 5.1, 5.0] * 7),
    ]
    rng = random.Random(3)
    data.append(([rng.gauss(20, 0.5) for _ in range(150)], [rng.gauss(20.1, 1.5) for _ in range(12)]))
    data.append(([rng.gauss(20, 0.3) for _ in range(300)], [rng.gauss(21, 0.6) for _ in range(300)]))  # far tail
    try:
        from scipy import stats
    except ImportError:
        stats = None
    for x, y in data:
        t, p = welch_t_test(x, y)
        line = "t = %.12g  p = %.12g" % (t, p)
        if stats is not None:
            st, sp = stats.ttest_ind(x, y, equal_var=False)
            ok = abs(t - st) <= 1e-9 * max(1, abs(st)) and abs(p - sp) <= 1e-9 * max(1e-12, sp) + 1e-14
            line += "   scipy: t = %.12g  p = %.12g  %s" % (st, sp, "OK" if ok else "MISMATCH")
            if not ok:
                log(line)
                sys.exit("self-test failed")
        log(line)
    log("self-test passed" + ("" if stats else " (scipy not installed: values not cross-checked)"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="K = 3, to test the script")
    ap.add_argument("--k", type=int, help="comparisons per program and condition (default 30)")
    ap.add_argument("--programs", default=",".join(ALL_PROGRAMS))
    ap.add_argument("--target-ms", type=float, default=20.0,
                    help="calibrate each program to about this wall time at SLOWDOWN 1.0 (0: use BASE_DEFAULT)")
    ap.add_argument("--shared-baseline", action="store_true",
                    help="one baseline run per program and round for all four conditions")
    ap.add_argument("--runs-per-side", type=int, default=1,
                    help="perfsleuth runs per side (default 1 = the issue's study); with N > 1 each side's "
                         "runs share a git commit in a scratch repository and compare selects that revision, "
                         "so its two-stage bootstrap sees the spread between runs")
    ap.add_argument("--compare-by", choices=["ids", "files"], default="ids",
                    help="pass run ids (from the SQLite store) or the exported JSON files to compare")
    ap.add_argument("--run-arg", action="append", default=[],
                    help="extra argument for `perfsleuth run` (repeatable; default: none = default settings)")
    ap.add_argument("--compare-arg", action="append", default=[],
                    help="extra argument for `perfsleuth compare` (repeatable)")
    ap.add_argument("--stub-compare", action="store_true",
                    help="use the Python STUB instead of `perfsleuth compare` (automatic with --quick "
                         "while compare does not exist)")
    ap.add_argument("--perfsleuth", help="path of a perfsleuth binary (default: build target/release)")
    ap.add_argument("--seed", type=int, default=20240229, help="seed of the run order")
    ap.add_argument("--out", help="Markdown output (default bench/validation/results.md, "
                                  "--quick: results-quick.md); raw records go next to it as .json")
    ap.add_argument("--max-minutes", type=float,
                    help="stop starting new rounds when the next one would end after this many minutes "
                         "(the report then states the K reached)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--self-test", action="store_true", help="check the Welch test against scipy and exit")
    args = ap.parse_args()

    if args.self_test:
        self_test()
        return
    k = args.k or (3 if args.quick else 30)
    if args.runs_per_side < 1:
        sys.exit("--runs-per-side must be at least 1")
    programs = [p for p in args.programs.split(",") if p]
    for p in programs:
        if p not in ALL_PROGRAMS:
            sys.exit("unknown program %r (have %s)" % (p, ", ".join(ALL_PROGRAMS)))
    out_md = os.path.abspath(args.out or os.path.join(HERE, "results-quick.md" if args.quick else "results.md"))
    out_json = os.path.splitext(out_md)[0] + ".json"

    ps = os.path.abspath(args.perfsleuth) if args.perfsleuth else build_perfsleuth()
    stub = args.stub_compare
    if not stub and not has_compare(ps):
        if args.quick:
            log("!! `perfsleuth compare` does not exist in %s yet: using the Python STUB compare. "
                "The perfsleuth numbers below are NOT perfsleuth's." % ps)
            stub = True
        else:
            sys.exit("`%s compare --help` fails: perfsleuth compare is not built yet "
                     "(use --stub-compare only to test this script)" % ps)

    work = tempfile.mkdtemp(prefix="perfsleuth-validation-")
    env = dict(os.environ, TMPDIR=work)
    try:
        # A private copy, so that a concurrent `cargo build` cannot swap the binary mid-study.
        ps_src, ps = ps, os.path.join(work, "perfsleuth")
        shutil.copy2(ps_src, ps)
        bins = compile_programs(programs, work)
        bases = {}
        for p in programs:
            bases[p] = calibrate(bins[p], p, args.target_ms, env) if args.target_ms > 0 else default_base(p)
            log("%-5s BASE = %d (%s)" % (p, bases[p], "calibrated to ~%g ms" % args.target_ms
                                         if args.target_ms > 0 else "BASE_DEFAULT"))
        db = os.path.join(work, "results.db")
        repo = init_repo(os.path.join(work, "repo")) if args.runs_per_side > 1 else None
        rng = random.Random(args.seed)
        records = []
        total = k * len(programs) * len(CONDITIONS)
        started = time.perf_counter()
        env_show = subprocess.run([ps, "env", "show", "--json"], stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True)
        facts = {}
        if env_show.returncode == 0:
            facts = {key: v.get("value") for key, v in json.loads(env_show.stdout)["facts"].items()}
        log("%d comparisons (%d programs x %d conditions x K = %d), %s baselines, compare: %s"
            % (total, len(programs), len(CONDITIONS), k,
               "shared" if args.shared_baseline else "independent",
               "STUB" if stub else "perfsleuth compare (by %s)" % args.compare_by))
        done = 0
        rounds_done = 0
        for rnd in range(k):
            elapsed = time.perf_counter() - started
            if args.max_minutes and rnd and elapsed + elapsed / rnd > 60 * args.max_minutes:
                log("!! stopping after %d of %d rounds: --max-minutes %g" % (rnd, k, args.max_minutes))
                break
            # The runs of this round: (program, role, condition, j); role "base" or "cand",
            # j = 0 .. runs-per-side - 1. Each side gets its own git commit in the scratch
            # repository when it has several runs, so that compare can select them together.
            jobs, sides = [], {}
            for p in programs:
                for cond, _ in CONDITIONS:
                    for role in ("base", "cand"):
                        if role == "base" and args.shared_baseline and cond != "A/A":
                            continue
                        sides[(p, role, cond)] = side_dir(repo, "r%02d-%s-%s-%s" % (
                            rnd, p, role, cond.strip("+%/A") or "AA")) if repo else (None, None)
                        jobs += [(p, role, cond, j) for j in range(args.runs_per_side)]
            rng.shuffle(jobs)
            results = {key: [] for key in sides}
            for p, role, cond, j in jobs:
                factor = 1.0 if role == "base" else dict(CONDITIONS)[cond]
                export = os.path.join(work, "r%02d-%s-%s-%s-%d.json" % (
                    rnd, p, role, cond.strip("+%/A") or "AA", j))
                argv = [bins[p], "%.2f" % factor, str(bases[p])]
                results[(p, role, cond)].append(perfsleuth_run(
                    ps, db, export, p, argv, args.run_arg, env, cwd=sides[(p, role, cond)][0]))
            for p in programs:
                for cond, factor in CONDITIONS:
                    bkey = (p, "base", cond if not args.shared_baseline else "A/A")
                    base, cand = combine(results[bkey]), combine(results[(p, "cand", cond)])
                    if repo:
                        base["commit"], cand["commit"] = sides[bkey][1], sides[(p, "cand", cond)][1]
                    done += 1
                    rec = {"round": rnd, "program": p, "condition": cond, "factor": factor}
                    if "error" in base or "error" in cand:
                        err = base.get("error") or cand.get("error")
                        log("[%d/%d] %s %s: RUN FAILED: %s" % (done, total, p, cond, err))
                        rec.update(perfsleuth={"verdict": "error", "error": err}, welch={"p": float("nan"),
                                   "t_cand_minus_base": float("nan")}, base_n=0, cand_n=0,
                                   base_samples=[], cand_samples=[],
                                   seconds=base["seconds"] + cand["seconds"])
                        records.append(rec)
                        continue
                    cmp_ = perfsleuth_compare(ps, db, base, cand, p, args.compare_by, args.compare_arg, stub, repo)
                    t, pw = welch_t_test(base["samples"], cand["samples"])
                    seen = (cmp_.get("n_baseline"), cmp_.get("n_candidate"))
                    if not stub and cmp_["verdict"] != "error" and None not in seen and \
                            seen != (len(base["samples"]), len(cand["samples"])):
                        log("!! compare saw %s samples, the exports hold %d/%d: wrong runs selected?"
                            % (seen, len(base["samples"]), len(cand["samples"])))
                    rec.update(
                        base_ids=base["ids"], cand_ids=cand["ids"],
                        base_run_medians=base["per_run_medians"], cand_run_medians=cand["per_run_medians"],
                        base_n=len(base["samples"]), cand_n=len(cand["samples"]),
                        base_samples=base["samples"], cand_samples=cand["samples"],
                        perfsleuth=cmp_, welch={"t_cand_minus_base": -t, "p": pw},
                        seconds=base["seconds"] + cand["seconds"] + cmp_["seconds"])
                    records.append(rec)
                    elapsed = time.perf_counter() - started
                    eta = elapsed / done * (total - done)
                    if cmp_["verdict"] == "error":
                        desc = "ERROR " + cmp_.get("error", "")
                    else:
                        desc = "%-17s %s [%s, %s] p=%s" % (
                            cmp_["verdict"], pct(cmp_["change"]), pct(cmp_["ci_low"]),
                            pct(cmp_["ci_high"]), fnum(cmp_["p_value"]))
                    log("[%3d/%d] %-5s %-4s k=%-2d perfsleuth: %s | welch p=%s%s | runs %d/%d | %.1f s | ETA %s"
                        % (done, total, p, cond, rnd, desc, fnum(pw),
                           " (slower)" if -t > 0 else " (faster)" if -t < 0 else "",
                           rec["base_n"], rec["cand_n"], rec["seconds"], mmss(eta)))
            rounds_done = rnd + 1
        elapsed = time.perf_counter() - started
        errors = sum(r["perfsleuth"]["verdict"] == "error" for r in records)
        header = [
            "# perfsleuth compare validation results%s" % (" — STUB COMPARE, NOT PERFSLEUTH'S NUMBERS" if stub else ""),
            "",
            "Generated by `python3 bench/validation/study.py %s` on %s." % (
                " ".join(sys.argv[1:]), time.strftime("%Y-%m-%d %H:%M %Z")),
            "",
            "- machine: %s, %s logical cores (%s physical), kernel %s, %s, virt %s" % (
                facts.get("cpu.model", platform.processor() or "?"), facts.get("cpu.logical_cores", os.cpu_count()),
                facts.get("cpu.physical_cores", "?"), facts.get("kernel.release", platform.release()),
                facts.get("os.name", "?"), facts.get("virt.hypervisor", "?")),
            "- perfsleuth: %s (%s); compare: %s" % (ps_src, version(ps), "**Python STUB (not perfsleuth)**" if stub
                                               else "`perfsleuth compare` by run %s" % args.compare_by),
            "- K = %d comparisons per program and condition%s; %s baseline per comparison; run order "
            "shuffled per round (seed %d)" % (rounds_done, "" if rounds_done == k else
                                              " (**stopped early: %d planned**)" % k, "a shared" if args.shared_baseline else "an independent", args.seed),
            "- runs per side: %d%s" % (args.runs_per_side, "" if args.runs_per_side == 1 else
                                      " (sides selected by git revision; compare pools them with a "
                                      "two-stage bootstrap)"),
            "- `perfsleuth run` options: %s" % (" ".join(args.run_arg) or "defaults (warmup 1, min 10 runs, "
                                                "±1 % precision, 3 s budget)"),
            "- programs (SLOWDOWN 1.0 work units): %s" % ", ".join("%s BASE=%d" % (p, bases[p]) for p in programs),
            "- total time %s for %d comparisons (%.1f s each on average); %d errors" % (
                mmss(elapsed), len(records), elapsed / max(1, len(records)), errors),
            "",
        ]
        md = "\n".join(header) + "\n" + tables(records, programs)
        log("")
        log(md)
        per_cmp = elapsed / max(1, len(records))
        full = per_cmp * 30 * len(ALL_PROGRAMS) * len(CONDITIONS)
        log("Estimated full study (K = 30, all programs, same options): %s" % mmss(full))
        with open(out_md, "w") as f:
            f.write(md)
        with open(out_json, "w") as f:
            json.dump({"meta": {"argv": sys.argv[1:], "k": rounds_done, "k_planned": k, "stub": stub, "bases": bases,
                                "elapsed_s": elapsed, "facts": facts}, "records": records}, f)
        log("wrote %s and %s" % (os.path.relpath(out_md, ROOT), os.path.relpath(out_json, ROOT)))
    finally:
        if args.keep:
            log("kept %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


def version(ps):
    r = subprocess.run([ps, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    git = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    return "%s, tree %s" % (r.stdout.strip(), git.stdout.strip() or "?")


def pct(x):
    return "–" if x is None else "%+.2f%%" % (100 * x)


def fnum(x):
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else "%.3g" % x


def mmss(s):
    return "%d:%02d" % (int(s) // 60, int(s) % 60)


if __name__ == "__main__":
    main()
