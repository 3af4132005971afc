//! A small helper process that spawns and reaps the benchmarked commands.
//!
//! Why: Linux's `exec` folds the *old* address space's RSS high-water mark
//! into the new program's `ru_maxrss`. With `posix_spawn` (vfork) the old
//! address space is the parent's, so every child would report at least the
//! peak RSS perfsleuth itself ever had (its SQLite cache, bootstrap buffers).
//! The spawner is forked at start-up, while perfsleuth is still tiny, and
//! never grows, so children report their own peak (within the spawner's
//! ~1 MiB floor). Timing is taken inside the spawner, around spawn→`wait4`,
//! so the pipe round trip is not part of any sample.

use crate::counters::{CounterConfig, CounterSelection, CounterStatus};
use crate::exec::{
    IoConfig, Outcome, OutputTarget, Tolerate, named_temp_file, resolve_program, tail_of,
};
use crate::{MeasureError, interrupted};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

mod server;
mod wire;
use server::*;
use wire::*;

/// Handle to a prepared command inside the spawner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CommandId(u32);

impl CommandId {
    /// A handle with this index, for executors other than the spawner (such
    /// as the runner's test fakes), which number their commands themselves.
    pub const fn from_index(index: u32) -> CommandId {
        CommandId(index)
    }

    /// The handle's index.
    pub const fn index(self) -> u32 {
        self.0
    }
}

/// The parent's end of the spawner process.
#[derive(Debug)]
pub struct Spawner {
    pid: libc::pid_t,
    requests: Option<File>,
    replies: File,
    next_id: u32,
    /// The one file every command's kept stderr goes to (the spawner holds
    /// its own descriptor of it), so descriptors stay constant however many
    /// commands are prepared.
    capture: Option<File>,
    /// The command whose run last kept its stderr there.
    captured_by: Option<CommandId>,
    forwarded_interrupt: bool,
    skipped: bool,
    /// Reply bytes read but not yet taken as frames.
    rx: Vec<u8>,
}

const REQ_SETUP: u8 = 1;
const REQ_RUN: u8 = 2;
const REQ_COUNTERS: u8 = 3;
/// Runs queued from now on execute again after a failure halted them.
const REQ_RESUME: u8 = 4;
/// Run flag: keep the run's stderr.
const RUN_CAPTURE: u8 = 1;
/// Run flag: run even after a failure halted the queue (diagnosis).
const RUN_FORCE: u8 = 2;
const REP_ERR: u8 = 0;
const REP_OK: u8 = 1;

