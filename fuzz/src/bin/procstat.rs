//! AFL target: `/proc/stat`, two readings of it and the shares between them.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let text = String::from_utf8_lossy(data);
        let (a, b) = text.split_once("\n--\n").unwrap_or((&text, ""));
        let (a, b) = (
            perfsleuth_measure::CpuTimes::parse(a),
            perfsleuth_measure::CpuTimes::parse(b),
        );
        if let (Ok(a), Ok(b)) = (a, b) {
            if let Some(u) = a.usage_until(&b) {
                assert!((0.0..=1.0).contains(&u.total.user));
            }
        }
    });
}
