//! The judged time on real programs: CPU time for a program that keeps one
//! CPU busy without waiting, wall time once a change adds waiting
//! (docs/COMPARE.md, "Which time is judged").

use crate::common::Sandbox;

#[test]
fn a_change_that_adds_a_sleep_is_judged_on_wall_time_and_caught() {
    let sb = Sandbox::new();
    if !perfsleuth_testkit::tools_present("judged time", &["gcc"]) {
        return;
    }
    let prog = sb.gcc(
        "wait",
        include_str!("../../../../bench/validation/progs/wait.c"),
        &[],
    );
    let p = prog.display().to_string();
    let export = sb.path("run.json");
    sb.run([
        "run",
        "--no-store",
        "--runs",
        "30",
        "--warmup",
        "2",
        "--export-json",
        export.to_str().unwrap(),
        "-n",
        "busy",
        "-n",
        "busy again",
        "-n",
        "sleeps 3 ms",
        &format!("{p} 0"),
        &format!("{p} 0"),
        &format!("{p} 3"),
    ])
    .ok();
    let doc = crate::common::parse_json(&std::fs::read_to_string(&export).unwrap());
    let comparisons = doc["summary"]["comparisons"].as_array().unwrap();
    // The same busy program: judged on CPU time, from 30 adjacent pairs.
    let same = &comparisons[0]["time"];
    assert_eq!(same["metric"], "cpu", "{doc:#}");
    assert!(
        same["judged"].as_str().unwrap().starts_with("keeps "),
        "{same:#}"
    );
    assert_eq!(same["pairs"], 30, "{same:#}");
    // The same program with a sleep added: it waits once more a run, so
    // wall time is judged, and the sleep is caught as slower.
    let slept = &comparisons[1]["time"];
    assert_eq!(slept["metric"], "wall", "{doc:#}");
    assert!(
        slept["judged"].as_str().unwrap().contains("waits"),
        "{slept:#}"
    );
    assert_eq!(slept["significant"], true, "{slept:#}");
    assert!(slept["ratio"].as_f64().unwrap() > 1.0, "{slept:#}");
}
