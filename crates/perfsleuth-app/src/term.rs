//! Terminal helpers: colour decisions, the progress line, and writes that
//! survive a closed pipe (`perfsleuth runs | head`).

use crate::options::ColorChoice;
use perfsleuth_report::style::CLEAR_LINE;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Whether to colour output going to stdout (or stderr when `to_stderr`).
pub fn use_color(choice: ColorChoice, to_stderr: bool) -> bool {
    match choice {
        ColorChoice::Always => true,
        ColorChoice::Never => false,
        ColorChoice::Auto => {
            let tty = if to_stderr {
                std::io::stderr().is_terminal()
            } else {
                std::io::stdout().is_terminal()
            };
            tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
                && std::env::var_os("TERM").is_none_or(|t| t != "dumb")
        }
    }
}

/// The first failed write to stdout other than a closed pipe (`> /dev/full`).
static STDOUT_ERROR: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Writes text to stdout or stderr. A closed pipe (`perfsleuth runs | head`)
/// is the reader's choice and stays quiet; any other failure on stdout is
/// remembered for [`stdout_error`], so the command exits 2 rather than 0
/// with its output lost.
pub fn emit(text: &str, to_stderr: bool) {
    emit_with(to_stderr, |to| to.write_all(text.as_bytes()));
}

/// [`emit`] for text that `write` writes as it makes it (a report too
/// large to hold twice); its failures are treated as [`emit`]'s.
pub fn emit_with(to_stderr: bool, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) {
    if to_stderr {
        let _ = write(&mut std::io::stderr().lock());
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = write(&mut out).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            STDOUT_CLOSED.store(true, std::sync::atomic::Ordering::Relaxed);
        } else {
            let _ = STDOUT_ERROR.set(perfsleuth_model::input::short_io_error(&e));
        }
    }
}

/// Set when a write to stdout met a closed pipe.
static STDOUT_CLOSED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether stdout can take no more: its reader has gone (`| head`) or a
/// write failed. A command that streams stops reading there.
pub fn stdout_done() -> bool {
    STDOUT_CLOSED.load(std::sync::atomic::Ordering::Relaxed) || STDOUT_ERROR.get().is_some()
}

/// Why writing to stdout failed, if it did (a closed pipe does not count).
pub fn stdout_error() -> Option<&'static str> {
    STDOUT_ERROR.get().map(String::as_str)
}

/// A one-line progress display with ETA on stderr, only when stderr is a
/// terminal; otherwise every call is a no-op so piped output stays clean.
pub struct ProgressLine {
    enabled: bool,
    drawn: bool,
    last: Option<Instant>,
}

impl ProgressLine {
    /// A progress line, shown only on a terminal (and never when the
    /// benchmarked commands write to the terminal themselves).
    pub fn new(commands_write_to_terminal: bool) -> ProgressLine {
        ProgressLine {
            enabled: std::io::stderr().is_terminal() && !commands_write_to_terminal,
            drawn: false,
            last: None,
        }
    }

    /// The line forced on (even off a terminal) or off, as `--style` asks.
    pub fn forced(mut self, force: Option<bool>) -> ProgressLine {
        if let Some(on) = force {
            self.enabled = on;
        }
        self
    }

    /// Whether an [`ProgressLine::update`] now would draw: on, and the last
    /// draw a tenth of a second ago (callers skip building the text otherwise).
    pub fn due(&self) -> bool {
        self.enabled
            && self
                .last
                .is_none_or(|t| t.elapsed() >= Duration::from_millis(100))
    }

    /// Redraws at most ten times a second so the hot loop stays cheap.
    pub fn update(
        &mut self,
        phase: &str,
        done_fraction: f64,
        runs: u64,
        elapsed: Duration,
        eta: Duration,
    ) {
        if !self.due() {
            return;
        }
        self.last = Some(Instant::now());
        const WIDTH: usize = 24;
        let filled = ((done_fraction.clamp(0.0, 1.0)) * WIDTH as f64).round() as usize;
        let bar: String = "█".repeat(filled) + &"░".repeat(WIDTH - filled);
        let line = format!(
            "{CLEAR_LINE}{phase} {bar} {runs} run{} · {:.1} s elapsed · ETA {}",
            if runs == 1 { "" } else { "s" },
            elapsed.as_secs_f64(),
            eta_text(eta)
        );
        emit(&line, true);
        self.drawn = true;
    }

    /// Erases the line before the summary is printed.
    pub fn clear(&mut self) {
        if self.drawn {
            emit(CLEAR_LINE, true);
            self.drawn = false;
        }
    }
}

fn eta_text(eta: Duration) -> String {
    let s = eta.as_secs_f64();
    if s < 10.0 {
        format!("{s:.1} s")
    } else if s < 60.0 {
        format!("{s:.0} s")
    } else {
        format!("{:.0} min {:.0} s", (s / 60.0).floor(), s % 60.0)
    }
}

/// Says once, on stderr, that perfsleuth is still waiting for a command when
/// nothing was measured for `after` and no `--timeout` would ever end it:
/// a hung command otherwise looks exactly like a hung perfsleuth.
pub struct Watchdog {
    state: std::sync::Arc<WatchState>,
}

struct WatchState {
    /// Milliseconds since `origin` of the last sign of progress.
    last_ms: std::sync::atomic::AtomicU64,
    stop: std::sync::atomic::AtomicBool,
    origin: Instant,
}

impl Watchdog {
    /// Starts watching; the note names `after` and how to stop.
    pub fn start(after: Duration) -> Watchdog {
        use std::sync::atomic::Ordering;
        let state = std::sync::Arc::new(WatchState {
            last_ms: std::sync::atomic::AtomicU64::new(0),
            stop: std::sync::atomic::AtomicBool::new(false),
            origin: Instant::now(),
        });
        let watched = std::sync::Arc::clone(&state);
        std::thread::spawn(move || {
            while !watched.stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
                let now = watched.origin.elapsed().as_millis() as u64;
                let idle = now.saturating_sub(watched.last_ms.load(Ordering::Relaxed));
                if idle >= after.as_millis() as u64 && !watched.stop.load(Ordering::Relaxed) {
                    let clear = if std::io::stderr().is_terminal() {
                        CLEAR_LINE
                    } else {
                        ""
                    };
                    emit(
                        &format!(
                            "{clear}note: a command has been running for {} and no --timeout is set; Ctrl-C stops the run and keeps the samples so far, --timeout DURATION kills runs that take longer\n",
                            perfsleuth_report::format_duration_ns(idle as f64 * 1e6)
                        ),
                        true,
                    );
                    return;
                }
            }
        });
        Watchdog { state }
    }

    /// Something was measured: the clock starts again.
    pub fn beat(&self) {
        let now = self.state.origin.elapsed().as_millis() as u64;
        self.state
            .last_ms
            .store(now, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.state
            .stop
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Installs the Ctrl-C handler every measuring command needs (a second
/// install is a no-op): Ctrl-C then ends the measurement as interrupted,
/// with what was measured kept.
pub fn catch_interrupts() -> Result<(), crate::error::Fail> {
    perfsleuth_measure::install_interrupt_handler().map_err(|e| {
        crate::error::Fail::usage(
            format!("cannot install the Ctrl-C handler: {e}"),
            "this should not happen; please report it",
        )
    })
}
