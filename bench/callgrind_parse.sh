#!/usr/bin/env bash
# Parsing a large callgrind file: perfsleuth's parser vs callgrind_annotate.
#
# 1. Generates a C program with N functions (bench/callgrind/gen_big.c,
#    default 9000), compiles it with gcc -O0 -g and runs it under callgrind
#    with --cache-sim=yes --dump-instr=yes --dump-line=yes --compress-pos=no
#    --collect-jumps=yes: a real callgrind file of >= 50 MB (cost lines with
#    full instruction addresses, calls, jumps, 9 events).
# 2. Checks callgrind_annotate accepts it and that both report the same
#    PROGRAM TOTALS.
# 3. Times `parse_callgrind FILE` (the release example: parse, print totals
#    and the top 10) and `callgrind_annotate FILE >/dev/null`, RUNS times each
#    (default 5), and prints median / min / max wall time.
#
# Needs gcc, valgrind, callgrind_annotate, python3, cargo. Usage:
#   bash bench/callgrind_parse.sh            # N=9000 RUNS=5
#   N=12000 RUNS=3 KEEP=1 bash bench/callgrind_parse.sh
set -euo pipefail

cd "$(dirname "$0")/.."
N=${N:-9000}
RUNS=${RUNS:-5}
TARGET=${CARGO_TARGET_DIR:-target}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/callgrind-parse.XXXXXX")
if [ -z "${KEEP:-}" ]; then trap 'rm -rf "$WORK"' EXIT; fi

for tool in gcc valgrind callgrind_annotate python3 cargo; do
    command -v "$tool" >/dev/null || { echo "missing: $tool" >&2; exit 2; }
done

echo "== generating and compiling a program with $N functions in $WORK"
gcc -O2 -o "$WORK/gen_big" bench/callgrind/gen_big.c
"$WORK/gen_big" "$N" 40 >"$WORK/big.c"
gcc -O0 -g -o "$WORK/big" "$WORK/big.c"

echo "== running it under callgrind"
FILE="$WORK/callgrind.out.big"
valgrind --tool=callgrind --cache-sim=yes --dump-instr=yes --dump-line=yes \
    --compress-pos=no --collect-jumps=yes --callgrind-out-file="$FILE" \
    "$WORK/big" >/dev/null 2>"$WORK/valgrind.log"
SIZE=$(stat -c %s "$FILE")
LINES=$(wc -l <"$FILE")
echo "file: $SIZE bytes ($((SIZE / 1000000)) MB), $LINES lines"
if [ "$SIZE" -lt 50000000 ]; then
    echo "file is under 50 MB; raise N" >&2
    exit 1
fi

echo "== building the parser (release)"
cargo build --release -q -p perfsleuth-measure --example parse_callgrind
PARSER="$TARGET/release/examples/parse_callgrind"

echo "== checking both agree"
callgrind_annotate "$FILE" >"$WORK/annotate.txt" 2>"$WORK/annotate.err"
if grep -q "malformed" "$WORK/annotate.err"; then
    echo "callgrind_annotate reports malformed lines:" >&2
    head "$WORK/annotate.err" >&2
    exit 1
fi
THEIRS=$(grep -m1 "PROGRAM TOTALS" "$WORK/annotate.txt" | awk '{print $1}' | tr -d ,)
OURS=$("$PARSER" "$FILE" | awk '$1 == "Ir" {print $2}')
echo "Ir total: parse_callgrind $OURS, callgrind_annotate $THEIRS"
if [ "$OURS" != "$THEIRS" ]; then
    echo "totals differ" >&2
    exit 1
fi

echo "== timing, $RUNS runs each"
python3 - "$RUNS" "$PARSER" "$FILE" <<'EOF'
import statistics, subprocess, sys, time

runs, parser, path = int(sys.argv[1]), sys.argv[2], sys.argv[3]
commands = {
    "parse_callgrind": [parser, path],
    "callgrind_annotate": ["callgrind_annotate", path],
}
results = {}
for name, argv in commands.items():
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t0)
    results[name] = statistics.median(times)
    print(f"{name:>20}: median {statistics.median(times):8.3f} s"
          f"  (min {min(times):.3f}, max {max(times):.3f}, n={runs})")
print(f"callgrind_annotate / parse_callgrind: "
      f"{results['callgrind_annotate'] / results['parse_callgrind']:.0f}x")
EOF
