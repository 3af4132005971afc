//! Shared plumbing of the commands: opening the store, printing summaries,
//! writing exports, resolving `--reference`.

use crate::error::Fail;
use crate::options::{ColorChoice, RunOptions};
use crate::term::{emit, use_color};
use perfsleuth_model::Run;
use perfsleuth_model::input::Accept;
use perfsleuth_report::{ExportFormat, Style, render_terminal};
use perfsleuth_store::{SqliteStore, Store, StoreError, StoreUrl};
use perfsleuth_summary::analyze;
use std::path::{Path, PathBuf};

/// The store from `--store`, else `PERFSLEUTH_STORE`, else the default
/// location. (The variable is read here, not by clap, so that `--no-store`
/// conflicts only with an explicit `--store`.)
pub fn store_url(url: Option<&str>) -> Result<StoreUrl, Fail> {
    // Not silently the default store when the variable cannot be read.
    let from_env = utf8_var("PERFSLEUTH_STORE", "give a store path in UTF-8")?;
    match url.or(from_env.as_deref()) {
        Some(url) => StoreUrl::parse(url).map_err(Fail::from),
        None => {
            let cwd = std::env::current_dir().map_err(|e| {
                Fail::usage(
                    format!("cannot read the current directory: {e}"),
                    "cd into an existing directory",
                )
            })?;
            SqliteStore::default_path(&cwd, std::env::var_os("XDG_DATA_HOME").as_deref(), std::env::var_os("HOME").as_deref())
                .map(StoreUrl::Sqlite)
                .ok_or_else(|| Fail::usage("no default store location: not in a git repository and neither XDG_DATA_HOME nor HOME is set", "pass --store sqlite:PATH"))
        }
    }
}

/// A variable's value; `None` when unset or empty, an error when not UTF-8.
fn utf8_var(name: &str, hint: &str) -> Result<Option<String>, Fail> {
    match std::env::var(name) {
        Ok(v) => Ok(Some(v).filter(|v| !v.is_empty())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(v)) => Err(Fail::usage(
            format!("{name} is not valid UTF-8: {}", v.to_string_lossy()),
            format!("{hint}, or unset {name}"),
        )),
    }
}

/// The SQLite file of the store, when the store is one (output paths are
/// checked against it).
pub fn store_path(url: Option<&str>) -> Result<PathBuf, Fail> {
    match store_url(url)? {
        StoreUrl::Sqlite(path) => Ok(path),
        StoreUrl::Postgres(url) => Err(Fail::usage(
            format!("{} is not a file", StoreUrl::Postgres(url).display()),
            "use a sqlite: store",
        )),
    }
}

/// A store handle of either backend.
pub type AnyStore = Box<dyn Store + Send>;

/// Selects the project `PERFSLEUTH_STORE_PROJECT` names, if any: how the CLI reads
/// a team server's database directly (the server writes every run into a project).
fn with_project(mut store: AnyStore) -> Result<AnyStore, Fail> {
    if let Some(project) = utf8_var("PERFSLEUTH_STORE_PROJECT", "give the project name in UTF-8")? {
        if !perfsleuth_store::valid_project(&project) {
            return Err(Fail::usage(
                format!("PERFSLEUTH_STORE_PROJECT={project:?} is not a project name"),
                "project names are 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
            ));
        }
        store.use_project(&project);
    }
    Ok(store)
}

/// Opens (creating if needed) the store for writing.
pub fn open_store(url: Option<&str>) -> Result<AnyStore, Fail> {
    with_project(store_url(url)?.open().map_err(Fail::from)?)
}

/// Opens an existing store for reading.
pub fn open_existing_store(url: Option<&str>) -> Result<AnyStore, Fail> {
    with_project(store_url(url)?.open_existing().map_err(Fail::from)?)
}

/// Store errors carry the path and a hint in one line; the hint goes on its
/// own line like every other error's.
impl From<StoreError> for Fail {
    fn from(e: StoreError) -> Fail {
        let text = e.to_string();
        match text.split_once(" (hint: ") {
            Some((message, hint)) => Fail::usage(message, hint.strip_suffix(')').unwrap_or(hint)),
            None => Fail::usage(text, "check the --store path"),
        }
    }
}

