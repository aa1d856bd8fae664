//! The derived files under `.git/kapi`, as one list: `kapi store rebuild`
//! removes them and derives them again from the log alone. Each is also
//! checked whenever it is read and computed again when it does not check
//! out, so removing one never loses an answer; what is not on this list
//! (the journal, the locks, the arrival record, a ref's intent) is not
//! derived and is left alone.

use super::checkpoint::Part;
use super::{LogRef, Store, StoreError, arrivals, cache, newest, project, verdicts};

/// The derived files, by name, with what each keeps.
pub const DERIVED: [(&str, &str); 11] = [
    (Part::Base.name(), "the whole folded ledger"),
    (Part::View.name(), "the reader's view of the fold"),
    (
        Part::Decisions.name(),
        "the reader's view and every decision",
    ),
    (Part::History.name(), "every subject's history of statuses"),
    (cache::NAME, "inflated segments"),
    (newest::NAME, "the newest id to mint past"),
    (project::NAME, "the project the log belongs to"),
    (arrivals::TIPS, "where the arrival record was brought up to"),
    (verdicts::NAME, "signatures verified before"),
    (
        crate::context::RULES_CACHE,
        "the matcher's plans for the rules checked by",
    ),
    (
        crate::context::RULES_SEEN,
        "the plans and term lists checked before, by file",
    ),
];

/// A derived file that was removed, and its size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removed {
    pub name: &'static str,
    pub keeps: &'static str,
    pub bytes: u64,
}

impl Store {
    /// Remove every derived file there is (a link or a FIFO in one's place
    /// too: the entry is removed, never followed or opened).
    pub fn remove_derived(&self) -> Result<Vec<Removed>, StoreError> {
        let dir = self.kapi_dir();
        let mut removed = Vec::new();
        for (name, keeps) in DERIVED {
            let path = dir.join(name);
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            std::fs::remove_file(&path).map_err(|source| StoreError::Io { path, source })?;
            removed.push(Removed {
                name,
                keeps,
                bytes: meta.len(),
            });
        }
        Ok(removed)
    }

    /// Derive what a read does not derive by itself: the newest ids of
    /// both logs (what the next writer mints past) and the log's project.
    pub fn derive_for_writers(&self, now_ms: u64) -> Result<(), StoreError> {
        let dir = self.kapi_dir();
        for which in [LogRef::Shared, LogRef::Local] {
            let Some(tip) = self.tip(which)? else {
                continue;
            };
            let root = self.tree_of(tip)?;
            let (newest, _) = newest::of_tree(self.repo.gix(), &dir, which, Some(root), now_ms)?;
            newest::remember(&dir, which, root, &newest);
        }
        self.log_project()?;
        Ok(())
    }
}
