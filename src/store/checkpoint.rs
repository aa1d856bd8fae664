//! Where the fold's checkpoint is kept (`.git/kapi/fold.checkpoint` and
//! `.git/kapi/fold.base`) and what the log gained since it was written.
//! Both files are derived: safe to delete, never a source of truth. Each is
//! keyed by the tips of both refs it was folded from and by the code that
//! folded it (a fingerprint the caller gives), carries a CRC-32 of its
//! bytes, and is not read unless it matches in every respect (the log is
//! folded again).
//!
//! Two files ([`Part`]): the reader's view at the tips (small), and the
//! whole ledger (the base) at the same or older tips. Each is a magic
//! line, the ledger's bytes, the [`Header`] (JSON), and the header's
//! length (8 bytes, little-endian).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use gix::ObjectId;
use serde::{Deserialize, Serialize};

use super::{LogRef, Store, StoreError, segment, tree};
use crate::ops::record::Record;

/// The two files of a checkpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// `fold.checkpoint`: the reader's view at the logs' tips (small: what
    /// states a subject or imports a file).
    View,
    /// `fold.base`: the whole folded ledger, at tips that may be older
    /// than the view's (new operations are applied to it on a read, and it
    /// is rewritten only when many have gathered).
    Base,
    /// `fold.decisions`: the reader's view with every decision beside it
    /// (all but the usage signals and check runs), at the logs' tips:
    /// what a listing of one kind reads. Written by such a listing.
    Decisions,
    /// `fold.history`: every subject's history of status changes
    /// (`context log --history`), at the logs' tips, read beside one of
    /// the others and only when it agrees with it.
    History,
}

impl Part {
    pub(super) const fn name(self) -> &'static str {
        match self {
            Part::View => "fold.checkpoint",
            Part::Base => "fold.base",
            Part::Decisions => "fold.decisions",
            Part::History => "fold.history",
        }
    }
}

const MAGIC: &[u8] = b"kapi fold checkpoint\n";

/// The tips of `refs/kapi/ops` and `refs/kapi/local` (in that order).
pub type Tips = [Option<ObjectId>; 2];

/// What a checkpoint file was folded from.
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
    /// Length and CRC-32 of the ledger's bytes after the header.
    pub bytes: (usize, u32),
}

/// Both tips as hex, as the derived files under `.git/kapi` record them.
pub(super) fn tips_hex(tips: Tips) -> [Option<String>; 2] {
    tips.map(|t| t.map(|t| t.to_hex().to_string()))
}

