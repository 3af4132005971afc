#!/usr/bin/env bash
# Fetches hyperfine's own analysis scripts (scripts/*.py, from the hyperfine
# crate on crates.io) into DIR and installs what they import (numpy, scipy,
# matplotlib), so the tests can run them on perfsleuth's --export-hyperfine.
# Usage: tests/hyperfine-scripts.sh [DIR]   (default target/hyperfine-scripts)
set -euo pipefail
version=1.19.0
dir=${1:-target/hyperfine-scripts}
if [ ! -f "$dir/welch_ttest.py" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  curl -sSfL --retry 3 -o "$tmp/hyperfine.crate" "https://static.crates.io/crates/hyperfine/hyperfine-$version.crate"
  tar xzf "$tmp/hyperfine.crate" -C "$tmp"
  mkdir -p "$dir"
  cp "$tmp/hyperfine-$version"/scripts/*.py "$dir/"
  cp "$tmp/hyperfine-$version/LICENSE-MIT" "$dir/" 2>/dev/null || true
fi
# Everything but the directory's name goes to stderr: callers read stdout.
if ! python3 -c 'import numpy, scipy, matplotlib' 2>/dev/null; then
  {
    python3 -m pip install -q numpy scipy matplotlib \
      || python3 -m pip install -q --break-system-packages numpy scipy matplotlib \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
             python3-numpy python3-scipy python3-matplotlib; }
  } >&2
fi
echo "$dir"
