//! One command prepared for `posix_spawn` once — its argument and
//! environment arrays, attributes and descriptor moves — so that each launch
//! is the one call the spawn floor makes.
//!
//! Why not `std::process::Command`: its `spawn` rebuilds all of that on
//! every call, and opens `/dev/null` anew for each null stream: three
//! `open`s, three `close`s and six `getrlimit`s an iteration (strace), about
//! 10–20 µs of a 420 µs iteration of a trivial program on the reference VM
//! (see docs/PERFORMANCE.md). Holding one `/dev/null` per command instead
//! would make descriptors grow with the number of commands; here every
//! command shares one.

use std::ffi::{CString, OsString};
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Where one of the child's standard streams comes from.
#[derive(Debug)]
pub(crate) enum Stream {
    /// `/dev/null`, one descriptor shared by every command.
    Null,
    /// The spawning process's own.
    Inherit,
    /// A descriptor of this command's (a file, a pipe's write end).
    Own(OwnedFd),
    /// A descriptor shared with other commands (the stderr capture file).
    Shared(Arc<File>),
}

impl Stream {
    /// The descriptor the child gets, `None` for its parent's own.
    fn fd(&self) -> io::Result<Option<RawFd>> {
        Ok(match self {
            Stream::Null => Some(dev_null()?),
            Stream::Inherit => None,
            Stream::Own(fd) => Some(fd.as_raw_fd()),
            Stream::Shared(file) => Some(file.as_raw_fd()),
        })
    }
}

/// The process's one `/dev/null`, opened close-on-exec at first use and
/// kept for the process's life. Keyed by process: the spawner, forked
/// after the parent may have opened it, closes what it inherits.
fn dev_null() -> io::Result<RawFd> {
    use std::os::fd::IntoRawFd;
    static NULL: Mutex<Option<(u32, RawFd)>> = Mutex::new(None);
    let mut null = NULL.lock().unwrap_or_else(|p| p.into_inner());
    let pid = std::process::id();
    match *null {
        Some((owner, fd)) if owner == pid => Ok(fd),
        // Another process's number is left as it is: closing it could
        // close whatever this process opened under that number since.
        _ => {
            let fd = File::options()
                .read(true)
                .write(true)
                .open("/dev/null")?
                .into_raw_fd();
            *null = Some((pid, fd));
            Ok(fd)
        }
    }
}

/// A C string of `bytes`; an interior NUL is an invalid argument, as std says.
fn c_string(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "an argument or variable holds a NUL byte",
        )
    })
}

/// A NULL-terminated array of pointers into `strings`, which must outlive it.
fn pointers(strings: &[CString]) -> Vec<*mut libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr().cast_mut())
        .chain(std::iter::once(std::ptr::null_mut()))
        .collect()
}

/// Converts a `posix_spawn*` return code (an errno value, 0 for success).
fn check(rc: libc::c_int) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// A `posix_spawn_file_actions_t` that is destroyed with it.
struct Actions(Box<libc::posix_spawn_file_actions_t>);

impl Actions {
    /// `stdin`, `stdout`, `stderr` moved onto descriptors 0–2, after a
    /// change to `cwd` if one is given.
    fn new(cwd: Option<&CString>, streams: [&Stream; 3]) -> io::Result<Actions> {
        let mut raw = Box::new(std::mem::MaybeUninit::<libc::posix_spawn_file_actions_t>::uninit());
        // SAFETY: init writes the object into storage we own.
        check(unsafe { libc::posix_spawn_file_actions_init(raw.as_mut_ptr()) })?;
        // SAFETY: initialised just above; from here on Drop destroys it.
        let mut actions = Actions(unsafe { Box::from_raw(Box::into_raw(raw).cast()) });
        if let Some(dir) = cwd {
            // SAFETY: an initialised object and a NUL-terminated path, which
            // the call copies.
            check(unsafe {
                libc::posix_spawn_file_actions_addchdir_np(&mut *actions.0, dir.as_ptr())
            })?;
        }
        for (target, stream) in streams.into_iter().enumerate() {
            if let Some(fd) = stream.fd()? {
                // SAFETY: an initialised object; `fd` stays open as long
                // as the Launch that holds these actions (it owns or shares it).
                check(unsafe {
                    libc::posix_spawn_file_actions_adddup2(&mut *actions.0, fd, target as i32)
                })?;
            }
        }
        Ok(actions)
    }
}

impl Drop for Actions {
    fn drop(&mut self) {
        // SAFETY: an Actions exists only once init succeeded.
        unsafe { libc::posix_spawn_file_actions_destroy(&mut *self.0) };
    }
}

/// A `posix_spawnattr_t`: own process group, an empty signal mask, and
/// SIGPIPE (which perfsleuth ignores) back at its default — what std sets.
struct Attributes(Box<libc::posix_spawnattr_t>);

impl Attributes {
    fn new() -> io::Result<Attributes> {
        // SAFETY: as for the file actions: init fills storage we own, and
        // only then is the Attributes made that Drop destroys; the signal
        // sets are initialised before use.
        unsafe {
            let mut raw = Box::new(std::mem::MaybeUninit::<libc::posix_spawnattr_t>::uninit());
            check(libc::posix_spawnattr_init(raw.as_mut_ptr()))?;
            let mut attr = Attributes(Box::from_raw(Box::into_raw(raw).cast()));
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            check(libc::posix_spawnattr_setsigmask(&mut *attr.0, &set))?;
            libc::sigaddset(&mut set, libc::SIGPIPE);
            check(libc::posix_spawnattr_setsigdefault(&mut *attr.0, &set))?;
            check(libc::posix_spawnattr_setpgroup(&mut *attr.0, 0))?;
            let flags = libc::POSIX_SPAWN_SETPGROUP
                | libc::POSIX_SPAWN_SETSIGMASK
                | libc::POSIX_SPAWN_SETSIGDEF;
            check(libc::posix_spawnattr_setflags(&mut *attr.0, flags as _))?;
            Ok(attr)
        }
    }
}

