//! Fuzz targets for the environment readers: `cpuid -r` dumps, ELF headers
//! (`binary_facts`), and the whole capture run on damaged copies of the
//! fixture trees (`Source::root` + `capture`).
//!
//! A generated dump reads back its first CPU's registers; a generated ELF
//! file (32/64-bit, either byte order, interpreter, notes, `PN_XNUM`) gives
//! the class, machine, interpreter and build-id written into it; damaged
//! dumps, ELF files and trees (files garbled, emptied, made huge numbers or
//! invalid UTF-8, removed, turned into directories, FIFOs or symlinks that
//! loop or leave the tree, many CPUs added) give facts and reasons, never a
//! panic or a hang, and what was captured serialises and reads back.
//! `PERFSLEUTH_FUZZ_SCALE=K` runs K times the default cases, `PROPTEST_CASES=N`
//! exactly N (`bench/fuzz.sh` runs every target so).

use perfsleuth_env::cpuid::CpuidTable;
use perfsleuth_env::{Source, binary_facts, capture, check, cpu_capacity, diff};
use perfsleuth_model::Environment;
use perfsleuth_model::schema::{self, Document, EnvironmentDoc};
use perfsleuth_testkit::fuzz::{CASE_LIMIT, Mutation, NUMBERS, apply, config, mutations, within};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh directory under the temp dir, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "perfsleuth-fuzz-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ------------------------------------------------------------------ cpuid

type Leaf = ((u32, u32), [u32; 4]);

fn leaf() -> impl Strategy<Value = Leaf> {
    (
        (
            prop_oneof![0u32..0x20, 0x8000_0000u32..0x8000_0020, any::<u32>()],
            0u32..4,
        ),
        prop::array::uniform4(any::<u32>()),
    )
}

fn write_dump(cpus: &[Vec<Leaf>], upper: bool, pad: &str) -> String {
    let hex = |v: u32, width: usize| {
        if upper {
            format!("0X{v:0width$X}")
        } else {
            format!("0x{v:0width$x}")
        }
    };
    let mut out = String::new();
    for (i, leaves) in cpus.iter().enumerate() {
        out.push_str(&format!("CPU {i}:\n"));
        for ((l, s), r) in leaves {
            out.push_str(&format!(
                "{pad}{} {}: eax={} ebx={} ecx={} edx={}\n",
                hex(*l, 8),
                hex(*s, 2),
                hex(r[0], 8),
                hex(r[1], 8),
                hex(r[2], 8),
                hex(r[3], 8)
            ));
        }
    }
    out
}

const CPUID_LINES: &[&[u8]] = &[
    b"CPU 0:",
    b"CPU 1:",
    b"CPU:",
    b"   0x00000000 0x00: eax=0x00000010 ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69",
    b"   0x00000000 0x00: eax=0x100000000 ebx=0 ecx=0 edx=0",
    b"   0x00000000: eax=0x1 ebx=0x1 ecx=0x1 edx=0x1",
    b"   0x1 0x0: eax=0x1 eax=0x2 ebx=0x1 ecx=0x1",
    b"   0x1 0x0: eax=0x1 ebx=0x1 ecx=0x1 edx=0x1 esi=0x1",
    b"   0x1 0x0: eax= ebx=0x1 ecx=0x1 edx=0x1",
    b"   0x1 0x0 eax=0x1 ebx=0x1 ecx=0x1 edx=0x1",
    b"   0x 0x: eax=0x ebx=0x ecx=0x edx=0x",
];

