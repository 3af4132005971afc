#!/usr/bin/env python3
"""Fault injection against a real perfsleuth binary and real SQLite stores
(issue 13, "Make it stay fixed"; the promises are in docs/RELIABILITY.md).

  1. kill -9 at random points of `perfsleuth run` (perfsleuth alone, or its
     whole process group): after every kill `PRAGMA integrity_check` is ok,
     every run that was complete before is unchanged, and the store takes
     the next run.
  2. disk full: inside a private mount namespace (root, `unshare -m`), the
     store on a small tmpfs with a random amount of space left; every run
     either succeeds or exits 2 with a one-line error, and the store stays
     intact and usable once space is freed.
  3. 8 concurrent writers on one store, several times.
  4. SIGHUP, SIGINT and SIGTERM during --setup, --prepare, the measured
     command and --cleanup, sent to perfsleuth alone and to its group: exit
     128+signal, the run kept as `interrupted` (or `complete` when only the
     cleanup was left), no process of the run left behind.

Usage: python3 tests/reliability/faults.py PERFSLEUTH [--kills N] [--fills N]
       [--seed S] [--require-tmpfs]
Prints one line per case and a summary; exits 1 on any broken promise.
"""
import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

FAILURES = []


def fail(case, why):
    FAILURES.append(case + ": " + why)
    print("  FAILED " + case + ": " + why, flush=True)


def env_for(work):
    env = dict(os.environ)
    env.pop("PERFSLEUTH_STORE", None)
    env.update({"NO_COLOR": "1", "HOME": work, "XDG_DATA_HOME": work,
                "GIT_CEILING_DIRECTORIES": os.path.dirname(work)})
    return env


