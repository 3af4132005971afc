//! Spawning and reaping one iteration. The command is prepared for
//! `posix_spawn` once ([`crate::launch`]) and started as it is for every
//! iteration, so that the per-iteration cost stays at the `posix_spawn` +
//! `wait4` floor.

use crate::counters::Counters;
use crate::launch::{Launch, Plan, Stream};
use crate::{MeasureError, interrupted};
use perfsleuth_model::Sample;
use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::fd::OwnedFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Where the benchmarked command's standard output goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OutputTarget {
    /// Discarded (`/dev/null`), never buffered.
    Null,
    /// The terminal perfsleuth writes to.
    Inherit,
    /// Appended to this file; the caller truncates it once before the run, so
    /// that several commands sharing it all keep their output.
    File(PathBuf),
    /// A pipe that is read and thrown away, as hyperfine's `--output pipe`:
    /// for programs that write differently to a pipe than to `/dev/null`
    /// (or skip writing to `/dev/null` altogether).
    Pipe,
}

/// How the child's standard streams and time limit are set up.
#[derive(Debug, Clone)]
pub struct IoConfig {
    /// Where stdout goes. stderr follows it for `Inherit`; otherwise stderr is
    /// kept in an unlinked temporary file so a failure can show its last lines.
    pub output: OutputTarget,
    /// File fed to stdin, rewound before every iteration; `/dev/null` when `None`.
    pub input: Option<PathBuf>,
    /// Per-iteration limit; the child's whole process group is killed past it.
    pub timeout: Option<Duration>,
    /// Which unsuccessful exits still count as a measurement.
    pub tolerate: Tolerate,
    /// Start the child with address-space layout randomisation off
    /// (`personality(ADDR_NO_RANDOMIZE)`, like `setarch -R`), so that its
    /// memory layout is the same in every run.
    pub disable_aslr: bool,
    /// Working directory of the command (`ab` runs each side in its
    /// worktree); perfsleuth's own when `None`.
    pub cwd: Option<PathBuf>,
    /// Environment changes for this command only: set (`Some`) or removed
    /// (`None`), in order, over perfsleuth's own environment.
    pub env: Vec<(String, Option<String>)>,
    /// CPU set, THP and nice of this command only.
    pub settings: crate::ChildSettings,
}

/// The write end of a pipe whose read end a thread drains until every write
/// end is closed (the command's copy goes with the executor).
fn draining_pipe() -> Result<OwnedFd, MeasureError> {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two new descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(MeasureError::File {
            path: PathBuf::from("output pipe"),
            source: std::io::Error::last_os_error(),
        });
    }
    // SAFETY: both descriptors are new and owned by nobody else.
    let (mut reader, writer) = unsafe {
        (
            std::fs::File::from(OwnedFd::from_raw_fd(fds[0])),
            OwnedFd::from_raw_fd(fds[1]),
        )
    };
    std::thread::Builder::new()
        .name("output-pipe".into())
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            // Until every write end is closed; a signal landing on this
            // thread (handlers are installed without SA_RESTART) is retried,
            // or the command would get SIGPIPE.
            loop {
                match std::io::Read::read(&mut reader, &mut buf) {
                    Ok(0) => break,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        })
        .map_err(|source| MeasureError::File {
            path: PathBuf::from("output pipe"),
            source,
        })?;
    Ok(writer)
}

impl Default for IoConfig {
    /// Output discarded, stdin from `/dev/null`, no timeout, failures not
    /// tolerated, ASLR as the system has it.
    fn default() -> IoConfig {
        IoConfig {
            output: OutputTarget::Null,
            input: None,
            timeout: None,
            tolerate: Tolerate::Nothing,
            disable_aslr: false,
            cwd: None,
            env: Vec::new(),
            settings: crate::ChildSettings::default(),
        }
    }
}