proptest! {
    #![proptest_config(config(512))]

    /// A dump reads back the registers of its first CPU (the first line
    /// of a repeated leaf wins).
    #[test]
    fn cpuid_dumps_read_back_the_first_cpu(
        cpus in prop::collection::vec(prop::collection::vec(leaf(), 1..12), 1..3),
        upper in any::<bool>(),
        pad in prop::sample::select(vec!["", "   ", "\t"]),
    ) {
        let text = write_dump(&cpus, upper, pad);
        let t = CpuidTable::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let mut want = BTreeMap::new();
        for (k, r) in &cpus[0] {
            want.entry(*k).or_insert(*r);
        }
        for (&(l, s), r) in &want {
            prop_assert_eq!(t.get(l, s), Some(*r));
        }
    }

    /// Damaged dumps: a table or an error, never a panic.
    #[test]
    fn damaged_cpuid_dumps_are_read_or_refused(
        cpus in prop::collection::vec(prop::collection::vec(leaf(), 1..6), 1..3),
        m in mutations(CPUID_LINES),
    ) {
        let text = apply(write_dump(&cpus, false, "   ").as_bytes(), &m);
        let _ = CpuidTable::parse(&String::from_utf8_lossy(&text));
    }
}

// -------------------------------------------------------------------- ELF

const PT_LOAD: u32 = 1;
const PT_INTERP: u32 = 3;
const PT_NOTE: u32 = 4;

/// One ELF note: name, type, desc.
type Note = (Vec<u8>, u32, Vec<u8>);

/// A generated ELF file: what is written into it.
#[derive(Debug, Clone)]
struct GenElf {
    is64: bool,
    big: bool,
    machine: u16,
    interp: Option<String>,
    /// Note segments: alignment (4 or 8) and notes (name, type, desc).
    notes: Vec<(u64, Vec<Note>)>,
    loads: usize,
    /// Write the program header count in section header 0 (`PN_XNUM`).
    xnum: bool,
}

fn gen_elf() -> impl Strategy<Value = GenElf> {
    let note = (
        prop_oneof![
            3 => Just(b"GNU\0".to_vec()),
            1 => Just(b"Go\0\0".to_vec()),
            1 => prop::collection::vec(any::<u8>(), 0..9),
        ],
        prop_oneof![Just(3u32), Just(1u32), Just(4u32), any::<u32>()],
        prop::collection::vec(any::<u8>(), 1..33),
    );
    (
        any::<bool>(),
        any::<bool>(),
        prop_oneof![
            prop::sample::select(vec![3u16, 8, 20, 21, 22, 40, 62, 183, 243, 258]),
            any::<u16>(),
        ],
        prop::option::of("/[a-z0-9_./-]{1,40}"),
        prop::collection::vec(
            (
                prop::sample::select(vec![4u64, 8]),
                prop::collection::vec(note, 0..4),
            ),
            0..3,
        ),
        0usize..3,
        any::<bool>(),
    )
        .prop_map(|(is64, big, machine, interp, notes, loads, xnum)| GenElf {
            is64,
            big,
            machine,
            interp,
            notes,
            loads,
            xnum,
        })
}

fn machine_name(m: u16) -> String {
    match m {
        3 => "i386".into(),
        8 => "mips".into(),
        20 => "ppc".into(),
        21 => "ppc64".into(),
        22 => "s390".into(),
        40 => "arm".into(),
        43 => "sparcv9".into(),
        2 => "sparc".into(),
        62 => "x86-64".into(),
        183 => "aarch64".into(),
        243 => "riscv".into(),
        258 => "loongarch".into(),
        n => format!("e_machine {n}"),
    }
}

impl GenElf {
    fn put(&self, out: &mut Vec<u8>, at: usize, v: u64, size: usize) {
        let bytes = v.to_be_bytes();
        let mut field = bytes[8 - size..].to_vec();
        if !self.big {
            field.reverse();
        }
        if out.len() < at + size {
            out.resize(at + size, 0);
        }
        out[at..at + size].copy_from_slice(&field);
    }

    fn notes_bytes(&self, align: u64, notes: &[Note]) -> Vec<u8> {
        let pad = |v: &mut Vec<u8>| {
            while v.len() % align as usize != 0 {
                v.push(0);
            }
        };
        let mut out = Vec::new();
        for (name, kind, desc) in notes {
            let at = out.len();
            self.put(&mut out, at, name.len() as u64, 4);
            self.put(&mut out, at + 4, desc.len() as u64, 4);
            self.put(&mut out, at + 8, u64::from(*kind), 4);
            out.extend_from_slice(name);
            pad(&mut out);
            out.extend_from_slice(desc);
            pad(&mut out);
        }
        out
    }

