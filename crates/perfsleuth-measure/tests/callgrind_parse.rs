//! The callgrind parser on hand-written snippets (one per syntax feature) and
//! on small real files in `tests/fixtures/callgrind/`.

use std::path::{Path, PathBuf};

use perfsleuth_measure::callgrind::{
    FunctionProfile, ParseError, Profile, parse_file, parse_reader,
};

fn parse(text: &str) -> Profile {
    match parse_reader(text.as_bytes(), "snippet") {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    }
}

fn parse_err(text: &str) -> ParseError {
    match parse_reader(text.as_bytes(), "bad.out") {
        Ok(p) => panic!("expected an error, got {p:?}"),
        Err(e) => e,
    }
}

fn func<'a>(p: &'a Profile, name: &str) -> &'a FunctionProfile {
    let mut it = p.functions_named(name);
    let f = it
        .next()
        .unwrap_or_else(|| panic!("no function {name} in {p:?}"));
    assert!(it.next().is_none(), "{name} is in several objects");
    f
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/callgrind")
        .join(name)
}

#[test]
fn spec_simple_example_with_missing_columns() {
    let p = parse(
        "# callgrind format\nevents: Cycles Instructions Flops\nfl=file.f\nfn=main\n15 90 14 2\n16 20 12\n",
    );
    assert_eq!(p.events, ["Cycles", "Instructions", "Flops"]);
    let main = func(&p, "main");
    assert_eq!(main.self_cost, [110, 26, 2]);
    assert_eq!(main.inclusive, [110, 26, 2]);
    assert_eq!(main.file, "file.f");
    assert_eq!(main.object, "");
    // No summary/totals: the sum of the cost lines.
    assert_eq!(p.totals, [110, 26, 2]);
    assert_eq!(p.total("Flops"), Some(2));
    assert_eq!(p.total("Nope"), None);
    assert_eq!(p.files_read, 1);
    assert_eq!(p.parts, 1);
}

const EXTENDED: &str = "# callgrind format
events: Instructions
fl=file1.c
fn=main
16 20
cfn=func1
calls=1 50
16 400
cfi=file2.c
cfn=func2
calls=3 20
16 400
fn=func1
51 100
cfi=file2.c
cfn=func2
calls=2 20
51 300
fl=file2.c
fn=func2
20 700
";

const EXTENDED_COMPRESSED: &str = "# callgrind format
events: Instructions
fl=(1) file1.c
fn=(1) main
16 20
cfn=(2) func1
calls=1 50
16 400
cfi=(2) file2.c
cfn=(3) func2
calls=3 20
16 400
fn=(2)
51 100
cfi=(2)
cfn=(3)
calls=2 20
51 300
fl=(2)
fn=(3)
20 700
";

#[test]
fn spec_extended_example_calls_and_inclusive() {
    let p = parse(EXTENDED);
    let (main, f1, f2) = (func(&p, "main"), func(&p, "func1"), func(&p, "func2"));
    assert_eq!(main.self_cost, [20]);
    assert_eq!(main.inclusive, [820]);
    assert_eq!(main.calls, 0);
    assert_eq!(f1.self_cost, [100]);
    assert_eq!(f1.inclusive, [400]);
    assert_eq!(f1.calls, 1);
    assert_eq!(f2.self_cost, [700]);
    assert_eq!(f2.inclusive, [700]);
    assert_eq!(f2.calls, 5);
    assert_eq!(f2.file, "file2.c");
    assert_eq!(p.totals, [820]);
    let top: Vec<&str> = p
        .top_by_inclusive("Instructions", 2)
        .iter()
        .map(|f| f.function.as_str())
        .collect();
    assert_eq!(top, ["main", "func2"]);
    let top: Vec<&str> = p
        .top_by_self("Instructions", 1)
        .iter()
        .map(|f| f.function.as_str())
        .collect();
    assert_eq!(top, ["func2"]);
    assert!(p.top_by_inclusive("Nope", 3).is_empty());
}

#[test]
fn name_compression_equals_plain_names() {
    assert_eq!(parse(EXTENDED), parse(EXTENDED_COMPRESSED));
}

