//! Building, reading and uniting the log's trees. The tree of a log is a
//! pure function of the set of operation lines it holds: a union of two
//! logs gives the same tree whichever side it starts from.

use std::collections::BTreeMap;

use gix::ObjectId;
use gix::objs::tree::{Entry, EntryKind};

use super::segment::{self, EntryError, Problem};
use super::{StoreError, git};
use crate::ops::id::ALPHABET;

type Entries = Vec<Entry>;

fn read_entries(repo: &gix::Repository, id: ObjectId) -> Result<Entries, StoreError> {
    let tree = repo
        .find_tree(id)
        .map_err(git("reading a tree of the log"))?;
    let decoded = tree.decode().map_err(git("decoding a tree of the log"))?;
    Ok(decoded
        .entries
        .iter()
        .map(|e| Entry {
            mode: e.mode,
            filename: e.filename.to_owned(),
            oid: e.oid.to_owned(),
        })
        .collect())
}

fn write_entries(repo: &gix::Repository, mut entries: Entries) -> Result<ObjectId, StoreError> {
    entries.sort();
    let tree = gix::objs::Tree { entries };
    Ok(repo
        .write_object(&tree)
        .map_err(git("writing a tree of the log"))?
        .detach())
}

fn write_blob(repo: &gix::Repository, bytes: &[u8]) -> Result<ObjectId, StoreError> {
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

fn single(entry: &Entry) -> Option<u8> {
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
    for top in read_entries(repo, root)? {
        let name = String::from_utf8_lossy(&top.filename).into_owned();
        let Some(a) = single(&top).filter(|_| top.mode.is_tree()) else {
            out.push(problem(format!("{origin}:{name}"), name));
            continue;
        };
        for leaf in read_entries(repo, top.oid)? {
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

/// The bytes of one segment, if the log has it.
pub fn read_segment(
    repo: &gix::Repository,
    root: ObjectId,
    (a, b): (u8, u8),
) -> Result<Option<Vec<u8>>, StoreError> {
    let Some(top) = read_entries(repo, root)?
        .into_iter()
        .find(|e| e.filename.as_slice() == [a])
    else {
        return Ok(None);
    };
    let Some(leaf) = read_entries(repo, top.oid)?
        .into_iter()
        .find(|e| e.filename.as_slice() == [b])
    else {
        return Ok(None);
    };
    read_blob(repo, leaf.oid).map(Some)
}

/// Add one line to its segment, rewriting only the segment and the two
/// trees above it.
pub fn insert_line(
    repo: &gix::Repository,
    root: Option<ObjectId>,
    (a, b): (u8, u8),
    line: &str,
) -> Result<ObjectId, StoreError> {
    let mut top = match root {
        Some(root) => read_entries(repo, root)?,
        None => Vec::new(),
    };
    let mut level = match top
        .iter()
        .find(|e| e.filename.as_slice() == [a] && e.mode.is_tree())
    {
        Some(e) => read_entries(repo, e.oid)?,
        None => Vec::new(),
    };
    let bytes = match level
        .iter()
        .find(|e| e.filename.as_slice() == [b] && e.mode.is_blob())
    {
        Some(e) => read_blob(repo, e.oid)?,
        None => Vec::new(),
    };
    let new_id = segment::line_id(line);
    let last_id = bytes
        .strip_suffix(b"\n")
        .and_then(|body| body.rsplit(|&c| c == b'\n').next())
        .and_then(|l| std::str::from_utf8(l).ok())
        .and_then(segment::line_id);
    let segment_bytes =
        if bytes.is_empty() || (bytes.ends_with(b"\n") && last_id < new_id && last_id.is_some()) {
            // The common case: a new id sorts after everything in its shard.
            let mut out = bytes;
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
            out
        } else {
            let mut lines = segment::lines(&bytes);
            lines.push(line.to_owned());
            segment::normalize(&mut lines);
            segment::to_bytes(&lines)
        };
    let blob = write_blob(repo, &segment_bytes)?;
    upsert(&mut level, b, EntryKind::Blob, blob);
    let level_id = write_entries(repo, level)?;
    upsert(&mut top, a, EntryKind::Tree, level_id);
    write_entries(repo, top)
}

/// Build the tree of a set of canonical lines.
pub fn build(
    repo: &gix::Repository,
    lines: impl Iterator<Item = String>,
) -> Result<ObjectId, StoreError> {
    let mut shards: BTreeMap<u8, BTreeMap<u8, Vec<String>>> = BTreeMap::new();
    for line in lines {
        let Some(id) = segment::line_id(&line) else {
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
/// segments are read and merged line by line.
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
                let mut lines = segment::lines(&read_blob(repo, l.oid)?);
                lines.extend(segment::lines(&read_blob(repo, r.oid)?));
                segment::normalize(&mut lines);
                let oid = write_blob(repo, &segment::to_bytes(&lines))?;
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