    fn write(&self) -> Vec<u8> {
        let (ehsize, phentsize, shentsize) = if self.is64 {
            (64, 56, 64)
        } else {
            (52, 32, 40)
        };
        // Segments: (type, payload, align).
        let mut segs: Vec<(u32, Vec<u8>, u64)> = Vec::new();
        for _ in 0..self.loads {
            segs.push((PT_LOAD, vec![0xcc; 16], 4096));
        }
        if let Some(i) = &self.interp {
            let mut b = i.as_bytes().to_vec();
            b.push(0);
            segs.insert(segs.len().min(1), (PT_INTERP, b, 1));
        }
        for (align, notes) in &self.notes {
            segs.push((PT_NOTE, self.notes_bytes(*align, notes), *align));
        }
        let phnum = segs.len();
        let shoff = ehsize + phnum * phentsize;
        let mut out = vec![0u8; shoff + shentsize];
        out[..4].copy_from_slice(b"\x7fELF");
        out[4] = if self.is64 { 2 } else { 1 };
        out[5] = if self.big { 2 } else { 1 };
        out[6] = 1;
        self.put(&mut out, 16, 2, 2);
        self.put(&mut out, 18, u64::from(self.machine), 2);
        self.put(&mut out, 20, 1, 4);
        let (phoff_at, shoff_at, sizes_at, w) = if self.is64 {
            (32, 40, 52, 8)
        } else {
            (28, 32, 40, 4)
        };
        self.put(&mut out, phoff_at, ehsize as u64, w);
        self.put(&mut out, shoff_at, shoff as u64, w);
        self.put(&mut out, sizes_at, ehsize as u64, 2);
        self.put(&mut out, sizes_at + 2, phentsize as u64, 2);
        let written_phnum = if self.xnum { 0xffff } else { phnum as u64 };
        self.put(&mut out, sizes_at + 4, written_phnum, 2);
        self.put(&mut out, sizes_at + 6, shentsize as u64, 2);
        self.put(&mut out, sizes_at + 8, 1, 2);
        // sh_info of section header 0 holds the real count under PN_XNUM.
        self.put(
            &mut out,
            shoff + if self.is64 { 44 } else { 28 },
            phnum as u64,
            4,
        );
        for (i, (kind, payload, align)) in segs.iter().enumerate() {
            while out.len() % 8 != 0 {
                out.push(0);
            }
            let offset = out.len() as u64;
            out.extend_from_slice(payload);
            let e = ehsize + i * phentsize;
            self.put(&mut out, e, u64::from(*kind), 4);
            let len = payload.len() as u64;
            if self.is64 {
                self.put(&mut out, e + 8, offset, 8);
                self.put(&mut out, e + 32, len, 8);
                self.put(&mut out, e + 40, len, 8);
                self.put(&mut out, e + 48, *align, 8);
            } else {
                self.put(&mut out, e + 4, offset, 4);
                self.put(&mut out, e + 16, len, 4);
                self.put(&mut out, e + 20, len, 4);
                self.put(&mut out, e + 28, *align, 4);
            }
        }
        out
    }

    fn build_id(&self) -> String {
        for (_, notes) in &self.notes {
            for (name, kind, desc) in notes {
                if *kind == 3 && name == b"GNU\0" {
                    return desc.iter().map(|b| format!("{b:02x}")).collect();
                }
            }
        }
        "none".into()
    }
}

fn facts_of(dir: &Path, bytes: &[u8]) -> Environment {
    let path = dir.join("prog");
    std::fs::write(&path, bytes).expect("write the ELF file");
    let env = within(CASE_LIMIT, move || binary_facts(&path));
    for &k in perfsleuth_env::BINARY_KEYS {
        assert!(env.facts.contains_key(k), "{k} missing: {env:?}");
    }
    env
}

