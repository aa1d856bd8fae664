//! Where the fold's checkpoint is kept (`.git/kapi/fold.checkpoint`) and
//! what the log gained since it was written. The file is derived: safe to
//! delete, never a source of truth. It is keyed by the tips of both refs it
//! was folded from and by the code that folded it (a fingerprint the
//! caller gives), every section carries a CRC-32, and a file that does not
//! match in every respect is not read (the log is folded again).
//!
//! Layout: a magic line, one line of JSON (the [`Header`]), then the
//! reader's view and the whole ledger, each as many bytes as the header
//! says. A reader that wants only the view reads no further.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use gix::ObjectId;
use serde::{Deserialize, Serialize};

use super::{LogRef, Store, StoreError, segment, tree};
use crate::ops::record::Record;

const NAME: &str = "fold.checkpoint";
const MAGIC: &[u8] = b"kapi fold checkpoint\n";

/// The tips of `refs/kapi/ops` and `refs/kapi/local` (in that order).
pub type Tips = [Option<ObjectId>; 2];

/// What a checkpoint was folded from, and where its sections are.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    /// The code that folded it (kapi's version, formats, sources).
    pub fingerprint: String,
    /// The tips it was folded from, as hex.
    pub tips: [Option<String>; 2],
    /// Stored lines that could not be read (for `unreadable` counts).
    pub unreadable: usize,
    /// Operations dated ahead of the clock when it was written: held back,
    /// not folded.
    pub held: Vec<Record>,
    /// Length and CRC-32 of the reader's view, then of the whole ledger.
    pub view: (usize, u32),
    pub full: (usize, u32),
}

impl Header {
    pub fn new(tips: Tips, unreadable: usize, held: Vec<Record>) -> Self {
        Self {
            fingerprint: String::new(),
            tips: tips.map(|t| t.map(|t| t.to_hex().to_string())),
            unreadable,
            held,
            view: (0, 0),
            full: (0, 0),
        }
    }

    pub fn tips(&self) -> Option<Tips> {
        let parse = |t: &Option<String>| -> Option<Option<ObjectId>> {
            match t {
                None => Some(None),
                Some(hex) => ObjectId::from_hex(hex.as_bytes()).ok().map(Some),
            }
        };
        Some([parse(&self.tips[0])?, parse(&self.tips[1])?])
    }
}

/// An open checkpoint whose header matched: its sections are read on demand.
pub struct Checkpoint {
    pub header: Header,
    file: BufReader<File>,
    read_view: bool,
}

impl Checkpoint {
    /// The checkpoint, if there is one written by the code `fingerprint` names.
    pub fn open(kapi_dir: &Path, fingerprint: &str) -> Option<Self> {
        let mut file = BufReader::new(File::open(kapi_dir.join(NAME)).ok()?);
        let mut magic = vec![0; MAGIC.len()];
        file.read_exact(&mut magic).ok()?;
        if magic != MAGIC {
            return None;
        }
        let mut line = Vec::new();
        file.read_until(b'\n', &mut line).ok()?;
        let header: Header = serde_json::from_slice(&line).ok()?;
        (header.fingerprint == fingerprint).then_some(Self {
            header,
            file,
            read_view: false,
        })
    }

    /// The reader's view's bytes, if intact.
    pub fn view(&mut self) -> Option<Vec<u8>> {
        if self.read_view {
            return None;
        }
        self.read_view = true;
        section(&mut self.file, self.header.view)
    }

    /// The whole ledger's bytes, if intact (after the view, or instead of it).
    pub fn full(mut self) -> Option<Vec<u8>> {
        if !self.read_view {
            let skip = self.header.view.0 as u64;
            let copied = std::io::copy(&mut (&mut self.file).take(skip), &mut std::io::sink());
            if copied.ok()? != skip {
                return None;
            }
        }
        section(&mut self.file, self.header.full)
    }
}

fn section(file: &mut BufReader<File>, (len, crc): (usize, u32)) -> Option<Vec<u8>> {
    let mut bytes = vec![0; len];
    file.read_exact(&mut bytes).ok()?;
    (crc32fast::hash(&bytes) == crc).then_some(bytes)
}

