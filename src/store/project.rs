//! The project a log belongs to: the project its oldest readable operation
//! names. A repository's log holds one project, so once it holds an
//! operation its key no longer depends on where the checkout sits or what
//! its remote is called (a clone under another folder name, or a remote
//! added later, would otherwise split one log under two keys).
//!
//! The answer is kept in a derived cache (`.git/kapi/project`: the id of
//! that operation and its project), which is obeyed only when it checks
//! out: the log holds that id, and the operation names that project (one
//! segment read). Merging operations in from elsewhere drops it, since an
//! older operation may have arrived. A missing, damaged or stale cache is
//! computed again from the log and rewritten.

use std::path::Path;

use super::{LogRef, Store, StoreError, cache, newest, segment, tree};
use crate::ops::id::OpId;

pub(super) const NAME: &str = "project";
const MAGIC: &str = "kapi project v1";

impl Store {
    /// The project of the log's oldest readable operation (the shared log's,
    /// else the local log's), if it holds any.
    pub fn log_project(&self) -> Result<Option<String>, StoreError> {
        let dir = self.kapi_dir();
        // The cached operation's own line (as `oldest` reads lines), not
        // its content: an import's rules are not read to learn its project.
        if let Some((id, project)) = read_cache(&dir)
            && self
                .find_record(&id)?
                .is_some_and(|r| r.project.as_str() == project)
        {
            return Ok(Some(project));
        }
        for which in [LogRef::Shared, LogRef::Local] {
            let Some(tip) = self.tip(which)? else {
                continue;
            };
            let root = self.tree_of(tip)?;
            if let Some((id, project)) = oldest(self.repo.gix(), &dir, root)? {
                write_cache(&dir, &id, &project);
                return Ok(Some(project));
            }
        }
        Ok(None)
    }

    /// Forget the cached project (operations arrived from elsewhere).
    pub(super) fn forget_project(&self) {
        let _ = std::fs::remove_file(self.kapi_dir().join(NAME));
    }
}

fn read_cache(dir: &Path) -> Option<(OpId, String)> {
    let text = std::fs::read_to_string(dir.join(NAME)).ok()?;
    let mut lines = text.lines();
    if lines.next() != Some(MAGIC) {
        return None;
    }
    let (id, project) = lines.next()?.split_once(' ')?;
    Some((OpId::parse(id).ok()?, project.to_owned()))
}

fn write_cache(dir: &Path, id: &OpId, project: &str) {
    // A project key holds no line break (the record's limits), so the
    // cache is one line after its magic.
    if project.contains('\n') {
        return;
    }
    let _ = std::fs::create_dir_all(dir);
    let text = format!("{MAGIC}\n{} {project}\n", id.as_str());
    // Derived, so not synced: a torn cache fails the check against the log.
    let _ = crate::atomic::replace_derived(&dir.join(NAME), |out| out.write_all(text.as_bytes()));
}

/// The oldest readable operation under `root`, with its project: each
/// segment's ids are found without parsing, and only its candidates from
/// the oldest up are parsed, until one is a valid operation of the
/// segment. One segment is held at a time.
fn oldest(
    repo: &gix::Repository,
    dir: &Path,
    root: gix::ObjectId,
) -> Result<Option<(OpId, String)>, StoreError> {
    let segments = newest::all_segments(repo, root)?;
    let cached = if segments.len() > 64 {
        cache::SegmentCache::read(dir)
    } else {
        cache::SegmentCache::default()
    };
    let mut best: Option<(OpId, String)> = None;
    for (shard, blob) in &segments {
        let read = match cached.get(blob) {
            Some(bytes) => bytes,
            None => tree::read_capped_segment(repo, *blob)?.unwrap_or_default(),
        };
        let bytes = &read;
        let mut candidates: Vec<(u128, &[u8])> = segment::lines(bytes)
            .filter_map(|line| {
                let id = segment::line_id(line).filter(|id| crate::ops::id::is_id(id))?;
                Some((crate::ops::id::key(id), line))
            })
            .filter(|(key, _)| {
                best.as_ref()
                    .is_none_or(|(id, _)| *key < crate::ops::id::key(id.as_str()))
            })
            .collect();
        candidates.sort_unstable_by_key(|c| c.0);
        for (_, line) in candidates {
            if let Ok(record) = segment::parse_line(line, Some(*shard)) {
                best = Some((record.op_id(), record.project.to_string()));
                break;
            }
        }
    }
    Ok(best)
}
