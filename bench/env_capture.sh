#!/usr/bin/env bash
# Environment capture time: perfsleuth's in-process capture, and the whole
# `perfsleuth env show --json` process against pyperf's `collect_metadata`
# (the peer), both measured by perfsleuth in one interleaved run.
# Needs: pip install pyperf. Usage: bash bench/env_capture.sh
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c 'import pyperf' 2>/dev/null || pip install --quiet pyperf
cargo build --release --quiet -p perfsleuth
cargo build --release --quiet -p perfsleuth-runner --example capture_time
target="${CARGO_TARGET_DIR:-target}/release"
cache=$(mktemp -d)
echo "== in-process capture; the first one fills an empty ld.so cache (runs ld.so once)"
XDG_CACHE_HOME="$cache" "$target/examples/capture_time" 200
echo "== the same with the cache filled"
XDG_CACHE_HOME="$cache" "$target/examples/capture_time" 200
rm -rf "$cache"
echo "== in-process capture without ld.so diagnostics (PERFSLEUTH_NO_LDSO=1)"
PERFSLEUTH_NO_LDSO=1 "$target/examples/capture_time" 200
echo "== whole processes, interleaved"
"$target/perfsleuth" run --no-store --warmup 3 --min-runs 30 --time-budget 5s \
  -n "perfsleuth env show --json" "$target/perfsleuth env show --json" \
  -n "pyperf collect_metadata" "python3 -m pyperf collect_metadata"
