#!/usr/bin/env bash
# Runs every fuzz target (crates/*/tests/fuzz_*.rs and the binary's
# src/fuzz.rs) one at a time, each for SCALE times its default number of
# cases, and prints the cases, seconds and result of each. The default pass
# of `cargo test` is SCALE 1 (about a second a target in a debug build);
# SCALE 100 took about 20 minutes on a 2-core machine. Debug builds, on
# purpose: integer overflow panics there, and that is half of what the
# targets look for.
#
#   bench/fuzz.sh [SCALE] [FILTER]     e.g. bench/fuzz.sh 100, bench/fuzz.sh 10 'csv|elf'
#
# FILTER is a regex matched against BINARY::TEST (fuzz_csv::damaged_files_…).
#
# PROPTEST_CASES=N gives every target exactly N cases instead. A failure
# prints proptest's minimal failing input; make it a named regression test.
set -euo pipefail
cd "$(dirname "$0")/.."
scale=${1:-100}
filter=${2:-}
export PERFSLEUTH_FUZZ_SCALE=$scale

targets=(
  "perfsleuth-measure --test fuzz_callgrind"
  "perfsleuth-env --test fuzz_env"
  "perfsleuth-model --test fuzz_schema"
  "perfsleuth-scale --test fuzz_csv"
  "perfsleuth-probe --test fuzz_probe"
  "perfsleuth-report --test fuzz_export"
  "perfsleuth-store --test fuzz_columns"
  "perfsleuth-import --test fuzz_import"
  "perfsleuth --bin perfsleuth"
)

failed=0
printf '%-66s %9s %9s  %s\n' target cases seconds result
for t in "${targets[@]}"; do
  set -- $t
  exe=$(cargo test --locked -p "$1" "$2" "$3" --no-run --message-format=json 2>/dev/null |
    grep -o '"executable":"[^"]*"' | cut -d'"' -f4 | tail -n 1)
  # The binary's unit tests are all of its tests; only fuzz:: are targets.
  for name in $("$exe" --list 2>/dev/null | sed -n 's/: test$//p' | grep -E '^(fuzz::|[a-z_]+$)'); do
    if [ "$3" = perfsleuth ] && [[ $name != fuzz::* ]]; then continue; fi
    bin=${exe##*/}
    bin=${bin%-*}
    if [ -n "$filter" ] && ! [[ "$bin::$name" =~ $filter ]]; then continue; fi
    log=$(mktemp)
    start=$(date +%s.%N)
    if "$exe" --exact "$name" --nocapture >"$log" 2>&1; then result=ok; else result=FAILED; failed=1; fi
    end=$(date +%s.%N)
    cases=$(sed -n 's/^fuzz: \([0-9]*\) cases$/\1/p' "$log" | head -n 1)
    printf '%-66s %9s %9.1f  %s\n' "$bin::$name" "${cases:-default}" \
      "$(echo "$end - $start" | bc)" "$result"
    if [ $result = FAILED ]; then grep -A40 'minimal failing input\|panicked' "$log" | head -n 60; fi
    rm -f "$log"
  done
done
exit $failed
