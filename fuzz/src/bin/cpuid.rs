//! AFL target: `cpuid -r` dumps.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let _ = perfsleuth_env::cpuid::CpuidTable::parse(&String::from_utf8_lossy(data));
    });
}
