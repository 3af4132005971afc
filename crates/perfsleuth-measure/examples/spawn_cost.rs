//! Measures the per-iteration cost of the local executor and of the spawner.
//! Usage: spawn_cost N PROGRAM
use perfsleuth_measure::{Executor, IoConfig, OutputTarget, Spawner};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u32 = args[1].parse().unwrap();
    let argv = vec![args[2].clone()];
    let io = IoConfig {
        output: OutputTarget::Null,
        input: None,
        timeout: None,
    };
    let mut sp = Spawner::start().unwrap();
    let mut ex = Executor::new(&argv, &io).unwrap();
    let id = sp.prepare(&argv, &io).unwrap();
    for round in 0..3 {
        let t = Instant::now();
        for i in 0..n {
            ex.run_once(i).unwrap();
        }
        let local = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        let t = Instant::now();
        for i in 0..n {
            sp.run_once(id, i).unwrap();
        }
        let remote = t.elapsed().as_secs_f64() * 1e6 / n as f64;
        println!("round {round}: local {local:.1} us, spawner {remote:.1} us");
    }
}
