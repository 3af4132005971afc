//! AFL target: ELF headers, through `binary_facts` on a file (it reads a
//! path, as `perfsleuth run` gives it the benchmarked program).

fn main() {
    let path = std::env::temp_dir().join(format!("perfsleuth-afl-elf-{}", std::process::id()));
    afl::fuzz!(|data: &[u8]| {
        std::fs::write(&path, data).expect("write the input");
        let env = perfsleuth_env::binary_facts(&path);
        assert!(env.facts.contains_key("binary.build_id"));
    });
}
