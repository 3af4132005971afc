//! The one way perfsleuth opens a file someone else named: a user's
//! argument, a path in a copied `/` tree, a program found on `PATH`.
//!
//! `std::fs::read` on such a path can hang (a FIFO blocks in `open` until a
//! writer appears), never end (`/dev/zero`), or exhaust memory (a 4 GB file
//! read whole). Here the file is opened with `O_NONBLOCK` — which never
//! blocks in `open` and is ignored by regular files — and then `fstat`ed,
//! so what is checked is the file actually opened, not a name that could
//! be swapped in between. Only regular files are read unless the caller
//! allows a FIFO or pipe (process substitution, `<(…)`), and never more
//! than the caller's limit.

use std::fmt;
use std::fs::File;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

/// What kinds of file a reader accepts besides regular files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accept {
    /// Regular files only.
    Regular,
    /// Regular files, FIFOs and pipes (`<(cmd)`); a FIFO nobody writes to reads as empty.
    RegularOrPipe,
}

/// A file that is not something perfsleuth reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Special {
    /// A directory.
    Directory,
    /// A FIFO (named pipe) or pipe.
    Fifo,
    /// A character device (`/dev/zero`, a terminal).
    CharDevice,
    /// A block device (a disk).
    BlockDevice,
    /// A Unix socket.
    Socket,
}

impl Special {
    /// "a FIFO (named pipe)", for "PATH is a FIFO (named pipe)".
    pub fn describe(self) -> &'static str {
        match self {
            Special::Directory => "a directory",
            Special::Fifo => "a FIFO (named pipe)",
            Special::CharDevice => "a character device",
            Special::BlockDevice => "a block device",
            Special::Socket => "a socket",
        }
    }

    fn of(kind: std::fs::FileType) -> Option<Special> {
        if kind.is_file() {
            None
        } else if kind.is_dir() {
            Some(Special::Directory)
        } else if kind.is_fifo() {
            Some(Special::Fifo)
        } else if kind.is_char_device() {
            Some(Special::CharDevice)
        } else if kind.is_block_device() {
            Some(Special::BlockDevice)
        } else {
            Some(Special::Socket)
        }
    }
}

/// Why a file was not read.
#[derive(Debug)]
pub enum InputError {
    /// Nothing at that path (or a dangling symlink).
    NotFound,
    /// A symlink loop.
    Loop,
    /// Not a regular file (nor an accepted pipe).
    Special(Special),
    /// Larger than the limit, in bytes.
    TooLarge(u64),
    /// Any other I/O error.
    Io(std::io::Error),
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::NotFound => f.write_str("No such file or directory"),
            InputError::Loop => f.write_str("a symlink loop (too many levels of symbolic links)"),
            InputError::Special(s) => write!(f, "{}, not a regular file", s.describe()),
            InputError::TooLarge(limit) => write!(f, "larger than {}", size_text(*limit)),
            InputError::Io(e) => f.write_str(&short_io_error(e)),
        }
    }
}

impl std::error::Error for InputError {}

