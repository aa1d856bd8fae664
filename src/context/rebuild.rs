//! `kapi store rebuild`: every derived thing made again from the log
//! alone (the seed's rebuild), and what changed. The fold checkpoint, the
//! segment cache, the newest-id and project caches and the workspace's
//! cached answers are removed and derived again; the rules files are
//! refreshed from the fresh fold. Each of those is checked whenever it is
//! read, so a rebuild should change nothing: when it does (a statement of
//! the caches that the log does not bear out, a rules file edited by hand
//! inside its managed block), it says what.

use std::collections::HashMap;
use std::path::PathBuf;

use serde::Serialize;

use super::{ContextError, Session, rulesfiles, workspace};
use crate::ops::Status;
use crate::ops::id::OpId;
use crate::store::Removed;

/// A subject the caches answered otherwise than the log.
#[derive(Debug, Clone, Serialize)]
pub struct Changed {
    pub id: OpId,
    pub subject: String,
    /// What the caches said (`None`: they did not hold it).
    pub was: Option<&'static str>,
    /// What the log says.
    pub now: Option<&'static str>,
}

/// What a rebuild did.
#[derive(Debug, Clone, Serialize)]
pub struct Rebuilt {
    /// The derived files removed, with what each kept and its size.
    pub removed: Vec<RemovedFile>,
    /// Operations the log holds, and stored lines that could not be read.
    pub operations: usize,
    pub unreadable: usize,
    /// Subjects whose status the caches gave otherwise than the log.
    pub changed: Vec<Changed>,
    /// The rules files whose managed block was written again.
    pub rules_files: Vec<PathBuf>,
    /// The workspace's cached answers removed, and the logs read again.
    pub workspace_removed: usize,
    pub workspace_read: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct RemovedFile {
    pub name: &'static str,
    pub keeps: &'static str,
    pub bytes: u64,
}

impl From<Removed> for RemovedFile {
    fn from(r: Removed) -> Self {
        Self {
            name: r.name,
            keeps: r.keeps,
            bytes: r.bytes,
        }
    }
}

/// Remove every derived thing, fold the log from its first operation, and
/// write each derived thing again.
pub fn rebuild(session: &Session) -> Result<Rebuilt, ContextError> {
    // What the caches answer now, to say what the rebuild changed.
    let before: HashMap<OpId, Status> = match session.ledger() {
        Ok(ledger) => statuses(&ledger).collect(),
        // Caches that cannot even be read are what a rebuild is for.
        Err(_) => HashMap::new(),
    };
    let removed = session.store.remove_derived()?;
    let (ledger, unreadable) = session.ledger_and_unreadable()?;
    let mut changed: Vec<Changed> = Vec::new();
    for (record, state) in ledger.iter() {
        let Some(state) = state else { continue };
        let id = record.op_id();
        let was = before.get(&id).copied();
        if was != Some(state.status) {
            changed.push(Changed {
                id,
                subject: record
                    .subject
                    .as_ref()
                    .map(|s| s.describe())
                    .unwrap_or_default(),
                was: was.map(Status::as_str),
                now: Some(state.status.as_str()),
            });
        }
    }
    let now: std::collections::HashSet<OpId> = statuses(&ledger).map(|(id, _)| id).collect();
    let mut gone: Vec<Changed> = before
        .iter()
        .filter(|(id, _)| !now.contains(id))
        .map(|(id, was)| Changed {
            id: *id,
            subject: String::new(),
            was: Some(was.as_str()),
            now: None,
        })
        .collect();
    gone.sort_by_key(|c| c.id);
    changed.extend(gone);
    let operations = ledger.records().len();
    session.release(ledger);
    // The reader's view (written by the next read otherwise), then what
    // writers read.
    let view = session.rules_ledger()?;
    let rules_files = rulesfiles::refresh(session, &view)?;
    session.release(view);
    // The view with every decision (written by the next listing of one
    // kind otherwise).
    let (decisions, _) = session.decisions_ledger()?;
    session.release(decisions);
    session.store.derive_for_writers(session.now_ms()?)?;
    // The arrival record is not derived, but where it is kept, where it
    // was brought up to is: bring it up to the log (checking it whole).
    if session.store.keeps_arrivals() {
        let arrivals = super::log::Arrivals::read(session, 0, None)?;
        session.release(arrivals);
    }
    let (workspace_removed, workspace_read) = workspace::rebuild_cache(session);
    Ok(Rebuilt {
        removed: removed.into_iter().map(RemovedFile::from).collect(),
        operations,
        unreadable,
        changed,
        rules_files,
        workspace_removed,
        workspace_read,
    })
}

fn statuses(ledger: &crate::ops::Ledger) -> impl Iterator<Item = (OpId, Status)> + '_ {
    ledger
        .iter()
        .filter_map(|(record, state)| state.map(|s| (record.op_id(), s.status)))
}
