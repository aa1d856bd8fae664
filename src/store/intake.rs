//! Taking in a log fetched from elsewhere: the union of ours and theirs,
//! built segment by segment where the two differ, carrying only what a
//! reader can use. A remote can push anything, so what it holds is sorted
//! at the door, once, rather than on every later read of every machine:
//!
//! - a line that is a valid operation of its shard (or one of a newer
//!   format version whose id belongs there, for a newer kapi) is carried;
//! - junk, misplaced and invalid lines, entries that are not shards and
//!   segments over the size limit are left behind and named (the first
//!   [`segment::MAX_NAMED`] of a segment, the rest counted);
//! - where theirs holds an id ours holds with other bytes, ours stands;
//! - a line naming a content blob (docs/operations.md, `subject.blob`) is
//!   carried only when the fetch brought that blob (a log's commits keep
//!   its content blobs reachable, through content commits: the merge
//!   commit that takes theirs as a parent keeps them reachable here).
//!
//! Both sides of a segment that differs are sorted the same way, so the
//! union is the same whichever machine computes it (sync converges), and
//! memory is bounded by what is kept: one segment's bytes and its carried
//! lines at a time, never a list of what is skipped.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use gix::ObjectId;
use gix::objs::tree::{Entry, EntryKind};

use super::segment::{self, EntryError, Problem, Problems};
use super::tree::{self, Entries};
use super::{StoreError, content, newest, pack};
use crate::ops::OpId;

/// What taking in a fetched tree found.
#[derive(Debug, Default)]
pub(super) struct Intake {
    /// The union of ours and what theirs holds that can be carried.
    pub tree: Option<ObjectId>,
    /// Operations theirs held that ours did not (now in the union).
    pub added: usize,
    /// What theirs held that is not carried, by name (capped per segment).
    pub refused: Vec<Problem>,
    /// Of the added operations, those dated more than ten minutes past the
    /// clock: carried, held back by every fold until their time.
    pub ahead: Vec<OpId>,
    /// The projects the added operations name.
    pub projects: BTreeSet<String>,
    /// Whether an added operation sorts before one ours held in its
    /// segment (diverged logs): no fold of ours can be advanced by it.
    pub older: bool,
    /// Bytes of segments written since the objects held in memory (if
    /// the repository keeps them there) were last written out.
    pending: usize,
}

