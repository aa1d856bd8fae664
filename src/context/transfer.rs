//! Moving context in and out of the log: `kapi store import` (a JSON Lines
//! file merged by union, or the checkout's context files) and `kapi store
//! export` (the shared log as JSON Lines, and writing it safely). Every
//! import that puts something in force refreshes the rules files.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::door::Recorded;
use super::import::{ContextFile, ImportOutcome};
use super::{ContextError, Session};
use crate::store::{LogRef, Problem};

/// An operation that was not merged: where it was, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Rejected {
    pub location: String,
    pub error: String,
}

impl From<&Problem> for Rejected {
    fn from(p: &Problem) -> Self {
        Rejected {
            location: p.location.clone(),
            error: p.error.to_string(),
        }
    }
}

/// What merging a JSON Lines file did.
#[derive(Debug, Serialize)]
pub struct LogImported {
    /// Valid operations the file held.
    pub read: usize,
    /// Operations the log did not hold before.
    pub added: usize,
    /// Operations the log already held, byte for byte.
    pub held: usize,
    /// Lines that could not be read, then operations refused (another copy
    /// of a held id, or dated in the future).
    pub rejected: Vec<Rejected>,
    /// How many of `rejected` were refused by the merge.
    pub refused: usize,
    /// Rules files rewritten because what is in force changed.
    pub refreshed: Vec<PathBuf>,
    /// Why refreshing them failed, after the change was recorded: a
    /// surface shows what was recorded, then this.
    #[serde(skip)]
    pub refresh_error: Option<ContextError>,
}

/// Merge the operations of a JSON Lines file (`origin` names it).
pub fn import_log(
    session: &Session,
    bytes: &[u8],
    origin: &str,
) -> Result<LogImported, ContextError> {
    let command = format!("kapi store import {origin}");
    crate::ops::policy::may_share(
        session.actor(),
        crate::ops::policy::Sharing::MergeFile { command: &command },
    )?;
    let imported = session
        .store
        .import_jsonl(bytes, origin, session.now_ms()?)?;
    let merged = &imported.merged;
    let (refreshed, refresh_error) = if merged.added > 0 {
        session.register();
        super::rulesfiles::refresh_after_change(session)
    } else {
        (Vec::new(), None)
    };
    Ok(LogImported {
        read: imported.read,
        added: merged.added,
        held: merged.held,
        rejected: imported
            .unreadable
            .iter()
            .chain(&merged.refused)
            .map(Rejected::from)
            .collect(),
        refused: merged.refused.len(),
        refreshed,
        refresh_error,
    })
}

/// One context file and what importing it did.
#[derive(Debug, Serialize)]
pub struct FileImported {
    pub file: ContextFile,
    pub outcome: ImportOutcome,
}

/// What importing the checkout's context files did.
#[derive(Debug, Serialize)]
pub struct FilesImported {
    pub files: Vec<FileImported>,
    /// Rules files rewritten because what is in force changed.
    pub refreshed: Vec<PathBuf>,
    /// Why refreshing them failed, after the change was recorded: a
    /// surface shows what was recorded, then this.
    #[serde(skip)]
    pub refresh_error: Option<ContextError>,
    /// Imported rules that disagree, one side at least imported now.
    pub disagreements: Vec<super::Disagreement>,
}

/// Import every context file of the checkout (`force`: even unchanged ones).
pub fn import_files(session: &Session, force: bool) -> Result<FilesImported, ContextError> {
    let (
        outcomes,
        Recorded {
            refreshed,
            refresh_error,
            ..
        },
    ) = super::import_context_files(session, force)?;
    let new: Vec<&str> = outcomes
        .iter()
        .filter_map(|(_, o)| match o {
            ImportOutcome::Imported { id, .. } => Some(id.as_str()),
            _ => None,
        })
        .collect();
    let disagreements = if new.is_empty() {
        Vec::new()
    } else {
        // The imported rules in force, as the review digest reads them.
        let ledger = session.rules_ledger()?;
        let all = super::disagreements(session, &ledger)?;
        session.release(ledger);
        all.into_iter().filter(|d| d.involves(&new)).collect()
    };
    Ok(FilesImported {
        disagreements,
        files: outcomes
            .into_iter()
            .map(|(file, outcome)| FileImported { file, outcome })
            .collect(),
        refreshed,
        refresh_error,
    })
}

/// The shared log as JSON Lines, one canonical operation a line, in id order.
#[derive(Debug, Serialize)]
pub struct Exported {
    pub jsonl: String,
    pub operations: usize,
    /// Stored operations that could not be read and were left out.
    pub unreadable: usize,
}

/// Export the shared log (`refs/kapi/ops`); check runs stay on this machine.
pub fn export(session: &Session) -> Result<Exported, ContextError> {
    // Lines a crashed writer left in the journal belong to the log too.
    session.store.flush()?;
    let loaded = session.store.load(LogRef::Shared)?;
    let mut jsonl = String::new();
    for record in &loaded.records {
        jsonl.push_str(&record.to_canonical_json());
        jsonl.push('\n');
    }
    Ok(Exported {
        jsonl,
        operations: loaded.records.len(),
        unreadable: crate::store::segment::unreadable(&loaded.problems),
    })
}

#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error(
        "{} is a symbolic link; `kapi store export` neither follows nor replaces links: name the file it points to",
        .0.display()
    )]
    Link(PathBuf),
    #[error("{} is a directory; name a file to write", .0.display())]
    Directory(PathBuf),
    #[error("cannot write {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Write `bytes` where `path` says, by what `path` is: a regular file is
/// replaced atomically, a FIFO or a device is written in place, a symbolic
/// link is refused.
pub fn write_to(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let failed = |source: std::io::Error| WriteError::Io {
        path: path.to_path_buf(),
        source,
    };
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            crate::atomic::replace(path, bytes, None).map_err(failed)
        }
        Err(e) => Err(failed(e)),
        Ok(meta) if meta.file_type().is_symlink() => Err(WriteError::Link(path.to_path_buf())),
        Ok(meta) if meta.is_dir() => Err(WriteError::Directory(path.to_path_buf())),
        Ok(meta) if meta.is_file() => {
            crate::atomic::replace(path, bytes, Some(meta.permissions())).map_err(failed)
        }
        // A FIFO, a device or a socket: write into it, never replace it.
        Ok(_) => std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|mut f| {
                f.write_all(bytes)?;
                f.flush()
            })
            .map_err(failed),
    }
}
