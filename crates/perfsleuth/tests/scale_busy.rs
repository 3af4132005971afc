//! `scale` on a machine whose CPUs other processes keep busy at every
//! level: a binary of its own, so no other test's load shares the machine
//! with it. Among the CLI tests it failed in two of four loaded runs (one
//! level not flagged), and passed every time alone.

#[path = "cli/common.rs"]
mod common;

use crate::common::{Sandbox, parse_json};

#[test]
fn a_machine_busy_at_every_level_is_flagged_and_the_diagnosis_marked_unreliable() {
    // Two busy loops hold both CPUs (of this 2-vCPU VM, or two of a larger
    // machine's) for the whole sweep of a command that only sleeps.
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut loops: Vec<std::process::Child> = (0..cpus)
        .map(|_| {
            std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("busy loop")
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let sb = Sandbox::new();
    let store = sb.store();
    let out = sb.run([
        "scale",
        "--warmup",
        "0",
        "--runs",
        "2",
        "--store",
        store.as_str(),
        "--param",
        "threads=1,2,3,4",
        "--work-per-thread",
        "1000",
        "--json",
        "--",
        "sleep",
        // Long enough runs for /proc/stat's 10 ms ticks to split the machine's time.
        "0.{threads}",
    ]);
    for l in &mut loops {
        let _ = l.kill();
        let _ = l.wait();
    }
    let out = out.ok();
    let doc = parse_json(&out.stdout);
    let warnings: Vec<&str> = doc["warnings"]
        .as_array()
        .map(|w| w.iter().filter_map(|s| s.as_str()).collect())
        .unwrap_or_default();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("busy at every level") && w.contains("at N = 4")),
        "{warnings:?}"
    );
    let evidence = doc["diagnosis"][0]["evidence"].to_string();
    assert!(evidence.contains("unreliable"), "{evidence}");
}
