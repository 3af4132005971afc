//! The one SQL layer both backends speak, so every query is written once
//! (`queries`) and SQLite and PostgreSQL can never answer differently.
//!
//! Queries use SQLite's numbered placeholders (`?1`); the PostgreSQL backend
//! rewrites them to `$1`. Values cross as [`Val`], rows come back as
//! [`Row`]s of them. What the two dialects spell differently (JSON access)
//! is a [`Dialect`] method; everything else is SQL both accept.

use crate::error::StoreError;
use std::cell::Cell;
use std::path::{Path, PathBuf};

/// One SQL value, as bound or read.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    /// NULL.
    Null,
    /// An integer (SQLite INTEGER, PostgreSQL BIGINT/INTEGER).
    Int(i64),
    /// A float (REAL, DOUBLE PRECISION).
    Real(f64),
    /// Text.
    Text(String),
    /// A boolean: an INTEGER 0/1 in SQLite, a BOOLEAN in PostgreSQL.
    Bool(bool),
}

impl From<i64> for Val {
    fn from(v: i64) -> Val {
        Val::Int(v)
    }
}

impl From<u32> for Val {
    fn from(v: u32) -> Val {
        Val::Int(i64::from(v))
    }
}

impl From<i32> for Val {
    fn from(v: i32) -> Val {
        Val::Int(i64::from(v))
    }
}

impl From<f64> for Val {
    fn from(v: f64) -> Val {
        Val::Real(v)
    }
}

impl From<bool> for Val {
    fn from(v: bool) -> Val {
        Val::Bool(v)
    }
}

impl From<&str> for Val {
    fn from(v: &str) -> Val {
        Val::Text(v.to_string())
    }
}

impl From<String> for Val {
    fn from(v: String) -> Val {
        Val::Text(v)
    }
}

impl From<&String> for Val {
    fn from(v: &String) -> Val {
        Val::Text(v.clone())
    }
}

impl<T: Into<Val>> From<Option<T>> for Val {
    fn from(v: Option<T>) -> Val {
        v.map_or(Val::Null, Into::into)
    }
}