#[test]
fn name_compression_contexts_are_shared_by_kind() {
    // cfi=(2) defines a file id that fl=(2) uses, cfn=(3) a function id
    // that fn=(3) uses, cob=(1) an object id that ob=(1) uses; ids of
    // different kinds are independent; jfi/jfn define ids too.
    let p = parse(
        "events: Ir
ob=(0) /bin/a
fl=(0) a.c
fn=(0) main
1 1
cob=(1) /lib/b.so
cfi=(1) b.c
cfn=(1) helper
calls=1 5
1 10
jfi=(7) c.h
jfn=(8) inlined
jump=1 3
1
ob=(1)
fl=(1)
fn=(1)
5 10
fi=(7)
6 1
fn=(8)
7 2
",
    );
    let helper = func(&p, "helper");
    assert_eq!(helper.object, "/lib/b.so");
    assert_eq!(helper.file, "b.c");
    assert_eq!(helper.self_cost, [11]);
    assert_eq!(func(&p, "inlined").object, "/lib/b.so");
    assert_eq!(func(&p, "main").inclusive, [11]);
}

#[test]
fn names_with_spaces_parens_and_no_compression() {
    let p = parse(
        "events: Ir\nfn=(below main)\n0 3\nfn=(4) operator new(unsigned long)\n0 4\nfn=(4)\n0 1\n",
    );
    assert_eq!(func(&p, "(below main)").self_cost, [3]);
    assert_eq!(func(&p, "operator new(unsigned long)").self_cost, [5]);
}

#[test]
fn subposition_compression_and_hex_instr() {
    let p = parse(
        "positions: instr line
events: ticks
fn=func
0x80001234 90 1
+3 * 5
+1 +1 6
-2 -1 1
0X10 12
* * 
",
    );
    assert_eq!(func(&p, "func").self_cost, [13]);
    // `instr` alone
    let p = parse("positions: instr\nevents: Ir Dr\nfn=f\n0x400a 1 2\n+2 3\n* 1\n");
    assert_eq!(func(&p, "f").self_cost, [5, 2]);
    // a cost line needs every position
    let e = parse_err("positions: instr line\nevents: Ir\nfn=f\n0x1\n");
    assert_eq!(e.line, 4);
}

#[test]
fn calls_cost_is_not_self_cost_and_recursion_is_not_double_counted() {
    // f calls itself (cost already in its self cost) and g.
    let p = parse(
        "events: Ir
fn=(1) f
1 10
cfn=(1)
calls=4 1
2 30
cfn=(2) g
calls=2 7
3 8
fn=(2)
7 8
",
    );
    let f = func(&p, "f");
    assert_eq!(f.self_cost, [10]);
    assert_eq!(f.inclusive, [18]);
    assert_eq!(f.calls, 4);
    assert_eq!(func(&p, "g").calls, 2);
    assert_eq!(p.totals, [18]);
}

#[test]
fn same_name_in_two_objects_is_two_functions_and_recursion_needs_same_object() {
    let p = parse(
        "events: Ir
ob=a
fn=f
1 10
cob=b
cfn=f
calls=1 1
1 5
ob=b
fn=f
1 5
",
    );
    assert_eq!(p.functions.len(), 2);
    let fa = p.functions.iter().find(|f| f.object == "a").unwrap();
    assert_eq!(fa.inclusive, [15]);
}

#[test]
fn call_target_never_defined_gets_incoming_cost() {
    let p = parse("events: Ir\nsummary: 41\nfn=main\n1 1\ncfn=ext\ncalls=2 0\n1 40\n");
    let ext = func(&p, "ext");
    assert_eq!(ext.self_cost, [0]);
    assert_eq!(ext.inclusive, [40]);
    assert_eq!(ext.calls, 2);
}

#[test]
fn inclusive_is_capped_at_totals() {
    // Mutual recursion a -> b -> a: the file alone cannot untangle it.
    let p = parse(
        "events: Ir
fn=a
1 10
cfn=b
calls=1 1
1 25
fn=b
1 15
cfn=a
calls=1 1
1 5
totals: 25
",
    );
    assert_eq!(func(&p, "a").inclusive, [25]);
    assert_eq!(func(&p, "b").inclusive, [20]);
}

