//! The crate's errors. Most readers cannot fail the capture: what they could
//! not read becomes an `unknown` fact whose reason is the error's text, so
//! every error's text is written to be that reason.

use perfsleuth_model::input::{InputError, short_io_error};
use perfsleuth_model::{Environment, ImpactClass};
use std::fmt::Display;
use std::path::PathBuf;

/// Why a fact is unknown: the text recorded as the fact's reason. It is the
/// value itself, not an error a caller acts on, so it carries only the text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unknown(String);

impl From<String> for Unknown {
    fn from(reason: String) -> Unknown {
        Unknown(reason)
    }
}

impl From<&str> for Unknown {
    fn from(reason: &str) -> Unknown {
        Unknown(reason.to_string())
    }
}

impl From<EnvError> for Unknown {
    fn from(e: EnvError) -> Unknown {
        Unknown(e.to_string())
    }
}

/// A file or directory of a [`crate::Source`] that could not be read, or a
/// CPUID dump that could not be used.
#[derive(Debug, thiserror::Error)]
pub enum EnvError {
    /// A file under the root was missing, special or unreadable.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The path as asked for (absolute, as on the described machine).
        path: String,
        /// Why it was not read.
        source: InputError,
    },
    /// A path in a tree resolves to somewhere outside it (onto the live machine).
    #[error("{path} leads outside the tree (a symlink to {})", target.display())]
    OutsideTree {
        /// The path as asked for.
        path: String,
        /// Where it leads.
        target: PathBuf,
    },
    /// A one-line file held only white space.
    #[error("{path} is empty")]
    Empty {
        /// The path as asked for.
        path: String,
    },
    /// A directory under the root could not be listed.
    #[error("cannot list {path}: {}", short_io_error(source))]
    List {
        /// The path as asked for.
        path: String,
        /// Why it was not listed.
        source: std::io::Error,
    },
    /// A user-named CPUID dump could not be read.
    #[error("cannot read {}: {source}", path.display())]
    CpuidFile {
        /// The dump file.
        path: PathBuf,
        /// Why it was not read.
        source: InputError,
    },
    /// A CPUID dump was read but is not `cpuid -r` output.
    #[error("{}: {source}", path.display())]
    CpuidDump {
        /// The dump file.
        path: PathBuf,
        /// What is wrong with its text.
        source: CpuidError,
    },
}

/// Why a text is not a `cpuid -r` dump.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuidError {
    /// A line of another form (its number from 1, its first 60 characters).
    #[error("line {line}: not a `cpuid -r` line: {text}")]
    NotALine {
        /// The line number, from 1.
        line: usize,
        /// The start of the line.
        text: String,
    },
    /// No leaf at all.
    #[error("no CPUID values found")]
    Empty,
}

/// Why an ELF file could not be examined.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    /// The file could not be opened (missing, special, unreadable).
    #[error("cannot open {}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// Why it was not opened.
        source: InputError,
    },
    /// Reading the opened file failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The file does not start with the ELF magic.
    #[error("{} is not ELF", path.display())]
    NotElf {
        /// The file.
        path: PathBuf,
    },
    /// The headers or segments are damaged; the text says which and how.
    #[error("{0}")]
    Malformed(String),
    /// An ELF file of another machine than x86-64 (named), whose code is not decoded.
    #[error("not x86-64 ELF ({machine})")]
    NotX86_64 {
        /// The `e_machine` name.
        machine: String,
    },
    /// More executable code than is decoded, in MiB, with the limit.
    #[error("{mib} MiB of code: more than perfsleuth decodes ({limit_mib} MiB)")]
    TooMuchCode {
        /// The code's size.
        mib: u64,
        /// The most decoded.
        limit_mib: u64,
    },
}

/// Records facts whose reason, when unknown, is an error's text.
pub(crate) trait Record {
    /// [`Environment::set_read`] with the error's text as the reason.
    fn record(
        &mut self,
        key: impl Into<String>,
        value: Result<String, impl Display>,
        class: ImpactClass,
    );
}

impl Record for Environment {
    fn record(
        &mut self,
        key: impl Into<String>,
        value: Result<String, impl Display>,
        class: ImpactClass,
    ) {
        self.set_read(key, value.map_err(|e| e.to_string()), class);
    }
}