/// Replace the checkpoint (written whole to a temporary file, then
/// renamed: a reader sees the old one or the new one; a torn file fails
/// its checksums and is folded again).
pub fn write(
    kapi_dir: &Path,
    fingerprint: &str,
    mut header: Header,
    view: &[u8],
    full: &[u8],
) -> std::io::Result<()> {
    header.fingerprint = fingerprint.to_owned();
    header.view = (view.len(), crc32fast::hash(view));
    header.full = (full.len(), crc32fast::hash(full));
    let head = serde_json::to_vec(&header)?;
    let mut out = Vec::with_capacity(MAGIC.len() + head.len() + 1 + view.len() + full.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&head);
    out.push(b'\n');
    out.extend_from_slice(view);
    out.extend_from_slice(full);
    std::fs::create_dir_all(kapi_dir)?;
    let tmp = kapi_dir.join(format!("{NAME}.tmp.{}", std::process::id()));
    let result =
        std::fs::write(&tmp, &out).and_then(|()| std::fs::rename(&tmp, kapi_dir.join(NAME)));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

impl Store {
    /// The tips of both logs now.
    pub fn tips(&self) -> Result<Tips, StoreError> {
        Ok([self.tip(LogRef::Shared)?, self.tip(LogRef::Local)?])
    }

    /// Commit what the journal holds when no writer is committing it (best
    /// effort), as every full read does first.
    pub fn flush_journal_if_free(&self) {
        let _ = self.flush_if_free();
    }

    /// The complete lines the journal holds, parsed.
    pub fn journal_records(&self) -> Result<Vec<Record>, StoreError> {
        self.pending()
    }

    /// The operations the logs hold now that they did not hold at `since`,
    /// when the logs only gained lines since: `None` when a line was taken
    /// away or changed, a segment is oversized or unreadable, or an entry
    /// is not a shard (a full read decides then). Only the segments whose
    /// blobs changed are read.
    pub fn added_since(&self, since: Tips) -> Result<Option<Vec<Record>>, StoreError> {
        let now = self.tips()?;
        let mut added = Vec::new();
        for (slot, which) in [LogRef::Shared, LogRef::Local].into_iter().enumerate() {
            if since[slot] == now[slot] {
                continue;
            }
            let Some(new) = now[slot] else {
                return Ok(None);
            };
            let old = match since[slot] {
                // The old commit may be gone (a ref someone rewrote and
                // pruned): then a full read decides.
                Some(old) => match self.tree_of(old) {
                    Ok(tree) => Some(tree),
                    Err(_) => return Ok(None),
                },
                None => None,
            };
            let new = self.tree_of(new)?;
            if !self.added_in_tree(which, old, new, &mut added)? {
                return Ok(None);
            }
        }
        Ok(Some(added))
    }

    /// Add to `out` the lines `new` holds beyond `old`; `false` when `new`
    /// is not `old` plus lines.
    fn added_in_tree(
        &self,
        which: LogRef,
        old: Option<ObjectId>,
        new: ObjectId,
        out: &mut Vec<Record>,
    ) -> Result<bool, StoreError> {
        let repo = self.repo.gix();
        let old_top = match old {
            Some(t) => tree::read_all_entries(repo, t)?,
            None => Vec::new(),
        };
        let new_top = tree::read_all_entries(repo, new)?;
        for o in &old_top {
            if !new_top.iter().any(|n| n.filename == o.filename) {
                return Ok(false);
            }
        }
        for top in &new_top {
            let before = old_top.iter().find(|o| o.filename == top.filename);
            if before.is_some_and(|b| b.oid == top.oid && b.mode == top.mode) {
                continue;
            }
            let Some(a) = tree::single(top).filter(|_| top.mode.is_tree()) else {
                return Ok(false);
            };
            let old_leaves = match before {
                Some(b) if b.mode.is_tree() => tree::read_all_entries(repo, b.oid)?,
                Some(_) => return Ok(false),
                None => Vec::new(),
            };
            let new_leaves = tree::read_all_entries(repo, top.oid)?;
            for o in &old_leaves {
                if !new_leaves.iter().any(|n| n.filename == o.filename) {
                    return Ok(false);
                }
            }
            for leaf in &new_leaves {
                let before = old_leaves.iter().find(|o| o.filename == leaf.filename);
                if before.is_some_and(|b| b.oid == leaf.oid && b.mode == leaf.mode) {
                    continue;
                }
                let Some(b) = tree::single(leaf).filter(|_| leaf.mode.is_blob()) else {
                    return Ok(false);
                };
                let old_bytes = match before {
                    Some(o) if o.mode.is_blob() => match tree::read_capped_segment(repo, o.oid)? {
                        Some(bytes) => bytes,
                        None => return Ok(false),
                    },
                    Some(_) => return Ok(false),
                    None => Vec::new(),
                };
                let Some(new_bytes) = tree::read_capped_segment(repo, leaf.oid)? else {
                    return Ok(false);
                };
                let old_lines: std::collections::HashSet<&[u8]> =
                    segment::lines(&old_bytes).collect();
                let mut kept = std::collections::HashSet::new();
                let mut fresh: Vec<&[u8]> = Vec::new();
                for line in segment::lines(&new_bytes) {
                    if old_lines.contains(line) {
                        kept.insert(line);
                    } else {
                        fresh.push(line);
                    }
                }
                // Every old line is still there.
                if kept.len() < old_lines.len() {
                    return Ok(false);
                }
                let location = format!("{}:{}/{}", which.name(), char::from(a), char::from(b));
                let mut problems = Vec::new();
                segment::parse(
                    &segment::to_bytes(&fresh),
                    Some((a, b)),
                    &location,
                    out,
                    &mut problems,
                );
                if !problems.is_empty() {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }
}
