//! `kapi context sync`: fetch another machine's `refs/kapi/ops`, merge it
//! by union, record the merge signals of a merged range (`--merged`),
//! settle, and push fast-forward only, fetching and merging again when the
//! remote moved meanwhile. Operations are what travel: every one is still
//! checked by the policy in the fold, and `refs/kapi/local` (check runs)
//! never leaves the machine.

use std::path::PathBuf;

use serde::Serialize;

use super::settle::{Establishment, MergeSignals};
use super::transfer::Rejected;
use super::{ContextError, Session};
use crate::git::Pushed;
use crate::ops::OpId;
use crate::ops::policy::{Sharing, may_share};
use crate::store::{Joined, LogRef, RemoteError, StoreError};
use crate::wording::unstopped;

/// How many times sync fetches, merges and pushes again when the remote
/// moved between its fetch and its push.
pub const ATTEMPTS: usize = 5;

/// What to sync.
#[derive(Debug, Clone)]
pub struct SyncRequest {
    /// A remote name or URL; `None` for `origin`, and with `push` off, for
    /// settling locally when the repository has no `origin`.
    pub remote: Option<String>,
    /// Push after merging (`--no-push` only reads).
    pub push: bool,
    /// A merged commit range whose diff gives merge signals (`A..B`).
    pub merged: Option<String>,
    /// The pull request the merged range came from, overriding commit subjects.
    pub pr: Option<String>,
    /// Merge a remote log whose operations name only other projects (a
    /// person's decision: by default such a log is refused).
    pub allow_other_project: bool,
    /// How long one fetch or push may take (`--timeout`, else `[sync]
    /// timeout` in kapi.toml).
    pub timeout: Option<std::time::Duration>,
}

/// What the fetches brought.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Fetched {
    /// Whether the remote held a log at all.
    pub remote_has_log: bool,
    /// Nothing was fetched: no remote was named and the repository has no
    /// `origin` (`--no-push` then settles locally).
    pub local_only: bool,
    /// How the last fetch joined ours.
    pub joined: Option<Joined>,
    /// Operations (lines) merged in.
    pub added: usize,
    /// What the remote held that was not merged: lines that are not valid
    /// operations, other copies of ids this log holds, segments over the
    /// limit (named; past the first of a segment, counted).
    pub unreadable: Vec<Rejected>,
    /// How many stored lines those stand for (past the first of a segment,
    /// they are counted, not named).
    pub refused: usize,
    /// Operations dated more than ten minutes past this machine's clock:
    /// held back until their time comes.
    pub held_back: Vec<OpId>,
}

/// How the push went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PushOutcome {
    /// Not asked (`--no-push`).
    NotAsked,
    /// Nothing to push: this machine holds no log yet.
    NothingToPush,
    /// The remote holds our tip.
    Pushed,
}

/// What a sync did.
#[derive(Debug, Serialize)]
pub struct Synced {
    pub remote: String,
    pub fetched: Fetched,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merged: Option<MergeSignals>,
    pub established: Vec<Establishment>,
    pub push: PushOutcome,
    /// Rounds of fetch, merge and push it took.
    pub attempts: usize,
    /// Rules files rewritten because what is in force changed.
    pub refreshed: Vec<PathBuf>,
    #[serde(skip)]
    pub refresh_error: Option<ContextError>,
}

/// Why a sync stopped.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Context(#[from] ContextError),
    #[error(
        "{}. Nothing local was lost; check the remote's name and that you can reach it (`git fetch {remote}`)",
        unstopped(&.0.to_string()), remote = .1
    )]
    Remote(RemoteError, String),
    #[error(
        "{remote} refused refs/kapi/ops: {}. Nothing local was lost; the remote (a hook, branch protection, or a server that only takes refs/heads/*) must accept pushes to refs/kapi/ops",
        unstopped(reason)
    )]
    RefusedRef { remote: String, reason: String },
    #[error(
        "{remote} holds another project's log: its new operations name {}, and this log's project is \"{ours}\". Nothing was merged. Check that {remote} is this project's repository; to merge it anyway, a person runs `kapi context sync --remote {remote} --allow-other-project`",
        theirs.iter().map(|p| format!("\"{p}\"")).collect::<Vec<_>>().join(", ")
    )]
    OtherProject {
        remote: String,
        ours: String,
        theirs: Vec<String>,
    },
    #[error(
        "gave up after {attempts} rounds: {remote} moved again between each fetch and push ({reason}). Everything fetched is merged here; run `kapi context sync` again"
    )]
    GaveUp {
        remote: String,
        attempts: usize,
        reason: String,
    },
}

impl From<crate::store::StoreError> for SyncError {
    fn from(e: crate::store::StoreError) -> Self {
        SyncError::Context(e.into())
    }
}

/// Refuse what an agent may not do: pushing the shared log, or recording
/// the merge signals that a merge to the default branch gives.
fn permitted(session: &Session, req: &SyncRequest) -> Result<(), ContextError> {
    if req.merged.is_some() {
        may_share(session.actor(), Sharing::MergeSignals)?;
    }
    if req.push {
        may_share(session.actor(), Sharing::Push)?;
    }
    if req.allow_other_project {
        may_share(session.actor(), Sharing::OtherProject)?;
    }
    Ok(())
}

