//! `kapi workspace`: the repositories kapi knows on this machine.

use clap::Subcommand;

use super::Ctx;
use crate::cli::exit::{CliError, Exit};

pub mod add;
pub mod forget;
pub mod list;

/// The repositories kapi knows on this machine, and which of them share
/// the rules they widen to the workspace with all the others. Recording
/// from a checkout, syncing or importing registers it without sharing; a
/// person chooses what shares (`kapi workspace add`).
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: WorkspaceCommand,
}

#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// List every registered repository: path, project, whether it still exists, whether it shares.
    List(list::Args),
    /// (for people) Share a checkout's workspace rules with every repository on this machine.
    Add(add::Args),
    /// (for people) Remove repositories from the registry (`--gone`: those whose folder is gone).
    Forget(forget::Args),
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    match args.command {
        WorkspaceCommand::List(a) => list::run(a, ctx),
        WorkspaceCommand::Add(a) => add::run(a, ctx),
        WorkspaceCommand::Forget(a) => forget::run(a, ctx),
    }
}
