//! One mapped ELF file: its load segments (file offset → address), its call
//! frame information (to unwind), its symbols and its line tables (to name).

use gimli::{
    BaseAddresses, CfaRule, EhFrame, EndianRcSlice, RegisterRule, RunTimeEndian, UnwindContext,
    UnwindSection, X86_64,
};
use object::{Object, ObjectSection, ObjectSegment, ObjectSymbol, SymbolKind};
use std::path::{Path, PathBuf};
use std::rc::Rc;

type Slice = EndianRcSlice<RunTimeEndian>;

/// The largest file read whole (debug-info-heavy binaries stay well under).
const MAX_FILE: u64 = 1 << 30;

/// A symbol: start address, size, name (demangled).
#[derive(Debug, Clone)]
struct Symbol {
    addr: u64,
    size: u64,
    name: String,
}

/// A frame as named from one file.
#[derive(Debug, Clone, PartialEq)]
pub struct Named {
    /// The function's name, demangled.
    pub function: String,
    /// `file:line`, where the line tables have it.
    pub line: Option<String>,
    /// The source file's full path, where the line tables have it.
    pub source: Option<String>,
}

/// How to find the caller's frame from a frame of this file.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Step {
    /// The outermost frame (`_start`, a thread's start): its CFI marks the
    /// return address undefined.
    End,
    /// CFA = register (`rsp` or `rbp`) + offset; the return address and the
    /// saved `rbp` at these offsets from the CFA, where saved.
    Cfa {
        /// The CFA is `rbp`-based (else `rsp`-based).
        rbp_based: bool,
        /// The CFA's offset from that register.
        offset: i64,
        /// Where the return address is, from the CFA.
        ra: i64,
        /// Where the caller's `rbp` is saved, from the CFA.
        rbp: Option<i64>,
    },
}

/// A parsed file.
pub struct Module {
    /// The file it was read from.
    pub path: PathBuf,
    /// (file offset, size in file, address, executable) of each loadable segment.
    segments: Vec<(u64, u64, u64, bool)>,
    functions: Vec<Symbol>,
    objects: Vec<Symbol>,
    eh_frame: Option<(EhFrame<Slice>, BaseAddresses)>,
    lines: Option<addr2line::Context<Slice>>,
}

impl Module {
    /// Reads and parses `path`; `None` if it is not a readable ELF file.
    pub fn load(path: &Path) -> Option<Module> {
        let meta = std::fs::metadata(path).ok()?;
        if !meta.is_file() || meta.len() > MAX_FILE {
            return None;
        }
        Module::parse(path.to_path_buf(), std::fs::read(path).ok()?)
    }

    /// Parses an ELF image held in memory, named `path` (the vDSO, which
    /// is no file); `None` if it is not ELF.
    pub fn parse(path: PathBuf, data: Vec<u8>) -> Option<Module> {
        let file = object::File::parse(&*data).ok()?;
        let endian = if file.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let segments = file
            .segments()
            .map(|s| {
                let (off, size) = s.file_range();
                let exec =
                    matches!(s.flags(), object::SegmentFlags::Elf { p_flags } if p_flags & 1 != 0);
                (off, size, s.address(), exec)
            })
            .collect();
        let (mut functions, mut objects) = (Vec::new(), Vec::new());
        // .symtab where the file kept it, else the dynamic symbols.
        let symbols: Vec<_> = if file.symbols().next().is_some() {
            file.symbols().collect()
        } else {
            file.dynamic_symbols().collect()
        };
        for s in symbols {
            let Ok(name) = s.name() else { continue };
            if name.is_empty() || s.address() == 0 || s.is_undefined() {
                continue;
            }
            let sym = Symbol {
                addr: s.address(),
                size: s.size(),
                name: demangle(name),
            };
            match s.kind() {
                SymbolKind::Text => functions.push(sym),
                SymbolKind::Data | SymbolKind::Tls => objects.push(sym),
                _ => {}
            }
        }
        functions.sort_by_key(|s| (s.addr, std::cmp::Reverse(s.size)));
        objects.sort_by_key(|s| s.addr);
        let section = |name: &str| -> Slice {
            let bytes = file
                .section_by_name(name)
                .and_then(|s| s.uncompressed_data().ok())
                .map(|d| d.into_owned())
                .unwrap_or_default();
            EndianRcSlice::new(Rc::from(bytes), endian)
        };
        let eh_frame = file.section_by_name(".eh_frame").map(|s| {
            let mut bases = BaseAddresses::default().set_eh_frame(s.address());
            if let Some(text) = file.section_by_name(".text") {
                bases = bases.set_text(text.address());
            }
            if let Some(got) = file.section_by_name(".got") {
                bases = bases.set_got(got.address());
            }
            let mut frame = EhFrame::from(section(".eh_frame"));
            frame.set_address_size(8);
            (frame, bases)
        });
        let lines = if file.section_by_name(".debug_info").is_some() {
            gimli::Dwarf::load(|id| Ok::<_, gimli::Error>(section(id.name())))
                .ok()
                .and_then(|dwarf| addr2line::Context::from_dwarf(dwarf).ok())
        } else {
            None
        };
        Some(Module {
            path,
            segments,
            functions,
            objects,
            eh_frame,
            lines,
        })
    }

