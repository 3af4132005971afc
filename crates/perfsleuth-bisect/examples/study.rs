//! The simulated study of docs/BISECT.md: `cargo run --release -p
//! perfsleuth-bisect --example study [TRIALS [ROUNDS LOOKS]]` (default 1000
//! trials per scenario, and the budget of [`Budget::ab`]).
//! Seeded: the same table on every machine.

use perfsleuth_bisect::study::{Budget, NoiseShape, Trial, bisect, pinpoint_like};

struct Row {
    name: &'static str,
    right: usize,
    wrong: usize,
    runs: u64,
    probes: usize,
    peer_right: usize,
    peer_runs: u64,
}

fn main() {
    let trials: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let n = 128;
    // The budget per probe: ab's unless ROUNDS and LOOKS say otherwise.
    let mut budget = Budget::ab();
    let knob = |i: usize| std::env::args().nth(i).and_then(|a| a.parse::<u32>().ok());
    budget.rounds = knob(2).unwrap_or(budget.rounds);
    budget.extra_looks = knob(3).unwrap_or(budget.extra_looks);
    println!(
        "{} planned rounds, up to {} looks more",
        budget.rounds, budget.extra_looks
    );
    for (label, shape) in [
        ("this VM's noise", NoiseShape::measured()),
        (
            "four times the noise, with steal episodes",
            NoiseShape::noisy(),
        ),
    ] {
        println!("\n{label}\n");
        table(n, trials, shape, &budget);
    }
}

fn table(n: usize, trials: u64, shape: NoiseShape, budget: &Budget) {
    type Scenario = (&'static str, fn(u64) -> Vec<(usize, f64)>);
    let scenarios: [Scenario; 3] = [
        ("one +2 % culprit", |s| {
            vec![(1 + (s as usize * 37) % 127, 0.02)]
        }),
        ("no change", |_| Vec::new()),
        ("two culprits, +1.5 % and +2 %", |s| {
            let a = 1 + (s as usize * 29) % 60;
            let b = 65 + (s as usize * 41) % 63;
            vec![(a, 0.015), (b, 0.02)]
        }),
    ];
    println!(
        "| scenario ({n} commits, {trials} trials) | right | a wrong commit named | runs (mean) | probes (mean) | Pinpoint-like right | its runs (mean) |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, effects) in scenarios {
        let mut row = Row {
            name,
            right: 0,
            wrong: 0,
            runs: 0,
            probes: 0,
            peer_right: 0,
            peer_runs: 0,
        };
        for seed in 0..trials {
            let e = effects(seed);
            let mut truth: Vec<usize> = e.iter().map(|(c, _)| *c).collect();
            truth.sort_unstable();
            let t: Trial = bisect(n, &e, shape, budget, seed);
            row.right += usize::from(t.named == truth);
            row.wrong += usize::from(t.named.iter().any(|c| !truth.contains(c)));
            row.runs += t.runs;
            row.probes += t.probes;
            let p = pinpoint_like(n, &e, shape, seed);
            // The ladder names one commit: right when it is one of the culprits
            // (it cannot name two), or none where nothing changed.
            let peer_ok = if truth.is_empty() {
                p.named.is_empty()
            } else {
                p.named.len() == 1 && truth.contains(&p.named[0])
            };
            row.peer_right += usize::from(peer_ok);
            row.peer_runs += p.runs;
        }
        let pct = |k: usize| 100.0 * k as f64 / trials as f64;
        println!(
            "| {} | {:.1} % | {:.1} % | {:.0} | {:.1} | {:.1} % | {:.0} |",
            row.name,
            pct(row.right),
            pct(row.wrong),
            row.runs as f64 / trials as f64,
            row.probes as f64 / trials as f64,
            pct(row.peer_right),
            row.peer_runs as f64 / trials as f64,
        );
    }
}