/// Which unsuccessful exits are tolerated (`--ignore-failure[=CODES]`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Tolerate {
    /// Any non-zero exit or signal is a failure.
    #[default]
    Nothing,
    /// Every exit counts as a measurement.
    Everything,
    /// Only these non-zero exit codes are tolerated.
    ExitCodes(Vec<i32>),
}

impl Tolerate {
    /// Whether a run that ended this way counts as a measurement.
    pub fn accepts(&self, sample: &Sample) -> bool {
        sample.succeeded()
            || match self {
                Tolerate::Nothing => false,
                Tolerate::Everything => true,
                Tolerate::ExitCodes(codes) => {
                    sample.signal.is_none() && sample.exit_code.is_some_and(|c| codes.contains(&c))
                }
            }
    }
}

/// How one iteration ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The child exited or was killed by a signal of its own; see the sample's exit fields.
    Completed(Sample),
    /// The child ran past the timeout and its process group was killed.
    TimedOut(Sample),
    /// SIGINT/SIGTERM arrived; the child's process group was killed.
    Interrupted,
    /// Not run: an earlier iteration failed, so the spawner stopped running
    /// the requests that were already queued.
    Skipped,
}

impl Outcome {
    /// Whether measuring must stop after this outcome.
    pub fn halts(&self, tolerate: &Tolerate) -> bool {
        match self {
            Outcome::Completed(s) => !tolerate.accepts(s),
            _ => true,
        }
    }
}

/// Looks a program up the way `execvp` would and checks that it can run, so a
/// typo fails before any timing starts.
pub fn resolve_program(program: &str, path_var: Option<&OsStr>) -> Result<PathBuf, MeasureError> {
    if program.is_empty() {
        return Err(MeasureError::NotFound(program.to_string()));
    }
    if program.contains('/') {
        let path = PathBuf::from(program);
        return check_executable(&path).map(|()| path);
    }
    let search = path_var.unwrap_or_else(|| OsStr::new("/usr/local/bin:/usr/bin:/bin"));
    let mut found_unexecutable = None;
    for dir in std::env::split_paths(search) {
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let candidate = dir.join(program);
        match check_executable(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(MeasureError::NotExecutable(p)) => {
                found_unexecutable.get_or_insert(p);
            }
            Err(e @ MeasureError::NotAProgram { .. }) => return Err(e),
            Err(_) => {}
        }
    }
    Err(match found_unexecutable {
        Some(p) => MeasureError::NotExecutable(p),
        None => MeasureError::NotFound(program.to_string()),
    })
}

fn check_executable(path: &Path) -> Result<(), MeasureError> {
    let meta =
        std::fs::metadata(path).map_err(|_| MeasureError::NotFound(path.display().to_string()))?;
    if meta.is_dir() {
        return Err(MeasureError::IsDirectory(path.to_path_buf()));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(MeasureError::NotExecutable(path.to_path_buf()));
    }
    check_program_header(path)
}

