# Sourced by the server benchmarks: starts `perfsleuth serve` ($1 the binary,
# $2 the store URL, $3 the port, $4 its log file) in the background, sets
# $server to its pid, and returns once its health endpoint answers (or
# after 10 s). The caller's EXIT trap stops it.
start_server() {
  "$1" serve --store "$2" --listen "127.0.0.1:$3" >"$4" 2>&1 &
  server=$!
  for _ in $(seq 50); do
    curl -fs "http://127.0.0.1:$3/api/v1/health" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
}
