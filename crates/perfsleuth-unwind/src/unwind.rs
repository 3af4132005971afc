//! Unwinding a sampled user stack with the files' DWARF call frame
//! information (`.eh_frame`), falling back to frame pointers, and naming
//! each frame.
//!
//! Why not the kernel's frame-pointer stack alone: glibc and most programs
//! are built without frame pointers, so the kernel's walk skips exactly the
//! frame that matters (the function that took the lock) or stops at once.
//! The sample carries the registers and the top of the stack instead, and
//! `.eh_frame` is in every binary, stripped or not.

use crate::elf::{Module, Step};
use crate::maps::Maps;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

/// The deepest stack unwound.
const MAX_FRAMES: usize = 48;

/// A copy of the top of a thread's user stack and the registers the
/// unwinding starts from, as a sample took them.
#[derive(Debug, Clone, Copy)]
pub struct UserStack<'a> {
    /// The instruction pointer.
    pub ip: u64,
    /// The stack pointer: the address of `stack[0]`.
    pub sp: u64,
    /// The frame pointer (`rbp`).
    pub bp: u64,
    /// The bytes from `sp` upwards.
    pub stack: &'a [u8],
}

/// One named frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Frame {
    /// The function's name (demangled), or `file+0xoffset` where unnamed.
    pub function: String,
    /// `file:line` where known.
    pub line: Option<String>,
    /// The binary or library's file name.
    pub file: String,
    /// The source file's full path, where the line tables have it.
    pub source: Option<String>,
    /// In a system library (libc, libstdc++…), not the program's own code.
    pub system: bool,
    /// Inlined into the frame after it (its caller), as the line tables say.
    pub inlined: bool,
}

impl Frame {
    /// `function (file:line)` or `function (library)`.
    pub fn display(&self) -> String {
        format!("{} ({})", self.function, self.where_())
    }

    /// `file:line`, else the file the code is in.
    pub fn where_(&self) -> String {
        self.line.clone().unwrap_or_else(|| self.file.clone())
    }
}

/// What one code address of a file says: how to step past it, its names.
type Known = (Option<Step>, Vec<crate::elf::Named>);

/// Parsed files, each read once per trace, and what each code address
/// said, so that many samples of one call path cost one lookup.
#[derive(Default)]
pub struct Symbolizer {
    modules: HashMap<PathBuf, Option<Rc<Module>>>,
    known: HashMap<(PathBuf, u64), Rc<Known>>,
}

impl Symbolizer {
    fn module(&mut self, path: &Path) -> Option<Rc<Module>> {
        self.modules
            .entry(path.to_path_buf())
            .or_insert_with(|| Module::load(path).map(Rc::new))
            .clone()
    }

    /// The module and file address of a code address.
    fn locate(&mut self, maps: &Maps, pc: u64) -> Option<(Rc<Module>, u64)> {
        let m = maps.find(pc).filter(|m| m.executable)?;
        let path = m.path.as_ref()?;
        let module = if path.as_os_str() == VDSO {
            // No file: the kernel maps one image into every process, so
            // this process's own stands for the program's.
            self.modules
                .entry(path.clone())
                .or_insert_with(|| own_vdso().map(Rc::new))
                .clone()?
        } else {
            self.module(Some(path).filter(|p| p.is_absolute())?)?
        };
        let addr = module.address_of_offset(pc - m.start + m.offset)?;
        Some((module, addr))
    }

    /// The stack's frames, innermost first; empty when nothing could be read.
    pub fn unwind(&mut self, s: &UserStack<'_>, maps: &Maps) -> Vec<Frame> {
        let read = |addr: u64| -> Option<u64> {
            let at = usize::try_from(addr.checked_sub(s.sp)?).ok()?;
            Some(u64::from_ne_bytes(
                s.stack.get(at..at + 8)?.try_into().ok()?,
            ))
        };
        let mut frames = Vec::new();
        let (mut pc, mut sp, mut bp) = (s.ip, s.sp, s.bp);
        for depth in 0..MAX_FRAMES {
            // A return address points after the call: look up the call itself.
            let probe = if depth == 0 { pc } else { pc.wrapping_sub(1) };
            let Some(known) = self.name_into(maps, probe, &mut frames) else {
                break;
            };
            let next = match known.0 {
                Some(Step::End) => break,
                Some(Step::Cfa {
                    rbp_based,
                    offset,
                    ra,
                    rbp,
                }) => {
                    let cfa = (if rbp_based { bp } else { sp }).wrapping_add_signed(offset);
                    let ret = read(cfa.wrapping_add_signed(ra));
                    if let Some(o) = rbp {
                        bp = read(cfa.wrapping_add_signed(o)).unwrap_or(0);
                    }
                    sp = cfa;
                    ret
                }
                // No CFI for this code: try the frame-pointer chain.
                None => {
                    let ret = read(bp.wrapping_add(8));
                    let saved = read(bp);
                    sp = bp.wrapping_add(16);
                    bp = saved.unwrap_or(0);
                    ret
                }
            };
            match next {
                Some(ret) if ret != 0 => pc = ret,
                _ => break,
            }
        }
        frames
    }

