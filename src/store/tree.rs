//! Building, reading and uniting the log's trees. The tree of a log is a
//! pure function of the set of operation lines it holds: a union of two
//! logs gives the same tree whichever side it starts from.

use std::collections::BTreeMap;

use gix::ObjectId;
use gix::objs::tree::{Entry, EntryKind};

use super::segment::{self, EntryError, Problem};
use super::{StoreError, git};
use crate::ops::id::ALPHABET;

pub(super) type Entries = Vec<Entry>;

/// The shard entries of a tree (names of one character of the id
/// alphabet), read without decoding anything else into memory: a tree
/// someone pushed with a million other entries costs its inflating, once
/// (kapi writes trees of shard entries only).
pub(super) fn read_entries(repo: &gix::Repository, id: ObjectId) -> Result<Entries, StoreError> {
    read_filtered(repo, id, true)
}

/// Every entry of a tree, for naming what is not a shard (at most 100).
pub(super) fn read_all_entries(
    repo: &gix::Repository,
    id: ObjectId,
) -> Result<Entries, StoreError> {
    read_filtered(repo, id, false)
}

fn read_filtered(
    repo: &gix::Repository,
    id: ObjectId,
    shards_only: bool,
) -> Result<Entries, StoreError> {
    let tree = repo
        .find_tree(id)
        .map_err(git("reading a tree of the log"))?;
    let mut out = Vec::new();
    let mut others = 0;
    for e in gix::objs::TreeRefIter::from_bytes(&tree.data, repo.object_hash()) {
        let e = e.map_err(git("decoding a tree of the log"))?;
        let shard = matches!(e.filename.as_ref() as &[u8], [c] if shard_name(*c));
        if !shard {
            others += 1;
            if shards_only || others > 100 {
                continue;
            }
        }
        out.push(Entry {
            mode: e.mode,
            filename: e.filename.to_owned(),
            oid: e.oid.to_owned(),
        });
    }
    Ok(out)
}

pub(super) fn write_entries(
    repo: &gix::Repository,
    mut entries: Entries,
) -> Result<ObjectId, StoreError> {
    entries.sort();
    let tree = gix::objs::Tree { entries };
    Ok(repo
        .write_object(&tree)
        .map_err(git("writing a tree of the log"))?
        .detach())
}

pub(super) fn write_blob(repo: &gix::Repository, bytes: &[u8]) -> Result<ObjectId, StoreError> {
    Ok(repo
        .write_blob(bytes)
        .map_err(git("writing a segment of the log"))?
        .detach())
}

/// The size of an object, read from its header without inflating it.
pub fn object_size(repo: &gix::Repository, id: ObjectId) -> Result<u64, StoreError> {
    Ok(repo
        .find_header(id)
        .map_err(git("reading a segment of the log"))?
        .size())
}

pub fn read_blob(repo: &gix::Repository, id: ObjectId) -> Result<Vec<u8>, StoreError> {
    Ok(repo
        .find_blob(id)
        .map_err(git("reading a segment of the log"))?
        .take_data())
}

fn shard_name(c: u8) -> bool {
    ALPHABET.contains(&c)
}

pub(super) fn single(entry: &Entry) -> Option<u8> {
    match entry.filename.as_slice() {
        [c] if shard_name(*c) => Some(*c),
        _ => None,
    }
}

fn upsert(entries: &mut Entries, name: u8, kind: EntryKind, oid: ObjectId) {
    entries.retain(|e| e.filename.as_slice() != [name]);
    entries.push(Entry {
        mode: kind.into(),
        filename: vec![name].into(),
        oid,
    });
}

/// One segment's bytes and where they were read.
pub struct Segment {
    /// The segment's blob; `None` for an entry that is not a shard.
    pub blob: Option<ObjectId>,
    pub shard: Option<(u8, u8)>,
    pub location: String,
    pub problem: Option<Problem>,
}

