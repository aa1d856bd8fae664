//! The project a log belongs to: the project its oldest readable operation
//! names. A repository's log holds one project, so once it holds an
//! operation its key no longer depends on where the checkout sits or what
//! its remote is called (a clone under another folder name, or a remote
//! added later, would otherwise split one log under two keys).
//!
//! The answer is kept in a derived cache (`.git/kapi/project`: the id of
//! that operation and its project), which is obeyed only when it checks
//! out. Its third line says which segment blobs held the operation in
//! each log when it was found, tagged with the repository's secret
//! (`.git/kapi/trust.secret`, as the newest-id cache is): while each log's
//! tip still holds those blobs at the operation's shard (two small trees
//! read, no segment; none for a log whose tip, recorded beside them, has
//! not moved), the answer stands as found. Otherwise (the segment
//! changed, a tag that does not check out, an older kapi's two-line file)
//! the log must hold that id and the operation name that project (one
//! segment read), and the file is written anew. Merging operations in from
//! elsewhere drops it, since an older operation may have arrived. A
//! missing, damaged or stale cache is computed again from the log and
//! rewritten.

use std::path::Path;

use gix::ObjectId;

use super::{LogRef, Store, StoreError, cache, newest, read, segment, tree, verdicts};
use crate::ops::id::OpId;

pub(super) const NAME: &str = "project";
const MAGIC: &str = "kapi project v1";
/// What the tag says the file is (its line, third, is one an older kapi
/// does not read).
const TAG_DOMAIN: &str = "kapi project cache tag";

/// The segment blob at an operation's shard in each log's tip (shared,
/// local), where there is one.
type Held = [Option<ObjectId>; 2];

/// What the cache says.
struct Cached {
    id: OpId,
    project: String,
    /// Where the operation was found, for a file the tag vouches for.
    held: Option<Held>,
    /// The tips (shared, local) it was found at, when the file names them:
    /// a tip that has not moved holds the same blob, unread.
    tips: Option<Held>,
}

impl Store {
    /// The project of the log's oldest readable operation (the shared log's,
    /// else the local log's), if it holds any.
    pub fn log_project(&self) -> Result<Option<String>, StoreError> {
        let dir = self.kapi_dir();
        if let Some(cached) = read_cache(&dir) {
            let known = cached.held.zip(cached.tips);
            let (now, tips) = self.held_at(&cached.id, known)?;
            if cached.held == Some(now) {
                // A file from before tips were recorded gains them once.
                if cached.tips.is_none() {
                    write_cache(&dir, &cached.id, &cached.project, &now, &tips);
                }
                return Ok(Some(cached.project));
            }
            // The cached operation's own line (as `oldest` reads lines),
            // not its content: an import's rules are not read to learn its
            // project.
            if self
                .find_record(&cached.id)?
                .is_some_and(|r| r.project.as_str() == cached.project)
            {
                write_cache(&dir, &cached.id, &cached.project, &now, &tips);
                return Ok(Some(cached.project));
            }
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
                let (held, tips) = self.held_at(&id, None)?;
                write_cache(&dir, &id, &project, &held, &tips);
                return Ok(Some(project));
            }
        }
        Ok(None)
    }

    /// The segment blobs each log's tip holds at the shard of `id`, and
    /// the tips. `known`: blobs held at tips the tag vouches for; a tip
    /// that has not moved since holds the same, and its trees are not read
    /// (the local log's, which a note does not move, on every note).
    fn held_at(&self, id: &OpId, known: Option<(Held, Held)>) -> Result<(Held, Held), StoreError> {
        let (mut held, mut tips) = ([None, None], [None, None]);
        for (slot, which) in [LogRef::Shared, LogRef::Local].into_iter().enumerate() {
            tips[slot] = self.tip(which)?;
            if let Some((known_held, known_tips)) = known
                && known_tips[slot] == tips[slot]
            {
                held[slot] = known_held[slot];
            } else if let Some(tip) = tips[slot] {
                let root = self.tree_of(tip)?;
                held[slot] =
                    tree::segment_blob(self.repo.gix(), root, segment::shard(id.as_str()))?;
            }
        }
        Ok((held, tips))
    }

    /// Forget the cached project (operations arrived from elsewhere).
    pub(super) fn forget_project(&self) {
        let _ = std::fs::remove_file(self.kapi_dir().join(NAME));
    }
}