#[test]
fn headers_comments_blank_lines_jumps() {
    let p = parse(
        "# callgrind format
version: 1
creator: callgrind-3.19.0
pid: 42
cmd:  ./prog --flag
part: 1
thread: 1

desc: I1 cache: 32768 B, 64 B, 8-way associative
desc: Trigger: Program termination
event: Ir : Instruction Fetch
positions: line
events: Ir Dr
summary: 12 3

# a comment
ob=(1) /bin/prog
fl=(1) prog.c
fn=(1) main
3 5 1

jcnd=1/2 +4
* 
jump=3 -2
* 
jcnd=1 2 +1
+1 7 2

totals: 12 3
",
    );
    assert_eq!(p.commands, ["./prog --flag"]);
    assert_eq!(p.totals, [12, 3]);
    assert_eq!(func(&p, "main").self_cost, [12, 3]);
}

#[test]
fn summary_wins_over_totals_and_self_sum_is_kept() {
    // callgrind's summary can exceed the cost lines by a few instructions;
    // callgrind_annotate prints the summary, and so do we.
    let p = parse("events: Ir\nsummary: 105\nfn=f\n1 100\ntotals: 100\n");
    assert_eq!(p.totals, [105]);
    assert_eq!(p.self_sum(), [100]);
    // A zero summary (callgrind_annotate's rule) falls back to totals.
    let p = parse("events: Ir\nsummary: 0\nfn=f\n1 100\ntotals: 100\n");
    assert_eq!(p.totals, [100]);
    let p = parse("events: Ir Dr\nfn=f\n1 100 1\ntotals: 101\n");
    assert_eq!(p.totals, [101, 0]);
}

#[test]
fn multiple_parts_sum_and_keep_name_ids() {
    let p = parse(
        "version: 1
creator: callgrind-3.19.0
part: 1
positions: line
events: Ir
summary: 10
fl=(1) a.c
fn=(1) f
1 10
totals: 10
part: 2
positions: instr line
events: Ir Dr
summary: 7 2
fl=(1)
fn=(1)
0x10 1 7 2
totals: 7 2
",
    );
    assert_eq!(p.parts, 2);
    assert_eq!(p.events, ["Ir", "Dr"]);
    assert_eq!(p.totals, [17, 2]);
    assert_eq!(func(&p, "f").self_cost, [17, 2]);
}

#[test]
fn merge_unites_events_and_sums_functions() {
    let mut a = parse("cmd: x\nevents: Ir\nob=o\nfn=f\n1 10\nfn=g\n1 1\n");
    let b = parse("cmd: y\nevents: Dr Ir\nob=o\nfn=f\n1 2 5\nfn=h\n1 0 3\n");
    a.merge(b);
    assert_eq!(a.events, ["Ir", "Dr"]);
    assert_eq!(a.totals, [19, 2]);
    assert_eq!(func(&a, "f").self_cost, [15, 2]);
    assert_eq!(func(&a, "g").self_cost, [1, 0]);
    assert_eq!(func(&a, "h").self_cost, [3, 0]);
    assert_eq!(a.commands, ["x", "y"]);
    assert_eq!(a.files_read, 2);
    let mut empty = Profile::default();
    empty.merge(a.clone());
    assert_eq!(empty, a);
}

#[test]
fn crlf_and_tabs() {
    let p = parse("events:\tIr\tDr\r\nfn=f\r\n1\t2\t3\r\n");
    assert_eq!(func(&p, "f").self_cost, [2, 3]);
}

