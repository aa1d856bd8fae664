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
    /// Then publish the atlas of the synced log in DIR: the page
    /// (index.html, `kapi context atlas --html`) and the document
    /// (atlas.json), for an artifact or a Pages branch.
    #[arg(long, value_name = "DIR")]
    pub atlas: Option<std::path::PathBuf>,
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
    let exit = report(&session, synced, step.json)?;
    if let Some(dir) = &step.atlas {
        publish_atlas(&session, dir)?;
    }
    Ok(exit)
}

/// Write the atlas page (`index.html`) and document (`atlas.json`) of the
/// log as it stands now into `dir`, creating it; said on stderr, so the
/// step's report (and its `--json`) stays as it is.
fn publish_atlas(session: &Session, dir: &std::path::Path) -> Result<(), CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::io(format!("cannot create {}", dir.display()), &e))?;
    let data = crate::context::atlas_page::page_data(session, None)?;
    let json = serde_json::to_vec(&data.atlas).map_err(|e| {
        CliError::new(
            Exit::Internal,
            format!("cannot write the atlas document: {e}"),
        )
    })?;
    let html = crate::context::atlas_page::render(&data)
        .map_err(|e| CliError::new(Exit::Internal, format!("cannot write the atlas page: {e}")))?;
    let page = dir.join("index.html");
    super::context::atlas::write_page(&page, &html)?;
    let doc = dir.join("atlas.json");
    crate::atomic::replace(&doc, &json, None)
        .map_err(|e| CliError::io(format!("cannot write {}", doc.display()), &e))?;
    note(format!(
        "kapi ci after-push: the atlas of the synced log: {} and {}",
        page.display(),
        doc.display()
    ));
    Ok(())
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
