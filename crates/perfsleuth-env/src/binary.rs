//! Identity of the benchmarked program: its hash, and for ELF files the
//! class, machine, ABI, build-id and program interpreter. The class, byte
//! order and machine come from the identification bytes (so a file cut
//! short still says what it is); the program and section headers, notes and
//! code are read with `object`, the reader `perfsleuth-locks` symbolises
//! with, through a cache that reads only the ranges asked for and none past
//! the file's end: a damaged file gives reasons rather than a panic, and a
//! header that names gigabytes reads nothing.

use crate::error::{ElfError, Record, Unknown};
use object::read::ReadCache;
use object::read::elf::{FileHeader, NoteIterator, ProgramHeader, SectionHeader};
use object::{Endianness, ReadRef, elf};
use perfsleuth_model::input::{self, Accept};
use perfsleuth_model::{Environment, ImpactClass};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// Every key [`binary_facts`] sets.
/// Every fact [`binary_facts`] sets, known or with its reason.
pub const BINARY_KEYS: &[&str] = &[
    "binary.path",
    "binary.sha256",
    "binary.elf_class",
    "binary.machine",
    "binary.abi",
    "binary.build_id",
    "binary.interpreter",
];

/// The keys that describe the ELF file itself.
const ELF_KEYS: &[&str] = &[
    "binary.elf_class",
    "binary.machine",
    "binary.abi",
    "binary.build_id",
];

/// Value of the ELF keys for files that are not ELF (scripts, data).
const NOT_ELF: &str = "not ELF";

/// Caps on what is read from a header-described region: real interpreters
/// and note segments are far smaller, and many headers over one region must
/// not read it over and over.
const MAX_INTERP: u64 = 4096;
const MAX_NOTES: u64 = 1 << 20;

/// Identity facts of the benchmarked program (hash, ELF class, ABI, build-id).
pub fn binary_facts(path: &Path) -> Environment {
    let mut env = Environment::default();
    let class = ImpactClass::Identity;
    // Symlinks (`/usr/bin/python3`) are resolved: the file that runs is what matters.
    let resolved = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    env.set("binary.path", resolved.display().to_string(), class);
    let all_unknown = |env: &mut Environment, reason: String| {
        for k in ["binary.sha256", "binary.interpreter"]
            .iter()
            .chain(ELF_KEYS)
        {
            env.record(*k, Err(reason.clone()), class);
        }
    };
    // A FIFO would block the open, /dev/zero never finish hashing.
    let mut file = match input::open(&resolved, Accept::Regular) {
        Ok((f, _)) => f,
        Err(e) => {
            all_unknown(&mut env, format!("cannot read {}: {e}", path.display()));
            return env;
        }
    };
    env.record("binary.sha256", sha256(&mut file), class);

    let mut head = Vec::with_capacity(4096);
    let head_read = file
        .seek(SeekFrom::Start(0))
        .and_then(|_| (&mut file).take(4096).read_to_end(&mut head));
    if let Err(e) = head_read {
        all_unknown(&mut env, format!("cannot read {}: {e}", path.display()));
        return env;
    }
    if head.starts_with(b"\x7fELF") {
        elf_facts(file, &head, &mut env);
    } else {
        for k in ELF_KEYS {
            env.set(*k, NOT_ELF, class);
        }
        let interpreter = if head.starts_with(b"#!") {
            // The kernel reads at most the first 256 bytes of the line; we
            // keep the whole first line as written.
            let end = head.iter().position(|b| *b == b'\n').unwrap_or(head.len());
            Ok(crate::kernel::clean(&String::from_utf8_lossy(&head[..end])))
        } else if head.is_empty() {
            Err("empty file".to_string())
        } else {
            Err("neither ELF nor a #! script".to_string())
        };
        env.record("binary.interpreter", interpreter, class);
    }
    env
}

/// The SHA-256 of a whole file as hex, streamed in blocks.
fn sha256(file: &mut File) -> Result<String, Unknown> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read error while hashing: {e}").into()),
        }
    }
    Ok(hex(&hasher.finalize()))
}

use perfsleuth_model::hex::encode as hex;

/// What the identification bytes say: class, byte order, machine.
struct Header {
    is64: bool,
    big: bool,
    machine: u16,
}