impl Spawner {
    /// Forks the spawner. Call it early, before the process has allocated
    /// much: the spawner's memory is the floor of every reported peak RSS.
    pub fn start() -> std::io::Result<Spawner> {
        let (req_read, req_write) = pipe()?;
        let (rep_read, rep_write) = pipe()?;
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: fork in a process that is single-threaded at this point (the
        // caller's contract, documented above); the child only runs our loop
        // and leaves with _exit.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if pid == 0 {
            drop(req_write);
            drop(rep_read);
            // Descriptors inherited from the parent (another spawner's pipe
            // ends, the store) would keep those open as long as this process
            // lives: a second spawner would then never see end-of-file.
            close_inherited(&[req_read.as_raw_fd(), rep_write.as_raw_fd()]);
            // A process group of its own: `kill -9 -PGID` of perfsleuth's
            // group (a CI runner cancelling a job) then leaves the spawner
            // alive just long enough to kill the running command's group
            // on its parent-death signal. Ctrl-C, which reaches only the
            // foreground group now, is passed on by perfsleuth
            // (`forward_interrupt`).
            // SAFETY: setpgid on ourselves has no memory-safety preconditions.
            unsafe { libc::setpgid(0, 0) };
            // Signals sent to it directly are handled like Ctrl-C: stop the
            // child and report.
            if crate::install_interrupt_handler().is_err() {
                // SAFETY: leave without running the parent's exit handlers.
                unsafe { libc::_exit(1) };
            }
            // When perfsleuth dies, even by SIGKILL, the kernel sends the
            // spawner SIGTERM: handled like Ctrl-C, it kills the running
            // command's process group (which lives in a group of its own, so
            // nothing else would) instead of leaving it orphaned. The
            // handler is installed first, so the signal is never fatal.
            // SAFETY: prctl with constant arguments.
            unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) };
            // perfsleuth may have died before the prctl took effect.
            // SAFETY: getppid has no preconditions.
            if unsafe { libc::getppid() } != parent {
                // SAFETY: leave without running the parent's exit handlers.
                unsafe { libc::_exit(1) };
            }
            let code = serve(File::from(req_read), File::from(rep_write));
            // SAFETY: leave without running the parent's exit handlers.
            unsafe { libc::_exit(code) };
        }
        drop(req_read);
        drop(rep_write);
        // Replies are read without blocking (see `try_finish`); `receive` polls.
        // SAFETY: fcntl on a descriptor we own.
        unsafe {
            let flags = libc::fcntl(rep_read.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(
                rep_read.as_raw_fd(),
                libc::F_SETFL,
                flags | libc::O_NONBLOCK,
            );
        }
        Ok(Spawner {
            pid,
            requests: Some(File::from(req_write)),
            replies: File::from(rep_read),
            next_id: 0,
            capture: None,
            captured_by: None,
            forwarded_interrupt: false,
            skipped: false,
            rx: Vec::new(),
        })
    }

    /// The spawner's process id: the benchmarked commands are its children
    /// (lock tracing follows them from it).
    pub fn pid(&self) -> u32 {
        self.pid as u32
    }

    /// The spawner's own peak RSS so far: children report at least this much,
    /// because `exec` folds it into their `ru_maxrss` (see the module docs).
    /// `None` if `/proc` cannot tell.
    pub fn peak_rss_floor(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid)).ok()?;
        let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kib * 1024)
    }

    /// Checks and prepares a command in the spawner; errors (missing program,
    /// unopenable files) come back before anything is timed.
    pub fn prepare(&mut self, argv: &[String], io: &IoConfig) -> Result<CommandId, MeasureError> {
        let program = argv
            .first()
            .ok_or_else(|| MeasureError::NotFound(String::new()))?;
        resolve_program(program, std::env::var_os("PATH").as_deref())?;
        let id = CommandId(self.next_id);
        self.next_id += 1;
        // Made with the first command that keeps stderr, then named to the
        // spawner by "the shared one" (it has been unlinked by then).
        let capture = match (&io.output, &self.capture) {
            (OutputTarget::Inherit, _) => Capture::None,
            (_, Some(_)) => Capture::Shared,
            (_, None) => Capture::New(named_temp_file()?),
        };
        let mut msg = Vec::new();
        msg.push(REQ_SETUP);
        put_u32(&mut msg, id.0);
        put_u64(
            &mut msg,
            io.timeout.map_or(0, |t| t.as_nanos().max(1) as u64),
        );
        match &io.output {
            OutputTarget::Null => msg.push(0),
            OutputTarget::Inherit => msg.push(1),
            OutputTarget::File(p) => {
                msg.push(2);
                put_path(&mut msg, p);
            }
            OutputTarget::Pipe => msg.push(3),
        }
        put_opt_path(&mut msg, io.input.as_deref());
        match &capture {
            Capture::None => msg.push(0),
            Capture::New((_, path)) => {
                msg.push(1);
                put_path(&mut msg, path);
            }
            Capture::Shared => msg.push(2),
        }
        match &io.tolerate {
            Tolerate::Nothing => msg.push(0),
            Tolerate::Everything => msg.push(1),
            Tolerate::ExitCodes(codes) => {
                msg.push(2);
                put_u32(&mut msg, codes.len() as u32);
                for c in codes {
                    msg.extend_from_slice(&c.to_le_bytes());
                }
            }
        }
        msg.push(io.disable_aslr as u8);
        put_opt_path(&mut msg, io.cwd.as_deref());
        match &io.settings.cpus {
            Some(cpus) => {
                msg.push(1);
                put_u32(&mut msg, cpus.len() as u32);
                for c in cpus {
                    put_u32(&mut msg, *c as u32);
                }
            }
            None => msg.push(0),
        }
        msg.push(io.settings.thp_disable as u8);
        match io.settings.numa_node {
            Some(n) => {
                msg.push(1);
                put_u32(&mut msg, n as u32);
            }
            None => msg.push(0),
        }
        match io.settings.nice {
            Some(n) => {
                msg.push(1);
                msg.extend_from_slice(&n.to_le_bytes());
            }
            None => msg.push(0),
        }
        msg.push(match io.settings.policy {
            None => 0,
            Some(crate::Policy::Other) => 1,
            Some(crate::Policy::Batch) => 2,
            Some(crate::Policy::Idle) => 3,
        });
        put_u32(&mut msg, io.env.len() as u32);
        for (key, value) in &io.env {
            put_bytes(&mut msg, key.as_bytes());
            match value {
                Some(v) => {
                    msg.push(1);
                    put_bytes(&mut msg, v.as_bytes());
                }
                None => msg.push(0),
            }
        }
        put_u32(&mut msg, argv.len() as u32);
        for a in argv {
            put_bytes(&mut msg, a.as_bytes());
        }
        let reply = self.round_trip(&msg);
        // The spawner has opened the capture file by now (or failed): unlink it
        // either way so nothing is left behind.
        if let Capture::New((file, path)) = capture {
            let _ = std::fs::remove_file(&path);
            // Kept only once the spawner holds it too; after a failed setup
            // the next command starts a new one.
            if reply.as_deref().is_ok_and(|r| decode_error(r).is_ok()) {
                self.capture = Some(file);
            }
        }
        let reply = reply?;
        decode_error(&reply)?;
        Ok(id)
    }

    /// Opens performance counters in the spawner (on itself, inherited by
    /// every command it spawns from then on; see [`crate::counters`]), so
    /// that each outcome's sample carries the iteration's counts. Call it
    /// before the first run; a second call replaces the counters. Counters
    /// the kernel refuses are listed in the status, never an error.
    pub fn enable_counters(&mut self, cfg: &CounterConfig) -> Result<CounterStatus, MeasureError> {
        let mut msg = vec![REQ_COUNTERS];
        msg.push(match cfg.selection {
            CounterSelection::None => 0,
            CounterSelection::Software => 1,
            CounterSelection::All => 2,
        });
        msg.push(cfg.include_kernel as u8);
        msg.push(cfg.tracepoints as u8);
        put_opt_path(&mut msg, cfg.tracefs.as_deref());
        let reply = self.round_trip(&msg)?;
        decode_error(&reply)?;
        decode_status(&reply[1..]).ok_or_else(|| protocol_error("malformed counters reply"))
    }

    /// Runs a prepared command once, untimed-style: its stderr is kept for
    /// [`Spawner::stderr_tail`].
    pub fn run_once(&mut self, id: CommandId, iteration: u32) -> Result<Outcome, MeasureError> {
        self.begin(id, iteration, true)?;
        self.finish()
    }

    /// Runs a command once (stderr kept) even after a failure stopped the
    /// spawner from running queued requests: to collect a failing command's
    /// stderr, or to run `--cleanup` after a failed run.
    pub fn run_anyway(&mut self, id: CommandId) -> Result<Outcome, MeasureError> {
        self.send_run(id, 0, RUN_CAPTURE | RUN_FORCE)?;
        self.finish()
    }

    /// After a failure halted the queue and its replies were collected:
    /// runs requested from now on execute again (the schedule goes on with
    /// the other benchmarks).
    pub fn resume(&mut self) -> Result<(), MeasureError> {
        let reply = self.round_trip(&[REQ_RESUME])?;
        decode_error(&reply)
    }

    /// Starts one iteration and returns at once, so the caller can do its own
    /// bookkeeping (storing the previous sample) while the command runs;
    /// [`Spawner::finish`] collects the result.
    /// `capture_stderr`: keep stderr for [`Spawner::stderr_tail`]; timed runs
    /// pass false (see [`Executor::run`]).
    pub fn begin(
        &mut self,
        id: CommandId,
        iteration: u32,
        capture_stderr: bool,
    ) -> Result<(), MeasureError> {
        if interrupted() {
            self.skipped = true;
            return Ok(());
        }
        self.send_run(id, iteration, if capture_stderr { RUN_CAPTURE } else { 0 })
    }

    fn send_run(&mut self, id: CommandId, iteration: u32, flags: u8) -> Result<(), MeasureError> {
        let mut msg = [0u8; 10];
        msg[0] = REQ_RUN;
        msg[1..5].copy_from_slice(&id.0.to_le_bytes());
        msg[5..9].copy_from_slice(&iteration.to_le_bytes());
        msg[9] = flags;
        if flags & RUN_CAPTURE != 0 {
            self.captured_by = Some(id);
        }
        self.send(&msg)
    }

    /// Waits for the oldest iteration begun and not yet finished.
    pub fn finish(&mut self) -> Result<Outcome, MeasureError> {
        if std::mem::take(&mut self.skipped) {
            return Ok(Outcome::Interrupted);
        }
        let reply = match self.receive() {
            Err(MeasureError::Interrupted) => return Ok(Outcome::Interrupted),
            other => other?,
        };
        decode_run_reply(&reply)
    }

    /// Like [`Spawner::finish`], but returns `None` at once when the result is
    /// not there yet. A caller that sleeps instead of blocking here is not
    /// woken by every reply, which keeps the spawner's loop at the floor cost.
    pub fn try_finish(&mut self) -> Result<Option<Outcome>, MeasureError> {
        if std::mem::take(&mut self.skipped) {
            return Ok(Some(Outcome::Interrupted));
        }
        self.forward_interrupt();
        match self.try_frame()? {
            Some(reply) => decode_run_reply(&reply).map(Some),
            None => Ok(None),
        }
    }

    /// The last `lines` non-empty lines of stderr from the command's latest iteration.
    pub fn stderr_tail(&mut self, id: CommandId, lines: usize) -> String {
        match &self.capture {
            Some(f) if self.captured_by == Some(id) => tail_of(f, lines),
            _ => String::new(),
        }
    }

    fn round_trip(&mut self, msg: &[u8]) -> Result<Vec<u8>, MeasureError> {
        self.send(msg)?;
        self.receive()
    }

    fn send(&mut self, msg: &[u8]) -> Result<(), MeasureError> {
        let mut framed = Vec::with_capacity(msg.len() + 4);
        put_u32(&mut framed, msg.len() as u32);
        framed.extend_from_slice(msg);
        let requests = self
            .requests
            .as_mut()
            .ok_or_else(|| protocol_error("the spawner was shut down"))?;
        requests
            .write_all(&framed)
            .map_err(|e| protocol_error(&e.to_string()))
    }

    /// Blocks until a whole reply frame has arrived.
    fn receive(&mut self) -> Result<Vec<u8>, MeasureError> {
        // After Ctrl-C/SIGTERM a reply may never come (the spawner was idle);
        // wait a bounded time for one, then give up on it.
        const AFTER_INTERRUPT: std::time::Duration = std::time::Duration::from_secs(2);
        let mut interrupted_at = None;
        loop {
            if let Some(frame) = self.try_frame()? {
                return Ok(frame);
            }
            if interrupted() {
                interrupted_at.get_or_insert_with(std::time::Instant::now);
            }
            let timeout_ms = match interrupted_at {
                Some(t) => AFTER_INTERRUPT.saturating_sub(t.elapsed()).as_millis() as libc::c_int,
                None => -1,
            };
            if timeout_ms == 0 {
                return Err(MeasureError::Interrupted);
            }
            let mut pfd = libc::pollfd {
                fd: self.replies.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd; EINTR is handled below.
            if unsafe { libc::poll(&mut pfd, 1, timeout_ms) } < 0 {
                let err = std::io::Error::last_os_error();
                if err.kind() != std::io::ErrorKind::Interrupted {
                    return Err(protocol_error(&err.to_string()));
                }
                self.forward_interrupt();
            }
        }
    }

    /// Takes a whole frame from what has arrived, reading what the
    /// (non-blocking) pipe holds first; `None` if no whole frame is there.
    fn try_frame(&mut self) -> Result<Option<Vec<u8>>, MeasureError> {
        loop {
            if self.rx.len() >= 4 {
                let len =
                    u32::from_le_bytes([self.rx[0], self.rx[1], self.rx[2], self.rx[3]]) as usize;
                if self.rx.len() >= 4 + len {
                    let frame = self.rx[4..4 + len].to_vec();
                    self.rx.drain(..4 + len);
                    return Ok(Some(frame));
                }
            }
            let mut chunk = [0u8; 4096];
            match self.replies.read(&mut chunk) {
                Ok(0) => return Err(protocol_error("the spawner process exited")),
                Ok(n) => self.rx.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => self.forward_interrupt(),
                Err(e) => return Err(protocol_error(&e.to_string())),
            }
        }
    }

    /// A signal that reached only perfsleuth (SIGTERM from `kill`) is passed
    /// on, so the spawner stops the child too.
    fn forward_interrupt(&mut self) {
        if interrupted() && !self.forwarded_interrupt {
            self.forwarded_interrupt = true;
            // SAFETY: signalling our own child process.
            unsafe { libc::kill(self.pid, libc::SIGTERM) };
        }
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        // Closing the request pipe ends the spawner's loop; then reap it.
        drop(self.requests.take());
        let mut status = 0;
        // SAFETY: reaping our own child.
        unsafe { libc::waitpid(self.pid, &mut status, 0) };
    }
}

