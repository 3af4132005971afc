#!/usr/bin/env bash
# What does `perfsleuth run --mode simulation` add on top of valgrind itself?
#
# A: `perfsleuth run --mode simulation --runs 5 --no-store ./workload`
# B: the same valgrind command line (the one callgrind::valgrind_argv builds)
#    run by hand 5 times, the same number of runs, each into a fresh output
#    directory that is then removed (B does not even read the output, so
#    A/B includes perfsleuth's parsing, storing-free bookkeeping and start-up).
# Each side is timed REPS times (default 3) with `date +%s.%N`; the script
# prints the medians and A/B. The workload is bench/callgrind/workload.c
# (about 2 M instructions, so valgrind's start-up dominates, as it does for
# most benchmarks).
#
# Needs gcc, valgrind, cargo. Usage: bash bench/simulation_overhead.sh
set -euo pipefail

cd "$(dirname "$0")/.."
REPS=${REPS:-5}
TARGET=${CARGO_TARGET_DIR:-target}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/simulation-overhead.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

for tool in gcc valgrind cargo; do
    command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 2; }
done

cargo build --release -q -p perfsleuth
PERFSLEUTH="$TARGET/release/perfsleuth"
if ! "$PERFSLEUTH" run --help | grep -q -- "simulation"; then
    echo "this perfsleuth has no --mode simulation yet" >&2
    exit 2
fi

gcc -O2 -o "$WORK/workload" bench/callgrind/workload.c
VALGRIND=$(command -v valgrind)

now() { date +%s.%N; }
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

by_hand() {
    for _ in 1 2 3 4 5; do
        local out
        out=$(mktemp -d "$WORK/out.XXXXXX")
        "$VALGRIND" --tool=callgrind -q --vgdb=no --cache-sim=yes \
            --I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64 \
            --trace-children=yes --callgrind-out-file="$out/callgrind.out.%p" \
            -- "$WORK/workload" >/dev/null 2>&1
        rm -rf "$out"
    done
}

: >"$WORK/a"
: >"$WORK/b"
for rep in $(seq "$REPS"); do
    t0=$(now)
    "$PERFSLEUTH" run --mode simulation --runs 5 --no-store "$WORK/workload" >/dev/null
    t1=$(now)
    by_hand
    t2=$(now)
    a=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
    b=$(awk -v a="$t1" -v b="$t2" 'BEGIN {printf "%.3f", b - a}')
    echo "rep $rep: perfsleuth ${a} s, by hand ${b} s"
    echo "$a" >>"$WORK/a"
    echo "$b" >>"$WORK/b"
done

A=$(median <"$WORK/a")
B=$(median <"$WORK/b")
echo "median: perfsleuth --mode simulation --runs 5: ${A} s; valgrind by hand 5x: ${B} s"
awk -v a="$A" -v b="$B" 'BEGIN {printf "ratio perfsleuth / by hand: %.2f\n", a / b}'