/// Sets the ELF keys from a file starting with the ELF magic.
fn elf_facts(file: File, head: &[u8], env: &mut Environment) {
    let class = ImpactClass::Identity;
    let header = match parse_ident(head) {
        Ok(h) => h,
        Err(reason) => {
            for k in ELF_KEYS.iter().chain(&["binary.interpreter"]) {
                env.record(*k, Err(&reason), class);
            }
            return;
        }
    };
    env.set(
        "binary.elf_class",
        if header.is64 { "ELF64" } else { "ELF32" },
        class,
    );
    env.set("binary.machine", machine_name(header.machine), class);
    env.set("binary.abi", abi(header.is64, header.machine), class);
    match segments(file, header.is64) {
        Ok((interp, build_id)) => {
            env.record("binary.interpreter", interp, class);
            env.record("binary.build_id", build_id, class);
        }
        Err(reason) => {
            env.record("binary.interpreter", Err(&reason), class);
            env.record("binary.build_id", Err(&reason), class);
        }
    }
}

/// Class, byte order and machine from `e_ident` and `e_machine`.
fn parse_ident(head: &[u8]) -> Result<Header, ElfError> {
    let malformed = |text: String| Err(ElfError::Malformed(text));
    if head.len() < 20 {
        return malformed(format!("truncated ELF header ({} bytes)", head.len()));
    }
    let is64 = match head[4] {
        elf::ELFCLASS32 => false,
        elf::ELFCLASS64 => true,
        c => return malformed(format!("invalid ELF class {c}")),
    };
    let big = match head[5] {
        elf::ELFDATA2LSB => false,
        elf::ELFDATA2MSB => true,
        d => return malformed(format!("invalid ELF data encoding {d}")),
    };
    let bytes = [head[18], head[19]];
    let machine = if big {
        u16::from_be_bytes(bytes)
    } else {
        u16::from_le_bytes(bytes)
    };
    Ok(Header { is64, big, machine })
}

/// A name for `e_machine`.
fn machine_name(machine: u16) -> String {
    match machine {
        elf::EM_SPARC => "sparc",
        elf::EM_386 => "i386",
        elf::EM_MIPS => "mips",
        elf::EM_PPC => "ppc",
        elf::EM_PPC64 => "ppc64",
        elf::EM_S390 => "s390",
        elf::EM_ARM => "arm",
        elf::EM_SPARCV9 => "sparcv9",
        elf::EM_X86_64 => "x86-64",
        elf::EM_AARCH64 => "aarch64",
        elf::EM_RISCV => "riscv",
        elf::EM_LOONGARCH => "loongarch",
        n => return format!("e_machine {n}"),
    }
    .to_string()
}

/// The ABI: machine and class together (x32 is ELF32 code for x86-64).
fn abi(is64: bool, machine: u16) -> String {
    match (is64, machine) {
        (true, elf::EM_X86_64) => "x86-64".into(),
        (false, elf::EM_X86_64) => "x32".into(),
        (false, elf::EM_386) => "i386".into(),
        (true, elf::EM_AARCH64) => "aarch64".into(),
        (false, elf::EM_ARM) => "arm".into(),
        (true, elf::EM_RISCV) => "riscv64".into(),
        (false, elf::EM_RISCV) => "riscv32".into(),
        (is64, m) => format!(
            "{} {}",
            machine_name(m),
            if is64 { "ELF64" } else { "ELF32" }
        ),
    }
}

type Facts = (Result<String, Unknown>, Result<String, Unknown>);

/// `PT_INTERP` (or `static`) and the GNU build-id (or `none`) from the
/// program headers.
fn segments(file: File, is64: bool) -> Result<Facts, ElfError> {
    let data = ReadCache::new(file);
    if is64 {
        segments_of::<elf::FileHeader64<Endianness>>(&data)
    } else {
        segments_of::<elf::FileHeader32<Endianness>>(&data)
    }
}