/// Resolves `--reference` (1-based index or exact name) to an index.
pub fn resolve_reference<'a>(
    spec: Option<&str>,
    names: impl Iterator<Item = &'a str>,
) -> Result<Option<usize>, Fail> {
    let Some(spec) = spec else { return Ok(None) };
    let names: Vec<&str> = names.collect();
    if let Ok(n) = spec.parse::<usize>() {
        if (1..=names.len()).contains(&n) {
            return Ok(Some(n - 1));
        }
        return Err(Fail::usage(
            format!(
                "--reference {n} is out of range: there are {} benchmarks",
                names.len()
            ),
            "give a 1-based index or a benchmark name",
        ));
    }
    if names.iter().filter(|n| **n == spec).count() > 1 {
        return Err(Fail::usage(
            format!("--reference `{spec}` names more than one benchmark"),
            "give its 1-based index instead, or distinct --name values",
        ));
    }
    names
        .iter()
        .position(|n| *n == spec)
        .map(Some)
        .ok_or_else(|| {
            Fail::usage(
                format!("--reference `{spec}` matches no benchmark and runs no program here"),
                format!(
                    "names are: {}; or give a command to measure as the reference",
                    names.join(", ")
                ),
            )
        })
}

pub use perfsleuth_model::input::MAX_DOCUMENT_BYTES;

/// Reads a file the user named, never blocking on a FIFO nobody writes to
/// nor reading a device or more than `limit` bytes; the error says why.
pub fn read_user_file(path: &Path, limit: u64, accept: Accept) -> Result<String, String> {
    perfsleuth_model::input::read_text(path, limit, accept).map_err(|e| e.to_string())
}

/// A user-named JSON document's header and value, read bounded and never
/// blocking ([`read_user_file`]); `bad` words every error as "PATH: why"
/// with the caller's hint.
pub fn read_document(
    path: &Path,
    bad: &dyn Fn(String) -> Fail,
) -> Result<(perfsleuth_model::schema::Header, serde_json::Value), Fail> {
    let text = read_user_file(path, MAX_DOCUMENT_BYTES, Accept::RegularOrPipe)
        .map_err(|e| bad(format!("cannot read: {e}")))?;
    perfsleuth_model::schema::read_header(&text).map_err(|e| bad(e.to_string()))
}

/// Appends `text` to the file `path` (the step summary a CI runner names in
/// `what`), creating it. Not through [`write_file`]: a summary is added to,
/// never replaced. Only a regular file is written (a FIFO fails at once,
/// never waits), and a store is refused as every output refuses it.
pub fn append_file(path: &Path, text: &str, what: &str) -> Result<(), Fail> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    check_not_a_store(path, what, None)?;
    let fail = |e: std::io::Error| {
        Fail::usage(
            format!("cannot append to {what} {}: {e}", path.display()),
            format!("point {what} at a writable file, or unset it to print the report"),
        )
    };
    let not_regular = || fail(std::io::Error::other("it is not a regular file"));
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
        return Err(not_regular());
    }
    // Non-blocking too: a FIFO made since fails the open instead of waiting.
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(fail)?;
    if !file.metadata().map_err(fail)?.is_file() {
        return Err(not_regular());
    }
    file.write_all(text.as_bytes()).map_err(fail)?;
    file.write_all(b"\n").map_err(fail)
}

/// Writes `--export-junit`'s document (see `perfsleuth_report::junit`).
pub fn write_junit(
    path: &Path,
    xml: Result<String, perfsleuth_report::junit::JunitError>,
) -> Result<(), Fail> {
    let xml =
        xml.map_err(|e| Fail::usage(format!("cannot write JUnit XML: {e}"), "please report this"))?;
    write_file(path, &xml)
}

