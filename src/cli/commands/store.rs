use super::Ctx;
use crate::cli::exit::{CliError, Exit};

/// (being built)
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, _ctx: &Ctx) -> Result<Exit, CliError> {
    Err(CliError::usage("not built yet"))
}