/// Read every segment under `root`, reporting what is not a shard.
pub fn read_segments(
    repo: &gix::Repository,
    root: ObjectId,
    origin: &str,
    out: &mut Vec<Segment>,
) -> Result<(), StoreError> {
    let problem = |location: String, entry: String| Segment {
        blob: None,
        shard: None,
        location: location.clone(),
        problem: Some(Problem {
            location,
            error: EntryError::UnexpectedEntry(entry),
        }),
    };
    for top in read_all_entries(repo, root)? {
        let name = String::from_utf8_lossy(&top.filename).into_owned();
        let Some(a) = single(&top).filter(|_| top.mode.is_tree()) else {
            out.push(problem(format!("{origin}:{name}"), name));
            continue;
        };
        for leaf in read_all_entries(repo, top.oid)? {
            let leaf_name = String::from_utf8_lossy(&leaf.filename).into_owned();
            let location = format!("{origin}:{name}/{leaf_name}");
            let Some(b) = single(&leaf).filter(|_| leaf.mode.is_blob()) else {
                out.push(problem(location, format!("{name}/{leaf_name}")));
                continue;
            };
            out.push(Segment {
                blob: Some(leaf.oid),
                shard: Some((a, b)),
                location,
                problem: None,
            });
        }
    }
    Ok(())
}

/// The blob of the segment `(a, b)` under `root`, if the log has one.
pub fn segment_blob(
    repo: &gix::Repository,
    root: ObjectId,
    (a, b): (u8, u8),
) -> Result<Option<ObjectId>, StoreError> {
    let Some(top) = read_entries(repo, root)?
        .into_iter()
        .find(|e| e.filename.as_slice() == [a] && e.mode.is_tree())
    else {
        return Ok(None);
    };
    Ok(read_entries(repo, top.oid)?
        .into_iter()
        .find(|e| e.filename.as_slice() == [b] && e.mode.is_blob())
        .map(|leaf| leaf.oid))
}

/// The bytes of a segment blob, unless it is over the limit kapi reads (a
/// remote can push anything: it is never inflated).
pub fn read_capped_segment(
    repo: &gix::Repository,
    blob: ObjectId,
) -> Result<Option<Vec<u8>>, StoreError> {
    if let Some(bytes) = kept_segment(repo, blob) {
        return Ok(Some(bytes));
    }
    if object_size(repo, blob)? > segment::MAX_SEGMENT_BYTES as u64 {
        return Ok(None);
    }
    let bytes = read_blob(repo, blob)?;
    keep_segment(repo, blob, &bytes);
    Ok(Some(bytes))
}

/// Segments this process has read or written, by repository and blob id,
/// within [`KEPT_BYTES`] in all. A sync reads each segment that differs
/// three times (the merge reads ours and theirs, then the fold after it
/// reads the old and the new one again to find what was added), and every
/// read of a loose object is an open, a map and an inflate. A blob's id is
/// the hash of its bytes, so bytes kept under an id are that blob's; only
/// bytes within the segment limit are kept, so a read from here is what
/// [`read_capped_segment`] would have read.
struct Kept {
    bytes: usize,
    by_id: std::collections::HashMap<(std::path::PathBuf, ObjectId), std::sync::Arc<[u8]>>,
}

/// What the kept segments may hold in all (a sync of 1,000 operations on
/// each side of a 10,000-operation log keeps about 5 MiB).
const KEPT_BYTES: usize = 32 << 20;

static KEPT: std::sync::Mutex<Option<Kept>> = std::sync::Mutex::new(None);

/// The bytes of segment `blob`, if this process has kept them.
fn kept_segment(repo: &gix::Repository, blob: ObjectId) -> Option<Vec<u8>> {
    let kept = KEPT.lock().ok()?;
    let bytes = kept
        .as_ref()?
        .by_id
        .get(&(repo.common_dir().to_path_buf(), blob))?;
    Some(bytes.to_vec())
}

/// Keep the bytes of segment `blob` (read from it or written as it) for
/// the rest of the process, while they fit.
pub(super) fn keep_segment(repo: &gix::Repository, blob: ObjectId, bytes: &[u8]) {
    if bytes.len() > segment::MAX_SEGMENT_BYTES {
        return;
    }
    let Ok(mut kept) = KEPT.lock() else {
        return;
    };
    let kept = kept.get_or_insert_with(|| Kept {
        bytes: 0,
        by_id: std::collections::HashMap::new(),
    });
    if kept.bytes + bytes.len() > KEPT_BYTES {
        return;
    }
    let key = (repo.common_dir().to_path_buf(), blob);
    if !kept.by_id.contains_key(&key) {
        kept.bytes += bytes.len();
        kept.by_id.insert(key, bytes.into());
    }
}

