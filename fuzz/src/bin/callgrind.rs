//! AFL target: the callgrind parser on raw bytes.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        if let Ok(p) = perfsleuth_measure::callgrind::parse_reader(data, "afl") {
            assert!(p.events.len() <= 64);
            for f in &p.functions {
                assert_eq!(f.self_cost.len(), p.events.len());
            }
        }
    });
}