impl Header {
    pub fn new(tips: Tips, unreadable: usize, held: Vec<Record>) -> Self {
        Self {
            fingerprint: String::new(),
            tips: tips_hex(tips),
            unreadable,
            held,
            bytes: (0, 0),
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

/// An open checkpoint file whose header matched: its ledger is read on demand.
pub struct Checkpoint {
    pub header: Header,
    file: File,
}

impl Checkpoint {
    /// The checkpoint file `part`, if there is one written by the code
    /// `fingerprint` names.
    /// Every length the file claims is read against its size before
    /// anything is allocated: the file is derived, and one that does not
    /// check out is folded again, never obeyed.
    pub fn open(kapi_dir: &Path, part: Part, fingerprint: &str) -> Option<Self> {
        let mut file =
            crate::fsutil::open_regular(&kapi_dir.join(part.name()), crate::fsutil::Links::Refuse)
                .ok()?;
        let size = file.metadata().ok()?.len();
        let fixed = MAGIC.len() as u64 + 8;
        if size < fixed {
            return None;
        }
        let mut magic = vec![0; MAGIC.len()];
        file.read_exact(&mut magic).ok()?;
        if magic != MAGIC {
            return None;
        }
        // The header is at the end, followed by its length.
        let mut len = [0; 8];
        file.seek(SeekFrom::End(-8)).ok()?;
        file.read_exact(&mut len).ok()?;
        let len = u64::from_le_bytes(len);
        if len > size - fixed {
            return None;
        }
        file.seek(SeekFrom::Start(size - 8 - len)).ok()?;
        let mut head = vec![0; len as usize];
        file.read_exact(&mut head).ok()?;
        let header: Header = serde_json::from_slice(&head).ok()?;
        // The ledger's bytes fill what is left between the magic and the header.
        if header.bytes.0 as u64 != size - fixed - len {
            return None;
        }
        // The part is named in the fingerprint: one file copied over
        // another (both views of the fold) is not read as it.
        (header.fingerprint == part_print(fingerprint, part)).then_some(Self { header, file })
    }

    /// The ledger's bytes, if intact.
    pub fn bytes(mut self) -> Option<Vec<u8>> {
        let (len, crc) = self.header.bytes;
        self.file.seek(SeekFrom::Start(MAGIC.len() as u64)).ok()?;
        let mut bytes = Vec::new();
        (&mut self.file)
            .take(len as u64)
            .read_to_end(&mut bytes)
            .ok()?;
        (bytes.len() == len && crc32fast::hash(&bytes) == crc).then_some(bytes)
    }
}

/// The fingerprint a file of `part` is written with.
fn part_print(fingerprint: &str, part: Part) -> String {
    format!("{fingerprint} part {}", part.name())
}

/// A writer that counts and checksums what passes through it.
struct Summing<W> {
    inner: W,
    len: usize,
    crc: crc32fast::Hasher,
}

impl<W: Write> Write for Summing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.len += n;
        self.crc.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Replace a checkpoint file: `ledger` writes the ledger's bytes, streamed
/// to a temporary file (a large log's ledger is never held whole in memory
/// as bytes) and followed by the header; the file is then renamed over the
/// old one (`atomic::replace_derived`). A reader sees the old one or the
/// new one; a torn file fails its checksum and is folded again.
pub fn write(
    kapi_dir: &Path,
    part: Part,
    fingerprint: &str,
    mut header: Header,
    ledger: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    std::fs::create_dir_all(kapi_dir)?;
    crate::atomic::replace_derived(&kapi_dir.join(part.name()), |out| {
        out.write_all(MAGIC)?;
        let mut summing = Summing {
            inner: out,
            len: 0,
            crc: crc32fast::Hasher::new(),
        };
        ledger(&mut summing)?;
        let Summing { inner, len, crc } = summing;
        header.fingerprint = part_print(fingerprint, part);
        header.bytes = (len, crc.finalize());
        let head = serde_json::to_vec(&header)?;
        inner.write_all(&head)?;
        inner.write_all(&(head.len() as u64).to_le_bytes())
    })
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
        // Content read back; a record whose content cannot be is named by
        // a full read.
        let mut problems = Vec::new();
        self.read_content(&mut added, &mut problems);
        if !problems.is_empty() {
            return Ok(None);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Each file names its part: one copied over another (the view with
    /// every decision over the view, say: both views of the fold, both
    /// with a good checksum) is not read as it, and the log is folded
    /// again; a damaged or cut one is not read either.
    #[test]
    fn a_file_of_one_part_is_not_read_as_another() {
        let dir = tempfile::tempdir().unwrap();
        let print = "kapi test fold";
        let header = || Header::new([None, None], 0, Vec::new());
        write(dir.path(), Part::Decisions, print, header(), |out| {
            out.write_all(b"the ledger's bytes")
        })
        .unwrap();
        let found = Checkpoint::open(dir.path(), Part::Decisions, print).unwrap();
        assert_eq!(found.bytes().unwrap(), b"the ledger's bytes");
        let decisions = dir.path().join(Part::Decisions.name());
        for other in [Part::View, Part::Base] {
            std::fs::copy(&decisions, dir.path().join(other.name())).unwrap();
            assert!(Checkpoint::open(dir.path(), other, print).is_none());
        }
        assert!(Checkpoint::open(dir.path(), Part::Decisions, "other code").is_none());
        let mut bytes = std::fs::read(&decisions).unwrap();
        bytes[MAGIC.len() + 2] ^= 0x20;
        std::fs::write(&decisions, &bytes).unwrap();
        let damaged = Checkpoint::open(dir.path(), Part::Decisions, print).unwrap();
        assert!(damaged.bytes().is_none(), "the checksum refuses it");
        std::fs::write(&decisions, &bytes[..bytes.len() - 3]).unwrap();
        assert!(Checkpoint::open(dir.path(), Part::Decisions, print).is_none());
    }
}