/// Builds an array of [`Val`]s from heterogeneous values.
/// Statements run by every store of this process, for tests that check a
/// read's cost does not grow with the data ([`statements_issued`]).
static STATEMENTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Counts one statement (both backends' `query` and `execute`).
pub(crate) fn count_statement() {
    STATEMENTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// Statements (queries and writes, transaction control aside) every store
/// of this process has run so far.
pub fn statements_issued() -> u64 {
    STATEMENTS.load(std::sync::atomic::Ordering::Relaxed)
}

macro_rules! vals {
    ($($v:expr),* $(,)?) => { [$($crate::sql::Val::from($v)),*] };
}
pub(crate) use vals;

/// One result row.
#[derive(Debug, Clone)]
pub struct Row(pub(crate) Vec<Val>);

impl Row {
    fn at(&self, i: usize) -> &Val {
        self.0.get(i).unwrap_or(&Val::Null)
    }

    fn wrong(&self, i: usize, want: &str) -> StoreError {
        StoreError::Corrupt {
            path: Path::new("store").to_path_buf(),
            detail: format!("column {i} is {:?}, expected {want}", self.at(i)),
        }
    }

    /// A non-NULL integer (a boolean reads as 0/1).
    pub(crate) fn int(&self, i: usize) -> Result<i64, StoreError> {
        self.opt_int(i)?.ok_or_else(|| self.wrong(i, "an integer"))
    }

    /// An integer or NULL.
    pub(crate) fn opt_int(&self, i: usize) -> Result<Option<i64>, StoreError> {
        match self.at(i) {
            Val::Null => Ok(None),
            Val::Int(v) => Ok(Some(*v)),
            Val::Bool(b) => Ok(Some(i64::from(*b))),
            _ => Err(self.wrong(i, "an integer")),
        }
    }

    /// A non-NULL text.
    pub(crate) fn text(&self, i: usize) -> Result<String, StoreError> {
        self.opt_text(i)?.ok_or_else(|| self.wrong(i, "text"))
    }

    /// A text or NULL.
    pub(crate) fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        Ok(self.opt_str(i)?.map(str::to_string))
    }

    /// A text or NULL, borrowed: a profile's JSON may be hundreds of
    /// megabytes, parsed where it lies rather than copied first.
    pub(crate) fn opt_str(&self, i: usize) -> Result<Option<&str>, StoreError> {
        match self.at(i) {
            Val::Null => Ok(None),
            Val::Text(s) => Ok(Some(s)),
            _ => Err(self.wrong(i, "text")),
        }
    }

    /// A number or NULL (an integer column reads as its value).
    pub(crate) fn opt_real(&self, i: usize) -> Result<Option<f64>, StoreError> {
        match self.at(i) {
            Val::Null => Ok(None),
            Val::Real(v) => Ok(Some(*v)),
            Val::Int(v) => Ok(Some(*v as f64)),
            _ => Err(self.wrong(i, "a number")),
        }
    }

    /// A number; NULL reads as NaN (SQLite stores NaN as NULL).
    pub(crate) fn real_or_nan(&self, i: usize) -> Result<f64, StoreError> {
        Ok(self.opt_real(i)?.unwrap_or(f64::NAN))
    }

    /// A boolean or NULL (SQLite's 0/1 or PostgreSQL's BOOLEAN).
    pub(crate) fn opt_bool(&self, i: usize) -> Result<Option<bool>, StoreError> {
        match self.at(i) {
            Val::Null => Ok(None),
            Val::Bool(b) => Ok(Some(*b)),
            Val::Int(v) => Ok(Some(*v != 0)),
            _ => Err(self.wrong(i, "a boolean")),
        }
    }

    /// A non-NULL boolean.
    pub(crate) fn bool(&self, i: usize) -> Result<bool, StoreError> {
        self.opt_bool(i)?.ok_or_else(|| self.wrong(i, "a boolean"))
    }
}

/// Which SQL dialect a backend speaks, for the few things spelled differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// SQLite 3.
    Sqlite,
    /// PostgreSQL.
    Postgres,
}

impl Dialect {
    /// The text value of top-level `key` of the JSON object in text column
    /// `column` (NULL when absent). `key` is ours, never user input.
    pub(crate) fn json_text(self, column: &str, key: &str) -> String {
        match self {
            Dialect::Sqlite => format!("json_extract({column}, '$.{key}')"),
            Dialect::Postgres => format!("(({column})::jsonb ->> '{key}')"),
        }
    }
}

/// What a handle keeps beside its connection, the same for both backends.
#[derive(Debug)]
pub struct Session {
    /// What error messages name: the SQLite file, or the database URL without its password.
    pub(crate) place: PathBuf,
    /// The project every run read or written belongs to ("" outside a server).
    pub(crate) project: String,
    /// How deep in [`transaction`] calls the connection is.
    pub(crate) depth: Cell<u32>,
}

impl Session {
    /// A session at `place`, in project "", outside any transaction.
    pub(crate) fn new(place: PathBuf) -> Session {
        Session {
            place,
            project: String::new(),
            depth: Cell::new(0),
        }
    }
}

