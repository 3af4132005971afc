//! A process's memory map (`/proc/PID/maps`), read while it runs.

use std::path::PathBuf;

/// One mapping of a file (anonymous mappings are kept for the futex
/// address's class, stack or heap).
#[derive(Debug, Clone, PartialEq)]
pub struct Mapping {
    /// The first address.
    pub start: u64,
    /// The address past the end.
    pub end: u64,
    /// The file offset mapped at `start`.
    pub offset: u64,
    /// Mapped executable (code).
    pub executable: bool,
    /// The file, or the pseudo-path (`[stack]`, `[heap]`), or `None`.
    pub path: Option<PathBuf>,
}

/// The mappings of one process, sorted by address.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Maps {
    /// The mappings, sorted by start address.
    pub mappings: Vec<Mapping>,
}

impl Maps {
    /// Reads `/proc/PID/maps`; `None` when the process is gone.
    pub fn read(pid: u32) -> Option<Maps> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/maps")).ok()?;
        Some(Maps::parse(&text))
    }

    /// Parses the text of a maps file; malformed lines are skipped.
    pub fn parse(text: &str) -> Maps {
        let mut mappings: Vec<Mapping> = text.lines().filter_map(parse_line).collect();
        mappings.sort_by_key(|m| m.start);
        Maps { mappings }
    }

    /// The mapping holding `addr`.
    pub fn find(&self, addr: u64) -> Option<&Mapping> {
        let i = self.mappings.partition_point(|m| m.start <= addr);
        let m = self.mappings.get(i.checked_sub(1)?)?;
        (addr < m.end).then_some(m)
    }

    /// Whether `addr` is in a mapped file's executable mapping.
    pub fn covers(&self, addr: u64) -> bool {
        self.find(addr)
            .is_some_and(|m| m.executable && m.path.is_some())
    }

    /// The files mapped, each once, in address order.
    pub fn files(&self) -> Vec<&PathBuf> {
        let mut out: Vec<&PathBuf> = Vec::new();
        for m in &self.mappings {
            if let Some(p) = &m.path
                && p.is_absolute()
                && !out.contains(&p)
            {
                out.push(p);
            }
        }
        out
    }
}

fn parse_line(line: &str) -> Option<Mapping> {
    let mut f = line.split_ascii_whitespace();
    let (start, end) = f.next()?.split_once('-')?;
    let perms = f.next()?;
    let offset = u64::from_str_radix(f.next()?, 16).ok()?;
    let _dev = f.next()?;
    let _inode = f.next()?;
    // The path may contain spaces; it is the rest of the line.
    let rest: Vec<&str> = f.collect();
    let path = (!rest.is_empty()).then(|| PathBuf::from(rest.join(" ")));
    Some(Mapping {
        start: u64::from_str_radix(start, 16).ok()?,
        end: u64::from_str_radix(end, 16).ok()?,
        offset,
        executable: perms.as_bytes().get(2) == Some(&b'x'),
        path,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_files_anonymous_and_pseudo_mappings() {
        let m = Maps::parse(
            "55d0a0000000-55d0a0001000 r--p 00000000 fd:01 123 /usr/bin/a b\n\
             55d0a0001000-55d0a0005000 r-xp 00001000 fd:01 123 /usr/bin/a b\n\
             55d0a0100000-55d0a0121000 rw-p 00000000 00:00 0 [heap]\n\
             7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0\n\
             garbage\n",
        );
        assert_eq!(m.mappings.len(), 4);
        let exec = m.find(0x55d0a0001234).unwrap();
        assert!(exec.executable);
        assert_eq!(exec.offset, 0x1000);
        assert_eq!(
            exec.path.as_deref(),
            Some(std::path::Path::new("/usr/bin/a b"))
        );
        assert!(m.covers(0x55d0a0004fff));
        assert!(!m.covers(0x55d0a0005000));
        assert!(!m.covers(0x55d0a0100010), "the heap is not code");
        assert_eq!(m.find(0x7ffd00000010).unwrap().path, None);
        assert_eq!(m.files().len(), 1);
    }
}