const ELF_LINES: &[&[u8]] = &[b"\x7fELF", b"\xff\xff", b"\x00\x00\x00\x00\xff\xff\xff\xff"];

proptest! {
    #![proptest_config(config(256))]

    /// A generated ELF file's facts are what was written into it.
    #[test]
    fn elf_files_give_the_facts_written_into_them(g in gen_elf()) {
        let dir = Scratch::new("elf");
        let env = facts_of(&dir.0, &g.write());
        prop_assert_eq!(env.get("binary.elf_class"), Some(if g.is64 { "ELF64" } else { "ELF32" }));
        let machine = machine_name(g.machine);
        prop_assert_eq!(env.get("binary.machine"), Some(machine.as_str()));
        let interp = g.interp.clone().unwrap_or_else(|| "static".into());
        prop_assert_eq!(env.get("binary.interpreter"), Some(interp.as_str()), "{:?}", env);
        let build_id = g.build_id();
        prop_assert_eq!(env.get("binary.build_id"), Some(build_id.as_str()), "{:?}", env);
    }

    /// Damaged ELF files: every key set, with a value or a reason.
    #[test]
    fn damaged_elf_files_give_facts_or_reasons(
        g in gen_elf(),
        m in mutations(ELF_LINES),
        flips in prop::collection::vec((any::<usize>(), 1u8..=255), 0..8),
    ) {
        let dir = Scratch::new("elf-damaged");
        let mut m = m;
        // Header bytes matter most: aim some flips at the first 64.
        m.extend(flips.into_iter().map(|(i, x)| Mutation::Flip(i % 64, x)));
        let _ = facts_of(&dir.0, &apply(&g.write(), &m));
    }
}

// ------------------------------------------------------------------ trees

const TREES: [&str; 4] = [
    "intel-xeon-8370c",
    "amd-epyc-7763",
    "container-vm-cgroupv2",
    "garbage",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// Every file of a tree, relative to it, sorted.
fn files_of(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("fixture dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                out.push(p.strip_prefix(root).expect("inside").to_path_buf());
            }
        }
    }
    out.sort();
    out
}

fn copy_tree(from: &Path, to: &Path) {
    for rel in files_of(from) {
        let dst = to.join(&rel);
        std::fs::create_dir_all(dst.parent().expect("parent")).expect("mkdir");
        std::fs::copy(from.join(&rel), &dst).expect("copy");
    }
}

/// Copies the regular files under `from` (which earlier damage may have
/// filled with loops and FIFOs), skipping everything else.
fn copy_regular(from: &Path, to: &Path) {
    let _ = std::fs::create_dir_all(to);
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    for e in entries.flatten() {
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if meta.is_dir() {
            copy_regular(&e.path(), &to.join(e.file_name()));
        } else if meta.is_file() {
            let _ = std::fs::copy(e.path(), to.join(e.file_name()));
        }
    }
}

