//! `kapi hook <event>`: what the installed hooks run. The git hooks get
//! git's arguments; the agent hooks read their host's JSON on stdin and
//! answer in the host's terms (exit 2 and a reason on stderr for Claude
//! Code, a JSON decision on stdout for Codex). An agent hook that cannot
//! do its work says why and exits 1, which no host reads as a block. The
//! library runs each event and decides its verdict
//! (`context::hook::run`); these files render it.

pub(crate) mod agent;
mod git;

use clap::Subcommand;

use super::Ctx;
use crate::cli::exit::{CliError, Exit};
use crate::context::hook::Host;
use crate::context::hook::run::AgentEvent;

/// Run one hook event (what `kapi hooks install` wires up).
///
/// pre-commit: check the staged prose and verify the `[[compile]]`
/// artifacts; exit 1 refuses the commit. post-merge: record the merge
/// signals of ORIG_HEAD..HEAD, settle (without pushing) and regenerate the
/// artifacts the merge made stale; always exits 0. claude-session-start,
/// claude-pre-bash, claude-post-edit, claude-stop and codex-stop read the
/// host's hook JSON on stdin. See docs/hooks.md.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub event: Event,
}

#[derive(Debug, Subcommand)]
pub enum Event {
    /// git pre-commit: check what is staged, verify declared artifacts.
    PreCommit,
    /// git post-merge: record merge signals, settle, regenerate stale artifacts.
    PostMerge {
        /// git's argument: 1 for a squash merge.
        #[arg(value_name = "SQUASH")]
        squash: Option<String>,
    },
    /// Claude Code SessionStart: attribute the session, return the rules in force.
    ClaudeSessionStart,
    /// Claude Code PreToolUse (Bash): refuse a command only a person runs.
    ClaudePreBash,
    /// Claude Code PostToolUse (Edit|Write|MultiEdit): check the file written.
    ClaudePostEdit,
    /// Claude Code Stop: check what the session changed, record the run.
    ClaudeStop,
    /// Codex Stop: as claude-stop, answering in Codex's terms.
    CodexStop,
}

pub fn run(args: Args, ctx: &Ctx) -> Result<Exit, CliError> {
    match args.event {
        Event::PreCommit => git::pre_commit(ctx),
        Event::PostMerge { squash } => Ok(git::post_merge(ctx, squash.as_deref() == Some("1"))),
        Event::ClaudeSessionStart => Ok(agent::session_start(ctx)),
        Event::ClaudePreBash => Ok(agent::pre_bash()),
        Event::ClaudePostEdit => Ok(agent::run(ctx, Host::ClaudeCode, AgentEvent::PostEdit)),
        Event::ClaudeStop => Ok(agent::run(ctx, Host::ClaudeCode, AgentEvent::Stop)),
        Event::CodexStop => Ok(agent::run(ctx, Host::Codex, AgentEvent::Stop)),
    }
}
