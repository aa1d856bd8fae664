//! `kapi store`: maintenance of the operation store itself.

use clap::Subcommand;

use super::Ctx;

pub mod doctor;
pub mod export;
pub mod import;
pub mod rebuild;
use crate::cli::exit::{CliError, Exit};

/// Maintain the operation store on `refs/kapi/ops`: move a log by file,
/// merged by union, find operations that cannot be read, and make every
/// derived thing again from the log alone.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: StoreCommand,
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Write every shared operation to a JSON Lines file (`-` for stdout).
    Export(export::Args),
    /// Merge operations from a JSON Lines file by union.
    Import(import::Args),
    /// List operations that cannot be read or that the fold ignores, by name.
    Doctor(doctor::Args),
    /// Make every derived thing again from the log alone, and say what changed.
    Rebuild(rebuild::Args),
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    match args.command {
        StoreCommand::Export(a) => export::run(a, ctx),
        StoreCommand::Import(a) => import::run(a, ctx),
        StoreCommand::Doctor(a) => doctor::run(a, ctx),
        StoreCommand::Rebuild(a) => rebuild::run(a, ctx),
    }
}
