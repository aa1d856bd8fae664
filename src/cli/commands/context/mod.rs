//! `kapi context`: a person's verbs (review, and what applies at a path) and,
//! for assistants, `note` and `log`.

use clap::Subcommand;

use super::{Ctx, Deferred};

pub mod atlas;
pub mod edit;
pub mod log;
pub mod note;
pub mod path;
pub mod reset;
pub mod review;
pub mod search;
pub mod session;
pub mod sync;
use crate::cli::exit::{CliError, Exit};

/// The help of `kapi context`: a person's verbs under Commands, and the two
/// an assistant uses under a heading of their own (clap gives a
/// subcommand no heading of its own, so note and log are hidden from the
/// generated list and named here).
const HELP: &str = "\
{before-help}{about-with-newline}
{usage-heading} {usage}

Commands:
{subcommands}

For assistants:
  note     Record a term rule, a note, a pair, a person's correction, or withdraw your own suggestion
  log      List every operation, folded: status, contests, standing

Arguments:
{positionals}

Options:
{options}{after-help}";

/// Read, review and reset the project's context (rules and notes).
///
/// `kapi context <PATH>` says what applies there: the rules and notes in
/// force, the suggestions, and the wording that stays correct. `search`
/// finds what mentions a text, `review` keeps, drops, chooses and widens,
/// `reset` goes back to an earlier point, `sync` shares the log.
///
/// For assistants: `kapi context note` records what you noticed, `kapi
/// context log` reads it back.
#[derive(Debug, clap::Args)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_required = false,
    help_template = HELP
)]
pub struct Args {
    #[command(flatten)]
    pub here: path::Args,
    #[command(subcommand)]
    pub command: Option<ContextCommand>,
}

#[derive(Debug, Subcommand)]
pub enum ContextCommand {
    /// List the rules and notes that mention a text, workspace rules included.
    Search(Deferred<search::Args>),
    /// Keep, drop, choose a side, widen; without a decision, the digest (a walk in a terminal).
    Review(Deferred<review::Args>),
    /// Edit a rule in force: its forms, where or when it holds, whether it binds.
    Edit(Deferred<edit::Args>),
    /// Go back to how the context stood before a session, a date, an instant or an operation.
    Reset(Deferred<reset::Args>),
    /// Fetch, merge by union, settle and push refs/kapi/ops.
    Sync(Deferred<sync::Args>),
    /// What a session recorded, what became of it, and what its checks caught.
    Session(Deferred<session::Args>),
    /// Record a term rule, a note, a pair, a person's correction, or withdraw your own suggestion.
    #[command(hide = true)]
    Note(Deferred<note::Args>),
    /// List every operation, folded: status, contests, standing.
    #[command(hide = true)]
    Log(Deferred<log::Args>),
    /// (For people) The whole context over time and across axes, as one document (--json).
    Atlas(Deferred<atlas::Args>),
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    match args.command {
        Some(ContextCommand::Note(Deferred(a))) => note::run(a, ctx),
        Some(ContextCommand::Log(Deferred(a))) => log::run(a, ctx),
        Some(ContextCommand::Review(Deferred(a))) => review::run(a, ctx),
        Some(ContextCommand::Edit(Deferred(a))) => edit::run(a, ctx),
        Some(ContextCommand::Reset(Deferred(a))) => reset::run(a, ctx),
        Some(ContextCommand::Search(Deferred(a))) => search::run(a, ctx),
        Some(ContextCommand::Sync(Deferred(a))) => sync::run(a, ctx),
        Some(ContextCommand::Session(Deferred(a))) => session::run(a, ctx),
        Some(ContextCommand::Atlas(Deferred(a))) => atlas::run(a, ctx),
        None => path::run(args.here, ctx),
    }
}