    /// The address in the file's own terms of a byte at `file_offset`.
    pub fn address_of_offset(&self, file_offset: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(off, size, _, _)| file_offset >= *off && file_offset - off < *size)
            .map(|(off, _, addr, _)| (file_offset - off).wrapping_add(*addr))
    }

    /// The load bias of an executable mapping (`start`, `len` bytes from
    /// file offset `offset`): its executable segment's address subtracted.
    /// The mapping's offset is page-aligned and may fall in the segment
    /// before (lld puts read-only data and code in one file page), so the
    /// segment is the executable one whose own offset the mapping covers.
    pub fn bias(&self, start: u64, len: u64, offset: u64) -> Option<u64> {
        self.segments
            .iter()
            .find(|(off, _, _, exec)| *exec && *off >= offset && *off - offset < len)
            .map(|(off, _, addr, _)| start.wrapping_add(off - offset).wrapping_sub(*addr))
    }

    /// How to step from a frame executing at `addr` (file address) to its caller.
    pub fn step(&self, addr: u64) -> Option<Step> {
        let (frame, bases) = self.eh_frame.as_ref()?;
        let mut ctx = UnwindContext::new();
        let row = frame
            .unwind_info_for_address(bases, &mut ctx, addr, EhFrame::cie_from_offset)
            .ok()?;
        let (rbp_based, offset) = match *row.cfa() {
            CfaRule::RegisterAndOffset { register, offset } if register == X86_64::RSP => {
                (false, offset)
            }
            CfaRule::RegisterAndOffset { register, offset } if register == X86_64::RBP => {
                (true, offset)
            }
            _ => return None,
        };
        let ra = match row.register(X86_64::RA) {
            RegisterRule::Offset(n) => n,
            RegisterRule::Undefined => return Some(Step::End),
            _ => return None,
        };
        let rbp = match row.register(X86_64::RBP) {
            RegisterRule::Offset(n) => Some(n),
            _ => None,
        };
        Some(Step::Cfa {
            rbp_based,
            offset,
            ra,
            rbp,
        })
    }

    /// The function at `addr` (innermost inlined one first), with `file:line`.
    pub fn name(&self, addr: u64) -> Vec<Named> {
        let mut out = Vec::new();
        if let Some(ctx) = &self.lines
            && let Ok(mut frames) = ctx.find_frames(addr).skip_all_loads()
        {
            while let Ok(Some(f)) = frames.next() {
                let function = f
                    .function
                    .as_ref()
                    .and_then(|n| n.raw_name().ok().map(|r| demangle(&r)));
                let source = f.location.as_ref().and_then(|l| l.file).map(str::to_string);
                let line = f.location.as_ref().and_then(|l| {
                    let file = Path::new(l.file?)
                        .file_name()?
                        .to_string_lossy()
                        .into_owned();
                    Some(match l.line {
                        Some(n) => format!("{file}:{n}"),
                        None => file,
                    })
                });
                out.push(Named {
                    function: function.unwrap_or_default(),
                    line,
                    source,
                });
            }
        }
        // The outermost frame is the real function: the symbol table names it
        // in full (line-tables-only debug info has bare names like `lock`).
        let symbol = self.function_at(addr);
        match (out.last_mut(), symbol) {
            (Some(last), Some(s)) => last.function = s.to_string(),
            (None, Some(s)) => out.push(Named {
                function: s.to_string(),
                line: None,
                source: None,
            }),
            _ => {}
        }
        out.retain(|n| !n.function.is_empty());
        out
    }

    fn function_at(&self, addr: u64) -> Option<&str> {
        let i = self.functions.partition_point(|s| s.addr <= addr);
        // The nearest start below; a sized symbol must contain the address.
        let s = self.functions.get(i.checked_sub(1)?)?;
        (s.size == 0 || addr - s.addr < s.size).then_some(s.name.as_str())
    }

    /// The data symbol (a static variable) containing `addr`.
    pub fn object_at(&self, addr: u64) -> Option<&str> {
        let i = self.objects.partition_point(|s| s.addr <= addr);
        let s = self.objects.get(i.checked_sub(1)?)?;
        (addr - s.addr < s.size.max(1)).then_some(s.name.as_str())
    }

    /// The file's name, for frames without line information.
    pub fn file_name(&self) -> String {
        self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    }
}

/// Rust names without their hash; other names as they are.
fn demangle(name: &str) -> String {
    if let Ok(d) = rustc_demangle::try_demangle(name) {
        return format!("{d:#}");
    }
    // C++ (Itanium ABI), without parameters and return type, as Rust names
    // are shown without their hash: `shapes::accumulate<long>`.
    if name.starts_with("_Z")
        && let Ok(sym) = cpp_demangle::Symbol::new(name)
        && let Ok(d) = sym.demangle(
            &cpp_demangle::DemangleOptions::new()
                .no_params()
                .no_return_type(),
        )
    {
        return d;
    }
    name.to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn rust_and_cpp_names_are_demangled_and_c_names_kept() {
        assert_eq!(
            super::demangle("_ZN6shapes10accumulateIlEET_RKSt6vectorIS1_SaIS1_EEi"),
            "shapes::accumulate<long>"
        );
        assert_eq!(
            super::demangle("_ZN5three5alpha17h0123456789abcdefE"),
            "three::alpha"
        );
        assert_eq!(super::demangle("alpha"), "alpha");
        assert_eq!(super::demangle("_Zgarbage"), "_Zgarbage");
    }
}