/// Writes a `--plot` chart (an SVG document) and says where, on stderr —
/// a file written silently is easy to miss (`compare --plot`).
pub fn write_chart(path: &Path, svg: &str) -> Result<(), Fail> {
    write_file(path, svg)?;
    if path != Path::new("-") {
        emit(&format!("Chart written to {}\n", path.display()), true);
    }
    Ok(())
}

/// Whether a selector names something on disk that is not a directory: a
/// file to read (or to name, in the error, what it is instead).
pub fn names_a_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_dir())
}

/// FIFOs an output was tried on, kept open for writing (see [`check_writable`]).
static HELD_FIFOS: std::sync::Mutex<Vec<std::fs::File>> = std::sync::Mutex::new(Vec::new());

/// Fails early when an export path cannot be written, so a long run is not
/// wasted on a typo; and refuses a path that would overwrite the store
/// (`store_url`, as `--store` takes it) or any other SQLite database.
pub fn check_writable(path: &Path, option: &str, store_url: Option<&str>) -> Result<(), Fail> {
    if path == Path::new("-") {
        return Ok(());
    }
    check_not_a_store(path, option, store_url)?;
    if path.is_dir() {
        return Err(Fail::usage(
            format!("{option} {} is a directory", path.display()),
            "give a file name",
        ));
    }
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !parent.is_dir() {
        return Err(Fail::usage(
            format!(
                "cannot write {option} {}: directory {} does not exist",
                path.display(),
                parent.display()
            ),
            "create the directory first",
        ));
    }
    // Try it now rather than after minutes of measuring: an existing file is
    // opened without being changed; a new one is created and removed again.
    // Non-blocking, because a plain open of a FIFO waits for its reader.
    let probe = if let Ok(meta) = std::fs::metadata(path) {
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
        if meta.file_type().is_socket() {
            return Err(Fail::usage(
                format!("{option} {} is a socket", path.display()),
                "give a file name",
            ));
        }
        let fifo = meta.file_type().is_fifo();
        match std::fs::OpenOptions::new()
            .append(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
        {
            // Closing this descriptor would end a FIFO reader's input
            // before anything was written: it is held until perfsleuth exits.
            Ok(file) if fifo => {
                HELD_FIFOS
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(file);
                Ok(())
            }
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                return Err(Fail::usage(
                    format!(
                        "{option} {} is a FIFO (named pipe) that nobody reads",
                        path.display()
                    ),
                    "start its reader first, or give a regular file",
                ));
            }
            other => other.map(|_| ()),
        }
    } else if std::fs::symlink_metadata(path).is_ok() {
        return Err(Fail::usage(
            format!("{option} {} is a symbolic link to nothing", path.display()),
            "give the file the link should name, or remove the link",
        ));
    } else {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .and_then(|_| std::fs::remove_file(path))
    };
    probe.map_err(|e| {
        Fail::usage(
            format!("cannot write {option} {}: {e}", path.display()),
            "choose a writable path",
        )
    })
}

