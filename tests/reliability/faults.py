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
  5. hostile inputs and outputs (issue 37), each replayed as it was found:
     `report -o` into a device, a FIFO, a symlink, a 0600 file, a hard link,
     past a link planted at the old temporary name, onto a live store's
     -shm; two outputs that are one file; a failed export; oversized and
     descriptor-hungry parameter scans; `probe diff` of a FIFO, a pipe, a
     device, a directory; a read-only store (root, `unshare -m`); `:memory:`
     stores; a 3 MB CSV cell; an impossible --since date.

Usage: python3 tests/reliability/faults.py PERFSLEUTH [--kills N] [--fills N]
       [--seed S] [--require-tmpfs]
Prints one line per case and a summary; exits 1 on any broken promise.
"""
import argparse
import json
import os
import random
import resource
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import threading
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


def answered(exe, args, work, case, timeout=30, **kw):
    """perfsleuth ARGS, or None (a failure) when it has not answered in `timeout` s."""
    try:
        return perfsleuth(exe, args, work, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        fail(case, "no answer in %d s: perfsleuth %s" % (timeout, " ".join(args)))
        return None


def peak(exe, args, work, case, timeout=30):
    """perfsleuth ARGS as (CompletedProcess, seconds, peak RSS in MiB), or None on a timeout."""
    with tempfile.TemporaryFile("w+") as err:
        started = time.monotonic()
        proc = subprocess.Popen([exe] + args, cwd=work, env=env_for(work),
                                stdout=subprocess.DEVNULL, stderr=err)
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > timeout:
                proc.kill()
                os.wait4(proc.pid, 0)
                proc.returncode = -signal.SIGKILL
                fail(case, "no answer in %d s: perfsleuth %s" % (timeout, " ".join(args)))
                return None
            time.sleep(0.01)
        took = time.monotonic() - started
        proc.returncode = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
        err.seek(0)
        out = subprocess.CompletedProcess(proc.args, proc.returncode, "", err.read())
    return out, took, usage.ru_maxrss / 1024


def refused(case, out, needle=None):
    """Exit 2 with an `error:` line (saying `needle`), no panic."""
    if out is None:
        return False
    ok = out.returncode == 2 and "error: " in out.stderr and "panicked" not in out.stderr
    if needle is not None and needle not in out.stderr:
        ok = False
    if not ok:
        fail(case, "expected exit 2%s, got exit %d: %s"
             % (" saying %r" % needle if needle else "", out.returncode, out.stderr.strip()[:500]))
    return ok


def kind(path):
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return "missing"
    for name, test in [("symlink", stat.S_ISLNK), ("file", stat.S_ISREG), ("fifo", stat.S_ISFIFO),
                       ("char device", stat.S_ISCHR), ("directory", stat.S_ISDIR)]:
        if test(mode):
            return name
    return "other"


def is_html(path):
    with open(path, "rb") as f:
        return b"<html" in f.read()


def report_into_fifo(exe, store, work, fifo, case):
    """`report -o FIFO` while this process reads the FIFO; the bytes read."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader from the start
    proc = subprocess.Popen([exe, "report", "latest", "--store", store, "-o", fifo], cwd=work,
                            env=env_for(work), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    got, deadline = b"", time.monotonic() + 30
    try:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except BlockingIOError:
                chunk = None
            if chunk:
                got += chunk
                continue
            # No data: a writer may still come (chunk None) or none is there (b"").
            if proc.poll() is not None and chunk == b"":
                break
            if time.monotonic() > deadline:
                proc.kill()
                fail(case, "report into a FIFO did not end in 30 s")
                break
            time.sleep(0.005)
    finally:
        os.close(fd)
        err = proc.communicate()[1].decode(errors="replace")
    if proc.returncode != 0:
        fail(case, "exit %d: %s" % (proc.returncode, err.strip()))
    return got


def blocked_on_fifo(pid, timeout=1.0):
    """Waits until process `pid` waits in open() for a FIFO's reader (or `timeout`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open("/proc/%d/wchan" % pid) as f:
                if f.read().strip() in ("wait_for_partner", "fifo_open"):
                    return
        except OSError:
            pass
        time.sleep(0.01)


def hostile(exe, work):
    """What a hostile user found (issue 37), each case replayed as it was
    found; the behaviour before each fix breaks its case here."""
    print("hostile inputs and outputs (issue 37)", flush=True)
    failed_before = len(FAILURES)
    t0 = time.monotonic()
    work = os.path.join(work, "hostile")
    os.makedirs(work)
    at = lambda name: os.path.join(work, name)
    db = at("r.db")
    store = "sqlite:" + db
    perfsleuth(exe, ["run", "--store", store, "--runs", "3", "--no-history", "true"], work,
               check=True)
    root = os.geteuid() == 0
    cases, skipped = [], []

    def report_to(path, case, **kw):
        return answered(exe, ["report", "latest", "--store", store, "-o", path], work, case, **kw)

    # report -o into a character device: written to, never renamed over.
    case = "report -o a device"
    made = root and all(subprocess.run(["mknod", at(n), "c", "1", m],
                                       stderr=subprocess.DEVNULL).returncode == 0
                        for n, m in [("null", "3"), ("full", "7")])
    if made:
        try:
            os.close(os.open(at("null"), os.O_WRONLY))
        except OSError:
            made = False  # a file system mounted nodev
    if made:
        cases.append(case)
        out = report_to(at("null"), case)
        if out is not None and out.returncode != 0:
            fail(case, "into a null device: exit %d: %s" % (out.returncode, out.stderr.strip()))
        out = report_to(at("full"), case)
        refused(case + " (full)", out, "No space left")
        for n in ["null", "full"]:
            if kind(at(n)) != "char device":
                fail(case, "%s is now a %s, not a character device" % (n, kind(at(n))))
    else:
        skipped.append("%s (needs root, mknod and a file system without nodev)" % case)
    # A FIFO with a reader gets the report and stays a FIFO; with none, an error at once.
    case = "report -o a FIFO"
    cases.append(case)
    fifo = at("pipe")
    os.mkfifo(fifo)
    if b"<html" not in report_into_fifo(exe, store, work, fifo, case):
        fail(case, "the reader got no report")
    out = report_to(fifo, case + " nobody reads", timeout=10)
    refused(case + " nobody reads", out, "nobody reads")
    if kind(fifo) != "fifo":
        fail(case, "the FIFO is now a " + kind(fifo))
    # A symbolic link stays a link; the file it names gets the report.
    case = "report -o a symlink"
    cases.append(case)
    with open(at("target.html"), "w") as f:
        f.write("old")
    os.symlink(at("target.html"), at("link.html"))
    report_to(at("link.html"), case)
    if kind(at("link.html")) != "symlink":
        fail(case, "the link is now a " + kind(at("link.html")))
    if not is_html(at("target.html")):
        fail(case, "the file the link names did not get the report")
    # A private file stays private (under a umask that would make a new file 0644).
    case = "report -o a 0600 file"
    cases.append(case)
    with open(at("private.html"), "w") as f:
        f.write("old")
    os.chmod(at("private.html"), 0o600)
    report_to(at("private.html"), case, preexec_fn=lambda: os.umask(0o022))
    mode = stat.S_IMODE(os.stat(at("private.html")).st_mode)
    if mode != 0o600 or not is_html(at("private.html")):
        fail(case, "mode %o, report written: %s" % (mode, is_html(at("private.html"))))
    # A file with a second hard link is rewritten in place: both names see it.
    case = "report -o a hard-linked file"
    cases.append(case)
    with open(at("linked.html"), "w") as f:
        f.write("old")
    os.link(at("linked.html"), at("other-name.html"))
    report_to(at("linked.html"), case)
    a, b = os.stat(at("linked.html")), os.stat(at("other-name.html"))
    if a.st_ino != b.st_ino or a.st_nlink != 2 or not is_html(at("other-name.html")):
        fail(case, "inodes %d/%d, nlink %d, the other name has the report: %s"
             % (a.st_ino, b.st_ino, a.st_nlink, is_html(at("other-name.html"))))
    # A link to nothing is refused and creates nothing.
    case = "report -o a dangling link"
    cases.append(case)
    os.symlink(at("nowhere/x.html"), at("dangling.html"))
    refused(case, report_to(at("dangling.html"), case), "link to nothing")
    if os.path.exists(at("nowhere")):
        fail(case, "created what the link names")
    left = [n for n in os.listdir(work) if n.endswith(".tmp")]
    if left:
        fail("report -o", "temporary files left: %r" % left)

    # Links planted at the old temporary name `.NAME.PID.tmp`, pointing at the store.
    case = "a link planted at the temporary name"
    cases.append(case)
    with open(db, "rb") as f:
        store_bytes = f.read()
    try:
        with open("/proc/sys/kernel/ns_last_pid") as f:
            last = int(f.read())
    except (OSError, ValueError):
        last = subprocess.Popen(["true"]).pid
    planted = [at(".planted.html.%d.tmp" % pid) for pid in range(last + 1, last + 400)]
    for link in planted:
        os.symlink(db, link)
    report_to(at("planted.html"), case)
    with open(db, "rb") as f:
        changed = f.read() != store_bytes
    if changed:
        fail(case, "the store file changed")
    try:
        if integrity(db) != "ok":
            fail(case, "integrity_check: " + integrity(db))
        if len(runs(exe, store, work)) != 1:
            fail(case, "the stored run is gone")
    except (sqlite3.DatabaseError, RuntimeError) as e:
        fail(case, "the store is no longer one: %s" % e)
    if changed:  # the cases below start from the store as it was
        with open(db, "wb") as f:
            f.write(store_bytes)
    if kind(at("planted.html")) != "file" or not is_html(at("planted.html")):
        fail(case, "planted.html is a %s" % kind(at("planted.html")))
    if any(kind(link) != "symlink" for link in planted):
        fail(case, "a planted link was replaced")
    for link in planted:
        if os.path.lexists(link):
            os.remove(link)

    # The -shm of another store held open (WAL mode) by this process.
    case = "outputs onto a live store's -shm"
    cases.append(case)
    walv = at("walv.db")
    perfsleuth(exe, ["run", "--store", "sqlite:" + walv, "--runs", "2", "--no-history", "true"],
               work, check=True)
    live = sqlite3.connect(walv)
    try:
        mode = live.execute("PRAGMA journal_mode").fetchone()[0]
        live.execute("SELECT count(*) FROM runs").fetchone()
        shm = walv + "-shm"
        if mode != "wal" or not os.path.exists(shm):
            fail(case, "the live store has no shared memory (journal mode %s)" % mode)
        else:
            with open(shm, "rb") as f:
                shm_bytes = f.read()
            refused(case + " (report -o)", report_to(shm, case), "shared-memory index")
            refused(case + " (--export-csv)",
                    answered(exe, ["run", "--store", store, "--runs", "2", "--no-history",
                                   "--export-csv", shm, "true"], work, case),
                    "shared-memory index")
            with open(shm, "rb") as f:
                if f.read() != shm_bytes or kind(shm) != "file":
                    fail(case, "the -shm was changed")
            perfsleuth(exe, ["run", "--store", "sqlite:" + walv, "--runs", "2", "--no-history",
                             "true"], work, check=True)
            if live.execute("SELECT count(*) FROM runs").fetchone()[0] != 2:
                fail(case, "the live connection does not see both runs")
    finally:
        live.close()
    state = check_store(case, exe, walv, work, {})
    if sorted(state.values()) != [("complete", 2), ("complete", 2)]:
        fail(case, "runs after the live connection closed: %r" % state)

    # Two outputs that are one file, whatever their spelling: refused, nothing written.
    case = "two outputs that are one file"
    cases.append(case)
    other = at("same.db")
    refused(case, answered(exe, ["run", "--store", "sqlite:" + other, "--runs", "2",
                                 "--export-json", "same.out", "--export-csv", "./same.out",
                                 "true"], work, case), "both write to")
    os.mkdir(at("d"))
    with open(at("exists.out"), "w"):
        pass
    refused(case, answered(exe, ["run", "--store", "sqlite:" + other, "--runs", "2",
                                 "--export-json", "exists.out", "--export-markdown",
                                 "d/../exists.out", "true"], work, case))
    if os.path.exists(at("same.out")) or os.path.getsize(at("exists.out")) or os.path.exists(other):
        fail(case, "something was written")

    # An export that cannot be written (file size limit) leaves no partial file.
    case = "a failed export"
    cases.append(case)

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE,
                           (1024, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    with open(at("old.json"), "w") as f:
        f.write("old")
    for name in ["new.json", "old.json"]:
        out = answered(exe, ["run", "--no-store", "--runs", "3", "--export-json", name, "true"],
                       work, case, preexec_fn=small_files)
        refused(case + " (%s)" % name, out, "File too large")
    if os.path.exists(at("new.json")):
        fail(case, "new.json was created (%d bytes)" % os.path.getsize(at("new.json")))
    with open(at("old.json")) as f:
        if f.read() != "old":
            fail(case, "old.json was changed")
    left = [n for n in os.listdir(work) if n.endswith(".tmp")]
    if left:
        fail(case, "temporary files left: %r" % left)

    # Combinations counted before they are built: 10^8 refused at once, in little memory.
    case = "-P a 1 10000 -P b 1 10000"
    cases.append(case)
    measured = peak(exe, ["run", "--store", "sqlite:" + at("scan.db"), "--runs", "2",
                          "-P", "a", "1", "10000", "-P", "b", "1", "10000", "echo {a} {b}"],
                    work, case, timeout=10)
    out, took, peak_mib = measured if measured else (None, 0, 0)
    refused(case, out, "would make 100000000 benchmarks")
    if took > 5:
        fail(case, "refused after %.1f s" % took)
    if peak_mib > 256:
        fail(case, "peak RSS %.0f MiB" % peak_mib)
    if os.path.exists(at("scan.db")):
        fail(case, "a refused scan created the store")

    # Descriptors held do not grow with the number of commands (five a command,
    # then two, before: "Too many open files" here).
    case = "-P n 1 300 under ulimit -n 256"
    cases.append(case)
    many = at("many.db")

    def nofile():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    out = answered(exe, ["run", "--store", "sqlite:" + many, "--runs", "1", "--warmup", "0",
                         "--no-history", "-P", "n", "1", "300", "true {n}"], work, case,
                   preexec_fn=nofile)
    if out is not None and out.returncode != 0:
        fail(case, "exit %d: %s" % (out.returncode, out.stderr.strip()))
    elif out is not None:
        listed = perfsleuth(exe, ["runs", "--json", "--store", "sqlite:" + many], work)
        benches = [len(r["benchmarks"]) for r in json.loads(listed.stdout)["runs"]]
        if benches != [300]:
            fail(case, "benchmarks stored: %r" % benches)

    # probe diff reads FIFOs and pipes, and names devices and directories.
    case = "probe diff"
    cases.append(case)
    doc = perfsleuth(exe, ["probe", "--quick", "--json", "--no-store", "calls"], work, check=True)
    with open(at("a.json"), "w") as f:
        f.write(doc.stdout)
    r, w = os.pipe()  # `<(cat a.json)`

    def feed():
        with os.fdopen(w, "w") as f:
            f.write(doc.stdout)

    feeder = threading.Thread(target=feed)
    feeder.start()
    out = answered(exe, ["probe", "diff", "/dev/fd/%d" % r, at("a.json")], work, case,
                   pass_fds=(r,))
    os.close(r)
    feeder.join()
    if out is not None and out.returncode != 0:
        fail(case + " of a pipe", "exit %d: %s" % (out.returncode, out.stderr.strip()))
    os.mkfifo(at("side.json"))
    writer = subprocess.Popen(["sh", "-c", 'exec cat "$1" > "$2"', "sh", at("a.json"),
                               at("side.json")])
    blocked_on_fifo(writer.pid)
    out = answered(exe, ["probe", "diff", at("side.json"), at("a.json")], work, case)
    try:
        writer.wait(timeout=10)
    except subprocess.TimeoutExpired:
        writer.kill()
        writer.wait()
    if out is not None and out.returncode != 0:
        fail(case + " of a FIFO", "exit %d: %s" % (out.returncode, out.stderr.strip()))
    perfsleuth(exe, ["run", "--no-store", "--runs", "2", "--export-json", "run.json", "true"],
               work, check=True)
    for side, says in [("/dev/zero", "device"), (work + "/", "directory"),
                       (at("run.json"), "no probe results")]:
        out = answered(exe, ["probe", "diff", side, at("a.json")], work, case, timeout=10)
        if refused("%s of %s" % (case, side), out, says) and "no such file" in out.stderr:
            fail("%s of %s" % (case, side), out.stderr.strip())

    # A store on a read-only file system is read; writing it fails in one line.
    case = "a store on a read-only file system"
    have_unshare = subprocess.run(["which", "unshare"], stdout=subprocess.DEVNULL).returncode == 0
    if root and have_unshare:
        ro = at("ro")
        os.mkdir(ro)
        ro_store = "sqlite:" + os.path.join(ro, "r.db")
        for _ in range(2):
            perfsleuth(exe, ["run", "--store", ro_store, "--runs", "2", "--no-history", "true"],
                       work, check=True)
        script = ('mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" || exit 77; '
                  'for c in "runs" "show latest" "compare latest~1 latest" "history"; do '
                  '"$2" $c --store "$3" >/dev/null 2>>"$4"; echo "$c: $?"; done; '
                  '"$2" report latest --store "$3" -o "$5" 2>>"$4"; echo "report: $?"; '
                  '"$2" run --runs 2 --no-history --store "$3" true 2>"$6"; echo "run: $?"')
        out = subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", ro, exe, ro_store,
                              at("ro-read.err"), at("ro.html"), at("ro-write.err")],
                             cwd=work, env=env_for(work), text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, timeout=60)
        if out.returncode == 77 or "unshare failed" in out.stdout:
            skipped.append("%s (no private read-only mount: %s)" % (case, out.stdout.strip()))
        else:
            cases.append(case)
            with open(at("ro-read.err")) as f:
                read_err = f.read()
            with open(at("ro-write.err")) as f:
                write_err = f.read()
            codes = dict(l.rsplit(": ", 1) for l in out.stdout.splitlines() if ": " in l)
            for c in ["runs", "show latest", "compare latest~1 latest", "history", "report"]:
                if codes.get(c) != "0":
                    fail(case, "%s: exit %s: %s" % (c, codes.get(c), read_err.strip()))
            if not os.path.exists(at("ro.html")) or not is_html(at("ro.html")):
                fail(case, "no report")
            if codes.get("run") != "2" or write_err.count("error:") != 1:
                fail(case, "run: exit %s, expected 2 with one error line: %s"
                     % (codes.get("run"), write_err.strip()))
            if integrity(os.path.join(ro, "r.db")) != "ok":
                fail(case, "integrity_check failed")
    else:
        skipped.append("%s (needs root and unshare)" % case)

    # A store in memory keeps nothing: refused.
    case = "a store in memory"
    cases.append(case)
    for name in ["sqlite::memory:", ":memory:"]:
        out = answered(exe, ["run", "--runs", "2", "--store", name, "true"], work, case)
        said = refused("%s (%s)" % (case, name), out, "keeps nothing")
        if said and "Stored as run" in out.stderr:
            fail(case, out.stderr.strip())
    if os.path.exists(at(":memory:")):
        fail(case, "a file named :memory: was created")

    # An error line from a 3 MB CSV cell is bounded.
    case = "a 3 MB CSV cell"
    cases.append(case)
    with open(at("big.csv"), "w") as f:
        f.write("N,X\n1,10\n2," + "x" * 3000000 + "\n4,35\n8,60\n")
    out = answered(exe, ["scale", "fit", "big.csv"], work, case)
    if refused(case, out) and len(out.stderr.encode()) > 2048:
        fail(case, "%d bytes of error output" % len(out.stderr.encode()))

    # A day that does not exist in its month is refused.
    case = "runs --since 2026-02-30"
    cases.append(case)
    refused(case, answered(exe, ["runs", "--store", store, "--since", "2026-02-30"], work, case),
            "2026-02-30")

    for note in skipped:
        print("  skipped: " + note, flush=True)
    print("  %d hostile cases in %.1f s (%d skipped): every output and input kept its promise: %s"
          % (len(cases), time.monotonic() - t0, len(skipped),
             "yes" if len(FAILURES) == failed_before else "NO"), flush=True)
    return len(cases)


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
        hostile(exe, work)
    finally:
        subprocess.run(["rm", "-rf", work])
    print("fault injection: %d broken promises in %.0f s (seed %d)"
          % (len(FAILURES), time.monotonic() - start, a.seed), flush=True)
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
