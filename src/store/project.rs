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

use super::{LogRef, Store, StoreError, cache, newest, read, segment, tree};
use crate::ops::id::OpId;

pub(super) const NAME: &str = "project";
const MAGIC: &str = "kapi project v1";

impl Store {
    /// The project of the log's oldest readable operation (the shared log's,
    /// else the local log's), if it holds any.
    pub fn log_project(&self) -> Result<Option<String>, StoreError> {
        let dir = self.kapi_dir();
        if let Some((id, project)) = read_cache(&dir)
            && self
                .find(&id)?
                .is_some_and(|r| r.project.as_str() == project)
        {
            return Ok(Some(project));
        }
        let gix = self.repo.gix();
        let mut logs = Vec::new();
        for which in [LogRef::Shared, LogRef::Local] {
            if let Some(tip) = self.tip(which)? {
                logs.push(newest::all_segments(gix, self.tree_of(tip)?)?);
            }
        }
        let cached = segment_cache(gix, &dir, &logs);
        for segments in &logs {
            if let Some((id, project)) = oldest(gix, &cached, segments)? {
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

/// The read cache, for a long log (both logs' segments): a fresh clone has
/// none yet, so it is written first, on every core, for the scan for the
/// oldest operation and for the read of the whole log that follows (which
/// then inflates nothing).
fn segment_cache(
    repo: &gix::Repository,
    dir: &Path,
    logs: &[newest::Segments],
) -> cache::SegmentCache {
    let blobs: Vec<gix::ObjectId> = logs.iter().flatten().map(|(_, blob)| *blob).collect();
    if blobs.len() < read::PARALLEL_SEGMENTS {
        return cache::SegmentCache::default();
    }
    let cached = cache::SegmentCache::read(dir);
    if read::cache_is_stale(&cached, &blobs) && read::refill_cache(repo, dir, &blobs, &cached) {
        return cache::SegmentCache::read(dir);
    }
    cached
}

/// The oldest readable operation of a log's `segments`, with its project:
/// each segment's ids are found without parsing, and only its candidates
/// from the oldest up are parsed, until one is a valid operation of the
/// segment. One segment is held at a time.
fn oldest(
    repo: &gix::Repository,
    cached: &cache::SegmentCache,
    segments: &newest::Segments,
) -> Result<Option<(OpId, String)>, StoreError> {
    let mut best: Option<(OpId, String)> = None;
    for (shard, blob) in segments {
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
