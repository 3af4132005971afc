#!/bin/sh
# The retpoline experiment of docs/PROBES.md: the calls probe in C built
# plain and with gcc's -mindirect-branch=thunk (every indirect call goes
# through a retpoline thunk), measured two ways:
#   1. each program's own ns/iteration (CLOCK_MONOTONIC around the loop),
#      median of RUNS runs per mode, pinned to one CPU;
#   2. the whole process with `perfsleuth run` (this repository's binary),
#      plain vs retpoline for the indirect loop.
# Usage: bench/probes/retpoline.sh [ITERATIONS] [RUNS]   (from the repository root)
set -eu
N=${1:-100000000}
RUNS=${2:-7}
CPU=${CPU:-1}
OUT=${TMPDIR:-/tmp}/perfsleuth-retpoline
mkdir -p "$OUT"
SRC=$(dirname "$0")/calls.c
CC=${CC:-gcc}
$CC -O2 -o "$OUT/calls-plain" "$SRC"
$CC -O2 -mindirect-branch=thunk -o "$OUT/calls-retpoline" "$SRC"
echo "compiler: $($CC --version | head -1)"
echo "indirect-branch thunks in the retpoline build: $(objdump -d "$OUT/calls-retpoline" | grep -c 'call.*__x86_indirect_thunk' || true)"
echo "CPU $CPU, $N iterations, median of $RUNS runs (ns per iteration)"
printf '%-14s %10s %10s %8s\n' mode plain retpoline ratio
for mode in inline direct indirect unpredictable; do
    for build in plain retpoline; do
        i=0
        : > "$OUT/$mode-$build"
        while [ $i -lt "$RUNS" ]; do
            taskset -c "$CPU" "$OUT/calls-$build" $mode "$N" | awk '{print $2}' >> "$OUT/$mode-$build"
            i=$((i + 1))
        done
    done
    p=$(sort -g "$OUT/$mode-plain" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    r=$(sort -g "$OUT/$mode-retpoline" | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    printf '%-14s %10s %10s %8s\n' "$mode" "$p" "$r" "$(awk -v p="$p" -v r="$r" 'BEGIN {printf "%.2fx", r / p}')"
done
PERFSLEUTH=${PERFSLEUTH:-target/release/perfsleuth}
if [ -x "$PERFSLEUTH" ]; then
    echo
    echo "whole process, indirect loop, $PERFSLEUTH run:"
    "$PERFSLEUTH" run --no-store --warmup 1 --runs "$RUNS" \
        "taskset -c $CPU $OUT/calls-plain indirect $N" \
        "taskset -c $CPU $OUT/calls-retpoline indirect $N"
fi
