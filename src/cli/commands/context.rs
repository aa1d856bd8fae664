//! `kapi context`: a person's verbs (review, and what applies at a path) and,
//! for assistants, `note` and `log`.

use clap::Subcommand;

use super::{Ctx, context_log, context_note, context_path, context_review};
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
    pub here: context_path::Args,
    #[command(subcommand)]
    pub command: Option<ContextCommand>,
}

#[derive(Debug, Subcommand)]
pub enum ContextCommand {
    /// (For assistants) Record a term rule, a note, a person's correction, or withdraw your own suggestion.
    Note(context_note::Args),
    /// (For assistants) List every operation, folded: status, contests, standing.
    Log(context_log::Args),
    /// (For people) Keep or drop suggestions and rules; without flags, list what awaits a decision.
    Review(context_review::Args),
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    match args.command {
        Some(ContextCommand::Note(a)) => context_note::run(a, ctx),
        Some(ContextCommand::Log(a)) => context_log::run(a, ctx),
        Some(ContextCommand::Review(a)) => context_review::run(a, ctx),
        None => context_path::run(args.here, ctx),
    }
}