/// The kernel starts ELF files and `#!` scripts; anything else fails in
/// `execve` with ENOEXEC, which is better said before any timing.
fn check_program_header(path: &Path) -> Result<(), MeasureError> {
    use perfsleuth_model::input::{self, Accept};
    // Non-blocking: an executable FIFO must not hang the check.
    let mut head = [0u8; 256];
    let opened = input::open(path, Accept::Regular);
    let n = match opened {
        Ok((mut f, _)) => f.read(&mut head).unwrap_or(0),
        // Unreadable (execute-only) files are left to execve to judge.
        Err(input::InputError::Io(_)) => return Ok(()),
        Err(e) => {
            return Err(MeasureError::NotAProgram {
                path: path.to_path_buf(),
                reason: e.to_string(),
            });
        }
    };
    if n >= 4 && &head[..4] == b"\x7fELF" {
        return Ok(());
    }
    if n >= 2 && &head[..2] == b"#!" {
        let line = head[2..n].split(|&b| b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        // The kernel resolves the interpreter itself (no PATH search).
        if let Some(interpreter) = line.split_whitespace().next() {
            if !Path::new(interpreter).exists() {
                return Err(MeasureError::MissingInterpreter {
                    path: path.to_path_buf(),
                    interpreter: interpreter.to_string(),
                });
            }
        }
        return Ok(());
    }
    Err(MeasureError::NotAProgram {
        path: path.to_path_buf(),
        reason: if n == 0 {
            "it is empty".into()
        } else {
            "no ELF header and no #! line".into()
        },
    })
}

/// Runs one command repeatedly and measures each run.
#[derive(Debug)]
pub struct Executor {
    launch: Launch,
    program: String,
    input: Option<File>,
    /// Where kept stderr goes: shared by every command of a spawner, so
    /// descriptors do not grow with the number of commands (the spawner
    /// reads a tail right after the run it belongs to).
    stderr_capture: Option<Arc<File>>,
    /// Whether the run being made keeps its stderr.
    capturing: bool,
    /// Whether the latest run's stderr was captured (else the tail is stale).
    last_captured: bool,
    timeout: Option<Duration>,
    tolerate: Tolerate,
    disable_aslr: bool,
    settings: crate::ChildSettings,
    /// What to check in `/proc` of the next child, until one was checked
    /// while still running.
    check: Option<Vec<(String, Option<String>)>>,
    /// Runs checked so far (at most [`CHECK_TRIES`]).
    check_tries: u32,
}

/// How many runs try to read their child's settings back from `/proc`: a
/// command that exits within microseconds leaves nothing to read, and every
/// try costs the run it is made in.
const CHECK_TRIES: u32 = 3;

impl Executor {
    /// Prepares `argv` (program resolved already or looked up on `PATH`) with
    /// the given I/O. Opens every file once; nothing is spawned yet.
    pub fn new(argv: &[String], io: &IoConfig) -> Result<Executor, MeasureError> {
        Executor::with_capture(argv, io, None)
    }

    /// Like [`Executor::new`], but stderr is captured into `capture` (an
    /// open file another process can read, shared with other commands)
    /// instead of an anonymous file of its own.
    pub fn with_capture(
        argv: &[String],
        io: &IoConfig,
        capture: Option<Arc<File>>,
    ) -> Result<Executor, MeasureError> {
        let Some((program, args_rest)) = argv.split_first() else {
            return Err(MeasureError::NotFound(String::new()));
        };
        let resolved = resolve_program(program, std::env::var_os("PATH").as_deref())?;
        let open = |path: &Path, write: bool| {
            let res = if write {
                std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(path)
            } else {
                File::open(path)
            };
            res.map_err(|source| MeasureError::File {
                path: path.to_path_buf(),
                source,
            })
        };
        let (input, stdin) = match &io.input {
            Some(path) => {
                let f = open(path, false)?;
                // A second descriptor of the same open file: the child
                // shares its offset with the handle kept for rewinding.
                let child = f.try_clone().map_err(|source| MeasureError::File {
                    path: path.to_path_buf(),
                    source,
                })?;
                (Some(f), Stream::Own(child.into()))
            }
            None => (None, Stream::Null),
        };
        let mut stderr_capture = None;
        let (stdout, stderr, kept_stderr) = match &io.output {
            OutputTarget::Inherit => (Stream::Inherit, Stream::Inherit, None),
            target => {
                let stdout = match target {
                    OutputTarget::File(p) => Stream::Own(open(p, true)?.into()),
                    OutputTarget::Pipe => Stream::Own(draining_pipe()?),
                    _ => Stream::Null,
                };
                let capture = match capture {
                    Some(file) => file,
                    None => Arc::new(anonymous_temp_file()?),
                };
                stderr_capture = Some(capture.clone());
                (stdout, Stream::Null, Some(Stream::Shared(capture)))
            }
        };
        let mut args = vec![program.clone()];
        args.extend(args_rest.iter().cloned());
        let launch = Launch::new(Plan {
            path: &resolved,
            args: &args,
            env: &io.env,
            cwd: io.cwd.as_deref(),
            stdin,
            stdout,
            stderr,
            kept_stderr,
        })
        .map_err(|source| MeasureError::Spawn {
            program: program.clone(),
            source,
        })?;
        Ok(Executor {
            launch,
            program: program.clone(),
            input,
            capturing: false,
            stderr_capture,
            last_captured: false,
            timeout: io.timeout,
            tolerate: io.tolerate.clone(),
            disable_aslr: io.disable_aslr,
            settings: io.settings.clone(),
            // Only what a variant asks for is checked: a plain command has
            // nothing to verify, and reading /proc costs the first run time.
            check: (!io.settings.is_default() || !io.env.is_empty()).then(|| io.env.clone()),
            check_tries: 0,
        })
    }

    /// Which exits this command tolerates.
    pub fn tolerate(&self) -> &Tolerate {
        &self.tolerate
    }

    /// Runs the command once and measures it, keeping its stderr for
    /// [`Executor::stderr_tail`].
    pub fn run_once(&mut self, iteration: u32) -> Result<Outcome, MeasureError> {
        self.run(iteration, true)
    }

    /// Runs the command once and measures it. With `capture_stderr` false,
    /// stderr goes to `/dev/null`, like stdout: writing it to a file would
    /// cost the child time and put disk I/O into the measurement, so timed
    /// runs discard it and a failure is diagnosed by an untimed re-run.
    pub fn run(&mut self, iteration: u32, capture_stderr: bool) -> Result<Outcome, MeasureError> {
        self.run_inner(iteration, capture_stderr, None)
    }

    /// Like [`Executor::run`], and the sample's `counters` get what
    /// `counters` counted for the child and its descendants. The counters
    /// must have been opened on this thread ([`Counters::open`]); they are
    /// read before the spawn and after `wait4`, outside the timed region.
    pub fn run_counted(
        &mut self,
        iteration: u32,
        capture_stderr: bool,
        counters: &mut Counters,
    ) -> Result<Outcome, MeasureError> {
        self.run_inner(iteration, capture_stderr, Some(counters))
    }

    fn run_inner(
        &mut self,
        iteration: u32,
        capture_stderr: bool,
        mut counters: Option<&mut Counters>,
    ) -> Result<Outcome, MeasureError> {
        if interrupted() {
            return Ok(Outcome::Interrupted);
        }
        self.route_stderr(capture_stderr);
        self.rewind_streams()?;
        if let Some(c) = counters.as_deref_mut() {
            c.start();
        }
        // The child inherits this thread's personality; setting it here
        // rather than in a pre_exec hook keeps std on its posix_spawn path.
        let persona = self.disable_aslr.then(NoRandomize::set);
        let applied = if self.settings.is_default() {
            None
        } else {
            Some(
                crate::settings::apply(&self.settings)
                    .map_err(|e| MeasureError::Setting(e.to_string()))?,
            )
        };
        let start = Instant::now();
        let pid = self
            .launch
            .start(self.capturing)
            .map_err(|source| self.spawn_error(source))?;
        // The child has its copy: the spawner's own wake-up and waiting
        // must not run pinned, niced or idle.
        let restored = applied.map(crate::settings::Applied::restore);
        // Checked on the first runs only (warmups, by default): reading
        // /proc costs the run it is done in.
        let checked = match self.check.as_ref() {
            Some(env) if self.check_tries < CHECK_TRIES => {
                self.check_tries += 1;
                Some(crate::settings::verify(
                    pid,
                    &self.settings,
                    self.disable_aslr,
                    env,
                ))
            }
            _ => None,
        };
        let waited =
            wait_child(pid, self.timeout, start).map_err(|source| self.spawn_error(source))?;
        let wall = start.elapsed();
        drop(persona);
        if let Some(Err(why)) = restored {
            return Err(MeasureError::Setting(format!(
                "could not set perfsleuth's own state back after the run ({why}), so later commands would inherit it"
            )));
        }
        match checked {
            Some(Ok(true)) => self.check = None,
            Some(Err(wrong)) => return Err(MeasureError::NotApplied(wrong)),
            // Exited before it could be read: the next run is checked.
            Some(Ok(false)) | None => {}
        }
        self.last_captured = self.capturing;
        let mut sample = sample_from(
            iteration,
            if waited.timed_out {
                self.timeout.unwrap_or(wall)
            } else {
                wall
            },
            waited.status,
            &waited.usage,
        );
        if let Some(c) = counters {
            c.finish(&mut sample.counters);
        }
        Ok(if waited.interrupted {
            Outcome::Interrupted
        } else if waited.timed_out {
            Outcome::TimedOut(sample)
        } else {
            Outcome::Completed(sample)
        })
    }

    /// The last `lines` lines the previous iteration wrote to stderr (empty
    /// when stderr was inherited).
    pub fn stderr_tail(&mut self, lines: usize) -> String {
        match self.stderr_capture.as_deref() {
            Some(f) if self.last_captured => tail_of(f, lines),
            _ => String::new(),
        }
    }

    /// Whether the next run's stderr goes to the capture file (a kept run
    /// of a command that has one) rather than `/dev/null`.
    fn route_stderr(&mut self, capture: bool) {
        self.capturing = capture && self.stderr_capture.is_some();
    }

    fn rewind_streams(&mut self) -> Result<(), MeasureError> {
        let io_err = |source| MeasureError::Spawn {
            program: "stream rewind".into(),
            source,
        };
        if let Some(f) = self.input.as_mut() {
            f.seek(SeekFrom::Start(0)).map_err(io_err)?;
        }
        if let Some(mut f) = self.stderr_capture.as_deref().filter(|_| self.capturing) {
            // Every child writes at the offset all copies share: a kept run
            // starts from an empty file whichever command wrote last, and a
            // quiet file costs no truncation.
            if f.stream_position().map_err(io_err)? > 0 {
                f.set_len(0).map_err(io_err)?;
                f.seek(SeekFrom::Start(0)).map_err(io_err)?;
            }
        }
        Ok(())
    }

    fn spawn_error(&self, source: std::io::Error) -> MeasureError {
        MeasureError::Spawn {
            program: self.program.clone(),
            source,
        }
    }
}

/// The last `lines` non-empty lines of a capture file; reads at most the
/// final 64 KiB so a chatty failure stays cheap.
pub(crate) fn tail_of(mut file: &File, lines: usize) -> String {
    const CAP: u64 = 64 * 1024;
    let Ok(len) = file.seek(SeekFrom::End(0)) else {
        return String::new();
    };
    let mut bytes = Vec::new();
    if file.seek(SeekFrom::Start(len.saturating_sub(CAP))).is_err()
        || file.read_to_end(&mut bytes).is_err()
    {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// An unlinked file in the temp directory: never fills memory, vanishes on exit.
pub(crate) fn anonymous_temp_file() -> Result<File, MeasureError> {
    let (file, path) = named_temp_file()?;
    let _ = std::fs::remove_file(&path);
    Ok(file)
}

/// A new, empty file in the temp directory that only this process created.
pub(crate) fn named_temp_file() -> Result<(File, PathBuf), MeasureError> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir();
    // A process killed between creating and unlinking its file (SIGKILL, a
    // CI timeout) leaves it behind, and process ids are reused: a name that
    // exists is skipped, not an error.
    let mut attempt = 0;
    loop {
        let path = dir.join(format!(
            ".perfsleuth-stderr-{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => return Ok((file, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 1000 => {
                attempt += 1;
            }
            Err(source) => return Err(MeasureError::File { path, source }),
        }
    }
}

pub(crate) struct Waited {
    status: libc::c_int,
    usage: libc::rusage,
    timed_out: bool,
    interrupted: bool,
}

/// Waits for `pid` with `wait4` (resource usage of that child alone), killing
/// its process group on timeout or interrupt.
pub(crate) fn wait_child(
    pid: libc::pid_t,
    timeout: Option<Duration>,
    start: Instant,
) -> std::io::Result<Waited> {
    let mut timed_out = false;
    let mut was_interrupted = false;
    if let Some(limit) = timeout {
        match wait_ready(pid, limit, start)? {
            Ready::Exited => {}
            Ready::TimedOut => {
                kill_group(pid);
                timed_out = true;
            }
            Ready::Interrupted => {
                kill_group(pid);
                was_interrupted = true;
            }
        }
    }
    // SAFETY: zeroed rusage is a valid value; wait4 writes both out-parameters.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut status: libc::c_int = 0;
    loop {
        // SAFETY: pointers are to live locals.
        let rc = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if rc == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
        if interrupted() && !was_interrupted {
            kill_group(pid);
            was_interrupted = true;
        }
    }
    Ok(Waited {
        status,
        usage,
        timed_out,
        interrupted: was_interrupted,
    })
}

enum Ready {
    Exited,
    TimedOut,
    Interrupted,
}

/// Blocks until the child exits, the deadline passes or a signal arrives,
/// without reaping, so that `wait4` still collects the rusage afterwards.
fn wait_ready(pid: libc::pid_t, limit: Duration, start: Instant) -> std::io::Result<Ready> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as libc::c_int;
    if pidfd < 0 {
        return poll_ready(pid, limit, start);
    }
    let result = loop {
        let remaining = limit.saturating_sub(start.elapsed());
        if remaining.is_zero() {
            break Ok(Ready::TimedOut);
        }
        let ts = libc::timespec {
            tv_sec: remaining.as_secs() as libc::time_t,
            tv_nsec: remaining.subsec_nanos() as libc::c_long,
        };
        let mut pfd = libc::pollfd {
            fd: pidfd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, a valid timespec, no signal mask change.
        let rc = unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
        if rc > 0 {
            break Ok(Ready::Exited);
        }
        if rc < 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                break Err(err);
            }
            if interrupted() {
                break Ok(Ready::Interrupted);
            }
        }
    };
    // SAFETY: pidfd is ours and closed once.
    unsafe { libc::close(pidfd) };
    result
}

