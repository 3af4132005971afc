//! Shared plumbing of the commands: opening the store, printing summaries,
//! writing exports, resolving `--reference`.

use crate::cli::{ColorChoice, RunArgs};
use crate::error::Fail;
use crate::term::{emit, use_color};
use perfsleuth_model::Run;
use perfsleuth_report::{
    Style, analyze, export_csv, export_json, render_markdown, render_terminal,
};
use perfsleuth_store::{Store, StoreError};
use std::path::{Path, PathBuf};

/// The store path from `--store`, else `PERFSLEUTH_STORE`, else the default
/// location. (The variable is read here, not by clap, so that `--no-store`
/// conflicts only with an explicit `--store`.)
pub fn store_path(url: Option<&str>) -> Result<PathBuf, Fail> {
    let from_env = std::env::var("PERFSLEUTH_STORE")
        .ok()
        .filter(|v| !v.is_empty());
    match url.or(from_env.as_deref()) {
        Some(url) => Store::path_from_url(url).map_err(store_fail),
        None => {
            let cwd = std::env::current_dir().map_err(|e| {
                Fail::usage(
                    format!("cannot read the current directory: {e}"),
                    "cd into an existing directory",
                )
            })?;
            Store::default_path(&cwd, std::env::var_os("XDG_DATA_HOME").as_deref(), std::env::var_os("HOME").as_deref())
                .ok_or_else(|| Fail::usage("no default store location: not in a git repository and neither XDG_DATA_HOME nor HOME is set", "pass --store sqlite:PATH"))
        }
    }
}

/// Opens (creating if needed) the store for writing.
pub fn open_store(url: Option<&str>) -> Result<Store, Fail> {
    Store::open(&store_path(url)?).map_err(store_fail)
}

/// Opens an existing store for reading.
pub fn open_existing_store(url: Option<&str>) -> Result<Store, Fail> {
    Store::open_existing(&store_path(url)?).map_err(store_fail)
}

/// Store errors carry the path and a hint in one line; the hint goes on its
/// own line like every other error's.
pub fn store_fail(e: StoreError) -> Fail {
    let text = e.to_string();
    match text.split_once(" (hint: ") {
        Some((message, hint)) => Fail::usage(message, hint.strip_suffix(')').unwrap_or(hint)),
        None => Fail::usage(text, "check the --store path"),
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
                format!("--reference `{spec}` matches no benchmark"),
                format!("names are: {}", names.join(", ")),
            )
        })
}

/// Fails early when an export path cannot be written, so a long run is not
/// wasted on a typo.
pub fn check_writable(path: &Path, option: &str) -> Result<(), Fail> {
    if path == Path::new("-") {
        return Ok(());
    }
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
    let probe = if path.exists() {
        std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(|_| ())
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

/// Whether the human summary must go to stderr because an export owns stdout.
pub fn summary_to_stderr(args: &RunArgs) -> bool {
    [&args.export_json, &args.export_csv, &args.export_markdown]
        .into_iter()
        .flatten()
        .any(|p| p == Path::new("-"))
}

/// Prints a run's human summary (the same renderer for `run` and `show`).
pub fn print_summary(run: &Run, reference: Option<usize>, color: ColorChoice, to_stderr: bool) {
    let style = Style {
        color: use_color(color, to_stderr),
    };
    // Under simulation the clock measured valgrind, not the program: counts only.
    if run.mode == perfsleuth_model::Mode::Simulation {
        emit(
            &perfsleuth_report::render_simulation(run, reference, &style),
            to_stderr,
        );
        return;
    }
    let report = analyze(run, reference);
    emit(&render_terminal(run, &report, &style), to_stderr);
}

/// Writes the requested `--export-*` files.
pub fn write_exports(run: &Run, reference: Option<usize>, args: &RunArgs) -> Result<(), Fail> {
    write_exports_inner(run, reference, args).map_err(|mut f| {
        if let Some(id) = run.id {
            f.hint = format!(
                "the results are stored as run {id}; re-export with `perfsleuth show --json {id}`"
            );
        }
        f
    })
}

fn write_exports_inner(run: &Run, reference: Option<usize>, args: &RunArgs) -> Result<(), Fail> {
    let report = analyze(run, reference);
    if let Some(path) = &args.export_json {
        let doc = export_json(run, &report);
        let text = perfsleuth_model::schema::to_json_pretty(&doc).map_err(|e| {
            Fail::usage(format!("cannot serialise JSON: {e}"), "please report this")
        })?;
        write_file(path, &text)?;
    }
    if let Some(path) = &args.export_csv {
        write_file(path, &export_csv(run))?;
    }
    if let Some(path) = &args.export_markdown {
        let md = if run.mode == perfsleuth_model::Mode::Simulation {
            perfsleuth_report::render_simulation_markdown(run)
        } else {
            render_markdown(run, &report)
        };
        write_file(path, &md)?;
    }
    Ok(())
}

/// Writes `text` to a file, or to stdout for `-`.
pub fn write_file(path: &Path, text: &str) -> Result<(), Fail> {
    if path == Path::new("-") {
        emit(text, false);
        return Ok(());
    }
    std::fs::write(path, text).map_err(|e| {
        Fail::usage(
            format!("cannot write {}: {e}", path.display()),
            "check the path and its permissions",
        )
    })
}

/// Greys out secondary text when colour is on.
pub fn dim(text: &str, color: bool) -> String {
    if color {
        format!("\x1b[2m{}\x1b[0m\n", text.trim_end())
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

/// A private temporary directory, removed with its contents when dropped.
pub struct ScratchDir {
    dir: PathBuf,
}

impl ScratchDir {
    /// Creates `$TMPDIR/perfsleuth-WHAT-PID-N`.
    pub fn new(what: &str) -> Result<ScratchDir, Fail> {
        let base = std::env::temp_dir();
        let fail = |e: String| {
            Fail::usage(
                format!(
                    "cannot create a temporary directory in {}: {e}",
                    base.display()
                ),
                "set TMPDIR to a writable directory",
            )
        };
        for attempt in 0..100u32 {
            let dir = base.join(format!(
                "perfsleuth-{what}-{}-{attempt}",
                std::process::id()
            ));
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(ScratchDir { dir }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(fail(e.to_string())),
            }
        }
        Err(fail("every candidate name is taken".into()))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
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
