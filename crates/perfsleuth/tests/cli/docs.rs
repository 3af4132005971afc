//! Shell completions, man pages and `--version`, generated from the parser.

use crate::common::Sandbox;
use std::process::Command;

#[test]
fn bash_completion_script_loads_and_completes_subcommands_and_options() {
    let sb = Sandbox::new();
    let out = sb.run(["completions", "bash"]).ok();
    let script = sb.write("perfsleuth.bash", &out.stdout);
    // Loaded by a real bash, then asked what completes `perfsleuth ab --bu`.
    let probe = format!(
        "source {}; COMP_WORDS=(perfsleuth ab --bu); COMP_CWORD=2; _perfsleuth perfsleuth --bu ab; printf '%s\\n' \"${{COMPREPLY[@]}}\"; COMP_WORDS=(perfsleuth ''); COMP_CWORD=1; _perfsleuth perfsleuth '' perfsleuth; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    );
    let got = Command::new("bash").args(["-c", &probe]).output().unwrap();
    let text = String::from_utf8_lossy(&got.stdout);
    assert!(
        got.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&got.stderr)
    );
    let words: Vec<&str> = text.lines().collect();
    assert!(
        words.contains(&"--build") && words.contains(&"--build-timeout"),
        "{text}"
    );
    for sub in [
        "run",
        "ab",
        "compare",
        "scale",
        "probe",
        "man",
        "completions",
    ] {
        assert!(words.contains(&sub), "{sub} missing: {text}");
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let out = sb.run(["completions", shell]).ok();
        assert!(
            out.stdout.contains("export-hyperfine"),
            "{shell}: {}",
            out.stdout
        );
    }
    sb.run(["completions", "tcsh"]).clap_error("tcsh");
}

#[test]
fn man_pages_cover_every_subcommand_and_option() {
    let sb = Sandbox::new();
    let top = sb.run(["man"]).ok().stdout;
    assert!(
        top.starts_with(".ie") || top.contains(".TH perfsleuth 1"),
        "{top}"
    );
    for sub in [
        "run", "ab", "compare", "scale", "probe", "runs", "show", "env",
    ] {
        assert!(top.contains(sub), "{sub} not in the top page");
    }
    let run = sb.run(["man", "run"]).ok().stdout;
    assert!(run.contains(".TH perfsleuth-run 1"), "{run}");
    // The subcommand's page carries the version, as the top page does.
    let th = run
        .lines()
        .find(|l| l.starts_with(".TH"))
        .unwrap_or_default();
    assert!(th.contains(env!("CARGO_PKG_VERSION")), "{th}");
    for opt in [
        "\\-\\-warmup",
        "\\-\\-export\\-hyperfine",
        "\\-\\-conclude",
        "\\-\\-time\\-unit",
    ] {
        assert!(run.contains(opt), "{opt} not in perfsleuth-run(1)");
    }
    sb.run(["man", "frobnicate"])
        .usage_error("no subcommand `frobnicate`");
    // groff, where installed, renders it without a warning.
    if let Ok(out) = Command::new("sh")
        .args(["-c", "command -v groff >/dev/null && perfsleuth_page=$(cat) && printf '%s' \"$perfsleuth_page\" | groff -K utf8 -man -Tutf8 -ww -z"])
        .stdin(std::fs::File::open(sb.write("run.1", &run)).unwrap())
        .output()
    {
        assert!(out.stderr.is_empty(), "groff: {}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn version_names_the_commit_and_the_profile() {
    let sb = Sandbox::new();
    let out = sb.run(["--version"]).ok();
    let line = out.stdout.trim();
    assert!(
        line.starts_with(&format!("perfsleuth {}", env!("CARGO_PKG_VERSION"))),
        "{line}"
    );
    // Built from this repository's checkout, by `cargo test`'s debug profile.
    assert!(
        line.ends_with(", debug)") || line.ends_with(", release)"),
        "{line}"
    );
    let commit = line
        .split('(')
        .nth(1)
        .and_then(|r| r.split(',').next())
        .unwrap_or_default();
    assert!(
        commit == "unknown commit"
            || (commit.len() == 12 && commit.bytes().all(|b| b.is_ascii_hexdigit())),
        "{line}"
    );
}

#[test]
fn short_help_is_short_and_long_help_has_everything() {
    // `run -h` and `ab -h` were ~190 lines, every option with its whole
    // explanation (issue 38); hyperfine's `-h` is short, `--help` long.
    let sb = Sandbox::new();
    let options = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| {
                let t = l.trim_start();
                (l.starts_with("  ") && l.len() - t.len() <= 6 && t.starts_with('-'))
                    .then(|| {
                        t.split([' ', '[', '<', ',', '=', ']']).find(|w| {
                            w.starts_with("--")
                                && w.len() > 2
                                && w[2..]
                                    .chars()
                                    .all(|c| c.is_ascii_alphanumeric() || c == '-')
                        })
                    })
                    .flatten()
                    .map(str::to_string)
            })
            .collect()
    };
    for cmd in ["run", "ab", "compare", "history", "explain"] {
        let short = sb.run([cmd, "-h"]).ok().stdout;
        let long = sb.run([cmd, "--help"]).ok().stdout;
        let (s, l) = (short.lines().count(), long.lines().count());
        assert!(s <= 110, "{cmd} -h has {s} lines:\n{short}");
        assert!(l >= 2 * s, "{cmd}: -h {s} lines, --help {l}");
        assert!(short.contains("see more with '--help'"), "{short}");
        // Every option -h shows is in --help, and --help has more.
        let (so, lo) = (options(&short), options(&long));
        for o in &so {
            assert!(lo.contains(o), "{cmd}: {o} in -h, not in --help");
        }
        assert!(lo.len() >= so.len(), "{cmd}");
    }
    let short = sb.run(["run", "-h"]).ok().stdout;
    let long = sb.run(["run", "--help"]).ok().stdout;
    for rare in ["--export-hyperfine", "--style", "--cache-model"] {
        assert!(!short.contains(rare), "-h shows {rare}");
        assert!(long.contains(rare), "--help lacks {rare}");
    }
    // The long help keeps each option's whole explanation.
    assert!(long.contains("a bare number is seconds"), "{long}");
    assert!(long.contains("--toggle-collect"), "{long}");
}