def perfsleuth(exe, args, work, **kw):
    return subprocess.run([exe] + args, cwd=work, env=env_for(work), text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def runs(exe, store, work):
    """The stored runs as {id: (status, samples)}, read through perfsleuth."""
    out = perfsleuth(exe, ["runs", "--json", "--limit", "100000", "--store", store], work)
    if out.returncode != 0:
        raise RuntimeError("runs --json failed: " + out.stderr.strip())
    return {r["id"]: (r["status"], r["samples"]) for r in json.loads(out.stdout)["runs"]}


def integrity(path):
    conn = sqlite3.connect("file:" + path + "?mode=ro", uri=True)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def complete(state):
    return {k: v for k, v in state.items() if v[0] == "complete"}


def check_store(case, exe, db, work, before):
    """Integrity, earlier complete runs unchanged; returns the new state."""
    result = integrity(db)
    if result != "ok":
        fail(case, "integrity_check: " + result)
    state = runs(exe, "sqlite:" + db, work)
    for rid, entry in before.items():
        if state.get(rid) != entry:
            fail(case, "complete run %d changed: %r -> %r" % (rid, entry, state.get(rid)))
    return state


def seed_runs(exe, store, work, n):
    """`n` complete runs in the store, the runs every fault must leave intact."""
    for _ in range(n):
        perfsleuth(exe, ["run", "--store", store, "--runs", "3", "--no-history", "true"], work,
                   check=True)
    return runs(exe, store, work)


def kills(exe, work, n, rng):
    print("kill -9 at %d random points" % n, flush=True)
    failed_before = len(FAILURES)
    db = os.path.join(work, "kill.db")
    store = "sqlite:" + db
    seed_runs(exe, store, work, 3)
    args = ["run", "--store", store, "--no-history", "--warmup", "1", "--runs", "6",
            "--setup", "true", "--prepare", "true", "--cleanup", "true", "sleep 0.01"]
    # Kill points spread over the whole life of a run, start to exit.
    t0 = time.monotonic()
    perfsleuth(exe, args, work, check=True)
    life = time.monotonic() - t0
    state = runs(exe, store, work)
    landed = {"before a run was stored": 0, "mid-run": 0, "after the run completed": 0}
    for i in range(n):
        before = complete(state)
        known = set(state)
        proc = subprocess.Popen([exe] + args, cwd=work, env=env_for(work),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        time.sleep(rng.uniform(0.0, 1.2 * life))
        group = rng.random() < 0.5
        try:
            if group:
                os.killpg(proc.pid, signal.SIGKILL)
            else:
                os.kill(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()
        case = "kill %d (%s)" % (i + 1, "group" if group else "perfsleuth")
        state = check_store(case, exe, db, work, before)
        new = sorted(set(state) - known)
        if not new:
            landed["before a run was stored"] += 1
        elif state[new[-1]][0] == "complete":
            landed["after the run completed"] += 1
        else:
            landed["mid-run"] += 1
    after = perfsleuth(exe, ["run", "--store", store, "--runs", "2", "--no-history", "true"], work)
    if after.returncode != 0:
        fail("after the kills", "the next run failed: " + after.stderr.strip())
    print("  a run lives %.2f s; %d kills: %s; integrity ok and earlier runs intact after each: %s"
          % (life, n, ", ".join("%d %s" % (v, k) for k, v in landed.items()),
             "yes" if len(FAILURES) == failed_before else "NO"), flush=True)
    return landed


def concurrent(exe, work, rounds=3, writers=8):
    print("%d concurrent writers, %d times" % (writers, rounds), flush=True)
    db = os.path.join(work, "concurrent.db")
    store = "sqlite:" + db
    total = 0
    for r in range(rounds):
        procs = [subprocess.Popen([exe, "run", "--store", store, "--runs", "5", "--warmup", "0",
                                   "--no-history", "-n", "w%d" % w, "true"],
                                  cwd=work, env=env_for(work), stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, text=True) for w in range(writers)]
        for p in procs:
            _, err = p.communicate()
            if p.returncode != 0:
                fail("writers round %d" % (r + 1), "exit %d: %s" % (p.returncode, err.strip()))
        total += writers
        state = check_store("writers round %d" % (r + 1), exe, db, work, {})
        done = [v for v in state.values() if v == ("complete", 5)]
        if len(done) != total:
            fail("writers round %d" % (r + 1), "%d complete 5-sample runs, expected %d: %r"
                 % (len(done), total, state))
    print("  %d runs written by %d writers at a time: all complete, integrity ok" % (total, writers),
          flush=True)
    return total


def disk_full(exe, work, n, rng, required):
    print("disk full at %d random points (private tmpfs)" % n, flush=True)
    if os.geteuid() != 0 or subprocess.run(["which", "unshare"], stdout=subprocess.DEVNULL).returncode:
        why = "needs root and unshare to mount a private tmpfs"
        if required:
            fail("disk full", why)
        else:
            print("  skipped: " + why, flush=True)
        return None
    # Re-run this script inside a private mount namespace for the tmpfs.
    me = os.path.abspath(__file__)
    out = subprocess.run(["unshare", "-m", sys.executable, me, exe, "--inner-disk-full", str(n),
                          "--seed", str(rng.randrange(1 << 30)), "--work", work],
                         text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    sys.stdout.write(out.stdout)
    if out.returncode != 0:
        fail("disk full", "inner run exited %d" % out.returncode)
        return None
    return n


def inner_disk_full(exe, work, n, seed):
    rng = random.Random(seed)
    failed_before = len(FAILURES)
    mnt = os.path.join(work, "tmpfs")
    os.makedirs(mnt, exist_ok=True)
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt], check=True)
    db = os.path.join(mnt, "full.db")
    store = "sqlite:" + db
    state = seed_runs(exe, store, work, 2)
    outcomes = {"stored": 0, "failed with a one-line error (exit 2)": 0}
    messages = set()
    filler = os.path.join(mnt, "filler")
    for i in range(n):
        before = complete(state)
        st = os.statvfs(mnt)
        free = st.f_bavail * st.f_frsize
        leave = rng.randrange(0, 1024 * 1024)
        with open(filler, "wb") as f:
            f.write(b"\0" * max(0, free - leave))
        out = perfsleuth(exe, ["run", "--store", store, "--runs", "20", "--warmup", "0",
                               "--no-history", "true"], work)
        case = "disk full %d (%d KiB left)" % (i + 1, leave // 1024)
        if out.returncode == 0:
            outcomes["stored"] += 1
        elif out.returncode == 2:
            outcomes["failed with a one-line error (exit 2)"] += 1
            errors = [l for l in out.stderr.splitlines() if l.startswith("error: ")]
            messages.update(e.split(": ", 1)[1][:120] for e in errors)
            if len(errors) != 1 or "panicked" in out.stderr:
                fail(case, "not one clean error: " + out.stderr.strip())
        else:
            fail(case, "exit %d: %s" % (out.returncode, out.stderr.strip()))
        os.remove(filler)
        state = check_store(case, exe, db, work, before)
        again = perfsleuth(exe, ["run", "--store", store, "--runs", "2", "--no-history", "true"],
                           work)
        if again.returncode != 0:
            fail(case, "store unusable after freeing space: " + again.stderr.strip())
        state = runs(exe, store, work)
    print("  %d runs on a nearly full disk: %s; integrity ok and earlier runs intact after each: %s"
          % (n, ", ".join("%d %s" % (v, k) for k, v in outcomes.items()),
             "yes" if len(FAILURES) == failed_before else "NO"), flush=True)
    for m in sorted(messages):
        print("    error seen: " + m, flush=True)
    return 0 if len(FAILURES) == failed_before else 1


def own_sleep(work, name):
    """A link to sleep named for one phase, so its processes can be found."""
    bindir = os.path.join(work, "bin")
    os.makedirs(bindir, exist_ok=True)
    link = os.path.join(bindir, name)
    if not os.path.exists(link):
        target = "/bin/sleep" if os.path.exists("/bin/sleep") else "/usr/bin/sleep"
        os.symlink(target, link)
    return link


def processes_with(needle):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cmd.startswith(needle):
            found.append(pid + ": " + cmd)
    return found


def signals(exe, work):
    print("SIGHUP/SIGINT/SIGTERM during setup, prepare, measure and cleanup", flush=True)
    failed_before = len(FAILURES)
    db = os.path.join(work, "signals.db")
    store = "sqlite:" + db
    cases = 0
    for phase in ["setup", "prepare", "measure", "cleanup"]:
        marker = own_sleep(work, "sleep-" + phase)
        quick = own_sleep(work, "sleep-quick")
        long_cmd = marker + " 5"
        cmd = {p: quick + " 0.01" for p in ["setup", "prepare", "measure", "cleanup"]}
        cmd[phase] = long_cmd
        for sig in [signal.SIGHUP, signal.SIGINT, signal.SIGTERM]:
            for to_group in [False, True]:
                case = "%s during %s (to %s)" % (sig.name, phase, "group" if to_group else "perfsleuth")
                everything = runs(exe, store, work) if os.path.exists(db) else {}
                before = complete(everything)
                args = ["run", "--store", store, "--no-history", "--warmup", "0", "--runs", "3",
                        "--setup", cmd["setup"], "--prepare", cmd["prepare"],
                        "--cleanup", cmd["cleanup"], cmd["measure"]]
                proc = subprocess.Popen([exe] + args, cwd=work, env=env_for(work),
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                        text=True, start_new_session=True)
                deadline = time.monotonic() + 30
                while not processes_with(long_cmd) and time.monotonic() < deadline:
                    time.sleep(0.01)
                if not processes_with(long_cmd):
                    fail(case, "the %s command never started" % phase)
                if to_group:
                    os.killpg(proc.pid, sig)
                else:
                    os.kill(proc.pid, sig)
                try:
                    _, err = proc.communicate(timeout=30)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.communicate()
                    fail(case, "perfsleuth did not exit")
                    continue
                cases += 1
                if proc.returncode != 128 + sig:
                    fail(case, "exit %d, expected %d: %s" % (proc.returncode, 128 + sig, err.strip()))
                if "panicked" in err:
                    fail(case, "panic: " + err.strip())
                left = []
                for _ in range(50):
                    left = processes_with(long_cmd)
                    if not left:
                        break
                    time.sleep(0.05)
                if left:
                    fail(case, "left running: %r" % left)
                    for p in left:
                        os.kill(int(p.split(":")[0]), signal.SIGKILL)
                state = check_store(case, exe, db, work, before)
                new = sorted(set(state) - set(everything))
                status = state[new[-1]][0] if new else None
                allowed = {"interrupted", "complete"} if phase == "cleanup" else {"interrupted"}
                if status not in allowed:
                    fail(case, "run status %r, expected one of %s" % (status, sorted(allowed)))
    print("  %d signal cases: exit 128+signal, run kept, nothing left running: %s"
          % (cases, "yes" if len(FAILURES) == failed_before else "NO"), flush=True)
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("exe")
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--fills", type=int, default=30)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--require-tmpfs", action="store_true")
    ap.add_argument("--inner-disk-full", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--work", help=argparse.SUPPRESS)
    a = ap.parse_args()
    exe = os.path.abspath(a.exe)
    if a.inner_disk_full is not None:
        sys.exit(inner_disk_full(exe, a.work, a.inner_disk_full, a.seed))
    rng = random.Random(a.seed)
    work = tempfile.mkdtemp(prefix="perfsleuth-faults-")
    start = time.monotonic()
    try:
        kills(exe, work, a.kills, rng)
        concurrent(exe, work)
        disk_full(exe, work, a.fills, rng, a.require_tmpfs)
        signals(exe, work)
    finally:
        subprocess.run(["rm", "-rf", work])
    print("fault injection: %d broken promises in %.0f s (seed %d)"
          % (len(FAILURES), time.monotonic() - start, a.seed), flush=True)
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
