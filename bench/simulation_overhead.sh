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
# Portable counts (the default) add the profile's check (one valgrind start
# of ld.so); so the script times both: A portable against B by hand with the
# same GLIBC_TUNABLES, and A0 `--no-portable` against B0 by hand without.
#
# Needs gcc, valgrind, cargo, python3. Usage: bash bench/simulation_overhead.sh
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

# The profile the portable runs give the program, from one exported run.
"$PERFSLEUTH" run --mode simulation --runs 1 --no-store --export-json "$WORK/p.json" "$WORK/workload" >/dev/null 2>&1
PROFILE=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run"]["environment"]["sim.glibc_tunables"]["value"])' "$WORK/p.json")

by_hand() {
    for _ in 1 2 3 4 5; do
        local out
        out=$(mktemp -d "$WORK/out.XXXXXX")
        env ${TUNABLES:+GLIBC_TUNABLES="$TUNABLES"} "$VALGRIND" --tool=callgrind -q --vgdb=no --cache-sim=yes \
            --I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64 \
            --trace-children=yes --callgrind-out-file="$out/callgrind.out.%p" \
            -- "$WORK/workload" >/dev/null 2>&1
        rm -rf "$out"
    done
}

: >"$WORK/a"
: >"$WORK/b"
: >"$WORK/a0"
: >"$WORK/b0"
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f\n", b - a}'; }
for rep in $(seq "$REPS"); do
    t0=$(now)
    "$PERFSLEUTH" run --mode simulation --runs 5 --no-store "$WORK/workload" >/dev/null 2>&1
    t1=$(now)
    TUNABLES="$PROFILE" by_hand
    t2=$(now)
    "$PERFSLEUTH" run --mode simulation --no-portable --runs 5 --no-store "$WORK/workload" >/dev/null 2>&1
    t3=$(now)
    TUNABLES="" by_hand
    t4=$(now)
    echo "rep $rep: portable $(secs "$t0" "$t1") s, by hand $(secs "$t1" "$t2") s; --no-portable $(secs "$t2" "$t3") s, by hand $(secs "$t3" "$t4") s"
    secs "$t0" "$t1" >>"$WORK/a"
    secs "$t1" "$t2" >>"$WORK/b"
    secs "$t2" "$t3" >>"$WORK/a0"
    secs "$t3" "$t4" >>"$WORK/b0"
done

for side in a b a0 b0; do
    eval "M_$side=$(median <"$WORK/$side")"
done
echo "median of $REPS: A portable ${M_a} s, B by hand with the profile ${M_b} s; A0 --no-portable ${M_a0} s, B0 by hand ${M_b0} s"
awk -v a="$M_a" -v b="$M_b" -v c="$M_a0" -v d="$M_b0" 'BEGIN {printf "ratio A/B %.2f, A0/B0 %.2f\n", a / b, c / d}'