/// The project a fetched log must name: this log's, once it holds
/// operations or kapi.toml names it. A log with neither takes whatever it
/// is first given (a fresh clone's first sync).
fn expected_project(session: &Session, req: &SyncRequest) -> Result<Option<String>, ContextError> {
    if req.allow_other_project {
        return Ok(None);
    }
    let configured = session
        .config
        .project
        .as_ref()
        .is_some_and(|p| !p.trim().is_empty());
    if configured || session.store.log_project()?.is_some() {
        return Ok(Some(session.project.clone()));
    }
    Ok(None)
}

/// Whether a rejected push means the remote will not take the ref at all
/// (a hook, a server policy), rather than that it moved since our fetch
/// (not a fast-forward, or its ref changed while we pushed).
fn refuses_the_ref(reason: &str) -> bool {
    const MOVED: &[&str] = &[
        "fetch first",
        "non-fast-forward",
        "failed to update ref",
        "failed to lock",
        "cannot lock ref",
        "stale info",
        "incorrect old value",
    ];
    !MOVED.iter().any(|m| reason.contains(m))
}

/// Fetch, merge, settle and push.
pub fn sync(session: &Session, req: &SyncRequest) -> Result<Synced, SyncError> {
    permitted(session, req)?;
    if let Some(range) = &req.merged {
        // A range that is none is bad usage: said before anything is fetched.
        super::settle::merged_range(session, range)?;
    }
    let remote = req.remote.as_deref().unwrap_or("origin");
    // Settling needs no remote: with nothing to push and no remote named,
    // a repository without `origin` settles what its own log holds.
    let local_only = req.remote.is_none() && !req.push && !session.store.git().has_remote("origin");
    let mut synced = Synced {
        remote: remote.to_owned(),
        fetched: Fetched::default(),
        merged: None,
        established: Vec::new(),
        push: PushOutcome::NotAsked,
        attempts: 0,
        refreshed: Vec::new(),
        refresh_error: None,
    };
    let remote_error = |e: RemoteError| SyncError::Remote(e, remote.to_owned());
    let project = expected_project(session, req)?;
    let timeout = req.timeout.unwrap_or_else(|| session.config.sync.timeout());
    loop {
        synced.attempts += 1;
        synced.fetched.local_only = local_only;
        let fetched = match local_only {
            true => None,
            false => session
                .store
                .fetch_log(remote, timeout)
                .map_err(remote_error)?,
        };
        let mut older = false;
        if let Some(theirs) = fetched {
            synced.fetched.remote_has_log = true;
            let now = session.now_ms()?.max(session.env().wall_ms());
            let merge = match session.store.merge_tip(theirs, now, project.as_deref()) {
                Err(StoreError::OtherProject { ours, theirs }) => {
                    return Err(SyncError::OtherProject {
                        remote: remote.to_owned(),
                        ours,
                        theirs,
                    });
                }
                other => other?,
            };
            older = merge.older;
            synced.fetched.joined = Some(merge.joined);
            synced.fetched.added += merge.added;
            synced.fetched.refused += crate::store::segment::unreadable(&merge.unreadable);
            synced
                .fetched
                .unreadable
                .extend(merge.unreadable.iter().map(Rejected::from));
            synced.fetched.held_back.extend(merge.ahead);
        }
        // One fold serves the merge signals and settling: the signals
        // recorded are applied to it.
        // A merge that brought an operation older than one ours held
        // (diverged logs) is folded from the start: no checkpoint can be
        // advanced by it, so none is decoded to find that out.
        let mut ledger = match older {
            true => session.refolded_ledger()?,
            false => session.ledger()?,
        };
        if synced.merged.is_none()
            && let Some(range) = &req.merged
        {
            synced.merged = Some(super::settle::merge_signals_in(
                session,
                &mut ledger,
                range,
                req.pr.as_deref(),
            )?);
        }
        synced
            .established
            .extend(super::settle::settle_in(session, ledger)?);
        if !req.push {
            break;
        }
        // Lines still in the journal go onto the ref before it is pushed.
        session.store.flush()?;
        if session.store.tip(LogRef::Shared)?.is_none() {
            synced.push = PushOutcome::NothingToPush;
            break;
        }
        match session
            .store
            .push_log(remote, timeout)
            .map_err(remote_error)?
        {
            Pushed::Accepted => {
                synced.push = PushOutcome::Pushed;
                break;
            }
            Pushed::Rejected(reason) if refuses_the_ref(&reason) => {
                return Err(SyncError::RefusedRef {
                    remote: remote.to_owned(),
                    reason: reason.trim().to_owned(),
                });
            }
            Pushed::Rejected(reason) if synced.attempts >= ATTEMPTS => {
                return Err(SyncError::GaveUp {
                    remote: remote.to_owned(),
                    attempts: synced.attempts,
                    reason: reason.trim().to_owned(),
                });
            }
            // The remote moved since the fetch: fetch, merge and push again.
            Pushed::Rejected(_) => continue,
        }
    }
    let changed = synced.fetched.added > 0
        || !synced.established.is_empty()
        || synced
            .merged
            .as_ref()
            .is_some_and(|m| m.signals.iter().any(|s| s.recorded));
    if changed {
        session.register();
        let (refreshed, error) = super::rulesfiles::refresh_after_change(session);
        synced.refreshed = refreshed;
        synced.refresh_error = error;
    }
    Ok(synced)
}
