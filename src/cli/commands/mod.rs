//! One file per subcommand; this module only dispatches.

use std::path::{Path, PathBuf};

use clap::Subcommand;

use super::exit::{CliError, Exit};

pub mod check;
pub mod compile_context;
pub mod context;
pub mod store;
pub mod verify_context;

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Record, read and review the project's context (rules and notes).
    Context(context::Args),
    /// Check prose against established rules; suggestions only advise.
    Check(check::Args),
    /// Compile decision records into a bounded JSON context for an agent.
    CompileContext(compile_context::Args),
    /// Say whether a compiled context is current, stale or refused.
    VerifyContext(verify_context::Args),
    /// Maintain the operation store: export, import, doctor.
    Store(store::Args),
}

/// What every command may read about where and how it runs.
#[derive(Debug)]
pub struct Ctx {
    /// The directory kapi runs in (`-C` or the process's own).
    pub cwd: PathBuf,
}

impl Ctx {
    pub fn from_env(dir: Option<&Path>) -> Result<Self, CliError> {
        let base = std::env::current_dir().map_err(|e| {
            CliError::new(
                Exit::Usage,
                format!("cannot read the current directory: {e}"),
            )
        })?;
        let cwd = match dir {
            Some(d) => base.join(d),
            None => base,
        };
        if !cwd.is_dir() {
            return Err(CliError::usage(format!(
                "{} is not a directory",
                cwd.display()
            )));
        }
        Ok(Self { cwd })
    }

    /// An environment variable, if set and valid UTF-8.
    pub fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

pub fn run(command: Command, ctx: &Ctx) -> Result<Exit, CliError> {
    match command {
        Command::Context(args) => context::run(args, ctx),
        Command::Check(args) => check::run(args, ctx),
        Command::CompileContext(args) => compile_context::run(args, ctx),
        Command::VerifyContext(args) => verify_context::run(args, ctx),
        Command::Store(args) => store::run(args, ctx),
    }
}