/// The bytes of one segment, if the log has it and it is within the limit.
pub fn read_segment(
    repo: &gix::Repository,
    root: ObjectId,
    shard: (u8, u8),
) -> Result<Option<Vec<u8>>, StoreError> {
    match segment_blob(repo, root, shard)? {
        Some(blob) => read_capped_segment(repo, blob),
        None => Ok(None),
    }
}

/// The size of the segment `shard` holds under `root`, if it has one,
/// read from the object header (nothing is inflated).
pub fn segment_size(
    repo: &gix::Repository,
    root: ObjectId,
    shard: (u8, u8),
) -> Result<Option<u64>, StoreError> {
    segment_blob(repo, root, shard)?
        .map(|blob| object_size(repo, blob))
        .transpose()
}

/// Add lines to their segments, rewriting only the touched segments and
/// the trees above them (each once). A segment that would grow past the
/// limit kapi reads is not touched: its lines come back in the second list,
/// so nothing lands where no one could read it.
pub fn insert_lines<'l>(
    repo: &gix::Repository,
    root: Option<ObjectId>,
    lines: &[&'l [u8]],
) -> Result<(ObjectId, Vec<&'l [u8]>), StoreError> {
    let mut by_shard: BTreeMap<u8, BTreeMap<u8, Vec<&[u8]>>> = BTreeMap::new();
    for line in lines {
        let Some(id) = segment::line_id(line) else {
            continue;
        };
        let (a, b) = segment::shard(id);
        by_shard
            .entry(a)
            .or_default()
            .entry(b)
            .or_default()
            .push(line);
    }
    let mut top = match root {
        Some(root) => read_entries(repo, root)?,
        None => Vec::new(),
    };
    let mut refused = Vec::new();
    for (a, leaves) in by_shard {
        let mut level = match top
            .iter()
            .find(|e| e.filename.as_slice() == [a] && e.mode.is_tree())
        {
            Some(e) => read_entries(repo, e.oid)?,
            None => Vec::new(),
        };
        let mut touched = false;
        for (b, new) in leaves {
            let old = level
                .iter()
                .find(|e| e.filename.as_slice() == [b] && e.mode.is_blob())
                .map(|e| e.oid);
            let old_size = match old {
                Some(oid) => object_size(repo, oid)? as usize,
                None => 0,
            };
            let mut new = new;
            let added: usize = new.iter().map(|l| l.len() + 1).sum();
            let bytes = match old {
                // A segment over the limit is never read by anyone (a
                // remote pushed it): ours replaces it, and nothing readable
                // is lost.
                Some(_) if old_size > segment::MAX_SEGMENT_BYTES => Vec::new(),
                Some(oid) if old_size + added > segment::MAX_SEGMENT_BYTES => {
                    // Lines the segment already holds (a crashed commit
                    // being replayed) need no room, nor do lines no reader
                    // can use (a remote's junk): they are left behind.
                    let kept = keepable_lines(&read_blob(repo, oid)?, (a, b));
                    let held: std::collections::HashSet<&[u8]> = segment::lines(&kept).collect();
                    new.retain(|l| !held.contains(l));
                    if new.is_empty() {
                        continue;
                    }
                    let added: usize = new.iter().map(|l| l.len() + 1).sum();
                    if kept.len() + added > segment::MAX_SEGMENT_BYTES {
                        refused.extend(new);
                        continue;
                    }
                    kept
                }
                Some(oid) => read_blob(repo, oid)?,
                None => Vec::new(),
            };
            let segment_bytes = append_sorted(&bytes, new);
            upsert(
                &mut level,
                b,
                EntryKind::Blob,
                write_blob(repo, &segment_bytes)?,
            );
            touched = true;
        }
        if touched {
            let level_id = write_entries(repo, level)?;
            upsert(&mut top, a, EntryKind::Tree, level_id);
        }
    }
    Ok((write_entries(repo, top)?, refused))
}