fn segments_of<H: FileHeader<Endian = Endianness>>(
    data: &ReadCache<File>,
) -> Result<Facts, ElfError> {
    let header = H::parse(data).map_err(|e| malformed("ELF header", e))?;
    let endian = header.endian().map_err(|e| malformed("ELF header", e))?;
    let phdrs = header
        .program_headers(endian, data)
        .map_err(|e| malformed("program headers", e))?;
    let mut interp: Option<Result<String, Unknown>> = None;
    let mut build_id: Option<String> = None;
    let mut note_error: Option<String> = None;
    // For all note segments together: 65 536 headers naming the same 1 MiB
    // of notes without a build-id would otherwise scan 64 GiB.
    let mut notes_left = MAX_NOTES;
    for ph in phdrs {
        let size: u64 = ph.p_filesz(endian).into();
        match ph.p_type(endian) {
            elf::PT_INTERP if interp.is_none() => {
                interp = Some(if size > MAX_INTERP {
                    Err(format!("PT_INTERP of {size} bytes").into())
                } else {
                    interpreter(ph, endian, data)
                });
            }
            elf::PT_NOTE if build_id.is_none() => {
                if size > MAX_NOTES {
                    note_error = Some(format!("PT_NOTE of {size} bytes"));
                    continue;
                }
                if size > notes_left {
                    note_error = Some(format!("PT_NOTE segments of over {MAX_NOTES} bytes in all"));
                    continue;
                }
                notes_left -= size;
                match ph.notes(endian, data) {
                    Ok(Some(notes)) => match gnu_build_id(notes, endian) {
                        Ok(id) => build_id = id,
                        Err(e) => note_error = Some(format!("PT_NOTE: {e}")),
                    },
                    Ok(None) => {}
                    Err(e) => note_error = Some(format!("PT_NOTE: {e}")),
                }
            }
            _ => {}
        }
    }
    let interp = interp.unwrap_or_else(|| Ok("static".into()));
    let build_id = match (build_id, note_error) {
        (Some(id), _) => Ok(id),
        (None, Some(e)) => Err(e.into()),
        (None, None) => Ok("none".into()),
    };
    Ok((interp, build_id))
}

/// The text of a `PT_INTERP` segment, up to its first NUL.
fn interpreter<P: ProgramHeader<Endian = Endianness>>(
    ph: &P,
    endian: Endianness,
    data: &ReadCache<File>,
) -> Result<String, Unknown> {
    let bytes = ph
        .data(endian, data)
        .map_err(|()| "PT_INTERP lies past the end of the file".to_string())?;
    let end = bytes.iter().position(|c| *c == 0).unwrap_or(bytes.len());
    let s = crate::kernel::clean(&String::from_utf8_lossy(&bytes[..end]));
    if s.is_empty() {
        Err("empty PT_INTERP".into())
    } else {
        Ok(s)
    }
}

/// The GNU build-id among `notes` (`None` without one).
fn gnu_build_id<H: FileHeader>(
    mut notes: NoteIterator<'_, H>,
    endian: H::Endian,
) -> Result<Option<String>, Unknown> {
    while let Some(note) = notes.next().map_err(|e| e.to_string())? {
        if note.n_type(endian) == elf::NT_GNU_BUILD_ID && note.name() == elf::ELF_NOTE_GNU {
            return Ok((!note.desc().is_empty()).then(|| hex(note.desc())));
        }
    }
    Ok(None)
}

/// The program interpreter (`PT_INTERP`) of an ELF file, `None` for static
/// files; used to find the `ld.so` this process was started by.
pub(crate) fn elf_interpreter(path: &Path) -> Result<Option<String>, ElfError> {
    let (file, h) = open_elf(path)?;
    let (interp, _) = segments(file, h.is64)?;
    let interp = interp.map_err(|e| ElfError::Malformed(e.to_string()))?;
    Ok((interp != "static").then_some(interp))
}