fn read_cache(dir: &Path) -> Option<Cached> {
    let text = std::fs::read_to_string(dir.join(NAME)).ok()?;
    let mut lines = text.lines();
    if lines.next() != Some(MAGIC) {
        return None;
    }
    let first = lines.next()?;
    let (id, project) = first.split_once(' ')?;
    let mut cached = Cached {
        id: OpId::parse(id).ok()?,
        project: project.to_owned(),
        held: None,
        tips: None,
    };
    // `held <shared> <local> [at <shared tip> <local tip>] tag <hex>`:
    // where it was found (and at which tips), vouched for by the tag (else
    // it is looked up in the log).
    if let Some((held, hex)) = lines.next().and_then(|l| l.split_once(" tag "))
        && verdicts::tag_hex(
            dir,
            TAG_DOMAIN,
            format!("{MAGIC}\n{first}\n{held}").as_bytes(),
        )
        .is_some_and(|tag| tag == hex)
    {
        let mut fields = held.strip_prefix("held ")?.split(' ');
        let pair = |fields: &mut std::str::Split<'_, char>| -> Option<Held> {
            let mut at = [None, None];
            for slot in &mut at {
                *slot = match fields.next()? {
                    "-" => None,
                    hex => Some(ObjectId::from_hex(hex.as_bytes()).ok()?),
                };
            }
            Some(at)
        };
        cached.held = Some(pair(&mut fields)?);
        match fields.next() {
            None => {}
            Some("at") => cached.tips = Some(pair(&mut fields)?),
            Some(_) => return None,
        }
    }
    Some(cached)
}

fn write_cache(dir: &Path, id: &OpId, project: &str, held: &Held, tips: &Held) {
    // A project key holds no line break (the record's limits), so the
    // cache is one line after its magic, and the tagged line.
    if project.contains('\n') {
        return;
    }
    let _ = std::fs::create_dir_all(dir);
    let mut text = format!("{MAGIC}\n{} {project}\n", id.as_str());
    let blob = |b: &Option<ObjectId>| b.map_or_else(|| "-".to_owned(), |b| b.to_hex().to_string());
    let line = format!(
        "held {} {} at {} {}",
        blob(&held[0]),
        blob(&held[1]),
        blob(&tips[0]),
        blob(&tips[1])
    );
    if let Some(tag) = verdicts::tag_hex(dir, TAG_DOMAIN, format!("{text}{line}").as_bytes()) {
        text.push_str(&format!("{line} tag {tag}\n"));
    }
    // Derived, so not synced: a torn cache fails its tag, or the check
    // against the log.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_tag_made_with_the_secret_says_where_the_operation_was_found() {
        let dir = tempfile::tempdir().unwrap();
        let id = OpId::mint(crate::ops::id::EPOCH_MS + 1_000, 7, None).unwrap();
        let blob = ObjectId::from_hex(b"4b825dc642cb6eb9a060e54bf8d69288fbca4904").unwrap();
        let tip = ObjectId::from_hex(b"2222222222222222222222222222222222222222").unwrap();
        write_cache(
            dir.path(),
            &id,
            "a project",
            &[Some(blob), None],
            &[Some(tip), None],
        );
        let read = read_cache(dir.path()).unwrap();
        assert_eq!((read.id, read.project.as_str()), (id, "a project"));
        assert_eq!(read.held, Some([Some(blob), None]));
        assert_eq!(read.tips, Some([Some(tip), None]));
        let path = dir.path().join(NAME);
        let text = std::fs::read_to_string(&path).unwrap();
        // Another project under the same tag, or other blobs or tips: the
        // project is read, where (and at which tips) it was found is not
        // (it is looked up in the log).
        for forged in [
            text.replace(" a project\n", " another\n"),
            text.replace(&blob.to_hex().to_string(), &"1".repeat(40)),
            text.replace(&tip.to_hex().to_string(), &"3".repeat(40)),
            text.replace(" at ", " at - "),
            text.replace("held ", "held  "),
        ] {
            assert_ne!(forged, text);
            std::fs::write(&path, &forged).unwrap();
            let read = read_cache(dir.path()).unwrap();
            assert_eq!((read.held, read.tips), (None, None), "{forged}");
        }
        // The line before tips were recorded, tagged: blobs without tips.
        let first = format!("{} a project", id.as_str());
        let line = format!("held {} -", blob.to_hex());
        let tag = verdicts::tag_hex(
            dir.path(),
            TAG_DOMAIN,
            format!("{MAGIC}\n{first}\n{line}").as_bytes(),
        )
        .unwrap();
        std::fs::write(&path, format!("{MAGIC}\n{first}\n{line} tag {tag}\n")).unwrap();
        let read = read_cache(dir.path()).unwrap();
        assert_eq!((read.held, read.tips), (Some([Some(blob), None]), None));
        // An older kapi's file (two lines) reads, unvouched for.
        std::fs::write(&path, format!("{MAGIC}\n{} a project\n", id.as_str())).unwrap();
        let read = read_cache(dir.path()).unwrap();
        assert_eq!((read.project.as_str(), read.held), ("a project", None));
    }
}
