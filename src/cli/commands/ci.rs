//! `kapi ci`: what a CI job runs, without a script from kapi's repository.

use std::sync::Arc;

use super::Ctx;
use crate::cli::commands::context::sync::report;
use crate::cli::exit::{CliError, Exit};
use crate::cli::output::note;
use crate::context::Session;
use crate::context::sync::{SyncRequest, sync};
use crate::git::range::Pushed;
use crate::ops::record::{Actor, ActorKind};

/// Steps for a CI job (docs/sync.md shows the workflow).
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Step,
}

#[derive(Debug, clap::Subcommand)]
pub enum Step {
    /// After a push to the default branch: count what the pushed commits
    /// wrote as merge signals, settle, and sync refs/kapi/ops with the
    /// remote. Run in a clone with full history (`fetch-depth: 0`) and the
    /// refspec docs/sync.md gives; it acts as the tool `ci` (or the one
    /// `KAPI_TOOL` names).
    AfterPush(AfterPush),
}

#[derive(Debug, clap::Args)]
pub struct AfterPush {
    /// What the branch held before the push (`github.event.before`; all
    /// zeros for a new branch).
    pub before: String,
    /// What it holds after (`github.sha`).
    pub after: String,
    /// The remote to sync with.
    #[arg(long, value_name = "REMOTE", default_value = "origin")]
    pub remote: String,
    /// The pull request the push merged (read from merge and squash commit
    /// subjects when not given).
    #[arg(long, value_name = "NUMBER")]
    pub pr: Option<String>,
    /// Give up a fetch or push that takes longer than this many seconds.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout: Option<u64>,
    /// Print what happened as one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    match args.command {
        Step::AfterPush(step) => after_push(step, ctx),
    }
}

fn after_push(step: AfterPush, ctx: &Ctx) -> Result<Exit, CliError> {
    let session = as_ci(ctx)?;
    let pushed = session
        .store
        .git()
        .pushed(&step.before, &step.after)
        .map_err(|e| {
            CliError::usage(format!(
                "{} is not a commit this clone holds ({e}): run after checking out the pushed commit",
                step.after
            ))
        })?;
    let merged = match pushed {
        Pushed::NewBranch => {
            note("kapi ci after-push: a new branch: nothing merged to count; syncing only");
            None
        }
        Pushed::BeforeMissing => {
            note(format!(
                "kapi ci after-push: {} is not in this clone (a shallow checkout? fetch with depth 0); syncing without merge signals",
                step.before
            ));
            None
        }
        Pushed::Unrelated => {
            note(format!(
                "kapi ci after-push: {} and {} share no history (a forced push); syncing without merge signals",
                step.before, step.after
            ));
            None
        }
        Pushed::Range { range, forced } => {
            if forced {
                note(format!(
                    "kapi ci after-push: a forced push; counting from the merge base {}",
                    range.from
                ));
            }
            Some(format!("{}..{}", range.from, range.to))
        }
    };
    let request = SyncRequest {
        remote: Some(step.remote),
        push: true,
        pr: step.pr.filter(|_| merged.is_some()),
        merged,
        allow_other_project: false,
        timeout: step.timeout.map(std::time::Duration::from_secs),
    };
    let before = super::context::sync::shared_tip(&session);
    let synced = sync(&session, &request)?;
    super::context::sync::moved(&session, before, &synced);
    report(&session, synced, step.json)
}

/// The session the step acts in: the tool `ci` (or the one `KAPI_TOOL`
/// names) where the environment names a person; an agent stays an agent
/// (and may not push).
fn as_ci(ctx: &Ctx) -> Result<Session, CliError> {
    let session = ctx.session()?;
    if session.actor().kind != ActorKind::Person {
        return Ok(session);
    }
    let name = ctx
        .env
        .var("KAPI_TOOL")
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| "ci".to_owned());
    Ok(Session::open_as(
        Arc::clone(&ctx.env),
        &ctx.cwd,
        Actor::tool(&name),
    )?)
}
