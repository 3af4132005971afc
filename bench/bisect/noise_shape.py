#!/usr/bin/env python3
"""The noise shape of bisect's study (docs/BISECT.md, "Noise"), measured on
this machine: a ~30 ms CPU-bound C program run N times back to back by
perfsleuth, and the run-to-run structure of its CPU time (what `ab` and
`bisect` judge for such a program) fitted to the simulated machine of
crates/perfsleuth-bisect/src/study.rs.

    python3 bench/bisect/noise_shape.py [RUNS] [PERFSLEUTH]

Prints the fitted parameters and the statistics they come from.
"""
import json, math, os, statistics, subprocess, sys, tempfile

runs = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
exe = sys.argv[2] if len(sys.argv) > 2 else "target/release/perfsleuth"
tmp = tempfile.mkdtemp()
src = os.path.join(tmp, "spin.c")
open(src, "w").write(r"""
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = atol(argv[1]); unsigned long x = 1;
    for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    printf("%lu\n", x >> 60);
    return 0;
}
""")
prog = os.path.join(tmp, "spin")
subprocess.run(["gcc", "-O2", "-o", prog, src], check=True)
out = os.path.join(tmp, "runs.json")
subprocess.run([exe, "run", "--no-store", "--runs", str(runs), "--rounds", "1", "--warmup", "5",
                "--style", "none", "--export-json", out, f"{prog} 30000000"], check=True)
doc = json.load(open(out))
samples = doc["run"]["benchmarks"][0]["samples"]
cpu = [(s["user_ns"] + s["sys_ns"]) for s in samples]
wall = [s["wall_ns"] for s in samples]

def shape(name, values):
    logs = [math.log(v) for v in values]
    med = statistics.median(logs)
    r = [x - med for x in logs]
    d = [(b - a) / math.sqrt(2) for a, b in zip(r, r[1:])]
    mad = statistics.median(abs(x) for x in d) * 1.4826
    core = [x for x in d if abs(x) <= 4 * mad]
    sigma = statistics.pstdev(core)
    wide = [x for x in d if abs(x) > 4 * mad]
    tail_share = len(wide) / len(d)
    tail = (statistics.pstdev(wide) / sigma) if len(wide) > 2 else 1.0
    # Drift: the autocorrelation of 25-run block medians, and their spread
    # beyond what the per-run noise gives a median of 25.
    b = 25
    blocks = [statistics.median(r[i:i + b]) for i in range(0, len(r) - b + 1, b)]
    var_blocks = statistics.pvariance(blocks)
    noise_part = (math.pi / 2) * sigma ** 2 / b
    drift_sd = math.sqrt(max(var_blocks - noise_part, 0.0))
    mb = statistics.mean(blocks)
    num = sum((x - mb) * (y - mb) for x, y in zip(blocks, blocks[1:]))
    den = sum((x - mb) ** 2 for x in blocks)
    rho_block = max(min(num / den if den else 0.0, 0.999), 0.0)
    keep = rho_block ** (1 / b) if rho_block > 0 else 0.9
    step = drift_sd * math.sqrt(max(1 - keep ** 2, 0.0))
    print(f"{name}: {len(values)} runs, median {statistics.median(values)/1e6:.2f} ms")
    print(f"  sigma {sigma:.4f}  tail_share {tail_share:.3f}  tail {tail:.1f}")
    print(f"  block-median sd {math.sqrt(var_blocks):.4f}  drift sd {drift_sd:.4f}  "
          f"block lag-1 {rho_block:.2f}  keep {keep:.3f}  drift step {step:.5f}")

shape("cpu (user+sys)", cpu)
shape("wall", wall)
