//! `perfsleuth completions` and `perfsleuth man`: generated from the same
//! clap definitions as the parser (clap_complete, clap_mangen), so they can
//! never list an option the binary lacks.

use crate::cli::{Cli, CompletionShell};
use crate::error::Fail;
use crate::term::emit;
use clap::CommandFactory;

/// Prints the completion script for `shell`.
pub fn completions(shell: CompletionShell) -> Result<i32, Fail> {
    use clap_complete::Shell;
    let shell = match shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
        CompletionShell::Elvish => Shell::Elvish,
        CompletionShell::Powershell => Shell::PowerShell,
    };
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "perfsleuth", &mut out);
    emit(&String::from_utf8_lossy(&out), false);
    Ok(0)
}

/// Prints perfsleuth's man page, or one subcommand's (`perfsleuth-run(1)`).
pub fn man(sub: Option<&str>) -> Result<i32, Fail> {
    let cmd = Cli::command();
    let page = match sub {
        None => cmd,
        Some(name) => {
            let found = cmd.find_subcommand(name).cloned().ok_or_else(|| {
                let names: Vec<&str> = cmd
                    .get_subcommands()
                    .map(|s| s.get_name())
                    .filter(|n| *n != "help")
                    .collect();
                Fail::usage(
                    format!("no subcommand `{name}`"),
                    format!("pages: {}", names.join(", ")),
                )
            })?;
            // `perfsleuth-run(1)`, titled as man(1) expects a subcommand's page.
            found
                .clone()
                .name(format!("perfsleuth-{name}"))
                .bin_name(format!("perfsleuth {name}"))
                .version(crate::cli::VERSION)
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page).render(&mut out).map_err(|e| {
        Fail::usage(
            format!("cannot render the man page: {e}"),
            "please report this",
        )
    })?;
    emit(&String::from_utf8_lossy(&out), false);
    Ok(0)
}