/// Refuses an output path that is the store, its `-wal`, `-shm` or
/// `-journal` (the same file by device and inode, so a symlink or hard link
/// is caught; by resolved path while the store does not exist yet), or any
/// file that starts like a SQLite database or its write-ahead log.
fn check_not_a_store(path: &Path, option: &str, store_url: Option<&str>) -> Result<(), Fail> {
    use std::os::unix::fs::MetadataExt;
    let refuse = |what: String| {
        Err(Fail::usage(
            format!(
                "{option} {} is {what}; writing it would destroy the stored results",
                path.display()
            ),
            "give the output a file name of its own",
        ))
    };
    let store = store_path(store_url).ok();
    let family: Vec<PathBuf> = store
        .iter()
        .flat_map(|s| {
            ["", "-wal", "-shm", "-journal"].map(|suffix| {
                let mut p = s.clone().into_os_string();
                p.push(suffix);
                PathBuf::from(p)
            })
        })
        .collect();
    let target = std::fs::metadata(path).ok();
    for (i, member) in family.iter().enumerate() {
        let what = if i == 0 {
            format!("the store ({})", member.display())
        } else {
            format!("a file of the store ({})", member.display())
        };
        let same = match (&target, std::fs::metadata(member)) {
            (Some(t), Ok(m)) => t.dev() == m.dev() && t.ino() == m.ino(),
            (None, Err(_)) => resolved(path).is_some_and(|p| Some(p) == resolved(member)),
            _ => false,
        };
        if same {
            return refuse(what);
        }
    }
    if target.as_ref().is_some_and(|m| m.is_file()) {
        let mut head = [0u8; 16];
        let n = perfsleuth_model::input::open(path, Accept::Regular)
            .ok()
            .and_then(|(mut f, _)| std::io::Read::read(&mut f, &mut head).ok())
            .unwrap_or(0);
        if n == 16 && &head == b"SQLite format 3\0" {
            return refuse("a SQLite database (perhaps another perfsleuth store)".into());
        }
        // The write-ahead log's magic number, big-endian, either byte order flag.
        if n >= 4 && matches!(head[..4], [0x37, 0x7f, 0x06, 0x82 | 0x83]) {
            return refuse("a SQLite write-ahead log".into());
        }
        // The shared-memory index of a database in WAL mode (its version,
        // 3007000, in native byte order) and a rollback journal: another
        // live store's, whose process would lose what it writes next.
        if n >= 4 && head[..4] == 3_007_000u32.to_ne_bytes() {
            return refuse("a SQLite shared-memory index (another store's -shm)".into());
        }
        if n >= 8 && head[..8] == [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7] {
            return refuse("a SQLite rollback journal".into());
        }
    }
    Ok(())
}

/// The absolute path `path` will have once created: its directory resolved,
/// the name kept.
fn resolved(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?;
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    Some(std::fs::canonicalize(parent).ok()?.join(name))
}

/// The `--export-*` options given, each with its format and path.
pub fn requested_exports(args: &RunOptions) -> Vec<(ExportFormat, &PathBuf)> {
    [
        (ExportFormat::Json, &args.export_json),
        (ExportFormat::Csv, &args.export_csv),
        (ExportFormat::Markdown, &args.export_markdown),
        (ExportFormat::AsciiDoc, &args.export_asciidoc),
        (ExportFormat::OrgMode, &args.export_orgmode),
        (ExportFormat::Hyperfine, &args.export_hyperfine),
        (ExportFormat::Folded, &args.export_folded),
    ]
    .into_iter()
    .filter_map(|(format, path)| path.as_ref().map(|p| (format, p)))
    .collect()
}

/// `--export-json` for [`ExportFormat::Json`], for messages.
pub fn export_option(format: ExportFormat) -> String {
    format!("--export-{}", format.name())
}

/// Whether the human summary must go to stderr because an export owns stdout.
pub fn summary_to_stderr(args: &RunOptions) -> bool {
    requested_exports(args)
        .into_iter()
        .any(|(_, p)| p == Path::new("-"))
}

/// How a run's summary and table exports are shown: colour, unit, order.
#[derive(Debug, Clone, Copy)]
pub struct View {
    /// `--color` (or what `--style` made of it).
    pub color: ColorChoice,
    /// `--time-unit`.
    pub time_unit: Option<perfsleuth_report::TimeUnit>,
    /// `--sort`.
    pub sort: perfsleuth_report::SortOrder,
    /// `--style none`: no summary at all.
    pub quiet: bool,
}

impl View {
    /// The defaults, with this colour choice (`show`).
    pub fn plain(color: ColorChoice) -> View {
        View {
            color,
            time_unit: None,
            sort: perfsleuth_report::SortOrder::Auto,
            quiet: false,
        }
    }

    /// What `run`'s options ask for.
    pub fn of(args: &RunOptions) -> View {
        use crate::options::{SortChoice, TimeUnitChoice};
        use perfsleuth_report::{SortOrder, TimeUnit};
        View {
            color: args.color,
            time_unit: args.time_unit.map(|u| match u {
                TimeUnitChoice::Nanosecond => TimeUnit::Ns,
                TimeUnitChoice::Microsecond => TimeUnit::Us,
                TimeUnitChoice::Millisecond => TimeUnit::Ms,
                TimeUnitChoice::Second => TimeUnit::S,
            }),
            sort: match args.sort {
                SortChoice::Auto => SortOrder::Auto,
                SortChoice::Command => SortOrder::Command,
                SortChoice::MeanTime => SortOrder::MeanTime,
            },
            quiet: args.quiet,
        }
    }

