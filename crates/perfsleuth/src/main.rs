//! The perfsleuth command-line tool.

mod cli;
mod envcmd;
mod error;
mod git;
mod history;
mod output;
mod parse;
mod plan;
mod run;
mod term;

use clap::Parser;
use cli::{Cli, Command};
use error::Fail;

fn main() {
    // The spawner must be forked while this process is still small: its size
    // is the floor of every peak RSS reported (see perfsleuth-measure).
    let measuring = std::env::args_os().nth(1).is_some_and(|a| a == "run");
    let spawner = if measuring {
        perfsleuth_measure::Spawner::start().ok()
    } else {
        None
    };
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(*args, spawner),
        Command::Runs(args) => history::runs(args),
        Command::Show(args) => history::show(args),
        Command::Env(args) => envcmd::env(args),
    };
    std::process::exit(match result {
        Ok(code) => code,
        Err(fail) => report(&fail),
    });
}

fn report(fail: &Fail) -> i32 {
    let mut text = format!("error: {}\n", fail.message);
    for line in &fail.details {
        text.push_str(&format!("  {line}\n"));
    }
    if !fail.hint.is_empty() {
        text.push_str(&format!("  hint: {}\n", fail.hint));
    }
    term::emit(&text, true);
    fail.code
}
