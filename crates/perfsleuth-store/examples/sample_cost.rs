//! Measures the cost of committing one sample: `sample_cost PATH N`.
use perfsleuth_model::{Benchmark, Environment, Mode, Run, RunStatus, Sample};
use perfsleuth_store::{RunWriter as _, SqliteStore};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u32 = args[2].parse().unwrap();
    let mut store = SqliteStore::open(std::path::Path::new(&args[1])).unwrap();
    let run = Run {
        id: None,
        uuid: None,
        started_at: "2026-01-01T00:00:00.000Z".into(),
        ended_at: None,
        status: RunStatus::Running,
        tool_version: "x".into(),
        git: None,
        mode: Mode::Walltime,
        options: serde_json::Value::Null,
        environment: Environment::default(),
        benchmarks: vec![],
        probes: Vec::new(),
    };
    let id = store.begin_run(&run).unwrap();
    let b = store.add_benchmark(id, &Benchmark::default()).unwrap();
    let t = Instant::now();
    for i in 0..n {
        let s = Sample {
            iteration: i,
            wall_ns: 400_000 + i as u64,
            peak_rss_bytes: 1 << 20,
            exit_code: Some(0),
            ..Sample::default()
        };
        store.add_sample(b, &s).unwrap();
    }
    println!(
        "{:.1} us per sample",
        t.elapsed().as_secs_f64() * 1e6 / n as f64
    );
}