    /// The run's report, ordered and in the unit asked for.
    fn report(&self, run: &Run, reference: Option<usize>) -> perfsleuth_report::RunReport {
        let mut report = analyze(run, reference);
        report.sort(self.sort);
        report.time_unit = self.time_unit;
        report
    }
}

/// Prints a run's human summary (the same renderer for `run` and `show`).
pub fn print_summary(run: &Run, reference: Option<usize>, view: &View, to_stderr: bool) {
    if view.quiet {
        return;
    }
    let style = Style::new(use_color(view.color, to_stderr));
    // Under simulation the clock measured valgrind, not the program: counts only.
    if run.mode == perfsleuth_model::Mode::Simulation {
        emit(
            &perfsleuth_report::render_simulation(run, reference, &style),
            to_stderr,
        );
        return;
    }
    let report = view.report(run, reference);
    emit(&render_terminal(run, &report, &style), to_stderr);
}

/// Writes the requested `--export-*` files.
pub fn write_exports(run: &Run, reference: Option<usize>, args: &RunOptions) -> Result<(), Fail> {
    write_exports_inner(run, reference, args).map_err(|mut f| {
        if let Some(id) = run.id {
            f.hint = format!(
                "the results are stored as run {id}; re-export with `perfsleuth show --json {id}`"
            );
        }
        f
    })
}

fn write_exports_inner(run: &Run, reference: Option<usize>, args: &RunOptions) -> Result<(), Fail> {
    let report = View::of(args).report(run, reference);
    for (format, path) in requested_exports(args) {
        let text = format
            .exporter()
            .export(run, &report)
            .map_err(|e| Fail::usage(e.to_string(), "please report this"))?;
        write_file(path, &text)?;
    }
    Ok(())
}

/// Writes `text` to `path`, or to stdout for `-`: the one writer of every
/// output file (`report -o`, `--export-*`, `--plot`).
///
/// What is at `path` decides how, and nothing that is not a regular file
/// it may write is ever replaced:
/// - nothing: written to a temporary file next to it and renamed into
///   place, so a reader never sees half of it and a failure leaves nothing;
/// - a regular file: the same, the temporary file taking the old one's
///   permissions (and owner, as root) first; through a symbolic link, the
///   file it names is replaced and the link kept; a file with other hard
///   links is rewritten in place, so the links keep seeing it;
/// - a character device or a FIFO (`/dev/stdout`, `/proc/self/fd/1`, a
///   pipe): written to, never renamed over; a FIFO nobody reads is an error
///   rather than a wait;
/// - a directory, a socket, a block device, a link to nothing: refused.
///
/// The temporary file is created exclusively (`O_CREAT | O_EXCL`, which
/// follows no link) under a name with the process id and a clock-derived
/// tag: a link or file planted there makes the create fail and the next
/// name is tried, so nothing planted can redirect the write.
pub fn write_file(path: &Path, text: &str) -> Result<(), Fail> {
    if path == Path::new("-") {
        emit(text, false);
        return Ok(());
    }
    write_output(path, text.as_bytes()).map_err(|e| {
        Fail::usage(
            format!("cannot write {}: {e}", path.display()),
            "check the path and its permissions",
        )
    })
}

fn write_output(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::{Error, ErrorKind};
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            if std::fs::symlink_metadata(path).is_ok() {
                return Err(Error::other("it is a symbolic link to nothing"));
            }
            return replace(path, bytes, None);
        }
        Err(e) => return Err(e),
    };
    let kind = meta.file_type();
    if meta.is_file() {
        let real = std::fs::canonicalize(path)?;
        if meta.nlink() > 1 {
            return write_in_place(&real, bytes, true);
        }
        return replace(&real, bytes, Some(&meta));
    }
    if kind.is_char_device() || kind.is_fifo() {
        return write_in_place(path, bytes, false);
    }
    Err(Error::other(if meta.is_dir() {
        "it is a directory"
    } else {
        "it is not a regular file, a character device or a FIFO"
    }))
}

