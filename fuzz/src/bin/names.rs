//! AFL target: the small name and size parsers (`parse_size`, `--probes`,
//! metric, status and mode names).

use perfsleuth_model::{Metric, Mode, RunStatus};

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let text = String::from_utf8_lossy(data);
        if let Some(n) = perfsleuth_probe::parse_size(&text) {
            assert!(n > 0);
        }
        let words: Vec<String> = text.split('\n').map(str::to_string).collect();
        let _ = perfsleuth_probe::parse_names(&words);
        if let Some(m) = Metric::parse(&text) {
            assert_eq!(m.name(), text);
        }
        let _ = (RunStatus::parse(&text), Mode::parse(&text));
    });
}