/// Fallback for kernels without `pidfd_open` (< 5.3): poll with `waitid(WNOWAIT)`.
fn poll_ready(pid: libc::pid_t, limit: Duration, start: Instant) -> std::io::Result<Ready> {
    loop {
        // SAFETY: zeroed siginfo is valid; waitid fills it.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `info` is a valid, writable siginfo_t that outlives the call;
        // WNOWAIT leaves the child waitable for the later `wait4`.
        let rc = unsafe {
            libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            )
        };
        // SAFETY: waitid succeeded (rc == 0) and filled `info` for a
        // child-state change, so its si_pid field is the one to read.
        if rc == 0 && unsafe { info.si_pid() } == pid {
            return Ok(Ready::Exited);
        }
        if interrupted() {
            return Ok(Ready::Interrupted);
        }
        if start.elapsed() >= limit {
            return Ok(Ready::TimedOut);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Address-space randomisation turned off for this thread (and so for the
/// processes it spawns) until dropped; holds the personality to restore,
/// `None` when nothing was changed.
struct NoRandomize(Option<libc::c_ulong>);

impl NoRandomize {
    fn set() -> NoRandomize {
        const ADDR_NO_RANDOMIZE: libc::c_ulong = 0x0040000;
        // SAFETY: 0xffffffff only queries the current personality.
        let old = unsafe { libc::personality(0xffff_ffff) };
        if old < 0 || old as libc::c_ulong & ADDR_NO_RANDOMIZE != 0 {
            return NoRandomize(None);
        }
        let old = old as libc::c_ulong;
        // SAFETY: sets a flag word on this thread only.
        let ok = unsafe { libc::personality(old | ADDR_NO_RANDOMIZE) } >= 0;
        NoRandomize(ok.then_some(old))
    }
}

impl Drop for NoRandomize {
    fn drop(&mut self) {
        if let Some(old) = self.0 {
            // SAFETY: restores the flag word `set` found.
            unsafe { libc::personality(old) };
        }
    }
}

fn kill_group(pid: libc::pid_t) {
    // SAFETY: signalling a process group we created; failure (already gone) is fine.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
}

fn timeval_ns(tv: libc::timeval) -> u64 {
    (tv.tv_sec as u64).saturating_mul(1_000_000_000) + (tv.tv_usec as u64) * 1_000
}

fn sample_from(
    iteration: u32,
    wall: Duration,
    status: libc::c_int,
    usage: &libc::rusage,
) -> Sample {
    let (exit_code, signal) = if libc::WIFEXITED(status) {
        (Some(libc::WEXITSTATUS(status)), None)
    } else if libc::WIFSIGNALED(status) {
        (None, Some(libc::WTERMSIG(status)))
    } else {
        (None, None)
    };
    Sample {
        iteration,
        round: 0,
        wall_ns: wall.as_nanos() as u64,
        wall_exact_ns: None,
        user_ns: timeval_ns(usage.ru_utime),
        sys_ns: timeval_ns(usage.ru_stime),
        // Linux reports ru_maxrss in KiB.
        peak_rss_bytes: (usage.ru_maxrss.max(0) as u64) * 1024,
        minor_faults: usage.ru_minflt.max(0) as u64,
        major_faults: usage.ru_majflt.max(0) as u64,
        voluntary_cs: usage.ru_nvcsw.max(0) as u64,
        involuntary_cs: usage.ru_nivcsw.max(0) as u64,
        exit_code,
        signal,
        counters: Default::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    fn io() -> IoConfig {
        IoConfig::default()
    }

    #[test]
    fn measures_a_real_child() {
        let mut ex = Executor::new(&argv(&["true"]), &io()).unwrap();
        let Outcome::Completed(s) = ex.run_once(3).unwrap() else {
            panic!("not completed")
        };
        assert_eq!(s.iteration, 3);
        assert_eq!(s.exit_code, Some(0));
        assert!(s.wall_ns > 0);
        assert!(s.peak_rss_bytes > 0, "wait4 reports the child's max RSS");
    }

    #[test]
    fn failure_keeps_stderr_tail_and_exit_code() {
        let mut ex = Executor::new(
            &argv(&["sh", "-c", "echo one >&2; echo two >&2; exit 3"]),
            &io(),
        )
        .unwrap();
        let Outcome::Completed(s) = ex.run_once(0).unwrap() else {
            panic!()
        };
        assert_eq!(s.exit_code, Some(3));
        assert_eq!(ex.stderr_tail(1), "two");
        assert_eq!(ex.stderr_tail(5), "one\ntwo");
        // The capture is reset before the next iteration.
        ex.run_once(1).unwrap();
        assert_eq!(ex.stderr_tail(5), "one\ntwo");
    }

    #[test]
    fn signal_death_is_reported() {
        let mut ex = Executor::new(&argv(&["sh", "-c", "kill -9 $$"]), &io()).unwrap();
        let Outcome::Completed(s) = ex.run_once(0).unwrap() else {
            panic!()
        };
        assert_eq!(s.signal, Some(libc::SIGKILL));
        assert_eq!(s.exit_code, None);
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        let marker =
            std::env::temp_dir().join(format!("perfsleuth-grandchild-{}", std::process::id()));
        let _ = std::fs::remove_file(&marker);
        let script = format!("(sleep 1; touch {}) & sleep 5", marker.display());
        let cfg = IoConfig {
            timeout: Some(Duration::from_millis(200)),
            ..io()
        };
        let mut ex = Executor::new(&argv(&["sh", "-c", &script]), &cfg).unwrap();
        let outcome = ex.run_once(0).unwrap();
        assert!(
            matches!(outcome, Outcome::TimedOut(ref s) if s.signal == Some(libc::SIGKILL)),
            "{outcome:?}"
        );
        std::thread::sleep(Duration::from_millis(1300));
        assert!(
            !marker.exists(),
            "the grandchild in the group must be killed too"
        );
    }

    #[test]
    fn a_stale_capture_file_of_a_reused_pid_is_skipped() {
        // What a killed perfsleuth with this process id left behind: the
        // next names this process would pick.
        let (_, first) = named_temp_file().unwrap();
        let _ = std::fs::remove_file(&first);
        let name = first.file_name().unwrap().to_string_lossy().into_owned();
        let (stem, n) = name.rsplit_once('-').unwrap();
        let n: u64 = n.parse().unwrap();
        let stale: Vec<PathBuf> = (n + 1..n + 40)
            .map(|i| first.with_file_name(format!("{stem}-{i}")))
            .collect();
        for p in &stale {
            std::fs::write(p, "").unwrap();
        }
        let got = named_temp_file();
        for p in &stale {
            let _ = std::fs::remove_file(p);
        }
        let (_, path) = got.expect("a stale file is skipped");
        assert!(!stale.contains(&path), "{}", path.display());
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn input_is_rewound_and_output_written_to_file() {
        let dir = std::env::temp_dir().join(format!("perfsleuth-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let input = dir.join("in.txt");
        let output = dir.join("out.txt");
        std::fs::write(&input, "hello\n").unwrap();
        let cfg = IoConfig {
            output: OutputTarget::File(output.clone()),
            input: Some(input),
            timeout: None,
            tolerate: Tolerate::Nothing,
            disable_aslr: false,
            cwd: None,
            ..IoConfig::default()
        };
        let mut ex = Executor::new(&argv(&["cat"]), &cfg).unwrap();
        ex.run_once(0).unwrap();
        ex.run_once(1).unwrap();
        assert_eq!(std::fs::read_to_string(&output).unwrap(), "hello\nhello\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_command_runs_in_its_working_directory() {
        let dir = std::env::temp_dir().join(format!("perfsleuth-cwd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let output =
            std::env::temp_dir().join(format!("perfsleuth-cwd-{}.txt", std::process::id()));
        let cfg = IoConfig {
            output: OutputTarget::File(output.clone()),
            cwd: Some(dir.clone()),
            ..IoConfig::default()
        };
        let mut ex = Executor::new(&argv(&["pwd"]), &cfg).unwrap();
        ex.run_once(0).unwrap();
        let printed = std::fs::read_to_string(&output).unwrap();
        assert_eq!(
            std::fs::canonicalize(printed.trim()).unwrap(),
            std::fs::canonicalize(&dir).unwrap()
        );
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_file(&output).unwrap();
    }

    #[test]
    fn missing_and_unexecutable_programs_fail_before_spawning() {
        assert!(matches!(
            resolve_program("no-such-program-xyz", None),
            Err(MeasureError::NotFound(_))
        ));
        let plain = std::env::temp_dir().join(format!("perfsleuth-noexec-{}", std::process::id()));
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        assert!(matches!(
            resolve_program(plain.to_str().unwrap(), None),
            Err(MeasureError::NotExecutable(_))
        ));
        std::fs::remove_file(&plain).unwrap();
        assert!(matches!(
            resolve_program("/", None),
            Err(MeasureError::IsDirectory(_))
        ));
        assert!(resolve_program("sh", Some(OsStr::new("/usr/bin:/bin"))).is_ok());
    }
}