/// The lines of a segment of `shard` a reader can use (see
/// [`segment::keepable`]), as segment bytes.
pub(super) fn keepable_lines(bytes: &[u8], shard: (u8, u8)) -> Vec<u8> {
    let kept: Vec<&[u8]> = segment::lines(bytes)
        .filter(|l| segment::keepable(l, shard).is_ok())
        .collect();
    segment::to_bytes(&kept)
}

/// How many bytes of the segment `shard` under `root` a new line must
/// share the size limit with: none when there is no segment, or when it
/// is over the limit (never read; a write replaces it), else its size.
pub fn room_taken(
    repo: &gix::Repository,
    root: ObjectId,
    shard: (u8, u8),
) -> Result<usize, StoreError> {
    Ok(room_of(segment_size(repo, root, shard)?))
}

/// The room a segment of `size` bytes (if there is one) takes: none for a
/// segment over the limit kapi reads (its lines go elsewhere).
pub fn room_of(size: Option<u64>) -> usize {
    match size {
        Some(size) if size <= segment::MAX_SEGMENT_BYTES as u64 => size as usize,
        _ => 0,
    }
}

/// A segment's bytes with `new` lines added, sorted by id, exact repeats
/// dropped. The common case, new ids sorting after everything the segment
/// holds, appends without touching the old bytes.
fn append_sorted(old: &[u8], mut new: Vec<&[u8]>) -> Vec<u8> {
    segment::normalize(&mut new);
    let last_old = old
        .strip_suffix(b"\n")
        .and_then(|body| body.rsplit(|&c| c == b'\n').next())
        .and_then(segment::line_id);
    let first_new = new.first().and_then(|l| segment::line_id(l));
    if old.is_empty() || (old.ends_with(b"\n") && last_old.is_some() && last_old < first_new) {
        let mut out = old.to_vec();
        for line in new {
            out.extend_from_slice(line);
            out.push(b'\n');
        }
        return out;
    }
    let mut lines: Vec<&[u8]> = segment::lines(old).collect();
    lines.extend(new);
    segment::normalize(&mut lines);
    segment::to_bytes(&lines)
}

/// Build the tree of a set of canonical lines.
pub fn build<'l>(
    repo: &gix::Repository,
    lines: impl Iterator<Item = &'l [u8]>,
) -> Result<ObjectId, StoreError> {
    let mut shards: BTreeMap<u8, BTreeMap<u8, Vec<&[u8]>>> = BTreeMap::new();
    for line in lines {
        let Some(id) = segment::line_id(line) else {
            continue;
        };
        let (a, b) = segment::shard(id);
        shards
            .entry(a)
            .or_default()
            .entry(b)
            .or_default()
            .push(line);
    }
    let mut top = Vec::new();
    for (a, leaves) in shards {
        let mut level = Vec::new();
        for (b, mut lines) in leaves {
            segment::normalize(&mut lines);
            let blob = write_blob(repo, &segment::to_bytes(&lines))?;
            upsert(&mut level, b, EntryKind::Blob, blob);
        }
        upsert(&mut top, a, EntryKind::Tree, write_entries(repo, level)?);
    }
    write_entries(repo, top)
}

/// The union of two logs' trees. Equal subtrees are reused; only differing
/// segments are read and merged line by line, byte for byte. `left` is the
/// log that was held first: where `right` holds an id `left` already holds
/// with other bytes, `left`'s copy stands and `right`'s is not taken (an
/// operation never changes once written, and a copy arriving later cannot
/// undo a decision), unless either carries a signature: then both are
/// kept, and the fold prefers the copy whose signature verifies
/// ([`segment::carries_signature`]).
pub fn union(
    repo: &gix::Repository,
    left: ObjectId,
    right: ObjectId,
) -> Result<ObjectId, StoreError> {
    if left == right {
        return Ok(left);
    }
    union_level(repo, left, right, 0)
}

