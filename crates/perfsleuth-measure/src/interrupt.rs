//! Ctrl-C handling. The benchmarked child runs in its own process group, so
//! the terminal's SIGINT reaches only perfsleuth; the handler just sets a flag
//! and interrupts the blocking `wait4`, and the executor kills the child's
//! group and reports [`crate::Outcome::Interrupted`].

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);
static SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNAL.store(sig, Ordering::SeqCst);
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Installs handlers for SIGINT, SIGTERM and SIGHUP (a closed terminal, a
/// cancelled CI job: the same request to stop). Without `SA_RESTART`, so
/// that a blocking `wait4` or `poll` returns `EINTR` and the loop can react
/// at once.
pub fn install_interrupt_handler() -> std::io::Result<()> {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe;
        // the sigaction struct is fully initialised before use.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as *const () as usize;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = 0;
            libc::sigaction(sig, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Whether SIGINT, SIGTERM or SIGHUP has arrived since the handler was installed.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The signal that interrupted the run (SIGINT, SIGTERM or SIGHUP), if any.
pub fn interrupting_signal() -> Option<i32> {
    Some(SIGNAL.load(Ordering::SeqCst)).filter(|s| *s != 0)
}

/// Clears the flag (tests only need this; a CLI run exits after an interrupt).
pub fn reset_interrupted() {
    INTERRUPTED.store(false, Ordering::SeqCst);
}
