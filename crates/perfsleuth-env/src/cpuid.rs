//! CPUID: executed on the live machine, or read from a `cpuid -r` dump so
//! that fixtures of other machines carry it too.

use crate::error::{CpuidError, Unknown};
use std::collections::BTreeMap;

/// CPUID values of one CPU keyed by (leaf, subleaf).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuidTable {
    values: BTreeMap<(u32, u32), [u32; 4]>,
}

impl CpuidTable {
    /// Parses the raw output of `cpuid -r` (Debian package `cpuid`): lines like
    /// `   0x00000000 0x00: eax=0x00000010 ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69`.
    /// Only the first CPU's block is used (CPUID differs per CPU only in APIC ids).
    pub fn parse(text: &str) -> Result<CpuidTable, CpuidError> {
        let mut values = BTreeMap::new();
        let mut cpus_seen = 0;
        for (no, line) in text.lines().enumerate() {
            let t = line.trim();
            if t.is_empty() {
                continue;
            }
            if t.starts_with("CPU ") || t.starts_with("CPU:") {
                cpus_seen += 1;
                if cpus_seen > 1 {
                    break;
                }
                continue;
            }
            let bad = || CpuidError::NotALine {
                line: no + 1,
                text: t.chars().take(60).collect(),
            };
            let (keys, regs) = t.split_once(':').ok_or_else(bad)?;
            let mut k = keys.split_whitespace();
            let leaf = hex(k.next().ok_or_else(bad)?).ok_or_else(bad)?;
            let subleaf = hex(k.next().ok_or_else(bad)?).ok_or_else(bad)?;
            let mut r = [0u32; 4];
            let mut seen = 0;
            for part in regs.split_whitespace() {
                let (name, value) = part.split_once('=').ok_or_else(bad)?;
                let idx = match name {
                    "eax" => 0,
                    "ebx" => 1,
                    "ecx" => 2,
                    "edx" => 3,
                    _ => return Err(bad()),
                };
                r[idx] = hex(value).ok_or_else(bad)?;
                seen += 1;
            }
            if seen != 4 {
                return Err(bad());
            }
            values.entry((leaf, subleaf)).or_insert(r);
        }
        if values.is_empty() {
            return Err(CpuidError::Empty);
        }
        Ok(CpuidTable { values })
    }

    /// The registers of a leaf/subleaf, if dumped.
    pub fn get(&self, leaf: u32, subleaf: u32) -> Option<[u32; 4]> {
        self.values.get(&(leaf, subleaf)).copied()
    }
}

fn hex(s: &str) -> Option<u32> {
    u32::from_str_radix(
        s.trim().trim_start_matches("0x").trim_start_matches("0X"),
        16,
    )
    .ok()
}

/// Executes CPUID on this machine.
pub fn live(leaf: u32, subleaf: u32) -> Result<[u32; 4], Unknown> {
    #[cfg(target_arch = "x86_64")]
    {
        // Leaves above the maximum return garbage (the highest basic leaf's
        // data on Intel), so check the range first.
        let base = leaf & 0xffff_0000;
        let max = std::arch::x86_64::__cpuid_count(base, 0).eax;
        if leaf > max {
            return Err(format!("CPUID leaf {leaf:#x} above the maximum {max:#x}").into());
        }
        let r = std::arch::x86_64::__cpuid_count(leaf, subleaf);
        Ok([r.eax, r.ebx, r.ecx, r.edx])
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (leaf, subleaf);
        Err("CPUID exists only on x86".into())
    }
}

/// The 12-byte vendor string of leaf 0 (ebx, edx, ecx) or of a hypervisor leaf (ebx, ecx, edx).
pub fn vendor_string(regs: [u32; 4], order: [usize; 3]) -> String {
    let mut bytes = Vec::with_capacity(12);
    for i in order {
        bytes.extend_from_slice(&regs[i].to_le_bytes());
    }
    // A dump's registers are a file's bytes: control characters (an escape
    // sequence for the terminal `env show` prints to) never reach a fact.
    String::from_utf8_lossy(&bytes)
        .trim_matches(char::from(0))
        .trim()
        .chars()
        .filter(|c| !c.is_control())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DUMP: &str = "CPU 0:\n   0x00000000 0x00: eax=0x00000010 ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69\n   0x00000001 0x00: eax=0x000606a6 ebx=0x00800800 ecx=0xfeda3203 edx=0x178bfbff\nCPU 1:\n   0x00000000 0x00: eax=0x00000099 ebx=0x0 ecx=0x0 edx=0x0\n";

    #[test]
    fn parses_the_first_cpu_of_a_raw_dump() {
        let t = CpuidTable::parse(DUMP).unwrap();
        let leaf0 = t.get(0, 0).unwrap();
        assert_eq!(leaf0[0], 0x10);
        assert_eq!(vendor_string(leaf0, [1, 3, 2]), "GenuineIntel");
        assert_eq!(t.get(1, 0).unwrap()[0], 0x606a6);
        assert_eq!(t.get(2, 0), None);
    }

    #[test]
    fn a_vendor_string_keeps_no_control_characters() {
        // "\x1b]0;x" and "\x07" in the registers: a terminal escape.
        let regs = [
            0,
            u32::from_le_bytes(*b"\x1b]0;"),
            u32::from_le_bytes(*b"ab\x07c"),
            u32::from_le_bytes(*b"x\ndy"),
        ];
        assert_eq!(vendor_string(regs, [1, 3, 2]), "]0;xdyabc");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(CpuidTable::parse("").is_err());
        assert!(CpuidTable::parse("hello world").is_err());
        assert!(CpuidTable::parse("0x0 0x0: eax=zz ebx=1 ecx=1 edx=1").is_err());
        assert!(CpuidTable::parse("0x0 0x0: eax=1 ebx=1").is_err());
    }
}