#[test]
fn errors_carry_file_and_line() {
    let cases: &[(&str, usize, &str)] = &[
        ("events: Ir\nfn=f\n1 2 3\n", 3, "more costs"),
        ("events: Ir\nfn=f\n1 x\n", 3, "expected a number"),
        ("events: Ir\nfn=f\n1 99999999999999999999\n", 3, "overflows"),
        (
            "events: Ir\nfn=f\n1 18446744073709551615\n1 1\n",
            4,
            "overflow",
        ),
        ("events: Ir\nfn=(3)\n", 2, "used before it is defined"),
        ("events: Ir\nfn=(3 x\n", 2, "unterminated"),
        ("events: Ir\nfoo=bar\n", 2, "unknown specification"),
        ("events: Ir\nhello world\n", 2, "not a callgrind line"),
        ("events: Ir\n1 2\n", 2, "before any `fn=`"),
        ("fn=f\n1 2\n", 2, "before `events:`"),
        (
            "events: Ir\nfn=f\ncfn=g\ncalls=1 2\nfn=h\n",
            5,
            "cost line of the preceding",
        ),
        (
            "events: Ir\nfn=f\ncfn=g\ncalls=1 2\n",
            4,
            "without its cost line",
        ),
        (
            "events: Ir\nfn=f\ncalls=1 2\n",
            3,
            "without a preceding `cfn=`",
        ),
        ("events: Ir\nfn=f\ncfn=g\ncalls=1\n", 4, "without target"),
        ("events: Ir Ir\n", 1, "twice"),
        ("positions: pc\n", 1, "unknown position"),
        ("version: 2\nevents: Ir\n", 1, "unsupported format version"),
        ("# only a comment\n", 1, "no `events:`"),
        ("", 1, "empty file"),
        ("events: Ir\nsummary: 1 2\n", 2, "more than 1 costs"),
        ("events: Ir\nfn=f\njump=x 1\n", 3, "expected a number"),
        // written by callgrind, but cut off
        (
            "creator: callgrind-3.19.0\nevents: Ir\nfn=f\n1 2\n",
            4,
            "truncated",
        ),
        (
            "creator: callgrind-3.19.0\nevents: Ir\nfn=f\n1 2\ntotals: 2",
            5,
            "truncated",
        ),
    ];
    for (text, line, what) in cases {
        let e = parse_err(text);
        assert_eq!(e.file, "bad.out", "{text:?}");
        assert_eq!(e.line, *line, "{text:?}: {e}");
        assert!(e.message.contains(what), "{text:?}: {e}");
        assert_eq!(e.to_string(), format!("bad.out:{line}: {}", e.message));
    }
}

#[test]
fn overlong_line_is_an_error_not_a_hang() {
    let mut text = String::from("events: Ir\nfn=");
    text.push_str(&"x".repeat(2 << 20));
    let e = parse_err(&text);
    assert_eq!(e.line, 2);
    assert!(e.message.contains("longer than"), "{e}");
}

#[test]
fn missing_file_error() {
    let e = parse_file(Path::new("/nonexistent/callgrind.out.1")).unwrap_err();
    assert_eq!(e.line, 0);
    assert!(
        e.to_string()
            .starts_with("/nonexistent/callgrind.out.1: cannot open"),
        "{e}"
    );
}

// ---- real callgrind 3.19 files ------------------------------------------
// All three come from the same program (qs.c: qsort of 200 ints with a
// comparator, then a recursive fib(12)) run with --toggle-collect=run
// --collect-atstart=no. The expected numbers are what callgrind_annotate
// 3.19 prints for them.

#[test]
fn fixture_with_instr_positions_jumps_and_cache_events() {
    let p = parse_file(&fixture("toggle-instr-jumps.out")).unwrap();
    assert_eq!(
        p.events,
        [
            "Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw"
        ]
    );
    assert_eq!(p.totals, [81834, 26622, 15765, 204, 56, 60, 203, 27, 58]);
    assert_eq!(p.self_sum(), p.totals);
    // Everything collected happened inside `run`.
    assert_eq!(func(&p, "run").inclusive, p.totals);
    let fib = func(&p, "fib");
    let fib2 = func(&p, "fib'2");
    assert_eq!(fib.calls, 1);
    assert_eq!(fib.inclusive[0], fib.self_cost[0] + fib2.inclusive[0]);
    // fib'2 only calls itself.
    assert_eq!(fib2.inclusive, fib2.self_cost);
    assert!(func(&p, "cmp_int").calls > 1000);
}

#[test]
fn fixture_uncompressed_equals_compressed() {
    let a = parse_file(&fixture("toggle-instr-jumps.out")).unwrap();
    let b = parse_file(&fixture("uncompressed.out")).unwrap();
    assert_eq!(a.totals, b.totals);
    assert_eq!(a.functions.len(), b.functions.len());
    for f in &a.functions {
        let g = b
            .functions
            .iter()
            .find(|g| g.function == f.function && g.object == f.object)
            .unwrap();
        assert_eq!(
            (&f.self_cost, &f.inclusive, f.calls),
            (&g.self_cost, &g.inclusive, g.calls)
        );
    }
}

#[test]
fn fixture_with_three_parts() {
    // --combine-dumps=yes --dump-before=sort_some --dump-before=fib:
    // callgrind_annotate keeps only the last part's summary (9,097);
    // the parts add up to the single-dump total.
    let p = parse_file(&fixture("combined-parts.out")).unwrap();
    assert_eq!(p.parts, 3);
    assert_eq!(p.totals, [81834]);
    assert_eq!(p.self_sum(), [81834]);
}
