//! Fills a store with a synthetic team history through the product's own
//! write path (`ingest_run`), for `bench/store_scale.py` (issue 53): runs of
//! 20 benchmarks × 10 samples over 5 machine classes and 2 branches, each
//! machine class running the same binaries, so compare learns noise from
//! history as it does on a real team's store.
//!
//! Usage: cargo run --release --example fill_store -- STORE_URL FROM TO

use perfsleuth_model::{
    Benchmark, Environment, GitInfo, ImpactClass, Mode, Run, RunStatus, Sample,
};

fn run(i: usize) -> Run {
    let class = i % 5;
    let mut environment = Environment::default();
    environment.set(
        "cpu.model",
        format!("Runner CPU {class}"),
        ImpactClass::Identity,
    );
    environment.set("host.name", format!("runner-{class}"), ImpactClass::Context);
    let benchmark = |b: usize| {
        let mut facts = Environment::default();
        facts.set(
            "binary.sha256",
            format!("{:064x}", b + 1000 * (i / 500)),
            ImpactClass::Identity,
        );
        Benchmark {
            locks: None,
            stacks: None,
            allocs: None,
            name: format!("bench-{b:02}"),
            command: format!("./bench {b}"),
            argv: vec!["./bench".into(), b.to_string()],
            parameters: Default::default(),
            facts,
            samples: (0..10u32)
                .map(|k| Sample {
                    iteration: k,
                    round: k / 2,
                    wall_ns: 1_000_000
                        + 10_000 * b as u64
                        + u64::from((k * 7 + i as u32) % 13) * 900,
                    wall_exact_ns: None,
                    // Every metric varies a little, as measured ones do: a
                    // constant side would let the bootstrap's cost go unseen.
                    user_ns: 900_000 + u64::from((k * 5 + i as u32) % 11) * 700,
                    sys_ns: 60_000 + u64::from((k * 3 + i as u32) % 7) * 300,
                    peak_rss_bytes: (4 << 20) + u64::from((k + i as u32) % 5) * 4096,
                    minor_faults: 120,
                    major_faults: 0,
                    voluntary_cs: 1,
                    involuntary_cs: 0,
                    exit_code: Some(0),
                    signal: None,
                    counters: Default::default(),
                })
                .collect(),
            profile: None,
            summaries: Vec::new(),
        }
    };
    Run {
        id: None,
        uuid: None,
        // A run a minute, in order (months of 28 days keep the arithmetic plain).
        started_at: format!(
            "2026-{:02}-{:02}T{:02}:{:02}:00.000Z",
            1 + i / 1440 / 28,
            1 + i / 1440 % 28,
            i / 60 % 24,
            i % 60
        ),
        ended_at: None,
        status: RunStatus::Complete,
        tool_version: "0.1.0".into(),
        git: Some(GitInfo {
            commit: format!("{:040x}", i / 5),
            branch: Some(if i % 10 < 8 { "main" } else { "feature" }.into()),
            dirty: false,
        }),
        mode: Mode::Walltime,
        options: serde_json::json!({}),
        environment,
        benchmarks: (0..20).map(benchmark).collect(),
        probes: Vec::new(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(url), Some(from), Some(to)) = (args.get(1), args.get(2), args.get(3)) else {
        eprintln!("usage: fill_store STORE_URL FROM TO");
        std::process::exit(2);
    };
    let (from, to): (usize, usize) = (from.parse().expect("FROM"), to.parse().expect("TO"));
    let url = perfsleuth_store::StoreUrl::parse(url).expect("a store URL");
    let mut store = url.open().expect("the store opens");
    for i in from..to {
        store.ingest_run(&run(i)).expect("the run is stored");
    }
}
