//! Traces one command's lock waits and prints the report as JSON:
//! `trace_locks COMMAND [ARGS…]` (as root). A development aid; perfsleuth's
//! `run --locks` is the real interface.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: trace_locks COMMAND [ARGS…]");
        std::process::exit(2);
    };
    let tracer = match perfsleuth_locks::Tracer::start(std::process::id()) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("trace_locks: {e}");
            std::process::exit(2);
        }
    };
    let status = std::process::Command::new(program).args(rest).status();
    let traced = tracer.finish().expect("reading the trace");
    eprintln!("status {status:?}, {} samples", traced.samples());
    let report = traced.report(&[1]);
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}
