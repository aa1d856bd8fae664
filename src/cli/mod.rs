//! The command line: parse arguments, call the library, render. Nothing here
//! decides anything the library could decide.

pub(crate) mod commands;
pub(crate) mod exit;
pub(crate) mod global;
pub(crate) mod output;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

pub(crate) use exit::Exit;
use global::{GlobalArgs, Settings};

/// kapi: a git-native context ledger for people and coding agents.
///
/// Agents note how the project writes; people decide what becomes a rule;
/// `kapi check` enforces established rules and only advises on suggestions.
/// Decision records compile into a bounded, verifiable context for an agent.
#[derive(Debug, clap::Parser)]
#[command(name = "kapi", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    /// Run as if kapi was started in this directory.
    #[arg(short = 'C', global = true, value_name = "DIR")]
    pub directory: Option<std::path::PathBuf>,

    #[command(flatten)]
    pub global: GlobalArgs,

    #[command(subcommand)]
    pub command: commands::Command,
}

/// Entry point shared by the `kapi` and `git-kapi` binaries.
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    let parse = |color: clap::ColorChoice| {
        let mut command = Cli::command().color(color);
        let matches = command.try_get_matches_from_mut(&args);
        // The command tree (every subcommand's arguments) is left to the
        // process's exit, not freed: freeing it was 4% of a note's
        // instructions, and a process parses its arguments once (twice on
        // the error path below).
        std::mem::forget(command);
        matches.and_then(|m| Cli::from_arg_matches(&m))
    };
    let cli = match parse(clap::ColorChoice::Auto) {
        Ok(cli) => cli,
        Err(first) => {
            // Help, a version or a usage error: coloured as --color says,
            // which is read (ahead of the parse that ended in it) only on
            // this path, and the arguments parsed again with it, so a
            // command that parses pays for one parse.
            let color = global::early_color(Cli::command(), &args);
            let err = parse(color.for_clap()).err().unwrap_or(first);
            let code = if err.use_stderr() {
                Exit::Usage
            } else {
                Exit::Ok
            };
            let _ = err.print();
            return code.into();
        }
    };
    Settings::of(&cli.global).install();
    // The Bash guard needs no directory, and must refuse, not fail, when
    // the current one cannot be read (Claude Code lets any other failure
    // through).
    if let commands::Command::Hook(commands::Deferred(commands::hook::Args {
        event: commands::hook::Event::ClaudePreBash,
    })) = &cli.command
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
        super::commands::whole_tree().debug_assert();
    }
}
