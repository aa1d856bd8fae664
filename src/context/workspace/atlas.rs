//! The logs of the other repositories the workspace registry lists, read
//! for `kapi context atlas --workspace`. Another checkout is untrusted (a
//! clone of anyone's project registers by being recorded in): what is read
//! of it is bounded. Only its shared log is read, through the store's
//! reader (every operation size-capped and checked), never written to (no
//! journal is flushed); its kapi.toml and gazetteer are not read, so its
//! coordinates compare by equality; at most [`MAX_PROJECTS`] repositories
//! are read, each of at most [`MAX_OPERATIONS`] operations, and at most
//! [`MAX_TOTAL_OPERATIONS`] over all of them. What is left out is listed
//! with the reason, never dropped silently.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::Serialize;

use super::super::Session;
use crate::ops::history::{Histories, histories};
use crate::store::{LogRef, Store};

/// The most other repositories an atlas reads.
pub const MAX_PROJECTS: usize = 64;
/// The most operations read of one other repository's log.
pub const MAX_OPERATIONS: usize = 200_000;
/// The most operations read over every other repository.
pub const MAX_TOTAL_OPERATIONS: usize = 1_000_000;

/// A registered repository as the workspace atlas lists it.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectDoc {
    pub project: String,
    /// Its checkout, as the registry names it.
    pub repository: PathBuf,
    /// This checkout: the project the atlas was asked in.
    pub this: bool,
    /// Operations of its log in the atlas (0 when it was not read).
    pub operations: usize,
    /// Stored operations of its log that could not be read (`kapi store
    /// doctor` in that checkout names them).
    pub unreadable: usize,
    /// Why its log is not in the atlas, when it is not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped: Option<String>,
}

/// Another repository's log, read and folded.
pub struct Read {
    pub project: String,
    pub histories: Histories,
}

/// What the atlas read of the workspace.
pub struct Workspace {
    /// Every registered repository, and this one first.
    pub projects: Vec<ProjectDoc>,
    pub read: Vec<Read>,
}

/// Read the shared log of every other registered repository, within the
/// bounds; one project is read once (from the first checkout the
/// registry lists for it), and this checkout's project comes from the
/// session.
pub fn read(session: &Session, this: ProjectDoc) -> Workspace {
    let here = super::checkout(session);
    let mut projects = vec![this];
    let mut seen: BTreeSet<String> = [session.project.clone()].into();
    let mut read = Vec::new();
    let mut total = 0usize;
    for entry in super::registered(session.env()) {
        if entry.path == here {
            continue;
        }
        let mut doc = ProjectDoc {
            project: entry.project.clone(),
            repository: entry.path.clone(),
            this: false,
            operations: 0,
            unreadable: 0,
            skipped: None,
        };
        let skipped = if seen.contains(&entry.project) {
            Some(format!(
                "another checkout of {} is read instead",
                entry.project
            ))
        } else if read.len() == MAX_PROJECTS {
            Some(format!(
                "the atlas reads at most {MAX_PROJECTS} other repositories"
            ))
        } else if !entry.path.is_dir() {
            Some("its folder is gone".to_owned())
        } else {
            match load(&entry.path, &entry.project, MAX_TOTAL_OPERATIONS - total) {
                Ok((histories, unreadable)) => {
                    doc.operations = histories.ledger.records().len();
                    doc.unreadable = unreadable;
                    total += doc.operations;
                    seen.insert(entry.project.clone());
                    read.push(Read {
                        project: entry.project.clone(),
                        histories,
                    });
                    None
                }
                Err(why) => Some(why),
            }
        };
        doc.skipped = skipped;
        projects.push(doc);
    }
    Workspace { projects, read }
}

/// Read and fold the shared log at `path`: only the operations of
/// `project` (a log holds one project; what else it claims is not read),
/// at most [`MAX_OPERATIONS`] and `room`; with the number of stored
/// operations that could not be read. A log nothing of which can be read
/// is not read.
pub(crate) fn load(
    path: &std::path::Path,
    project: &str,
    room: usize,
) -> Result<(Histories, usize), String> {
    let store = Store::discover(path).map_err(|e| e.to_string())?;
    // A folder that is no repository any more must not stand for the one
    // above it.
    let top = store.work_tree().and_then(|t| t.canonicalize().ok());
    if top.as_deref() != Some(path) {
        return Err("it is no git checkout any more".to_owned());
    }
    let loaded = store.load(LogRef::Shared).map_err(|e| e.to_string())?;
    let unreadable = crate::store::segment::unreadable(&loaded.problems);
    if loaded.records.is_empty()
        && let Some(problem) = loaded.problems.first()
    {
        return Err(format!(
            "its log cannot be read: {}: {}",
            problem.location, problem.error
        ));
    }
    let records: Vec<_> = loaded
        .records
        .into_iter()
        .filter(|r| r.project.as_str() == project)
        .collect();
    let cap = MAX_OPERATIONS.min(room);
    if records.len() > cap {
        return Err(format!(
            "its log holds {} operations, over the {cap} the atlas reads of it",
            records.len()
        ));
    }
    Ok((histories(crate::ops::Ledger::new(records)), unreadable))
}
