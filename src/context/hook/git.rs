//! The git hooks' events: pre-commit (check what is staged, verify the
//! declared artifacts) and post-merge (merge signals, settling, the
//! artifacts a merge made stale).

use std::path::PathBuf;

use super::{ArtifactState, HookError, artifacts};
use crate::config::CompileMode;
use crate::context::Session;
use crate::context::check::{CheckReport, CheckRequest, check};

// ---------------------------------------------------------------------------
// pre-commit

/// What the pre-commit hook found.
#[derive(Debug)]
pub struct PreCommit {
    /// The staged content checked.
    pub check: CheckReport,
    pub artifacts: Vec<ArtifactState>,
}

impl PreCommit {
    /// Whether the commit is refused: an established rule fails, or a
    /// declared artifact is stale, refused or broken.
    pub fn refused(&self) -> bool {
        self.check.failed() || self.artifacts.iter().any(ArtifactState::blocks)
    }
}

/// `kapi hook pre-commit`: check what is staged (established rules fail,
/// suggestions advise) and verify every `[[compile]]` artifact; with
/// `[hooks] compile = "regenerate"` a stale one is recompiled and staged.
pub fn pre_commit(session: &Session) -> Result<PreCommit, HookError> {
    let request = CheckRequest {
        cwd: session.root.clone(),
        staged: true,
        ..CheckRequest::default()
    };
    let report = check(Some(session), &request)?;
    let regenerate = session.config.hooks.compile == CompileMode::Regenerate;
    let artifacts = artifacts(session, regenerate, true)?;
    Ok(PreCommit {
        check: report,
        artifacts,
    })
}

// ---------------------------------------------------------------------------
// post-merge

/// What the post-merge hook did; it never fails the merge.
#[derive(Debug, Default)]
pub struct PostMerge {
    /// Merge signals recorded for `ORIG_HEAD..HEAD` (`None`: not read).
    pub signals: Option<usize>,
    /// Suggestions settling established.
    pub established: usize,
    /// Rules files refreshed after an establishment.
    pub refreshed: Vec<PathBuf>,
    /// Why merge signals were not recorded, when they were not.
    pub skipped: Option<String>,
    /// Values of the range's commits over a signal's limits, left out of
    /// the signals recorded.
    pub left_out: Vec<crate::context::settle::SkippedValue>,
    /// Artifacts the merge made stale, recompiled into the work tree.
    pub regenerated: Vec<PathBuf>,
    /// Every artifact that is not current after the hook, and why.
    pub artifacts: Vec<ArtifactState>,
    /// What went wrong, in words; the merge stands either way.
    pub problems: Vec<String>,
}

/// The range a merge brought in.
pub const MERGED: &str = "ORIG_HEAD..HEAD";

/// `kapi hook post-merge`: after a merge, record the merge signals of
/// `ORIG_HEAD..HEAD` and settle (without pushing), then regenerate the
/// declared artifacts the merge made stale. A squash merge (`squash`)
/// committed nothing yet, and an agent's merge is not a person's signal:
/// neither records signals. Never fails: every error becomes a problem to
/// report.
pub fn post_merge(session: &Session, squash: bool) -> PostMerge {
    let mut done = PostMerge::default();
    if squash {
        done.skipped = Some("a squash merge commits nothing yet".into());
    } else if crate::ops::policy::may_share(
        session.actor(),
        crate::ops::policy::Sharing::MergeSignals,
    )
    .is_err()
    {
        done.skipped = Some(
            "an agent's merge is not a person's signal (a person or the CI step runs `kapi context sync --merged`)"
                .into(),
        );
    } else if let Some(branch) = session
        .store
        .git()
        .current_branch()
        .filter(|b| *b != session.store.git().default_branch())
    {
        done.skipped = Some(format!(
            "{branch} is not the default branch: a merge signal says a change reached the default branch"
        ));
    } else {
        // One fold serves the merge signals and settling, as in sync, and
        // only when either has something to record.
        let settled = crate::context::settle::merged_and_settled(session, MERGED).and_then(
            |(signals, settled)| {
                match signals {
                    Ok(found) => {
                        done.signals = Some(found.signals.iter().filter(|s| s.recorded).count());
                        done.left_out = found.skipped;
                    }
                    Err(e) => done.problems.push(format!("merge signals: {e}")),
                }
                // Settling may change what is in force: before the artifacts.
                settled
            },
        );
        match settled {
            Ok(established) => {
                done.established = established.len();
                if !established.is_empty() {
                    let (refreshed, failed) =
                        crate::context::rulesfiles::refresh_after_change(session);
                    done.refreshed = refreshed;
                    done.problems.extend(failed.map(|e| e.to_string()));
                }
            }
            Err(e) => done.problems.push(format!("settling: {e}")),
        }
    }
    match artifacts(session, true, false) {
        Ok(states) => {
            for state in states {
                match state {
                    ArtifactState::Regenerated(output) => done.regenerated.push(output),
                    ArtifactState::Current => {}
                    other => done.artifacts.push(other),
                }
            }
        }
        Err(e) => done.problems.push(e.to_string()),
    }
    done
}
