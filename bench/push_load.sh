#!/bin/sh
# Ingest into a team server (issue 53): CLIENTS concurrent `perfsleuth push`
# processes, each sending RUNS runs (20 benchmarks × 10 samples, written by
# examples/fill_store.rs into its own SQLite store) to `perfsleuth serve` on
# STORE_URL (which should hold no project `app` yet). Prints runs/s over the
# whole push, and how many runs the server holds and how many distinct
# UUIDs: every run once, none lost, none twice.
#
# Usage: sh bench/push_load.sh PERFSLEUTH FILL_BINARY STORE_URL CLIENTS RUNS
set -eu
ps=$1; fill=$2; store=$3; clients=$4; runs=$5
work=$(mktemp -d)
port=18441
"$ps" server project app --store "$store" >/dev/null
token=$("$ps" server token create --scope ingest,read --project app --json --store "$store" |
  python3 -c 'import json,sys; d = json.load(sys.stdin); print(d.get("secret") or d["tokens"][0]["secret"])')
for c in $(seq "$clients"); do "$fill" "sqlite:$work/c$c.db" 0 "$runs"; done
. "$(dirname "$0")/serve.sh"
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true; rm -rf "$work"' EXIT
start_server "$ps" "$store" $port "$work/server.log"
start=$(date +%s.%N)
pids=""
for c in $(seq "$clients"); do
  PERFSLEUTH_TOKEN=$token "$ps" push --server http://127.0.0.1:$port --project app \
    --store "sqlite:$work/c$c.db" $(seq "$runs") >"$work/push$c.log" 2>&1 &
  pids="$pids $!"
done
wait_rc=0
for pid in $pids; do
  wait "$pid" || wait_rc=1
done
end=$(date +%s.%N)
python3 - "$clients" "$runs" "$start" "$end" "$wait_rc" "$token" "$port" <<'PY'
import json, sys, urllib.request
clients, per, start, end, rc, token, port = sys.argv[1:]
# The listing a page at a time (the server gives at most 1 000 runs a page).
runs, before = [], None
while True:
    url = "http://127.0.0.1:%s/api/v1/projects/app/runs?limit=1000" % port
    if before is not None:
        url += "&before=%d" % before
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + token})
    page = json.load(urllib.request.urlopen(req))["runs"]
    runs += page
    if len(page) < 1000:
        break
    before = page[-1]["id"]
uuids = {r["uuid"] for r in runs}
total, secs = int(clients) * int(per), float(end) - float(start)
print("| %s clients | %d runs | %.1f s | %.0f runs/s | %d stored | %d distinct UUIDs | push rc %s |" % (
    clients, total, secs, total / secs, len(runs), len(uuids), rc))
PY