/// An ELF file opened for reading (a regular file only: no FIFO or device)
/// and its identification.
fn open_elf(path: &Path) -> Result<(File, Header), ElfError> {
    let (mut file, _) = input::open(path, Accept::Regular).map_err(|source| ElfError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    let mut head = Vec::with_capacity(64);
    (&mut file).take(64).read_to_end(&mut head)?;
    if !head.starts_with(b"\x7fELF") {
        return Err(ElfError::NotElf {
            path: path.to_path_buf(),
        });
    }
    let h = parse_ident(&head)?;
    Ok((file, h))
}

/// A header `object` could not parse, named by `what`.
fn malformed(what: &str, e: object::read::Error) -> ElfError {
    ElfError::Malformed(format!("{what}: {e}"))
}

/// The most code [`cpuid_sites`] decodes from one file (libcrypto's is ~4 MiB).
const MAX_CODE: u64 = 256 << 20;

/// How many CPUID instructions the executable sections of an x86-64 ELF
/// file hold: code that asks the CPU for its features itself (OpenSSL,
/// BLAS, Rust's `is_x86_feature_detected!`) and so may dispatch
/// differently on another CPU whatever glibc was told. The code is decoded
/// instruction by instruction (iced-x86), not searched for the bytes
/// `0f a2`, which also occur inside other instructions.
pub fn cpuid_sites(path: &Path) -> Result<usize, ElfError> {
    let (file, h) = open_elf(path)?;
    if !h.is64 || h.big || h.machine != elf::EM_X86_64 {
        return Err(ElfError::NotX86_64 {
            machine: machine_name(h.machine),
        });
    }
    let data = ReadCache::new(file);
    let header =
        elf::FileHeader64::<Endianness>::parse(&data).map_err(|e| malformed("ELF header", e))?;
    let endian = header.endian().map_err(|e| malformed("ELF header", e))?;
    let sections = header
        .section_headers(endian, &data)
        .map_err(|e| malformed("section headers", e))?;
    let mut regions: Vec<(u64, u64)> = sections
        .iter()
        .filter(|s| {
            s.sh_type(endian) != elf::SHT_NOBITS
                && s.sh_flags(endian) & u64::from(elf::SHF_EXECINSTR) != 0
        })
        .map(|s| (s.sh_offset(endian), s.sh_size(endian)))
        .collect();
    if sections.is_empty() {
        // No section headers (stripped hard): the executable segments.
        let phdrs = header
            .program_headers(endian, &data)
            .map_err(|e| malformed("program headers", e))?;
        regions = phdrs
            .iter()
            .filter(|p| p.p_type(endian) == elf::PT_LOAD && p.p_flags(endian) & elf::PF_X != 0)
            .map(|p| (p.p_offset(endian), p.p_filesz(endian)))
            .collect();
    }
    regions.retain(|(_, size)| *size > 0);
    let total: u64 = regions.iter().map(|(_, s)| *s).sum();
    if total > MAX_CODE {
        return Err(ElfError::TooMuchCode {
            mib: total >> 20,
            limit_mib: MAX_CODE >> 20,
        });
    }
    let mut sites = 0;
    for (offset, size) in regions {
        let code = data.read_bytes_at(offset, size).map_err(|()| {
            ElfError::Malformed(format!(
                "{size} bytes of code at offset {offset} lie past the end of the file"
            ))
        })?;
        let decoder = iced_x86::Decoder::new(64, code, iced_x86::DecoderOptions::NONE);
        sites += decoder
            .into_iter()
            .filter(|i| i.mnemonic() == iced_x86::Mnemonic::Cpuid)
            .count();
    }
    Ok(sites)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::testutil::*;
    use std::process::Command;

    fn facts(path: &Path) -> Environment {
        let env = binary_facts(path);
        for k in BINARY_KEYS {
            assert!(
                env.facts.contains_key(*k),
                "{k} missing for {}",
                path.display()
            );
        }
        assert!(env.facts.values().all(|f| f.class == ImpactClass::Identity));
        env
    }

    fn sha256_of(path: &Path) -> Option<String> {
        let out = Command::new("sha256sum").arg(path).output().ok()?;
        String::from_utf8(out.stdout)
            .ok()?
            .split_whitespace()
            .next()
            .map(str::to_string)
    }

    fn gcc(t: &TempTree, name: &str, args: &[&str]) -> Option<std::path::PathBuf> {
        let src = t.path("hello.c");
        std::fs::write(&src, "int main(void) { return 0; }\n").ok()?;
        let out = t.path(name);
        let run = Command::new("gcc")
            .args(args)
            .arg("-o")
            .arg(&out)
            .arg(&src)
            .output();
        let Ok(run) = run else {
            perfsleuth_testkit::skip("gcc", "gcc not installed");
            return None;
        };
        // gcc runs but cannot build this variant (no multilib for -m32, no
        // static libc): a missing optional package, not a missing tool.
        run.status.success().then_some(out)
    }

    #[test]
    fn dynamic_elf_bin_true() {
        let p = Path::new("/bin/true");
        if !p.exists() {
            return;
        }
        let env = facts(p);
        assert_eq!(env.get("binary.elf_class"), Some("ELF64"));
        if cfg!(target_arch = "x86_64") {
            assert_eq!(env.get("binary.machine"), Some("x86-64"));
            assert_eq!(env.get("binary.abi"), Some("x86-64"));
        }
        assert!(
            env.get("binary.interpreter").unwrap().contains("ld-linux"),
            "{:?}",
            env.get("binary.interpreter")
        );
        let id = env.get("binary.build_id").unwrap();
        assert!(
            id.len() >= 16 && id.chars().all(|c| c.is_ascii_hexdigit()),
            "{id}"
        );
        if let Some(expected) = sha256_of(p) {
            assert_eq!(env.get("binary.sha256"), Some(expected.as_str()));
        }
        // The same as `readelf -n` reports, when binutils are installed.
        if let Ok(out) = Command::new("readelf").arg("-n").arg(p).output() {
            let text = String::from_utf8_lossy(&out.stdout);
            if let Some(line) = text.lines().find(|l| l.contains("Build ID:")) {
                assert_eq!(line.split_whitespace().last(), Some(id));
            }
        }
    }

    #[test]
    fn static_and_32_bit_binaries() {
        let t = TempTree::new("binary-gcc");
        if let Some(p) = gcc(&t, "static", &["-static"]) {
            let env = facts(&p);
            assert_eq!(env.get("binary.interpreter"), Some("static"));
            assert_eq!(env.get("binary.elf_class"), Some("ELF64"));
            assert_ne!(env.get("binary.build_id"), Some("unknown"));
        }
        // Multilib is often not installed: then gcc fails and we skip.
        if let Some(p) = gcc(&t, "m32", &["-m32"]) {
            let env = facts(&p);
            assert_eq!(env.get("binary.elf_class"), Some("ELF32"));
            assert_eq!(env.get("binary.abi"), Some("i386"));
            assert_eq!(env.get("binary.interpreter"), Some("/lib/ld-linux.so.2"));
        }
        if let Some(p) = gcc(&t, "nobuildid", &["-Wl,--build-id=none"]) {
            assert_eq!(facts(&p).get("binary.build_id"), Some("none"));
        }
    }

    #[test]
    fn x32_is_elf32_with_the_x86_64_machine() {
        let t = TempTree::new("binary-x32");
        // A minimal ELF32 header: e_machine 62, no program headers.
        let mut h = vec![0u8; 52];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 1;
        h[5] = 1;
        h[6] = 1;
        h[18] = 62;
        h[40] = 52;
        h[42] = 32;
        t.write("x32", &h);
        let env = facts(&t.path("x32"));
        assert_eq!(env.get("binary.abi"), Some("x32"));
        assert_eq!(env.get("binary.machine"), Some("x86-64"));
        assert_eq!(env.get("binary.interpreter"), Some("static"));
        assert_eq!(env.get("binary.build_id"), Some("none"));
    }

    #[test]
    fn symlinks_are_resolved() {
        let p = Path::new("/usr/bin/python3");
        if !p.exists() {
            return;
        }
        let env = facts(p);
        let real = std::fs::canonicalize(p).unwrap();
        assert_eq!(
            env.get("binary.path"),
            Some(real.display().to_string().as_str())
        );
        assert_eq!(env.get("binary.elf_class"), Some("ELF64"));
    }

    #[test]
    fn scripts_empty_and_random_files() {
        let t = TempTree::new("binary-misc");
        t.write("script.sh", "#!/bin/sh -e\r\necho hi\n")
            .write("empty", "")
            .write("random", random_bytes(3, 10_000));
        let env = facts(&t.path("script.sh"));
        assert_eq!(env.get("binary.interpreter"), Some("#!/bin/sh -e"));
        assert_eq!(env.get("binary.elf_class"), Some(NOT_ELF));
        assert_eq!(env.get("binary.build_id"), Some(NOT_ELF));
        if let Some(expected) = sha256_of(&t.path("script.sh")) {
            assert_eq!(env.get("binary.sha256"), Some(expected.as_str()));
        }
        let env = facts(&t.path("empty"));
        assert_eq!(
            env.get("binary.sha256"),
            Some("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        );
        assert_eq!(env.get("binary.interpreter"), Some("unknown"));
        let env = facts(&t.path("random"));
        assert_eq!(env.get("binary.machine"), Some(NOT_ELF));
        let env = facts(&t.path("missing"));
        assert_eq!(env.get("binary.sha256"), Some("unknown"));
        assert!(
            env.facts["binary.sha256"]
                .reason
                .as_deref()
                .unwrap()
                .contains("cannot read")
        );
        let env = facts(&t.root);
        assert!(
            env.facts["binary.sha256"]
                .reason
                .as_deref()
                .unwrap()
                .contains("not a regular file")
        );
    }

    #[test]
    fn truncated_and_corrupted_elf_files() {
        let Ok(full) = std::fs::read("/bin/true") else {
            return;
        };
        let t = TempTree::new("binary-trunc");
        for len in [
            4,
            5,
            16,
            19,
            20,
            40,
            63,
            64,
            100,
            1000,
            4096,
            full.len() / 2,
            full.len() - 1,
        ] {
            let len = len.min(full.len());
            t.write("cut", &full[..len]);
            let env = facts(&t.path("cut"));
            if len >= 20 {
                assert_eq!(env.get("binary.elf_class"), Some("ELF64"), "{len}");
            }
        }
        // Random bytes after a valid-looking ident, many times over.
        for seed in 0..200u64 {
            let mut bytes = full[..64.min(full.len())].to_vec();
            bytes.extend(random_bytes(seed, (seed as usize * 37) % 3000));
            let mut corrupt = random_bytes(seed + 1000, 64);
            corrupt[..4].copy_from_slice(b"\x7fELF");
            corrupt[4] = 1 + (seed % 2) as u8;
            corrupt[5] = 1 + (seed / 2 % 2) as u8;
            corrupt.extend(random_bytes(seed + 2000, 5000));
            for (name, content) in [("a", &bytes), ("b", &corrupt)] {
                t.write(name, content);
                facts(&t.path(name));
            }
        }
    }

    #[test]
    fn many_note_headers_over_the_same_notes_are_read_once() {
        // Found while writing tests/fuzz_env.rs: every PT_NOTE header was
        // read in full until one held a build-id, so 65 534 headers over
        // one 1 MiB note segment (a 4.6 MB file) read 64 GiB.
        let t = TempTree::new("binary-notes");
        let phnum: usize = 0xfffe;
        let notes_at = 64 + phnum * 56;
        let mut f = vec![0u8; notes_at + (1 << 20)];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = 2;
        f[5] = 1;
        f[6] = 1;
        f[18] = 62;
        f[32..40].copy_from_slice(&64u64.to_le_bytes());
        f[52] = 64;
        f[54] = 56;
        f[56..58].copy_from_slice(&(phnum as u16).to_le_bytes());
        for i in 0..phnum {
            let e = 64 + i * 56;
            f[e..e + 4].copy_from_slice(&elf::PT_NOTE.to_le_bytes());
            f[e + 8..e + 16].copy_from_slice(&(notes_at as u64).to_le_bytes());
            f[e + 32..e + 40].copy_from_slice(&(1u64 << 20).to_le_bytes());
            f[e + 48..e + 56].copy_from_slice(&4u64.to_le_bytes());
        }
        t.write("notes", &f);
        let start = std::time::Instant::now();
        let env = facts(&t.path("notes"));
        assert!(
            start.elapsed() < std::time::Duration::from_secs(5),
            "{:?}",
            start.elapsed()
        );
        assert_eq!(env.get("binary.build_id"), Some("unknown"));
        assert!(
            env.facts["binary.build_id"]
                .reason
                .as_deref()
                .unwrap()
                .contains("in all")
        );
    }

    #[test]
    fn a_build_id_in_an_eight_byte_aligned_note_segment() {
        // Found by tests/fuzz_env.rs: the desc was looked for at
        // 12 + pad(namesz) = 20 instead of pad(12 + namesz) = 16, so the
        // build-id came out shifted by four bytes.
        let t = TempTree::new("binary-note8");
        let mut f = vec![0u8; 64 + 56];
        f[..4].copy_from_slice(b"\x7fELF");
        f[4] = 2;
        f[5] = 1;
        f[6] = 1;
        f[18] = 183;
        f[32..40].copy_from_slice(&64u64.to_le_bytes());
        f[52] = 64;
        f[54] = 56;
        f[56] = 1;
        let notes_at = f.len() as u64;
        let mut note = Vec::new();
        note.extend_from_slice(&4u32.to_le_bytes());
        note.extend_from_slice(&20u32.to_le_bytes());
        note.extend_from_slice(&elf::NT_GNU_BUILD_ID.to_le_bytes());
        note.extend_from_slice(b"GNU\0");
        note.extend((1..=20u8).collect::<Vec<u8>>());
        note.extend([0; 4]);
        f[64..68].copy_from_slice(&elf::PT_NOTE.to_le_bytes());
        f[72..80].copy_from_slice(&notes_at.to_le_bytes());
        f[96..104].copy_from_slice(&(note.len() as u64).to_le_bytes());
        f[112..120].copy_from_slice(&8u64.to_le_bytes());
        f.extend(note);
        t.write("note8", &f);
        assert_eq!(
            facts(&t.path("note8")).get("binary.build_id"),
            Some("0102030405060708090a0b0c0d0e0f1011121314")
        );
    }

    #[test]
    fn a_fifo_is_not_a_regular_file_and_does_not_block() {
        // Found while fixing the FIFO hang tests/fuzz_env.rs found in
        // libc_info: the check for a regular file came after `open`, which
        // on a FIFO waits for a writer.
        let t = TempTree::new("binary-fifo");
        let fifo = t.path("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(binary_facts(&fifo));
        });
        let env = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("binary_facts returns");
        assert!(
            env.facts["binary.sha256"]
                .reason
                .as_deref()
                .unwrap()
                .contains("not a regular file")
        );
    }

    #[test]
    fn finds_the_interpreter_of_this_test_binary() {
        if let Ok(exe) = std::env::current_exe() {
            // Either a dynamic binary with a loader, or a static one.
            let _ = elf_interpreter(&exe).unwrap();
        }
    }

    /// `objdump -d`'s count of `cpuid` instructions: the reference the
    /// decoder is checked against (`None` without binutils).
    fn objdump_cpuid(path: &Path) -> Option<usize> {
        let out = Command::new("objdump").arg("-d").arg(path).output().ok()?;
        out.status.success().then(|| {
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .filter(|l| l.split('\t').nth(2).is_some_and(|m| m.trim() == "cpuid"))
                .count()
        })
    }

    #[test]
    fn cpuid_sites_are_found_by_decoding_and_agree_with_objdump() {
        if !cfg!(target_arch = "x86_64") {
            return;
        }
        let t = TempTree::new("binary-cpuid");
        let src = t.path("asks.c");
        // Two CPUID instructions, and the bytes 0f a2 as an immediate
        // operand (mov $0xa20f, %eax), which is not one.
        std::fs::write(
            &src,
            "#include <cpuid.h>\n\
             int main(void) { unsigned a, b, c, d; __cpuid(0, a, b, c, d); __cpuid_count(7, 0, a, b, c, d);\n\
             unsigned x; __asm__ volatile(\"mov $0xa20f, %0\" : \"=r\"(x)); return (int)(a + x); }\n",
        )
        .unwrap();
        let asks = t.path("asks");
        let Ok(run) = Command::new("gcc")
            .arg("-O1")
            .arg("-o")
            .arg(&asks)
            .arg(&src)
            .output()
        else {
            perfsleuth_testkit::skip("gcc", "gcc not installed");
            return;
        };
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        assert_eq!(cpuid_sites(&asks).unwrap(), 2);
        let plain = gcc(&t, "plain", &["-O1"]).expect("gcc builds a plain program");
        assert_eq!(cpuid_sites(&plain).unwrap(), 0);
        // Real libraries, counted by objdump too where it is installed.
        for lib in [
            "/lib/x86_64-linux-gnu/libc.so.6",
            "/lib64/ld-linux-x86-64.so.2",
            "/usr/lib/x86_64-linux-gnu/libcrypto.so.3",
            asks.to_str().unwrap(),
        ] {
            let p = Path::new(lib);
            if !p.exists() {
                continue;
            }
            let ours = cpuid_sites(p).unwrap();
            if let Some(reference) = objdump_cpuid(p) {
                assert_eq!(ours, reference, "{lib}");
            }
        }
        assert!(cpuid_sites(Path::new("/etc/hostname")).is_err());
        assert!(cpuid_sites(&t.path("missing")).is_err());
    }
}