/// The primitives the embedded and the server backend each provide; every
/// query is written once over them, as the provided methods of the role
/// traits ([`crate::RunWriter`], [`crate::RunReader`], [`crate::Admin`]).
///
/// Public only in name: this module is private, so no other crate can
/// implement it (and so the role traits) or call its methods.
pub trait Db {
    /// The dialect.
    fn dialect(&self) -> Dialect;
    /// Runs a query and returns all its rows.
    fn query(&self, sql: &str, params: &[Val]) -> Result<Vec<Row>, StoreError>;
    /// Runs a query and hands `each` its rows as they are read: a read of a
    /// million rows need not hold them, nor allocate one row each (both
    /// backends refill one buffer). `each` must not use the store: the
    /// statement is still reading.
    fn query_each(
        &self,
        sql: &str,
        params: &[Val],
        each: &mut dyn FnMut(&Row) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.query(sql, params)?.iter().try_for_each(each)
    }
    /// A token that changes whenever a commit (by any connection) may have
    /// changed what this handle reads; see [`crate::Backend::revision`].
    fn data_revision(&self) -> Result<String, StoreError>;
    /// Runs a statement and returns the number of rows it changed.
    fn execute(&self, sql: &str, params: &[Val]) -> Result<u64, StoreError>;
    /// Writes `rows` into `into` (`table (columns)`) by the backend's bulk
    /// path, if it has one; `false` when it has none and the caller is to
    /// insert them.
    fn copy_rows(&self, into: &str, rows: &[Vec<Val>]) -> Result<bool, StoreError> {
        let _ = (into, rows);
        Ok(false)
    }
    /// Runs `BEGIN` (for writing or reading), `COMMIT` or `ROLLBACK`.
    fn control(&self, op: TxOp) -> Result<(), StoreError>;
    /// The handle's place, project and transaction depth.
    fn session(&self) -> &Session;
    /// The same, to change the project.
    fn session_mut(&mut self) -> &mut Session;
}

/// A transaction control statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxOp {
    /// Begin a transaction that will write (takes the write lock at once in SQLite).
    BeginWrite,
    /// Begin a transaction that only reads: one consistent snapshot.
    BeginRead,
    /// Commit.
    Commit,
    /// Roll back.
    Rollback,
}

/// Runs `f` in one transaction (or inside the one already open), committing
/// when it succeeds and rolling back when it fails.
pub(crate) fn transaction<D: Db + ?Sized, R>(
    db: &D,
    write: bool,
    f: impl FnOnce() -> Result<R, StoreError>,
) -> Result<R, StoreError> {
    let depth = db.session().depth.get();
    if depth > 0 {
        db.session().depth.set(depth + 1);
        let r = f();
        db.session().depth.set(depth);
        return r;
    }
    db.control(if write {
        TxOp::BeginWrite
    } else {
        TxOp::BeginRead
    })?;
    db.session().depth.set(1);
    let r = f();
    db.session().depth.set(0);
    match r {
        Ok(v) => {
            if let Err(e) = db.control(TxOp::Commit) {
                let _ = db.control(TxOp::Rollback);
                return Err(e);
            }
            Ok(v)
        }
        Err(e) => {
            // The first error is the one to report; a failed rollback
            // leaves nothing committed either.
            let _ = db.control(TxOp::Rollback);
            Err(e)
        }
    }
}

/// Rewrites SQLite's `?N` placeholders as PostgreSQL's `$N`, outside quotes.
pub(crate) fn dollar_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quote: Option<char> = None;
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                if c == q {
                    quote = None;
                }
                out.push(c);
            }
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                out.push(c);
            }
            None if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) => out.push('$'),
            None => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_rewritten_outside_quotes_only() {
        assert_eq!(
            dollar_placeholders("SELECT a FROM t WHERE b = ?1 AND c = '?2' AND d = ?12"),
            "SELECT a FROM t WHERE b = $1 AND c = '?2' AND d = $12"
        );
        assert_eq!(dollar_placeholders("x ? y"), "x ? y");
    }

    #[test]
    fn rows_read_booleans_and_integers_either_way() {
        let r = Row(vec![Val::Int(1), Val::Bool(false), Val::Null, Val::Int(7)]);
        assert!(r.bool(0).unwrap());
        assert_eq!(r.int(1).unwrap(), 0);
        assert!(r.real_or_nan(2).unwrap().is_nan());
        assert_eq!(r.opt_real(3).unwrap(), Some(7.0));
        assert!(r.text(0).is_err());
    }
}
