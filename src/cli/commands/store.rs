//! `kapi store`: maintenance of the operation store itself.

use clap::Subcommand;

use super::{Ctx, store_doctor, store_export, store_import};
use crate::cli::exit::{CliError, Exit};

/// Maintain the operation store on `refs/kapi/ops`: move a log by file,
/// merged by union, and find operations that cannot be read.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: StoreCommand,
}

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Write every shared operation to a JSON Lines file (`-` for stdout).
    Export(store_export::Args),
    /// Merge operations from a JSON Lines file by union.
    Import(store_import::Args),
    /// List operations that cannot be read or that the fold ignores, by name.
    Doctor(store_doctor::Args),
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    match args.command {
        StoreCommand::Export(a) => store_export::run(a, ctx),
        StoreCommand::Import(a) => store_import::run(a, ctx),
        StoreCommand::Doctor(a) => store_doctor::run(a, ctx),
    }
}
