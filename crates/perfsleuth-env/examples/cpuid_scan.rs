//! `cargo run --release -p perfsleuth-env --example cpuid_scan -- FILE…`:
//! the CPUID sites of each file as `perfsleuth_env::cpuid_sites` finds them,
//! and how long that took (bench/simulation/cpuid_scan.sh times it beside
//! `objdump -d`).

fn main() {
    for path in std::env::args().skip(1) {
        let start = std::time::Instant::now();
        let sites = perfsleuth_env::cpuid_sites(std::path::Path::new(&path));
        let ms = start.elapsed().as_secs_f64() * 1e3;
        match sites {
            Ok(n) => println!("{path}\t{n}\t{ms:.1} ms"),
            Err(e) => println!("{path}\terror: {e}\t{ms:.1} ms"),
        }
    }
}