/// Closes every descriptor above stderr except `keep`.
fn close_inherited(keep: &[libc::c_int]) {
    let mut keep = keep.to_vec();
    keep.sort_unstable();
    let mut low: libc::c_uint = 3;
    for fd in keep.into_iter().chain(std::iter::once(-1)) {
        let high = if fd < 0 {
            libc::c_uint::MAX
        } else {
            (fd as libc::c_uint).saturating_sub(1)
        };
        if fd >= 0 && (fd as libc::c_uint) < low {
            continue;
        }
        if high >= low {
            // SAFETY: close_range only closes descriptors; none in the range is used.
            let rc = unsafe { libc::syscall(libc::SYS_close_range, low, high, 0) };
            if rc != 0 {
                // Kernels before 5.9: close one by one up to the limit.
                // SAFETY: sysconf has no preconditions.
                let max =
                    unsafe { libc::sysconf(libc::_SC_OPEN_MAX) }.clamp(256, 65_536) as libc::c_uint;
                for one in low..=high.min(max) {
                    // SAFETY: closing a descriptor number; EBADF is harmless.
                    unsafe { libc::close(one as libc::c_int) };
                }
            }
        }
        if fd >= 0 {
            low = fd as libc::c_uint + 1;
        }
    }
}

fn protocol_error(detail: &str) -> MeasureError {
    MeasureError::Spawn {
        program: "perfsleuth spawner".into(),
        source: std::io::Error::other(detail.to_string()),
    }
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is a valid 2-element array; O_CLOEXEC keeps the pipes out of
    // the benchmarked children.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfsleuth_model::Sample;
    use std::path::PathBuf;
    use std::time::Duration;

    fn argv(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    const NULL_IO: IoConfig = IoConfig {
        output: OutputTarget::Null,
        input: None,
        timeout: None,
        tolerate: Tolerate::Nothing,
        disable_aslr: false,
        cwd: None,
        env: Vec::new(),
        settings: crate::ChildSettings {
            cpus: None,
            thp_disable: false,
            nice: None,
            policy: None,
            numa_node: None,
        },
    };

    #[test]
    fn environment_changes_reach_only_that_child() {
        let dir = std::env::temp_dir().join(format!("perfsleuth-envvar-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("env.txt");
        std::fs::write(&out, "").unwrap();
        // A variable this process has, to be removed for one child only.
        let Some(gone) = std::env::vars()
            .map(|(k, _)| k)
            .find(|k| k != "PATH" && k.bytes().all(|b| b.is_ascii_uppercase() || b == b'_'))
        else {
            return;
        };
        let mut sp = Spawner::start().unwrap();
        let script = format!("printf '%s|%s\\n' \"$PERFSLEUTH_TEST_SET\" \"${{{gone}+set}}\"");
        let io = IoConfig {
            output: OutputTarget::File(out.clone()),
            env: vec![
                ("PERFSLEUTH_TEST_SET".into(), Some("a=b:c".into())),
                (gone.clone(), None),
            ],
            ..NULL_IO
        };
        let with = sp.prepare(&argv(&["sh", "-c", &script]), &io).unwrap();
        let plain = IoConfig {
            output: OutputTarget::File(out.clone()),
            ..NULL_IO
        };
        let without = sp.prepare(&argv(&["sh", "-c", &script]), &plain).unwrap();
        for id in [with, without] {
            sp.begin(id, 0, true).unwrap();
            assert!(matches!(sp.finish().unwrap(), Outcome::Completed(s) if s.succeeded()));
        }
        assert_eq!(std::fs::read_to_string(&out).unwrap(), "a=b:c|\n|set\n");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn settings_errors_cross_the_pipe_as_themselves() {
        // Not as a protocol error, whose hint blames perfsleuth.
        for e in [
            MeasureError::Setting("sched_setaffinity to CPUs [1]: Invalid argument".into()),
            MeasureError::NotApplied("CPUs [0] asked, the child may run on Some([0, 1])".into()),
        ] {
            let back = decode_error(&encode_error(&e)).unwrap_err();
            assert_eq!(back.to_string(), e.to_string());
            assert!(
                matches!(
                    (&e, &back),
                    (MeasureError::Setting(_), MeasureError::Setting(_))
                        | (MeasureError::NotApplied(_), MeasureError::NotApplied(_))
                ),
                "{back:?}"
            );
        }
    }

    #[test]
    fn descriptors_do_not_grow_with_the_number_of_commands() {
        // Issue 37: `-P n 1 300` under `ulimit -n 1024` failed with EMFILE,
        // each command holding its own stderr capture (and a copy for the
        // child) in both processes.
        let held = |sp: &Spawner| {
            std::fs::read_dir(format!("/proc/{}/fd", sp.pid()))
                .unwrap()
                .count()
        };
        let mut sp = Spawner::start().unwrap();
        let quiet = sp.prepare(&argv(&["true"]), &NULL_IO).unwrap();
        assert!(matches!(
            sp.run_once(quiet, 0).unwrap(),
            Outcome::Completed(_)
        ));
        let before = held(&sp);
        let io = IoConfig {
            tolerate: Tolerate::Everything,
            ..NULL_IO
        };
        let mut ids = Vec::new();
        for i in 0..200 {
            let script = format!("echo from-{i} >&2; exit 3");
            let id = sp.prepare(&argv(&["sh", "-c", &script]), &io).unwrap();
            ids.push(id);
        }
        for (i, id) in ids.iter().enumerate().step_by(40) {
            assert!(matches!(
                sp.run_once(*id, 0).unwrap(),
                Outcome::Completed(_)
            ));
            // Each command's tail is its own, whoever wrote the shared file before.
            assert_eq!(sp.stderr_tail(*id, 5), format!("from-{i}"));
        }
        sp.begin(ids[1], 1, false).unwrap();
        assert!(matches!(sp.finish().unwrap(), Outcome::Completed(_)));
        assert_eq!(held(&sp), before, "the spawner's descriptors grew");
        assert!(sp.capture.is_some());
        // A tail is never another command's: ids[0] ran before ids[40] did.
        assert_eq!(sp.stderr_tail(ids[0], 5), "");
    }

    #[test]
    fn spawner_measures_and_reports_like_a_local_executor() {
        let mut sp = Spawner::start().unwrap();
        let id = sp
            .prepare(
                &argv(&["sh", "-c", "echo oops >&2; exit 4"]),
                &IoConfig {
                    tolerate: Tolerate::Everything,
                    ..NULL_IO
                },
            )
            .unwrap();
        let Outcome::Completed(s) = sp.run_once(id, 7).unwrap() else {
            panic!()
        };
        assert_eq!((s.iteration, s.exit_code, s.signal), (7, Some(4), None));
        assert!(s.wall_ns > 0 && s.peak_rss_bytes > 0);
        assert_eq!(sp.stderr_tail(id, 3), "oops");
        let t = sp
            .prepare(
                &argv(&["sleep", "5"]),
                &IoConfig {
                    timeout: Some(Duration::from_millis(100)),
                    ..NULL_IO
                },
            )
            .unwrap();
        assert!(matches!(sp.run_once(t, 0).unwrap(), Outcome::TimedOut(_)));
    }

    #[test]
    fn children_do_not_inherit_the_parents_peak_rss() {
        // Start the spawner while small, then grow this process: a child spawned
        // directly from here would report at least this process's peak.
        let mut sp = Spawner::start().unwrap();
        let mut big = vec![1u8; 300 * 1024 * 1024];
        big[12345] = 2;
        std::hint::black_box(&big);
        let id = sp.prepare(&argv(&["true"]), &NULL_IO).unwrap();
        let Outcome::Completed(s) = sp.run_once(id, 0).unwrap() else {
            panic!()
        };
        assert!(
            s.peak_rss_bytes < 64 * 1024 * 1024,
            "peak {} bytes",
            s.peak_rss_bytes
        );
        // The spawner's own high-water mark is the floor, and it stayed small.
        let floor = sp.peak_rss_floor().unwrap();
        assert!(floor > 0 && floor < 64 * 1024 * 1024, "floor {floor}");
        drop(big);
    }

    #[test]
    fn peak_rss_is_per_child_not_a_running_maximum() {
        // A big child first, then a small one: getrusage(RUSAGE_CHILDREN) would
        // report the big one's maximum for both; wait4 per child must not.
        let mut sp = Spawner::start().unwrap();
        let grow = "x = bytearray(200 * 1024 * 1024); x[::4096] = b'1' * len(x[::4096])";
        let big = sp
            .prepare(&argv(&["python3", "-c", grow]), &NULL_IO)
            .unwrap();
        let small = sp.prepare(&argv(&["true"]), &NULL_IO).unwrap();
        let Outcome::Completed(b) = sp.run_once(big, 0).unwrap() else {
            panic!()
        };
        let Outcome::Completed(s) = sp.run_once(small, 0).unwrap() else {
            panic!()
        };
        assert!(
            b.peak_rss_bytes > 150 * 1024 * 1024,
            "big child {}",
            b.peak_rss_bytes
        );
        // Before its exec a child shares the spawner's pages, which count in
        // its maximum: measured against the spawner's own high-water mark,
        // which is as large as this test binary was when it forked.
        let floor = sp.peak_rss_floor().unwrap_or(0);
        assert!(
            s.peak_rss_bytes < floor + 32 * 1024 * 1024,
            "small child {} (spawner floor {floor})",
            s.peak_rss_bytes
        );
    }

    #[test]
    fn timed_runs_discard_stderr_and_a_diagnosis_rerun_collects_it() {
        let mut sp = Spawner::start().unwrap();
        let id = sp
            .prepare(&argv(&["sh", "-c", "echo boom >&2; exit 5"]), &NULL_IO)
            .unwrap();
        let ok = sp.prepare(&argv(&["true"]), &NULL_IO).unwrap();
        sp.begin(id, 0, false).unwrap();
        sp.begin(ok, 0, false).unwrap();
        assert!(matches!(sp.finish().unwrap(), Outcome::Completed(s) if s.exit_code == Some(5)));
        assert_eq!(sp.finish().unwrap(), Outcome::Skipped);
        assert_eq!(
            sp.stderr_tail(id, 5),
            "",
            "a timed run's stderr went to /dev/null"
        );
        let again = sp.run_anyway(id).unwrap();
        assert!(matches!(again, Outcome::Completed(s) if s.exit_code == Some(5)));
        assert_eq!(sp.stderr_tail(id, 5), "boom");
    }

    #[test]
    fn two_spawners_alive_at_once_both_shut_down() {
        // The second is forked while the first's pipes are open; if it kept
        // copies of them, dropping the first would wait forever.
        let first = Spawner::start().unwrap();
        let second = Spawner::start().unwrap();
        drop(first);
        drop(second);
    }

    #[test]
    fn queued_runs_after_a_failure_are_skipped_not_executed() {
        let mut sp = Spawner::start().unwrap();
        let fail = sp
            .prepare(&argv(&["sh", "-c", "exit 3"]), &NULL_IO)
            .unwrap();
        let ok = sp.prepare(&argv(&["true"]), &NULL_IO).unwrap();
        sp.begin(fail, 0, true).unwrap();
        sp.begin(ok, 0, true).unwrap();
        assert!(matches!(sp.finish().unwrap(), Outcome::Completed(s) if s.exit_code == Some(3)));
        assert_eq!(sp.finish().unwrap(), Outcome::Skipped);
        // A tolerated code does not halt.
        let mut sp = Spawner::start().unwrap();
        let io = IoConfig {
            tolerate: Tolerate::ExitCodes(vec![3]),
            ..NULL_IO
        };
        let fail = sp.prepare(&argv(&["sh", "-c", "exit 3"]), &io).unwrap();
        let ok = sp.prepare(&argv(&["true"]), &NULL_IO).unwrap();
        sp.begin(fail, 0, true).unwrap();
        sp.begin(ok, 0, true).unwrap();
        assert!(matches!(sp.finish().unwrap(), Outcome::Completed(s) if s.exit_code == Some(3)));
        assert!(matches!(sp.finish().unwrap(), Outcome::Completed(s) if s.succeeded()));
    }

    #[test]
    fn disable_aslr_reaches_the_child() {
        // Linux shows the personality as 8 hex digits; ADDR_NO_RANDOMIZE is 0x0040000.
        let parse = |text: &str| u32::from_str_radix(text.trim(), 16).unwrap();
        const NO_RANDOMIZE: u32 = 0x0040000;
        let ours = parse(&std::fs::read_to_string("/proc/self/personality").unwrap());
        let dir = std::env::temp_dir().join(format!("perfsleuth-aslr-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut sp = Spawner::start().unwrap();
        let mut personality = |disable_aslr: bool| {
            let out = dir.join(format!("personality-{disable_aslr}"));
            std::fs::write(&out, "").unwrap();
            let io = IoConfig {
                output: OutputTarget::File(out.clone()),
                disable_aslr,
                ..NULL_IO
            };
            let id = sp
                .prepare(&argv(&["cat", "/proc/self/personality"]), &io)
                .unwrap();
            assert!(matches!(sp.run_once(id, 0).unwrap(), Outcome::Completed(s) if s.succeeded()));
            std::fs::read_to_string(&out).unwrap()
        };
        let off = personality(true);
        assert_eq!(parse(&off) & NO_RANDOMIZE, NO_RANDOMIZE, "{off}");
        assert_eq!(off.trim(), format!("{:08x}", ours | NO_RANDOMIZE));
        let on = personality(false);
        assert_eq!(
            parse(&on),
            ours,
            "{on}: the spawner's own personality is restored"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn counters_travel_with_the_outcome() {
        let mut s = Sample {
            iteration: 3,
            wall_ns: 10,
            exit_code: Some(0),
            ..Default::default()
        };
        s.counters.insert("futex_calls".into(), 12345.0);
        s.counters.insert("counters_running_fraction".into(), 0.25);
        for o in [Outcome::Completed(s.clone()), Outcome::TimedOut(s)] {
            assert_eq!(decode_run_reply(&encode_outcome(&o)).unwrap(), o);
        }
        let status = CounterStatus {
            opened: vec!["task_clock_ns".into()],
            unavailable: vec![("hardware".into(), "not supported (ENOENT)".into())],
        };
        let mut counters = None;
        let reply = open_counters(&mut Reader(&[0, 0, 0, 0]), &mut counters).unwrap();
        assert!(counters.is_none());
        assert_eq!(decode_status(&reply[1..]), Some(CounterStatus::default()));
        let mut v = vec![];
        put_u32(&mut v, 1);
        put_bytes(&mut v, b"task_clock_ns");
        put_u32(&mut v, 1);
        put_bytes(&mut v, b"hardware");
        put_bytes(&mut v, b"not supported (ENOENT)");
        assert_eq!(decode_status(&v), Some(status));
    }

    #[test]
    fn setup_errors_come_back_typed() {
        let mut sp = Spawner::start().unwrap();
        assert!(matches!(
            sp.prepare(&argv(&["no-such-prog-q"]), &NULL_IO),
            Err(MeasureError::NotFound(_))
        ));
        let io = IoConfig {
            input: Some(PathBuf::from("/no/such/input")),
            ..NULL_IO
        };
        match sp.prepare(&argv(&["true"]), &io) {
            Err(MeasureError::File { path, .. }) => {
                assert_eq!(path, PathBuf::from("/no/such/input"))
            }
            other => panic!("{other:?}"),
        }
    }
}
