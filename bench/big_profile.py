#!/usr/bin/env python3
"""A big imported profile, end to end (issue 48, point 4): `import --into` of
folded stacks, then `show` of the run, `compare` of it with itself and its HTML `report`.

The profile is the worst shape for a profile store: N unique stacks of 20
frames, every frame a function of its own (as a JIT's or a template-heavy
program's profile can be), so nothing interns. Each command's wall seconds
and peak RSS (/usr/bin/time), for each N, with the perfsleuth given and, as
the peer reading the same file, `inferno-flamegraph` (the flame graph
renderer `perf script | inferno-collapse-perf | inferno-flamegraph` users
run) where it is installed.
Usage: python3 bench/big_profile.py [PERFSLEUTH] [N...]
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPTH = 20


def timed(argv, cwd):
    start = time.monotonic()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M"] + argv, cwd=cwd,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - start
    if proc.returncode != 0:
        sys.exit(f"{argv}: exit {proc.returncode}: {proc.stderr.strip()[-400:]}")
    rss_kib = int(proc.stderr.strip().splitlines()[-1])
    return wall, rss_kib


def folded(path, n):
    rng = random.Random(48)
    with open(path, "w") as f:
        for i in range(n):
            frames = [f"app::module_{d}::handler_{i}_{d}<alloc::vec::Vec<u8>>" for d in range(DEPTH)]
            f.write(";".join(["main"] + frames) + f" {rng.randint(1, 50)}\n")


def main():
    exe = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else os.path.join(ROOT, "target/release/perfsleuth")
    sizes = [int(a) for a in sys.argv[2:]] or [50_000, 100_000, 200_000]
    inferno = shutil.which("inferno-flamegraph")
    work = tempfile.mkdtemp(prefix="perfsleuth-bigprofile-")
    for n in sizes:
        prof = os.path.join(work, f"big{n}.folded")
        folded(prof, n)
        mb = os.path.getsize(prof) / 1e6
        store = os.path.join(work, f"s{n}.db")
        subprocess.run([exe, "run", "--store", f"sqlite:{store}", "--runs", "5", "--warmup", "0",
                        "-n", "work", "true"], check=True, cwd=work,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rows = [("import --into", [exe, "import", "--store", f"sqlite:{store}", "--into", "latest", prof]),
                ("show", [exe, "show", "--store", f"sqlite:{store}", "latest"]),
                ("compare", [exe, "compare", "--store", f"sqlite:{store}", "latest", "latest"]),
                ("report", [exe, "report", "--store", f"sqlite:{store}", "-o",
                            os.path.join(work, "r.html"), "latest"])]
        if inferno:
            rows.append(("inferno-flamegraph", [inferno, prof]))
        for what, argv in rows:
            wall, rss = timed(argv, work)
            print(f"{n:>7} stacks {mb:6.0f} MB  {what:<20} {wall:7.2f} s {rss / 1024:7.0f} MiB", flush=True)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
