//! `kapi context`: a person's verbs (review, and what applies at a path) and,
//! for assistants, `note` and `log`.

use clap::Subcommand;

use super::Ctx;

pub mod atlas;
pub mod log;
pub mod note;
pub mod path;
pub mod review;
pub mod session;
pub mod sync;
use crate::cli::exit::{CliError, Exit};

/// Record, read and review the project's context.
///
/// `kapi context <PATH>` says what applies there: the rules and notes in
/// force, the suggestions, and the wording that stays correct.
///
/// For assistants: `kapi context note` records what you noticed, `kapi
/// context log` reads it back. For people: `kapi context review` keeps or
/// drops what was suggested.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_required = false)]
pub struct Args {
    #[command(flatten)]
    pub here: path::Args,
    #[command(subcommand)]
    pub command: Option<ContextCommand>,
}

#[derive(Debug, Subcommand)]
pub enum ContextCommand {
    /// (For assistants) Record a term rule, a note, a person's correction, or withdraw your own suggestion.
    Note(note::Args),
    /// (For assistants) List every operation, folded: status, contests, standing.
    Log(log::Args),
    /// (For people) Keep or drop suggestions and rules; without flags, list what awaits a decision.
    Review(review::Args),
    /// (For people) Fetch, merge by union, settle and push refs/kapi/ops.
    Sync(sync::Args),
    /// What a session recorded, what became of it, and what its checks caught.
    Session(session::Args),
    /// (For people) The whole context over time and across axes, as one document (--json).
    Atlas(atlas::Args),
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    match args.command {
        Some(ContextCommand::Note(a)) => note::run(a, ctx),
        Some(ContextCommand::Log(a)) => log::run(a, ctx),
        Some(ContextCommand::Review(a)) => review::run(a, ctx),
        Some(ContextCommand::Sync(a)) => sync::run(a, ctx),
        Some(ContextCommand::Session(a)) => session::run(a, ctx),
        Some(ContextCommand::Atlas(a)) => atlas::run(a, ctx),
        None => path::run(args.here, ctx),
    }
}