    /// The frames of a stack given as its return addresses (innermost
    /// first, as glibc's `backtrace` gives them), innermost first: each
    /// named with its inlined frames; one that lies in no file ends it.
    pub fn name_return_addresses(&mut self, pcs: &[u64], maps: &Maps) -> Vec<Frame> {
        let mut frames = Vec::new();
        for &pc in pcs.iter().take(MAX_FRAMES) {
            if self
                .name_into(maps, pc.wrapping_sub(1), &mut frames)
                .is_none()
            {
                break;
            }
        }
        frames
    }

    /// Names code address `probe` (its inlined frames first) onto
    /// `frames`, and says how to step past it; `None` for code in no file.
    fn name_into(&mut self, maps: &Maps, probe: u64, frames: &mut Vec<Frame>) -> Option<Rc<Known>> {
        let (module, addr) = self.locate(maps, probe)?;
        let system = is_system(&module.path);
        let file = module.file_name();
        let known = Rc::clone(
            self.known
                .entry((module.path.clone(), addr))
                .or_insert_with(|| Rc::new((module.step(addr), module.name(addr)))),
        );
        let named = known.1.clone();
        if named.is_empty() {
            frames.push(Frame {
                function: format!("{file}+{addr:#x}"),
                line: None,
                source: None,
                file: file.clone(),
                system,
                inlined: false,
            });
        }
        let last = named.len().saturating_sub(1);
        for (i, n) in named.into_iter().enumerate() {
            frames.push(Frame {
                function: n.function,
                line: n.line,
                source: n.source,
                file: file.clone(),
                system,
                inlined: i < last,
            });
        }
        Some(known)
    }

    /// The static variable at `addr` in any file of `maps`, as
    /// `name (file)`. A zero-initialised lock lives in `.bss`, which is
    /// mapped anonymously right after the file: every file's load bias is
    /// tried.
    pub fn object(&mut self, maps: &Maps, addr: u64) -> Option<String> {
        for path in maps.files() {
            let Some(m) = maps
                .mappings
                .iter()
                .find(|m| m.path.as_ref() == Some(path) && m.executable)
            else {
                continue;
            };
            let Some(module) = self.module(path) else {
                continue;
            };
            let Some(bias) = module.bias(m.start, m.end - m.start, m.offset) else {
                continue;
            };
            if let Some(name) = module.object_at(addr.wrapping_sub(bias)) {
                return Some(name.to_string());
            }
        }
        None
    }
}

/// The name the kernel gives the vDSO's mapping.
const VDSO: &str = "[vdso]";

/// This process's vDSO (where `AT_SYSINFO_EHDR` says, as long as its
/// mapping in `/proc/self/maps`), parsed.
fn own_vdso() -> Option<Module> {
    // SAFETY: getauxval has no preconditions.
    let base = unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) };
    if base == 0 {
        return None;
    }
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let len = maps.lines().find_map(|l| {
        let (range, rest) = l.split_once(' ')?;
        let (start, end) = range.split_once('-')?;
        let (start, end) = (
            u64::from_str_radix(start, 16).ok()?,
            u64::from_str_radix(end, 16).ok()?,
        );
        (rest.trim_end().ends_with(VDSO) && start == base).then(|| end - start)
    })?;
    // SAFETY: the kernel maps the vDSO readable at `base` for `len` bytes
    // for the life of the process.
    let image = unsafe { std::slice::from_raw_parts(base as *const u8, len as usize) };
    Module::parse(PathBuf::from(VDSO), image.to_vec())
}

/// Whether `path` is a system library rather than the program's own code.
fn is_system(path: &std::path::Path) -> bool {
    [
        "/lib/",
        "/lib64/",
        "/usr/lib/",
        "/usr/lib64/",
        "/usr/libexec/",
    ]
    .iter()
    .any(|p| path.starts_with(p))
}