/// `16 MiB` for limits in messages.
fn size_text(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else if bytes >= 1024 && bytes % 1024 == 0 {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// "Permission denied" rather than "Permission denied (os error 13)".
pub fn short_io_error(e: &std::io::Error) -> String {
    let text = e.to_string();
    match text.find(" (os error") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

fn open_error(e: std::io::Error) -> InputError {
    match e.kind() {
        ErrorKind::NotFound => InputError::NotFound,
        _ if e.raw_os_error() == Some(libc::ELOOP) => InputError::Loop,
        _ => InputError::Io(e),
    }
}

/// Opens `path` for reading without ever blocking, and returns it with what
/// kind of file it is; anything `accept` does not allow is an error.
pub fn open(path: &Path, accept: Accept) -> Result<(File, Option<Special>), InputError> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(open_error)?;
    let meta = file.metadata().map_err(InputError::Io)?;
    match Special::of(meta.file_type()) {
        None => Ok((file, None)),
        Some(Special::Fifo) if accept == Accept::RegularOrPipe => Ok((file, Some(Special::Fifo))),
        Some(special) => Err(InputError::Special(special)),
    }
}

/// The bytes of `path`, at most `limit` of them (more is an error).
pub fn read(path: &Path, limit: u64, accept: Accept) -> Result<Vec<u8>, InputError> {
    let (file, special) = open(path, accept)?;
    match special {
        None => read_limited(file, limit),
        Some(_) => read_pipe(file, limit),
    }
}

/// [`read`] as text; invalid UTF-8 is replaced, as every parser here
/// reports what it cannot understand rather than failing on encoding.
pub fn read_text(path: &Path, limit: u64, accept: Accept) -> Result<String, InputError> {
    read(path, limit, accept).map(into_text)
}

/// The most a user-named data file (a CSV to fit, another tool's results)
/// may hold, and the most a command's standard output is read for one:
/// 256 MiB; more is refused unread.
pub const MAX_DATA_BYTES: u64 = 256 << 20;

/// Largest JSON document read (an export of a million samples is ~330 MB).
pub const MAX_DOCUMENT_BYTES: u64 = 512 * 1024 * 1024;

/// The text of `path` (regular or a pipe), or of standard input when `path`
/// is `-`; at most `limit` bytes.
pub fn read_text_or_stdin(path: &Path, limit: u64) -> Result<String, InputError> {
    if path == Path::new("-") {
        read_stdin_text(limit)
    } else {
        read_text(path, limit, Accept::RegularOrPipe)
    }
}

/// What to call `path` in a message about reading it: "stdin" for `-`.
pub fn input_name(path: &Path) -> String {
    if path == Path::new("-") {
        "stdin".to_string()
    } else {
        path.display().to_string()
    }
}

/// Standard input, at most `limit` bytes (more is an error).
pub fn read_stdin_text(limit: u64) -> Result<String, InputError> {
    read_limited(std::io::stdin().lock(), limit).map(into_text)
}

fn into_text(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

fn read_limited(r: impl Read, limit: u64) -> Result<Vec<u8>, InputError> {
    let mut bytes = Vec::new();
    r.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(InputError::Io)?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge(limit));
    }
    Ok(bytes)
}

/// A pipe opened non-blocking: an empty pipe with a writer says "would
/// block", so wait a little and try again; no writer left is the end.
fn read_pipe(mut file: File, limit: u64) -> Result<Vec<u8>, InputError> {
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match file.read(&mut chunk) {
            Ok(0) => return Ok(bytes),
            Ok(n) => {
                bytes.extend_from_slice(&chunk[..n]);
                if bytes.len() as u64 > limit {
                    return Err(InputError::TooLarge(limit));
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(InputError::Io(e)),
        }
    }
}

/// A line of a user's text file (a CSV) that cannot be used; line 0 means
/// the file as a whole. `scale fit` and `history fit` report through it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line number (0: the file as a whole).
    pub line: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "line {}: {}", self.line, self.message)
        }
    }
}

impl std::error::Error for LineError {}

/// The separator of a CSV file from its first two lines (the header, or
/// two rows): the first of `;`, `,` and a tab that splits both into the same
/// number of cells, at least two — `;` before `,` since where it separates,
/// `,` is the decimal comma of European spreadsheets; else the first of
/// them the first line holds; else `fallback`. The one rule of every CSV
/// reader here (`scale fit`, `history fit`).
pub fn csv_separator(first: &str, second: Option<&str>, fallback: char) -> char {
    const CANDIDATES: [char; 3] = [';', ',', '\t'];
    let consistent = |sep: char| {
        let n = csv_cells(first, sep).len();
        n >= 2 && second.is_none_or(|l| csv_cells(l, sep).len() == n)
    };
    CANDIDATES
        .into_iter()
        .find(|c| first.contains(*c) && consistent(*c))
        .or_else(|| CANDIDATES.into_iter().find(|c| first.contains(*c)))
        .unwrap_or(fallback)
}

/// One CSV line's cells, split on `sep`: double quotes group (a doubled
/// quote inside is one quote), cells are trimmed, and control characters
/// become U+FFFD, since names and labels are printed to a terminal and a
/// file's escape sequences must not reach it. With `sep` a space, runs of
/// blanks separate once. The one splitter of every CSV reader here; the
/// `csv` crate would add only the quoting, not the separator sniffing,
/// line-numbered errors or the decimal comma its readers need.
pub fn csv_cells(line: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            c if c == sep && !quoted => out.push(std::mem::take(&mut cur).trim().to_string()),
            c if c.is_control() && c != '\t' => cur.push('\u{FFFD}'),
            c => cur.push(c),
        }
    }
    out.push(cur.trim().to_string());
    if sep == ' ' {
        out.retain(|c| !c.is_empty());
    }
    out
}