/// The union of `ours` (the log held first; `None` for none) and the
/// fetched tree `theirs`, as of `now_ms` (for naming ids dated ahead).
///
/// `base` is the tree of the two logs' merge base, a commit of our own
/// history. Where theirs holds the very segment (or shard) the base held,
/// it brings nothing ours lacks: our log only grew since the base (every
/// write keeps what a segment holds that a reader can use), so ours
/// stands and theirs is not read again. Only a blob or tree id equal to
/// one of our own history's skips reading: a remote cannot forge it.
pub(super) fn take_in(
    repo: &gix::Repository,
    ours: Option<ObjectId>,
    theirs: ObjectId,
    base: Option<ObjectId>,
    now_ms: u64,
) -> Result<Intake, StoreError> {
    let mut intake = Intake::default();
    if ours == Some(theirs) {
        intake.tree = ours;
        return Ok(intake);
    }
    let our_top = match ours {
        Some(o) => tree::read_entries(repo, o)?,
        None => Vec::new(),
    };
    let base_top = match base {
        Some(b) if ours.is_some() => tree::read_entries(repo, b)?,
        _ => Vec::new(),
    };
    let mut top = Vec::new();
    for (name, (l, r)) in sides(our_top, tree::read_all_entries(repo, theirs)?) {
        let label = String::from_utf8_lossy(&name).into_owned();
        let Some(r) = r else {
            top.extend(l);
            continue;
        };
        let Some(a) = tree::single(&r).filter(|_| r.mode.is_tree()) else {
            intake.refused.push(unexpected(&label, label.clone()));
            top.extend(l);
            continue;
        };
        if l.as_ref().is_some_and(|l| l.oid == r.oid) {
            top.extend(l);
            continue;
        }
        let our_tree = l.as_ref().filter(|l| l.mode.is_tree());
        let base_level = base_top
            .iter()
            .find(|b| b.filename == r.filename && b.mode.is_tree());
        if our_tree.is_some() && base_level.is_some_and(|b| b.oid == r.oid) {
            top.extend(l);
            continue;
        }
        let our_level = match our_tree {
            Some(l) => tree::read_entries(repo, l.oid)?,
            None => Vec::new(),
        };
        let base_level = match base_level {
            Some(b) if our_tree.is_some() => tree::read_entries(repo, b.oid)?,
            _ => Vec::new(),
        };
        let mut level = Vec::new();
        for (leaf, (ll, rl)) in sides(our_level, tree::read_all_entries(repo, r.oid)?) {
            let leaf_label = format!("{label}/{}", String::from_utf8_lossy(&leaf));
            let Some(rl) = rl else {
                level.extend(ll);
                continue;
            };
            let Some(b) = tree::single(&rl).filter(|_| rl.mode.is_blob()) else {
                intake
                    .refused
                    .push(unexpected(&leaf_label, leaf_label.clone()));
                level.extend(ll);
                continue;
            };
            if ll.as_ref().is_some_and(|ll| ll.oid == rl.oid) {
                level.extend(ll);
                continue;
            }
            // Theirs holds the base's segment: ours holds all of it.
            if ll.as_ref().is_some_and(|ll| ll.mode.is_blob())
                && base_level
                    .iter()
                    .any(|b| b.filename == rl.filename && b.oid == rl.oid && b.mode.is_blob())
            {
                level.extend(ll);
                continue;
            }
            let held = ll.as_ref().map(|ll| ll.oid);
            match union_segment(repo, held, rl.oid, (a, b), &leaf_label, now_ms, &mut intake)? {
                Leaf::Ours => level.extend(ll),
                Leaf::New(oid) => {
                    level.push(Entry {
                        mode: EntryKind::Blob.into(),
                        filename: rl.filename,
                        oid,
                    });
                    // A merge that rewrites many large segments writes
                    // them out a pack at a time.
                    if intake.pending > pack::PENDING_BYTES {
                        pack::flush(repo)?;
                        intake.pending = 0;
                    }
                }
                Leaf::Nothing => {}
            }
        }
        if !level.is_empty() {
            top.push(Entry {
                mode: EntryKind::Tree.into(),
                filename: r.filename,
                oid: tree::write_entries(repo, level)?,
            });
        }
    }
    intake.tree = Some(tree::write_entries(repo, top)?);
    Ok(intake)
}

/// Entries of two trees side by side, by name.
fn sides(ours: Entries, theirs: Entries) -> BTreeMap<Vec<u8>, (Option<Entry>, Option<Entry>)> {
    let mut by_name: BTreeMap<Vec<u8>, (Option<Entry>, Option<Entry>)> = BTreeMap::new();
    for e in ours {
        let name = e.filename.to_vec();
        by_name.entry(name).or_default().0 = Some(e);
    }
    for e in theirs {
        let name = e.filename.to_vec();
        by_name.entry(name).or_default().1 = Some(e);
    }
    by_name
}

fn unexpected(location: &str, entry: String) -> Problem {
    Problem {
        location: format!("fetched:{location}"),
        error: EntryError::UnexpectedEntry(entry),
    }
}

/// What becomes of one segment in the union.
enum Leaf {
    /// Ours stands as it is.
    Ours,
    /// A new segment.
    New(ObjectId),
    /// Neither side holds anything to carry.
    Nothing,
}

