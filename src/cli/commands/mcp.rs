//! `kapi mcp`

use crate::cli::commands::Ctx;
use crate::cli::exit::{CliError, Exit};

/// Serve the context tools to a coding agent over stdio (Model Context
/// Protocol).
///
/// The agent is named by the client's own `clientInfo.name`; the session
/// is minted once per server process. No tool takes an actor. stdout
/// carries only the protocol; logs go to stderr. See docs/mcp.md.
#[derive(Debug, clap::Args)]
pub struct Args {}

pub fn run(_args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    crate::mcp::serve(&ctx.cwd)?;
    Ok(Exit::Ok)
}
