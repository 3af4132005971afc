#!/bin/sh
# The team server under 32 concurrent clients (issue 53): wrk, a real HTTP
# load generator, against `perfsleuth serve` on a store of project `app`
# (filled by examples/fill_store.rs, its runs moved into the project), each
# endpoint for DURATION with 32 connections on 2 threads, then all of them
# mixed. Prints one Markdown row per endpoint: requests/s and the latency
# percentiles wrk measured (it corrects for coordinated omission only with
# -R, which is not used: these are the latencies of a closed loop).
#
# The project must be public (`perfsleuth server project app --public`).
#
# Usage: sh bench/server_load.sh PERFSLEUTH STORE_URL [DURATION]
set -eu
ps=$1; store=$2; duration=${3:-10s}
port=18439
. "$(dirname "$0")/serve.sh"
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
start_server "$ps" "$store" $port /tmp/server_load.log
base=http://127.0.0.1:$port
api=$base/api/v1/projects/app
latest=$(curl -fs "$api/runs?limit=1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')
older=$((latest - 1))
script=$(mktemp)
cat >"$script" <<LUA
paths = { "/api/v1/projects/app/runs?limit=20",
          "/api/v1/projects/app/runs?limit=20&before=$((latest / 2))",
          "/api/v1/projects/app/runs/$latest",
          "/p/app", "/p/app?before=$((latest / 2))" }
i = 0
request = function()
  i = i + 1
  return wrk.format("GET", paths[(i % #paths) + 1])
end
LUA
echo "| endpoint | requests/s | p50, ms | p90, ms | p99, ms |"
echo "|---|---:|---:|---:|---:|"
row() {
  name=$1; shift
  wrk -t2 -c32 -d"$duration" --latency "$@" 2>&1 | python3 -c '
import re, sys
text = sys.stdin.read()
def ms(label):
    m = re.search(r"^\s+" + label + r"\s+([\d.]+)(us|ms|s)\b", text, re.M)
    v, unit = float(m.group(1)), m.group(2)
    return v / 1000 if unit == "us" else v * 1000 if unit == "s" else v
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
note = " (%s non-2xx)" % errors.group(1) if errors else ""
print("| %s%s | %.0f | %.1f | %.1f | %.1f |" % (sys.argv[1], note, rps, ms("50%"), ms("90%"), ms("99%")))
' "$name"
}
# The pages first; compare and history (tens of milliseconds to seconds of
# CPU each) after them, each followed by a pause: requests wrk gave up on
# are still being answered when it stops, and would load the next row.
row "runs?limit=20" "$api/runs?limit=20"
row "runs?limit=20&before= (deep page)" "$api/runs?limit=20&before=$((latest / 2))"
row "runs/{id}" "$api/runs/$latest"
row "/p/app (project page)" "$base/p/app"
row "/p/app?before= (deep page)" "$base/p/app?before=$((latest / 2))"
row "the five above, mixed" -s "$script" "$base"
row "compare (latest two)" "$api/compare?baseline=$older&candidate=$latest"
sleep 5
row "history?bench=bench-07&last=50" "$api/history?bench=bench-07&last=50"
rm -f "$script"