fn union_level(
    repo: &gix::Repository,
    left: ObjectId,
    right: ObjectId,
    depth: usize,
) -> Result<ObjectId, StoreError> {
    let mut by_name: BTreeMap<Vec<u8>, (Option<Entry>, Option<Entry>)> = BTreeMap::new();
    for e in read_entries(repo, left)? {
        let name = e.filename.to_vec();
        by_name.entry(name).or_default().0 = Some(e);
    }
    for e in read_entries(repo, right)? {
        let name = e.filename.to_vec();
        by_name.entry(name).or_default().1 = Some(e);
    }
    let mut out = Vec::new();
    for (_, sides) in by_name {
        let entry = match sides {
            (Some(l), None) => l,
            (None, Some(r)) => r,
            (Some(l), Some(r)) if l.oid == r.oid && l.mode == r.mode => l,
            (Some(l), Some(r)) if depth == 0 && l.mode.is_tree() && r.mode.is_tree() => {
                let oid = union_level(repo, l.oid, r.oid, 1)?;
                Entry { oid, ..l }
            }
            (Some(l), Some(r)) if l.mode.is_blob() && r.mode.is_blob() => {
                let oid = union_segments(repo, l.oid, r.oid)?;
                Entry { oid, ..l }
            }
            // Entries of different kinds under one name (only a hostile
            // tree has them): keep the smaller, so the result does not
            // depend on the order.
            (Some(l), Some(r)) => {
                if (l.mode, l.oid) <= (r.mode, r.oid) {
                    l
                } else {
                    r
                }
            }
            (None, None) => continue,
        };
        out.push(entry);
    }
    write_entries(repo, out)
}

/// The union of two segments, `left` held first. A segment over the limit
/// is never inflated: the other side stands alone (the oversized one is
/// named by every read of the side that holds it).
fn union_segments(
    repo: &gix::Repository,
    left: ObjectId,
    right: ObjectId,
) -> Result<ObjectId, StoreError> {
    let cap = segment::MAX_SEGMENT_BYTES as u64;
    if object_size(repo, right)? > cap {
        return Ok(left);
    }
    if object_size(repo, left)? > cap {
        return Ok(right);
    }
    let (l, r) = (read_blob(repo, left)?, read_blob(repo, right)?);
    let held: std::collections::HashMap<&str, Vec<&[u8]>> =
        segment::lines(&l).fold(Default::default(), |mut m, line| {
            if let Some(id) = segment::line_id(line) {
                m.entry(id).or_insert_with(Vec::new).push(line);
            }
            m
        });
    let mut lines: Vec<&[u8]> = segment::lines(&l).collect();
    lines.extend(segment::lines(&r).filter(|line| {
        match segment::line_id(line).and_then(|id| held.get(id)) {
            // A copy that differs in a signature is kept beside the held
            // one: the fold prefers one that verifies.
            Some(copies) => copies.contains(line) || segment::kept_beside(line, copies),
            None => true,
        }
    }));
    segment::normalize(&mut lines);
    let bytes = segment::to_bytes(&lines);
    if bytes.len() as u64 > cap {
        // Never write a segment no read would inflate: the held side stands
        // and the other's new lines wait (a read of that side names them).
        return Ok(left);
    }
    write_blob(repo, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_segment_is_read_as_its_blob_and_only_within_the_limit() {
        let dir = tempfile::tempdir().unwrap();
        let repo = gix::init_bare(dir.path()).unwrap();
        let bytes = b"{\"id\":\"x\"}\n".to_vec();
        let id = write_blob(&repo, &bytes).unwrap();
        keep_segment(&repo, id, &bytes);
        assert_eq!(read_capped_segment(&repo, id).unwrap(), Some(bytes.clone()));
        // Kept under this repository only: another's read goes to its objects.
        let other = tempfile::tempdir().unwrap();
        let other = gix::init_bare(other.path()).unwrap();
        assert!(read_capped_segment(&other, id).is_err());
        // Bytes over the segment limit are never kept: the capped read
        // still refuses them.
        let big = vec![b'x'; segment::MAX_SEGMENT_BYTES + 1];
        let big_id = write_blob(&repo, &big).unwrap();
        keep_segment(&repo, big_id, &big);
        assert_eq!(read_capped_segment(&repo, big_id).unwrap(), None);
    }
}
