//! The hook events as use cases: what `kapi hook <event>` does for git
//! (pre-commit, post-merge) and for a coding agent's host (Claude Code's
//! SessionStart, PostToolUse and Stop; Codex's Stop). Each calls the same
//! check, compile and verify the command line calls, never `kapi` as a
//! child process, and returns what happened; the CLI renders it and picks
//! the exit code the host reads. docs/hooks.md is the user's account.
//!
//! By what each part is: `git.rs` the git hooks' events, `agent.rs` the
//! agent hosts' events, `input.rs` reading what a host hands a hook, `guard.rs` the Bash
//! commands Claude Code's PreToolUse hook refuses, and
//! `run.rs` an event run whole as its host calls it. Here: what they
//! share (the error, the declared artifacts).

mod agent;
mod git;
pub mod guard;
mod input;
pub(crate) mod run;

use std::path::PathBuf;

pub(crate) use agent::{
    CheckRunOutcome, Host, SessionStarted, agent_post_edit, agent_stop, session_start,
};
pub(crate) use git::{MERGED, PostMerge, PreCommit, post_merge, pre_commit};
pub use input::{AgentInput, edited_file, transcript_last_entry};

use super::check::CheckError;
use super::{ContextError, Session};
use crate::compile::VerifyStatus;
use crate::compile::artifacts::{
    ArtifactCompiled, ArtifactError, ArtifactVerified, compile_entry, verify_entry,
};

#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error(transparent)]
    Context(#[from] ContextError),
    #[error(transparent)]
    Check(#[from] CheckError),
    #[error(transparent)]
    Artifact(#[from] ArtifactError),
    #[error("git: {0}")]
    Git(#[from] crate::git::GitError),
    /// The JSON the host sent on stdin is not what the hook expects.
    #[error("the hook input is not valid: {0}")]
    Input(String),
}

// ---------------------------------------------------------------------------
// Declared artifacts

/// What became of one `[[compile]]` artifact in a hook.
#[derive(Debug, Clone)]
pub(crate) enum ArtifactState {
    Current,
    /// Stale, and left so: the reasons verify gave.
    Stale(PathBuf, Vec<&'static str>),
    /// Refused by verify (or the budget refused a regeneration).
    Refused(PathBuf, Vec<&'static str>),
    /// Was stale, recompiled into the work tree (and staged, in pre-commit).
    Regenerated(PathBuf),
    /// Could not be verified or recompiled.
    Failed(PathBuf, String),
}

impl ArtifactState {
    /// Whether the artifact stops a commit.
    pub fn blocks(&self) -> bool {
        matches!(self, Self::Stale(..) | Self::Refused(..) | Self::Failed(..))
    }
}

fn state_of(verified: ArtifactVerified) -> ArtifactState {
    let ArtifactVerified {
        output,
        verification,
    } = verified;
    match verification.status {
        VerifyStatus::Current => ArtifactState::Current,
        VerifyStatus::Stale => ArtifactState::Stale(output, verification.reasons),
        VerifyStatus::Refused => ArtifactState::Refused(output, verification.reasons),
    }
}

/// The evaluation day for unpinned artifacts: today in UTC by the clock
/// the session reads (`KAPI_NOW` pins it in tests).
pub(crate) fn today(session: &Session) -> Result<time::Date, ContextError> {
    crate::compile::day_of(session.now_ms()?).map_err(|e| ContextError::Usage(e.to_string()))
}

/// Verify every declared artifact; with `regenerate`, recompile the stale
/// ones (and stage them when `stage`).
fn artifacts(
    session: &Session,
    regenerate: bool,
    stage: bool,
) -> Result<Vec<ArtifactState>, HookError> {
    let today = today(session)?;
    let mut states = Vec::new();
    for entry in &session.config.compile {
        let verified = match verify_entry(&session.root, &session.config, entry, today) {
            Ok(v) => state_of(v),
            // A broken entry, a missing vault: the artifact's own failure,
            // named beside the others.
            Err(e) => {
                states.push(ArtifactState::Failed(entry.output.clone(), e.to_string()));
                continue;
            }
        };
        let state = match verified {
            ArtifactState::Stale(output, _) if regenerate => {
                match compile_entry(&session.root, &session.config, entry, today) {
                    Ok(ArtifactCompiled::Compiled { .. }) => {
                        if stage {
                            session
                                .store
                                .git()
                                .stage(&output.to_string_lossy().replace('\\', "/"))?;
                        }
                        ArtifactState::Regenerated(output)
                    }
                    Ok(ArtifactCompiled::Refused { error, .. }) => {
                        let reason = if error == "scope_too_large" {
                            "scope_too_large"
                        } else {
                            "budget_exceeded"
                        };
                        ArtifactState::Refused(output, vec![reason])
                    }
                    Err(e) => ArtifactState::Failed(output, e.to_string()),
                }
            }
            other => other,
        };
        states.push(state);
    }
    Ok(states)
}
