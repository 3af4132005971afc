//! The perfsleuth command-line tool.

#![forbid(unsafe_code)]

mod ab;
mod args;
mod bisect;
mod cli;
mod compare;
mod docs;
mod envcmd;
mod explain;
mod histcmd;
mod history;
mod import;
mod probe;
mod report;
mod run;
mod scale;
mod server;

use perfsleuth_app::sides as selectors;
use perfsleuth_app::{config, error, git, output, parse, sink, term, variant};

use clap::Parser;
use clap::error::ErrorKind;
use cli::{Cli, Command, RunCommand};
use error::Fail;

fn main() {
    // The spawner must be forked while this process is still small: its size
    // is the floor of every peak RSS reported (see perfsleuth-measure).
    let measuring = std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == "run" || a == "scale" || a == "ab" || a == "bisect");
    let spawner = if measuring {
        perfsleuth_measure::Spawner::start().ok()
    } else {
        None
    };
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => std::process::exit(usage_error(e)),
    };
    let result = match cli.command {
        Command::Run(cmd) => {
            let RunCommand {
                args,
                baseline,
                format,
                export_junit,
                push,
            } = *cmd;
            let mut args = perfsleuth_app::options::RunOptions::from(args);
            args.baseline = baseline;
            let push = push.push.then_some(push.target);
            let ci = perfsleuth_app::verdict::CiOutputs {
                github: format == cli::RunFormat::Github,
                junit: export_junit,
            };
            perfsleuth_app::session::settle(&mut args)
                .and_then(|()| run::run(args, push, ci, spawner))
        }
        Command::Ab(args) => ab::ab(*args, spawner),
        Command::Bisect(args) => bisect::bisect(*args, spawner),
        Command::Runs(args) => history::runs(args),
        Command::Show(args) => history::show(args),
        Command::Env(args) => envcmd::env(args),
        Command::Compare(args) => compare::run(args),
        Command::Explain(args) => explain::explain(*args, spawner),
        Command::Report(args) => report::report(*args),
        Command::Import(args) => import::import(*args),
        Command::Exec(args) => import::exec(*args),
        Command::History(args) => histcmd::history(*args),
        Command::Scale(args) => scale::scale(*args, spawner),
        Command::Probe(args) => probe::probe(args),
        Command::Serve(args) => server::serve(args),
        Command::Push(args) => server::push(args),
        Command::Server(args) => server::server(args),
        Command::Completions(args) => docs::completions(args.shell),
        Command::Man(args) => docs::man(args.command.as_deref()),
    };
    let code = match result {
        Ok(code) => code,
        Err(fail) => report(&fail),
    };
    // Output that never arrived is a failure, whatever the command decided.
    if let Some(why) = term::stdout_error() {
        let fail = Fail::usage(
            format!("cannot write to standard output: {why}"),
            "check where stdout goes (a full disk, a closed file); results already stored are kept",
        );
        std::process::exit(report(&fail).max(code));
    }
    std::process::exit(code);
}

/// Option errors in the same shape as every other error: one `error:` line,
/// then a hint (clap's own tip when it has one). Help and version print as usual.
fn usage_error(e: clap::Error) -> i32 {
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        e.exit();
    }
    let text = e.render().to_string();
    // The first paragraph is the message (clap continues it on indented lines).
    let mut paragraphs = text.split("\n\n");
    let message = paragraphs
        .next()
        .unwrap_or("error: invalid arguments")
        .lines()
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
        .trim_start_matches("error: ")
        .to_string();
    let rest: Vec<&str> = paragraphs.flat_map(str::lines).map(str::trim).collect();
    let subcommand = std::env::args().nth(1).filter(|a| {
        [
            "run", "ab", "bisect", "runs", "show", "env", "compare", "scale", "probe",
        ]
        .contains(&a.as_str())
    });
    let help = match &subcommand {
        Some(sub) => format!("perfsleuth {sub} --help"),
        None => "perfsleuth --help".to_string(),
    };
    let hint = rest
        .iter()
        .find_map(|l| l.strip_prefix("tip: ").map(dash_tip))
        .or_else(|| {
            rest.iter().find_map(|l| {
                l.strip_prefix("Usage: ")
                    .map(|u| format!("usage: {u}; see `{help}`"))
            })
        })
        .unwrap_or_else(|| format!("see `{help}` for the accepted values"));
    report(&Fail::usage(message, hint))
}

/// clap's "to pass '-x' as a value, use '-- -x'" does not work for an
/// option's value (after `--` it is a command): say what does.
fn dash_tip(tip: &str) -> String {
    let value = tip
        .strip_prefix("to pass '")
        .and_then(|t| t.split_once("' as a value, use '-- "))
        .map(|(v, _)| v);
    match value {
        Some(v) => format!(
            "to give '{v}' as an option's value, attach it with `=` (e.g. --name={v}); after `--` it would be a command"
        ),
        None => tip.to_string(),
    }
}

fn report(fail: &Fail) -> i32 {
    use crate::error::safe_line;
    let mut text = format!("error: {}\n", safe_line(&fail.message));
    for line in &fail.details {
        text.push_str(&format!("  {}\n", safe_line(line)));
    }
    if !fail.hint.is_empty() {
        text.push_str(&format!("  hint: {}\n", safe_line(&fail.hint)));
    }
    term::emit(&text, true);
    fail.code()
}