/// A CSV cell as a number: with `;` as the separator a decimal comma reads
/// as a point (`2,5` is 2.5).
pub fn csv_number(cell: &str, sep: char) -> Option<f64> {
    if sep == ';' {
        cell.replace(',', ".").parse().ok()
    } else {
        cell.parse().ok()
    }
}

#[cfg(test)]
mod csv_tests {
    use super::*;

    #[test]
    fn cells_are_split_alike_for_every_reader() {
        assert_eq!(csv_separator("N;X", Some("1;2,5"), ','), ';');
        assert_eq!(csv_separator("1;2,5", None, ','), ';');
        assert_eq!(csv_separator("a,b", None, ' '), ',');
        assert_eq!(csv_separator("1\t2", None, ' '), '\t');
        assert_eq!(csv_separator("1   2", None, ' '), ' ');
        // A `;` inside a name does not win over the `,` that splits the rows alike.
        assert_eq!(csv_separator("label,a;b", Some("x,1"), ','), ',');
        assert_eq!(
            csv_cells(r#" a ,"b,c", "say ""hi""" "#, ','),
            ["a", "b,c", r#"say "hi""#]
        );
        assert_eq!(csv_cells("1   2 ", ' '), ["1", "2"]);
        assert_eq!(csv_cells("x\u{1b}[31m,1", ','), ["x\u{FFFD}[31m", "1"]);
        assert_eq!(csv_number("2,5", ';'), Some(2.5));
        assert_eq!(csv_number("2,5", ','), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn dir(name: &str) -> std::path::PathBuf {
        let d =
            std::env::temp_dir().join(format!("perfsleuth-input-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn mkfifo(path: &Path) {
        let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
        assert!(ok, "mkfifo failed");
    }

    #[test]
    fn regular_files_are_read_up_to_the_limit() {
        let d = dir("regular");
        let f = d.join("a");
        std::fs::write(&f, "12345").unwrap();
        assert_eq!(read_text(&f, 5, Accept::Regular).unwrap(), "12345");
        let e = read(&f, 4, Accept::Regular).unwrap_err();
        assert_eq!(e.to_string(), "larger than 4 bytes");
        assert!(matches!(
            read(&d.join("missing"), 5, Accept::Regular),
            Err(InputError::NotFound)
        ));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn devices_directories_fifos_and_loops_are_named_not_read() {
        let d = dir("special");
        let zero = read(Path::new("/dev/zero"), 1 << 20, Accept::RegularOrPipe).unwrap_err();
        assert_eq!(zero.to_string(), "a character device, not a regular file");
        let e = read(&d, 10, Accept::Regular).unwrap_err();
        assert_eq!(e.to_string(), "a directory, not a regular file");
        let fifo = d.join("fifo");
        mkfifo(&fifo);
        // Would block forever in a plain open: nobody ever writes to it.
        let e = read(&fifo, 10, Accept::Regular).unwrap_err();
        assert_eq!(e.to_string(), "a FIFO (named pipe), not a regular file");
        assert_eq!(read(&fifo, 10, Accept::RegularOrPipe).unwrap(), b"");
        let a = d.join("loop-a");
        std::os::unix::fs::symlink(d.join("loop-b"), &a).unwrap();
        std::os::unix::fs::symlink(&a, d.join("loop-b")).unwrap();
        assert!(matches!(
            read(&a, 10, Accept::Regular),
            Err(InputError::Loop)
        ));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_accepted_fifo_is_read_to_its_writers_end_within_the_limit() {
        let d = dir("pipe");
        let fifo = d.join("fifo");
        mkfifo(&fifo);
        // A reader held open lets the writer open without blocking, so the
        // writer exists before `read` looks: no race with a writer starting late.
        let (_holder, _) = open(&fifo, Accept::RegularOrPipe).unwrap();
        let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        std::io::Write::write_all(&mut w, b"one\n").unwrap();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            std::io::Write::write_all(&mut w, b"two\n").unwrap();
        });
        assert_eq!(
            read_text(&fifo, 1000, Accept::RegularOrPipe).unwrap(),
            "one\ntwo\n"
        );
        writer.join().unwrap();
        let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
        std::io::Write::write_all(&mut w, b"0123456789").unwrap();
        drop(w);
        let e = read(&fifo, 5, Accept::RegularOrPipe).unwrap_err();
        assert_eq!(e.to_string(), "larger than 5 bytes");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