/// One damage done to a tree; files are picked by index into its file list.
#[derive(Debug, Clone)]
enum TreeMutation {
    /// The file's bytes damaged.
    Garble(usize, Vec<Mutation>),
    /// The file replaced by these bytes.
    Replace(usize, Vec<u8>),
    Remove(usize),
    /// The file replaced by an empty directory.
    Directory(usize),
    /// The file replaced by a FIFO (a read would block).
    Fifo(usize),
    /// The file replaced by a symlink to another file of the tree.
    LinkTo(usize, usize),
    /// The file replaced by a symlink to itself (a loop).
    LinkLoop(usize),
    /// The file replaced by a symlink out of the tree.
    LinkOut(usize, &'static str),
    /// `n` more CPU directories, each with a copy of cpu0's cache files.
    Cpus(usize),
}

fn tree_mutation() -> impl Strategy<Value = TreeMutation> {
    let content = prop_oneof![
        prop::sample::select(NUMBERS).prop_map(|n| [n, b"\n"].concat()),
        Just(Vec::new()),
        Just(b"\xff\xfe\xfd\n".to_vec()),
        Just(b"\n\n\n".to_vec()),
        Just(b"0-4294967295\n".to_vec()),
        Just(b"0-18446744073709551615,3,5-2\n".to_vec()),
        Just(b"ffffffff,ffffffff,ffffffff\n".to_vec()),
        Just(b"max 100000\n".to_vec()),
        Just(b"99999999999999999999 KiB\n".to_vec()),
        prop::collection::vec(any::<u8>(), 0..256),
        (1usize..100_000).prop_map(|n| vec![b'9'; n]),
    ];
    prop_oneof![
        6 => (any::<usize>(), mutations(&[])).prop_map(|(f, m)| TreeMutation::Garble(f, m)),
        4 => (any::<usize>(), content).prop_map(|(f, c)| TreeMutation::Replace(f, c)),
        1 => any::<usize>().prop_map(TreeMutation::Remove),
        1 => any::<usize>().prop_map(TreeMutation::Directory),
        1 => any::<usize>().prop_map(TreeMutation::Fifo),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| TreeMutation::LinkTo(a, b)),
        1 => any::<usize>().prop_map(TreeMutation::LinkLoop),
        1 => (any::<usize>(), prop::sample::select(vec!["/etc/passwd", "/dev/zero", "/proc/self/status", "/", "../../.."]))
            .prop_map(|(a, t)| TreeMutation::LinkOut(a, t)),
        1 => (1usize..12).prop_map(TreeMutation::Cpus),
    ]
}

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).expect("no NUL in a temp path");
    // SAFETY: a valid NUL-terminated path.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo {}", path.display());
}

/// Removes whatever is at `p` (file, directory, link, FIFO) and makes its parent.
fn clear(p: &Path) {
    match std::fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(p);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(p);
        }
        Err(_) => {}
    }
    if let Some(parent) = p.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
}

/// Damages the tree; returns the paths (relative) it changed, for [`restore`].
fn damage(root: &Path, files: &[PathBuf], m: &TreeMutation) -> Vec<PathBuf> {
    let rel = |i: usize| files[i % files.len()].clone();
    let mut touched = Vec::new();
    match m {
        TreeMutation::Garble(i, muts) => {
            let p = root.join(rel(*i));
            // Only a regular file: an earlier damage of this case may have
            // made it a FIFO (or a link to one), whose read never ends.
            let regular = std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_file());
            if let Some(bytes) = regular.then(|| std::fs::read(&p).ok()).flatten() {
                clear(&p);
                let _ = std::fs::write(&p, apply(&bytes, muts));
            }
            touched.push(rel(*i));
        }
        TreeMutation::Replace(i, bytes) => {
            let p = root.join(rel(*i));
            clear(&p);
            let _ = std::fs::write(&p, bytes);
            touched.push(rel(*i));
        }
        TreeMutation::Remove(i) => {
            clear(&root.join(rel(*i)));
            touched.push(rel(*i));
        }
        TreeMutation::Directory(i) => {
            let p = root.join(rel(*i));
            clear(&p);
            let _ = std::fs::create_dir_all(&p);
            touched.push(rel(*i));
        }
        TreeMutation::Fifo(i) => {
            let p = root.join(rel(*i));
            clear(&p);
            mkfifo(&p);
            touched.push(rel(*i));
        }
        TreeMutation::LinkTo(i, j) => {
            let (p, q) = (root.join(rel(*i)), root.join(rel(*j)));
            clear(&p);
            let _ = std::os::unix::fs::symlink(&q, &p);
            touched.push(rel(*i));
        }
        TreeMutation::LinkLoop(i) => {
            let p = root.join(rel(*i));
            clear(&p);
            let _ = std::os::unix::fs::symlink(&p, &p);
            touched.push(rel(*i));
        }
        TreeMutation::LinkOut(i, target) => {
            let p = root.join(rel(*i));
            clear(&p);
            let _ = std::os::unix::fs::symlink(target, &p);
            touched.push(rel(*i));
        }
        TreeMutation::Cpus(n) => {
            let cpu = Path::new("sys/devices/system/cpu");
            let cache = root.join(cpu).join("cpu0/cache");
            for k in 1..=*n {
                let dir = cpu.join(format!("cpu{}", 1000 + k));
                copy_regular(&cache, &root.join(&dir).join("cache"));
                touched.push(dir);
            }
            let online = cpu.join("online");
            clear(&root.join(&online));
            let _ = std::fs::write(root.join(&online), format!("0-{}\n", 1000 + n));
            touched.push(online);
        }
    }
    touched
}

