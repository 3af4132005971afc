//! Where a store lives: `--store` values and the default location.

use crate::error::StoreError;
use crate::{PgStore, SqliteStore, Store};
use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

/// Where a store is, as named by `--store`: a SQLite file or a PostgreSQL database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreUrl {
    /// `sqlite:PATH` or a bare path.
    Sqlite(PathBuf),
    /// `postgres://…` or `postgresql://…`, as given (with any password).
    Postgres(String),
}

impl StoreUrl {
    /// Parses a `--store` value.
    pub fn parse(url: &str) -> Result<StoreUrl, StoreError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(StoreUrl::Postgres(url.to_string()));
        }
        SqliteStore::path_from_url(url).map(StoreUrl::Sqlite)
    }

    /// Opens the store, creating it (or its tables) if needed.
    pub fn open(&self) -> Result<Box<dyn Store + Send>, StoreError> {
        Ok(match self {
            StoreUrl::Sqlite(path) => Box::new(SqliteStore::open(path)?),
            StoreUrl::Postgres(url) => Box::new(PgStore::connect(url)?),
        })
    }

    /// Opens a store that must exist already (for reading): a missing
    /// SQLite file is [`StoreError::NoResults`]; a PostgreSQL database is
    /// prepared as by [`StoreUrl::open`], since its existence is the server's.
    pub fn open_existing(&self) -> Result<Box<dyn Store + Send>, StoreError> {
        Ok(match self {
            StoreUrl::Sqlite(path) => Box::new(SqliteStore::open_existing(path)?),
            StoreUrl::Postgres(url) => Box::new(PgStore::connect(url)?),
        })
    }

    /// The store as error messages and listings name it (no password).
    pub fn display(&self) -> String {
        match self {
            StoreUrl::Sqlite(path) => path.display().to_string(),
            StoreUrl::Postgres(url) => crate::postgres::redact(url),
        }
    }
}

/// SQLite opens the name `:memory:` as a database in memory, gone when the
/// process ends: a store there would say "Stored as run 1" and keep nothing.
fn memory_refused(path: &str, url: &str) -> Result<(), StoreError> {
    if path == ":memory:" {
        return Err(StoreError::UnsupportedUrl {
            url: url.to_string(),
            reason: "`:memory:` is a SQLite database in memory that keeps nothing once perfsleuth exits; give a file (`./:memory:` for a file of that name)".into(),
        });
    }
    Ok(())
}

impl SqliteStore {
    /// Parses `--store` values: "sqlite:PATH" or a bare PATH. Anything else (e.g. "postgres://…") -> error naming the supported schemes.
    pub fn path_from_url(url: &str) -> Result<PathBuf, StoreError> {
        let bad = |reason: String| StoreError::UnsupportedUrl {
            url: url.to_string(),
            reason,
        };
        if url.is_empty() {
            return Err(bad("the value is empty".into()));
        }
        if let Some(rest) = url.strip_prefix("sqlite:") {
            // Accept the URL spelling too: sqlite:///abs/path and sqlite://rel/path.
            let rest = rest.strip_prefix("//").unwrap_or(rest);
            if rest.is_empty() {
                return Err(bad("no path after `sqlite:`".into()));
            }
            return memory_refused(rest, url).map(|()| PathBuf::from(rest));
        }
        memory_refused(url, url)?;
        // Only `scheme://` counts as a URL, so a file named `a:b.db` still works.
        if let Some((scheme, _)) = url.split_once("://") {
            let looks_like_scheme = scheme
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic())
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
            if looks_like_scheme {
                return Err(bad(format!(
                    "scheme `{scheme}` is not supported; the supported schemes are `sqlite` and `postgres`"
                )));
            }
        }
        Ok(PathBuf::from(url))
    }

    /// Default location: `<git-toplevel>/.perfsleuth/results.db` inside a git work tree, else under `$XDG_DATA_HOME`, else under `$HOME/.local/share`; `cwd` should be absolute.
    pub fn default_path(
        cwd: &Path,
        xdg_data_home: Option<&OsStr>,
        home: Option<&OsStr>,
    ) -> Option<PathBuf> {
        // `.git` is a file in worktrees and submodules, hence symlink_metadata, not is_dir.
        if let Some(top) = cwd
            .ancestors()
            .find(|dir| dir.join(".git").symlink_metadata().is_ok())
        {
            return Some(top.join(".perfsleuth").join("results.db"));
        }
        // The XDG spec says relative values are invalid and must be ignored.
        if let Some(xdg) = xdg_data_home.map(Path::new).filter(|p| p.is_absolute()) {
            return Some(xdg.join("perfsleuth").join("results.db"));
        }
        let home = home.filter(|h| !h.is_empty())?;
        Some(Path::new(home).join(".local/share/perfsleuth/results.db"))
    }
}

/// Writes `.perfsleuth/.gitignore` so a store inside a work tree never dirties it.
pub(crate) fn ensure_gitignore(path: &Path) -> Result<(), StoreError> {
    let Some(dir) = path.parent() else {
        return Ok(());
    };
    if dir.file_name() != Some(OsStr::new(".perfsleuth")) {
        return Ok(());
    }
    let ignore = dir.join(".gitignore");
    if ignore.symlink_metadata().is_ok() {
        return Ok(());
    }
    // create_new: two processes racing here must not clobber each other or a user's file.
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&ignore)
        .and_then(|mut f| io::Write::write_all(&mut f, b"*\n"));
    match written {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(StoreError::Unwritable {
            path: ignore,
            detail: e.to_string(),
        }),
    }
}
