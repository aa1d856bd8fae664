//! The command line: parse arguments, call the library, render. Nothing here
//! decides anything the library could decide.

pub(crate) mod commands;
pub(crate) mod exit;
pub(crate) mod output;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser;

pub(crate) use exit::Exit;

/// kapi: a git-native context ledger for people and coding agents.
///
/// Agents note how the project writes; people decide what becomes a rule;
/// `kapi check` enforces established rules and only advises on suggestions.
/// Decision records compile into a bounded, verifiable context for an agent.
#[derive(Debug, Parser)]
#[command(name = "kapi", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    /// Run as if kapi was started in this directory.
    #[arg(short = 'C', global = true, value_name = "DIR")]
    pub directory: Option<std::path::PathBuf>,

    #[command(subcommand)]
    pub command: commands::Command,
}

/// Entry point shared by the `kapi` and `git-kapi` binaries.
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() {
                Exit::Usage
            } else {
                Exit::Ok
            };
            let _ = err.print();
            return code.into();
        }
    };
    // The Bash guard needs no directory, and must refuse, not fail, when
    // the current one cannot be read (Claude Code lets any other failure
    // through).
    if let commands::Command::Hook(commands::hook::Args {
        event: commands::hook::Event::ClaudePreBash,
    }) = &cli.command
    {
        return commands::hook::agent::pre_bash().into();
    }
    let ctx = match commands::Ctx::from_env(cli.directory.as_deref()) {
        Ok(ctx) => ctx,
        Err(err) => return err.report(),
    };
    match commands::run(cli.command, &ctx) {
        Ok(exit) => exit.into(),
        Err(err) => err.report(),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