/// The union of our segment `held` (if any) and their segment `blob` of
/// shard `shard`.
fn union_segment(
    repo: &gix::Repository,
    held: Option<ObjectId>,
    blob: ObjectId,
    shard: (u8, u8),
    label: &str,
    now_ms: u64,
    intake: &mut Intake,
) -> Result<Leaf, StoreError> {
    let location = format!("fetched:{label}");
    let size = tree::object_size(repo, blob)?;
    if size > segment::MAX_SEGMENT_BYTES as u64 {
        intake.refused.push(Problem {
            location,
            error: EntryError::OversizedSegment {
                bytes: size as usize,
            },
        });
        return Ok(Leaf::Ours);
    }
    // Ours, sorted the same way (an oversized segment of ours is never
    // read, so theirs replaces it).
    let our_bytes = match held {
        Some(h) => tree::read_capped_segment(repo, h)?.unwrap_or_default(),
        None => Vec::new(),
    };
    let (mut ours, mut dropped) = (HashSet::new(), false);
    // Each held id, and its copies.
    let mut held_ids: HashMap<&str, Vec<&[u8]>> = HashMap::new();
    for line in segment::lines(&our_bytes) {
        match segment::keepable(line, shard) {
            Ok(()) => {
                let id = segment::line_id(line).expect("a keepable line has an id");
                held_ids.entry(id).or_default().push(line);
                ours.insert(line);
            }
            Err(_) => dropped = true,
        }
    }
    let their_bytes = tree::read_blob(repo, blob)?;
    // Within the limit (its size was read first): the fold after the
    // merge reads it again if it becomes the union.
    tree::keep_segment(repo, blob, &their_bytes);
    let mut fresh: Vec<&[u8]> = Vec::new();
    {
        let mut refused = Problems::new(&location, &mut intake.refused);
        for (n, line) in their_bytes.split(|&b| b == b'\n').enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            // A line ours holds is skipped; junk (which `keepable` refuses
            // at a glance) is not hashed to find that out.
            if line.first() == Some(&b'{') && ours.contains(line) {
                continue;
            }
            match segment::keepable(line, shard) {
                Err(e) => refused.line(n + 1, || e),
                Ok(()) => {
                    let id = segment::line_id(line).expect("a keepable line has an id");
                    // Copies of one id that differ in a signature are
                    // both kept: the fold prefers one that verifies.
                    if held_ids
                        .get(id)
                        .is_some_and(|held| !segment::kept_beside(line, held))
                    {
                        refused.line(n + 1, || EntryError::Conflict { id: id.to_owned() });
                    } else if let Some(e) = content::problem_of_line(repo, line) {
                        // It names a content blob the fetch did not bring
                        // (the fetched log's history carries kapi's own).
                        refused.line(n + 1, || e);
                    } else {
                        fresh.push(line);
                    }
                }
            }
        }
    }
    segment::normalize(&mut fresh);
    if fresh.is_empty() && !dropped && held.is_some() {
        return Ok(Leaf::Ours);
    }
    let mut lines: Vec<&[u8]> = ours.into_iter().collect();
    lines.extend(&fresh);
    segment::normalize(&mut lines);
    let bytes = segment::to_bytes(&lines);
    if bytes.len() > segment::MAX_SEGMENT_BYTES {
        // Never write a segment no read would inflate: ours stands and
        // their new lines wait (named by a read of their side).
        return Ok(Leaf::Ours);
    }
    intake.added += fresh.len();
    if let Some(first) = fresh.first().and_then(|l| segment::line_id(l))
        && held_ids.keys().any(|held| *held > first)
    {
        intake.older = true;
    }
    for line in &fresh {
        if let Ok(record) = segment::parse_line(line, Some(shard)) {
            if newest::is_ahead(&record.id, now_ms) {
                intake.ahead.push(record.op_id());
            }
            intake.projects.insert(record.project.to_string());
        }
    }
    if lines.is_empty() {
        return Ok(Leaf::Nothing);
    }
    let written = tree::write_blob(repo, &bytes)?;
    intake.pending += bytes.len();
    tree::keep_segment(repo, written, &bytes);
    Ok(Leaf::New(written))
}
