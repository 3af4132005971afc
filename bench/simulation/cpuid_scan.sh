#!/usr/bin/env bash
# How fast and how right is the CPUID scan of portable simulation runs?
# For each library: perfsleuth_env::cpuid_sites (decoding the executable
# sections with iced-x86) against `objdump -d FILE | grep cpuid` (the peer
# and the reference count), each timed REPS times (median).
# Needs cargo, binutils. Usage: bash bench/simulation/cpuid_scan.sh [FILE…]
set -euo pipefail
cd "$(dirname "$0")/../.."
REPS=${REPS:-5}
FILES=("$@")
if [ ${#FILES[@]} -eq 0 ]; then
    FILES=(/lib64/ld-linux-x86-64.so.2 /lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libcrypto.so.3)
fi
cargo build --release -q -p perfsleuth-env --example cpuid_scan
SCAN=${CARGO_TARGET_DIR:-target}/release/examples/cpuid_scan
median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
echo "| file | size | CPUID (perfsleuth) | CPUID (objdump) | perfsleuth | objdump -d |"
echo "|---|--:|--:|--:|--:|--:|"
for f in "${FILES[@]}"; do
    [ -e "$f" ] || continue
    ours=""; tours=()
    tobj=()
    for _ in $(seq "$REPS"); do
        line=$("$SCAN" "$f")
        ours=$(echo "$line" | cut -f2)
        tours+=("$(echo "$line" | cut -f3 | cut -d' ' -f1)")
        t0=$(date +%s.%N)
        ref=$(objdump -d "$f" | awk -F'\t' '$3 ~ /^cpuid/' | wc -l)
        t1=$(date +%s.%N)
        tobj+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", (b - a) * 1000}')")
    done
    size=$(stat -L -c %s "$f")
    echo "| $(basename "$f") | $((size / 1024)) KiB | $ours | $ref | $(printf '%s\n' "${tours[@]}" | median) ms | $(printf '%s\n' "${tobj[@]}" | median) ms |"
done
