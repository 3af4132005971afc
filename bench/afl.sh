#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers of untrusted input with AFL++, on
# stable Rust (the fuzz/ crate, outside the main workspace): each target
# runs SECONDS (default 60) from seeds made of the repository's fixtures.
# Crashes and hangs land in fuzz/target/afl/TARGET/default/{crashes,hangs};
# replay one with `fuzz/target/debug/TARGET < FILE` and make it a named
# regression test. The proptest targets (bench/fuzz.sh) run in `cargo
# test`; these need cargo-afl, which builds AFL++ itself:
#
#   cargo install cargo-afl --locked
#   bench/afl.sh [SECONDS] [TARGET...]      targets: callgrind cpuid procstat csv elf json names
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(callgrind cpuid procstat csv elf json names)
command -v cargo-afl >/dev/null || {
  echo "bench/afl.sh needs cargo-afl: cargo install cargo-afl --locked" >&2
  exit 2
}
(cd fuzz && cargo afl build --locked)

fx=crates/perfsleuth-env/tests/fixtures
seeds=fuzz/target/afl-seeds
rm -rf "$seeds"
mkdir -p "$seeds"/{callgrind,cpuid,procstat,csv,elf,json,names}
cp crates/perfsleuth-measure/tests/fixtures/callgrind/*.out "$seeds/callgrind/"
printf 'events: Ir Dr\nfn=(1) main\n0 5 2\ncfn=(2) f\ncalls=1 0\n0 3 1\nfn=(2)\n0 3 1\ntotals: 8 3\n' >"$seeds/callgrind/small.out"
for t in intel-xeon-8370c amd-epyc-7763; do
  head -n 40 "$fx/$t/cpuid.txt" >"$seeds/cpuid/$t.txt"
  { cat "$fx/$t/proc/stat"; printf '\n--\n'; cat "$fx/$t/proc/stat"; } >"$seeds/procstat/$t.txt"
done
printf 'N,X\n1,100\n2,190\n4,350\n8,600\n' >"$seeds/csv/plain.csv"
printf '\xef\xbb\xbfthreads;throughput\r\n1;1,5\r\n2;2,75\r\n4;5\r\n8;9,5\r\n' >"$seeds/csv/excel.csv"
printf '1 10\n2 19\n2 21\n4 30\n' >"$seeds/csv/headerless.csv"
printf '32 KiB' >"$seeds/names/size"
printf 'calls,memory\nall' >"$seeds/names/probes"
printf 'peak_rss' >"$seeds/names/metric"
# Small ELF files: 64-bit little-endian with an interpreter and a build-id,
# 32-bit big-endian with an 8-byte aligned note.
python3 - "$seeds/elf" <<'PY'
import struct, sys
def elf(is64, big, align):
    e = ">" if big else "<"
    interp = b"/lib64/ld-linux-x86-64.so.2\0"
    desc = bytes(range(1, 21))
    pad = lambda b: b + b"\0" * (-len(b) % align)
    # The desc starts at the aligned end of the name, the next note at the
    # aligned end of the desc.
    note = pad(struct.pack(e + "III", 4, len(desc), 3) + b"GNU\0") + pad(desc)
    eh, ph = (64, 56) if is64 else (52, 32)
    off = eh + 2 * ph
    segs = [(3, off, interp, 1), (4, off + len(pad(interp)), note, align)]
    if is64:
        head = b"\x7fELF" + bytes([2, 2 if big else 1, 1]) + b"\0" * 9
        head += struct.pack(e + "HHIQQQIHHHHHH", 2, 62, 1, 0, eh, 0, 0, eh, ph, 2, 64, 0, 0)
        phdrs = b"".join(struct.pack(e + "IIQQQQQQ", t, 4, o, 0, 0, len(p), len(p), a) for t, o, p, a in segs)
    else:
        head = b"\x7fELF" + bytes([1, 2 if big else 1, 1]) + b"\0" * 9
        head += struct.pack(e + "HHIIIIIHHHHHH", 2, 3, 1, 0, eh, 0, 0, eh, ph, 2, 40, 0, 0)
        phdrs = b"".join(struct.pack(e + "IIIIIIII", t, o, 0, 0, len(p), len(p), 4, a) for t, o, p, a in segs)
    return head + phdrs + pad(interp) + note
open(sys.argv[1] + "/elf64le", "wb").write(elf(True, False, 4))
open(sys.argv[1] + "/elf32be", "wb").write(elf(False, True, 8))
PY
cat >"$seeds/json/environment.json" <<'JSON'
{"schema":"perfsleuth/environment","schema_version":1,"source":"tree","comparability":"c0ffee","facts":{"cpu.model":{"value":"Xeon","class":"identity"},"os.name":{"value":"unknown","class":"context","reason":"missing"}}}
JSON
cat >"$seeds/json/run.json" <<'JSON'
{"schema":"perfsleuth/run","schema_version":1,"run":{"id":1,"started_at":"2026-01-01T00:00:00.000Z","ended_at":null,"status":"complete","tool_version":"0.1.0","git":{"commit":"abc","branch":"main","dirty":false},"mode":"walltime","options":{"runs":3},"environment":{"cpu.model":{"value":"Xeon","class":"identity"}},"benchmarks":[{"name":"true","command":"true","argv":["true"],"parameters":{"n":"1"},"samples":[{"iteration":0,"wall_ns":1000,"user_ns":1,"sys_ns":1,"peak_rss_bytes":4096,"minor_faults":1,"major_faults":0,"voluntary_cs":1,"involuntary_cs":0,"exit_code":0,"signal":null,"counters":{"instructions":1.5e9}}]}]},"summary":{"reference":0,"benchmarks":[{"name":"true","command":"true","parameters":{},"runs":1,"failed_runs":0,"wall":{"n":1,"mean":1000.0,"stddev":0.0,"median":1000.0,"median_ci_low":1000.0,"median_ci_high":1000.0,"mad":0.0,"min":1000.0,"max":1000.0,"p5":1000.0,"p95":1000.0,"outliers":[]},"user":null,"sys":null,"peak_rss":null,"counters":{}}],"comparisons":[{"benchmark":1,"reference":0,"time":{"ratio":1.0,"ci_low":0.9,"ci_high":1.1,"confidence":0.95,"resamples":100,"significant":false,"p_value":0.5},"peak_rss":null}]}}
JSON
cat >"$seeds/json/probe.json" <<'JSON'
{"schema":"perfsleuth/probe","schema_version":1,"run_id":null,"status":"complete","started_at":"2026-01-01T00:00:00.000Z","ended_at":null,"tool_version":"0.1.0","quick":true,"comparability":"c","clock":null,"reports":[{"probe":"calls","duration_s":0.5,"pinned_cpu":0,"clock":{"ghz":3.0,"spread":null,"tsc_ghz":null,"how":"loop"},"messages":["retaken"],"measurements":[{"probe":"calls","metric":"call","value":1.5,"unit":"ns","lower_is_better":true,"cycles":null,"spread":null,"stable":true,"headline":true,"note":null}]}],"facts":{}}
JSON

printf '%-10s %10s %12s %8s %6s %6s\n' target seconds execs execs/s crashes hangs
status=0
for t in "${targets[@]}"; do
  out=fuzz/target/afl/$t
  mkdir -p fuzz/target/afl
  rm -rf "$out"
  AFL_NO_UI=1 AFL_SKIP_CPUFREQ=1 AFL_NO_AFFINITY=1 AFL_I_DONT_CARE_ABOUT_MISSING_CRASHES=1 \
    timeout $((secs + 60)) cargo afl fuzz -i "$seeds/$t" -o "$out" -V "$secs" \
    "fuzz/target/debug/$t" >"$out.log" 2>&1 || true
  stats=$out/default/fuzzer_stats
  get() { sed -n "s/^$1 *: //p" "$stats" 2>/dev/null; }
  crashes=$(get saved_crashes)
  hangs=$(get saved_hangs)
  printf '%-10s %10s %12s %8s %6s %6s\n' "$t" "$(get run_time)" "$(get execs_done)" \
    "$(get execs_per_sec)" "${crashes:-?}" "${hangs:-?}"
  if [ "${crashes:-1}" != 0 ] || [ "${hangs:-1}" != 0 ]; then status=1; fi
done
# The elf target's input file, one per process AFL started (it kills them).
rm -f "${TMPDIR:-/tmp}"/perfsleuth-afl-elf-*
exit $status