impl Drop for Attributes {
    fn drop(&mut self) {
        // SAFETY: an Attributes exists only once init succeeded.
        unsafe { libc::posix_spawnattr_destroy(&mut *self.0) };
    }
}

/// A command ready to be started any number of times.
pub(crate) struct Launch {
    path: CString,
    /// Owns what `argv` points into.
    _args: Vec<CString>,
    argv: Vec<*mut libc::c_char>,
    /// The child's whole environment when the command changes it (owning
    /// what `envp` points into); else the process's own at each launch.
    env: Option<(Vec<CString>, Vec<*mut libc::c_char>)>,
    attributes: Attributes,
    /// stderr to its plain stream.
    plain: Actions,
    /// stderr kept (in the capture file), when the command has one.
    kept: Option<Actions>,
    /// The descriptors the actions name, held open as long as they are.
    _streams: Vec<Stream>,
}

// SAFETY: every pointer a Launch holds points into heap memory the Launch
// itself owns (its strings, its boxed libc objects); nothing is shared with
// another thread, so moving it to one is sound.
unsafe impl Send for Launch {}

impl std::fmt::Debug for Launch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Launch")
            .field("path", &self.path)
            .field("args", &self._args)
            .field("env_changed", &self.env.is_some())
            .finish_non_exhaustive()
    }
}

/// What a [`Launch`] is made of.
pub(crate) struct Plan<'a> {
    /// The program's path, already resolved.
    pub path: &'a Path,
    /// `argv[0]` and the arguments.
    pub args: &'a [String],
    /// Variables set (`Some`) or removed (`None`), in order, over the process's own.
    pub env: &'a [(String, Option<String>)],
    /// The working directory, the process's own when `None`.
    pub cwd: Option<&'a Path>,
    /// Standard input.
    pub stdin: Stream,
    /// Standard output.
    pub stdout: Stream,
    /// Standard error when it is not kept.
    pub stderr: Stream,
    /// Where standard error goes when a run keeps it.
    pub kept_stderr: Option<Stream>,
}

impl Launch {
    /// Prepares `plan`; nothing is started.
    pub(crate) fn new(plan: Plan<'_>) -> io::Result<Launch> {
        let path = c_string(plan.path.as_os_str().as_bytes())?;
        let args = plan
            .args
            .iter()
            .map(|a| c_string(a.as_bytes()))
            .collect::<io::Result<Vec<_>>>()?;
        let argv = pointers(&args);
        let env = if plan.env.is_empty() {
            None
        } else {
            let mut vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
            for (key, value) in plan.env {
                vars.retain(|(k, _)| k.as_bytes() != key.as_bytes());
                if let Some(v) = value {
                    vars.push((key.into(), v.into()));
                }
            }
            let strings = vars
                .iter()
                .map(|(k, v)| c_string(&[k.as_bytes(), b"=", v.as_bytes()].concat()))
                .collect::<io::Result<Vec<_>>>()?;
            let ptrs = pointers(&strings);
            Some((strings, ptrs))
        };
        let cwd = plan
            .cwd
            .map(|d| c_string(d.as_os_str().as_bytes()))
            .transpose()?;
        let plain = Actions::new(cwd.as_ref(), [&plan.stdin, &plan.stdout, &plan.stderr])?;
        let kept = plan
            .kept_stderr
            .as_ref()
            .map(|k| Actions::new(cwd.as_ref(), [&plan.stdin, &plan.stdout, k]))
            .transpose()?;
        let mut streams = vec![plan.stdin, plan.stdout, plan.stderr];
        streams.extend(plan.kept_stderr);
        Ok(Launch {
            path,
            _args: args,
            argv,
            env,
            attributes: Attributes::new()?,
            plain,
            kept,
            _streams: streams,
        })
    }

    /// Starts the command (its stderr kept when `keep_stderr` and it has
    /// somewhere to keep it) and returns its pid; the caller reaps it.
    pub(crate) fn start(&self, keep_stderr: bool) -> io::Result<libc::pid_t> {
        unsafe extern "C" {
            // Changed by libc (setenv), so mutable, and read by address.
            static mut environ: *const *mut libc::c_char;
        }
        let actions = match (&self.kept, keep_stderr) {
            (Some(kept), true) => kept,
            _ => &self.plain,
        };
        let envp = match &self.env {
            Some((_, ptrs)) => ptrs.as_ptr(),
            // SAFETY: reading the process's environment pointer, as std
            // and the C floor do; perfsleuth never changes its environment
            // while measuring.
            None => unsafe { std::ptr::addr_of!(environ).read() },
        };
        let mut pid: libc::pid_t = 0;
        // SAFETY: every pointer is valid for the call: the strings and
        // arrays are owned by self and NULL-terminated, the actions and
        // attributes initialised.
        check(unsafe {
            libc::posix_spawn(
                &mut pid,
                self.path.as_ptr(),
                &*actions.0,
                &*self.attributes.0,
                self.argv.as_ptr(),
                envp,
            )
        })?;
        Ok(pid)
    }
}
