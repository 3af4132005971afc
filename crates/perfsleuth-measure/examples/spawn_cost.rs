//! Measures the per-iteration cost of the local executor and of the spawner,
//! with and without requests queued ahead. Usage: spawn_cost N PROGRAM
use perfsleuth_measure::{Executor, IoConfig, Spawner};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: u32 = args[1].parse().unwrap_or(500);
    let argv = vec![args.get(2).cloned().unwrap_or_else(|| "true".into())];
    let io = IoConfig::default();
    let mut sp = Spawner::start().unwrap();
    let mut ex = Executor::new(&argv, &io).unwrap();
    let id = sp.prepare(&argv, &io).unwrap();
    let per = |t: Instant| t.elapsed().as_secs_f64() * 1e6 / n as f64;
    for round in 0..3 {
        let t = Instant::now();
        for i in 0..n {
            ex.run_once(i).unwrap();
        }
        let local = per(t);
        let t = Instant::now();
        for i in 0..n {
            sp.run_once(id, i).unwrap();
        }
        let sequential = per(t);
        let t = Instant::now();
        sp.begin(id, 0, false).unwrap();
        for i in 1..n {
            sp.begin(id, i, false).unwrap();
            sp.finish().unwrap();
        }
        sp.finish().unwrap();
        let one_ahead = per(t);
        // All queued at once while this process sleeps: no wake-ups at all.
        let t = Instant::now();
        for i in 0..n {
            sp.begin(id, i, false).unwrap();
        }
        std::thread::sleep(std::time::Duration::from_secs_f64(
            local * n as f64 * 1e-6 * 0.9,
        ));
        for _ in 0..n {
            sp.finish().unwrap();
        }
        let queued = per(t);
        println!(
            "round {round}: local {local:.1} us, spawner sequential {sequential:.1}, one ahead {one_ahead:.1}, all queued {queued:.1}"
        );
    }
}