/// Undoes [`damage`]: each touched path as it is in the fixture, or gone.
fn restore(root: &Path, fixture: &Path, touched: &[PathBuf]) {
    for rel in touched {
        let p = root.join(rel);
        clear(&p);
        let original = fixture.join(rel);
        if original.is_file() {
            std::fs::copy(&original, &p).expect("restore a fixture file");
        }
    }
}

/// The captured fingerprint and what `env show`, `env check` and `env diff`
/// do with it.
fn capture_tree(root: PathBuf) -> Environment {
    within(CASE_LIMIT, move || {
        let env = capture(&Source::root(&root), None);
        let _ = check(&env);
        let _ = cpu_capacity(&env);
        let _ = diff(&Environment::default(), &env);
        let _ = diff(&env, &env);
        env
    })
}

/// Restores the damaged paths when dropped: also when the case panics,
/// or every case after a failing one (its shrinking too) would start from
/// a tree that is still damaged.
struct Undo<'a> {
    root: &'a Path,
    fixture: PathBuf,
    touched: Vec<PathBuf>,
}

impl Drop for Undo<'_> {
    fn drop(&mut self) {
        restore(self.root, &self.fixture, &self.touched);
    }
}

/// A damaged copy of a fixture tree gives a fingerprint (facts or
/// reasons) that `env show --json` writes and `env diff` reads back.
///
/// A runner rather than `proptest!`, so that each tree is copied once and
/// each case undoes only what it damaged: copying 115 files a case made
/// the copying, not the capture, most of the time.
#[test]
fn damaged_trees_give_a_fingerprint() {
    let scratch = Scratch::new("trees");
    let mut prepared = BTreeMap::new();
    for tree in TREES {
        let root = scratch.0.join(tree);
        copy_tree(&fixture(tree), &root);
        prepared.insert(tree, (root.clone(), files_of(&root)));
    }
    let strategy = (
        prop::sample::select(TREES.to_vec()),
        prop::collection::vec(tree_mutation(), 1..6),
    );
    let mut runner = proptest::test_runner::TestRunner::new(config(48));
    let result = runner.run(&strategy, |(tree, damages)| {
        let (root, files) = &prepared[tree];
        let mut undo = Undo {
            root,
            fixture: fixture(tree),
            touched: Vec::new(),
        };
        for m in &damages {
            undo.touched.extend(damage(root, files, m));
        }
        let env = capture_tree(root.clone());
        drop(undo);
        prop_assert!(!env.facts.is_empty());
        let doc = EnvironmentDoc {
            schema: EnvironmentDoc::SCHEMA.into(),
            schema_version: EnvironmentDoc::VERSION,
            source: tree.into(),
            comparability: String::new(),
            facts: env,
        };
        let text = schema::to_json_pretty(&doc).expect("the fingerprint serialises");
        let back: EnvironmentDoc = schema::read_document(&text).expect("and reads back");
        prop_assert_eq!(back, doc);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    // Restoring left every tree as it was.
    for (tree, (root, files)) in &prepared {
        assert_eq!(&files_of(root), files, "{tree} not restored");
    }
}
