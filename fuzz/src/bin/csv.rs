//! AFL target: `scale fit FILE.csv` — the reader, the fit and its renderings.

use perfsleuth_scale::{Machine, analyze, chart, read_csv, render_terminal, to_json};

fn main() {
    afl::fuzz!(|data: &[u8]| {
        if let Ok(obs) = read_csv(&String::from_utf8_lossy(data)) {
            let a = analyze("N", &obs, &Machine::default());
            let _ = render_terminal(&a, false);
            let _ = perfsleuth_model::schema::to_json_pretty(&to_json(&a, None));
            let _ = chart(&a, "afl");
        }
    });
}