/// Writes into what is already at `path`: a regular file (truncated first),
/// a character device or a FIFO. A FIFO is first opened without blocking,
/// so one that nobody reads fails at once; that descriptor stays open while
/// the blocking one is opened, so the reader never sees the writers go.
fn write_in_place(path: &Path, bytes: &[u8], truncate: bool) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let _probe = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ENXIO) {
                std::io::Error::other("it is a FIFO (named pipe) that nobody reads")
            } else {
                e
            }
        })?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .truncate(truncate)
        .open(path)?;
    file.write_all(bytes)?;
    file.flush()
}

/// Writes a temporary file next to `path` and renames it over `path`,
/// with the permissions (and, as root, the owner) of `old`.
fn replace(path: &Path, bytes: &[u8], old: Option<&std::fs::Metadata>) -> std::io::Result<()> {
    use std::io::{ErrorKind, Write};
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map_or("output".into(), |n| n.to_string_lossy().into_owned());
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    for attempt in 0..64u32 {
        let tmp = dir.join(format!(
            ".{name}.{}.{:x}.tmp",
            std::process::id(),
            seed.wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(u128::from(attempt))
                & 0xffff_ffff_ffff
        ));
        let mut file = match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o666)
            .open(&tmp)
        {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        };
        let written = (|| {
            if let Some(m) = old {
                // Owner first (only root may give a file away; a failure
                // keeps ours), then the mode, which a chown may clear.
                let _ = std::os::unix::fs::fchown(&file, Some(m.uid()), Some(m.gid()));
                file.set_permissions(std::fs::Permissions::from_mode(m.mode() & 0o7777))?;
            }
            file.write_all(bytes)?;
            file.sync_all()?;
            std::fs::rename(&tmp, path)
        })();
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        return written;
    }
    Err(std::io::Error::other(
        "no unused temporary file name next to it",
    ))
}

/// Whether two output paths name one file: both stdout, the same device
/// and inode, or (not there yet) the same resolved path.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let stdout = Path::new("-");
    if a == stdout || b == stdout {
        return a == b;
    }
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => resolved(a).is_some_and(|p| Some(p) == resolved(b)),
    }
}

/// Greys out secondary text when colour is on.
pub fn dim(text: &str, color: bool) -> String {
    if color {
        Style::new(true).dim(text.trim_end()) + "\n"
    } else {
        text.to_string()
    }
}

/// A run that starts now, in the current directory's git state, not yet stored.
pub fn new_run(
    mode: perfsleuth_model::Mode,
    options: serde_json::Value,
    environment: perfsleuth_model::Environment,
) -> Run {
    let cwd = std::env::current_dir().unwrap_or_else(|_| std::path::PathBuf::from("."));
    Run {
        id: None,
        uuid: None,
        started_at: perfsleuth_model::rfc3339(std::time::SystemTime::now()),
        ended_at: None,
        status: perfsleuth_model::RunStatus::Running,
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        git: crate::git::info(&cwd),
        mode,
        options,
        environment,
        benchmarks: Vec::new(),
        probes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_by_index_or_unique_name() {
        let names = ["a", "b", "b"];
        assert_eq!(resolve_reference(None, names.into_iter()).unwrap(), None);
        assert_eq!(
            resolve_reference(Some("2"), names.into_iter()).unwrap(),
            Some(1)
        );
        assert_eq!(
            resolve_reference(Some("a"), names.into_iter()).unwrap(),
            Some(0)
        );
        assert!(resolve_reference(Some("4"), names.into_iter()).is_err());
        assert!(resolve_reference(Some("c"), names.into_iter()).is_err());
        let err = resolve_reference(Some("b"), names.into_iter()).unwrap_err();
        assert!(err.message.contains("more than one"));
    }
}
