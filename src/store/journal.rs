//! The journal: how many writers append at once without queueing behind
//! each other's git writes (group commit).
//!
//! A writer mints its ids and appends its canonical lines to
//! `.git/kapi/journal` under a short lock (no git objects written, no file
//! created), then takes the commit lock. Whoever holds the commit lock
//! moves every line the journal holds onto the refs in one commit per ref,
//! then **compacts** the journal: it writes what was appended meanwhile to
//! `journal.new` (synced first when the journal holds lines a writer
//! reported as synced) and renames that over `journal`, or, when nothing
//! was appended meanwhile (one writer at a time), truncates it to nothing
//! in place. A crash at any point leaves either the old journal (whose
//! lines commit again, changing nothing: the union keeps one copy) or the
//! new one, and never loses a line another writer appended: the journal is
//! truncated in place only when it holds nothing else. A writer whose
//! lines left the journal confirms them on the ref before it reports them
//! recorded; a line that left the journal without
//! reaching the ref (set aside as torn or as unable to land) is reported
//! as not recorded, never acknowledged.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use super::StoreError;

pub fn path(kapi_dir: &Path) -> PathBuf {
    kapi_dir.join("journal")
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Lock {
        path: path.to_path_buf(),
        source,
    }
}

fn open(kapi_dir: &Path) -> Result<File, StoreError> {
    let p = path(kapi_dir);
    std::fs::create_dir_all(kapi_dir).map_err(io(&p))?;
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .append(true)
        .open(&p)
        .map_err(io(&p))
}

/// Everything the journal holds (call under the journal lock).
pub fn read(kapi_dir: &Path) -> Result<Vec<u8>, StoreError> {
    let p = path(kapi_dir);
    match File::open(&p) {
        Ok(mut f) => {
            let mut bytes = Vec::new();
            f.read_to_end(&mut bytes).map_err(io(&p))?;
            Ok(bytes)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(io(&p)(e)),
    }
}

/// What the journal's bytes hold, read as the committer reads them.
#[derive(Debug, Default)]
pub struct Parsed<'a> {
    /// The records of its whole lines, sorted by id, each id once.
    pub records: Vec<crate::ops::record::Record>,
    /// Lines that are not records (torn by a crash, or written by another tool).
    pub torn: Vec<&'a [u8]>,
}

/// Parse the journal's bytes (untrusted: anything may have written the
/// file): every line that is not a record is set apart as torn.
pub fn parse(journal: &[u8]) -> Parsed<'_> {
    let (mut records, mut problems) = (Vec::new(), Vec::new());
    super::segment::parse_file(journal, "journal", &mut records, &mut problems);
    let torn = if problems.is_empty() {
        Vec::new()
    } else {
        super::segment::lines(journal)
            .filter(|l| crate::ops::record::Record::from_untrusted(l).is_err())
            .collect()
    };
    records.sort_by(|a, b| a.id.cmp(&b.id));
    records.dedup_by(|a, b| a.id == b.id);
    Parsed { records, torn }
}

/// Whether the journal bytes still hold any of `records`.
pub fn holds_any(journal: &[u8], records: &[crate::ops::record::Record]) -> bool {
    records.iter().any(|r| {
        let needle = format!("\"id\":\"{}\"", r.id);
        memchr::memmem::find(journal, needle.as_bytes()).is_some()
    })
}

/// Append lines in one write (call under the journal lock). `journal` is
/// what the journal held when the lock was taken: when a crash tore its
/// last line, a newline first ends the torn line, so it cannot swallow
/// ours.
pub fn append(kapi_dir: &Path, journal: &[u8], lines: &[String]) -> Result<(), StoreError> {
    let mut bytes = Vec::new();
    if journal.last().is_some_and(|&b| b != b'\n') {
        bytes.push(b'\n');
    }
    for line in lines {
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
    }
    // One write to a file opened for appending: concurrent appends never
    // interleave within it. Like git's own ref and object writes, no fsync.
    open(kapi_dir)?
        .write_all(&bytes)
        .map_err(io(&path(kapi_dir)))
}

/// Flush the journal to the disk (before a writer reports lines that are
/// only in the journal as kept).
pub fn sync(kapi_dir: &Path) -> Result<(), StoreError> {
    let p = path(kapi_dir);
    // Remember that the journal holds lines acknowledged as synced, so
    // compaction syncs their next home too.
    std::fs::write(kapi_dir.join(SYNCED), b"")
        .and_then(|()| File::open(&p))
        .and_then(|f| f.sync_all())
        .and_then(|()| File::open(kapi_dir))
        .and_then(|d| d.sync_all())
        .map_err(io(&p))
}

/// Present while the journal holds lines a writer reported as synced.
const SYNCED: &str = "journal.synced";

/// Replace the journal with what it holds beyond `committed` (the bytes a
/// commit moved onto the refs), by writing `journal.new` and renaming it
/// over `journal`, or by truncating it when it holds nothing beyond them
/// (call under the journal lock). Lines appended since
/// `committed` was read follow it in the file, because only the holder of
/// the commit lock compacts; if the journal no longer starts with
/// `committed` (edited by hand), every line not byte-for-byte among the
/// committed ones is kept.
pub fn compact(kapi_dir: &Path, committed: &[u8]) -> Result<(), StoreError> {
    let p = path(kapi_dir);
    let all = read(kapi_dir)?;
    let rest: Vec<u8> = match all.strip_prefix(committed) {
        Some(rest) => rest.to_vec(),
        None => {
            let done: std::collections::HashSet<&[u8]> = committed.split(|&b| b == b'\n').collect();
            let mut rest = Vec::new();
            for line in all.split(|&b| b == b'\n') {
                if !line.is_empty() && !done.contains(line) {
                    rest.extend_from_slice(line);
                    rest.push(b'\n');
                }
            }
            rest
        }
    };
    if rest.len() == all.len() {
        return Ok(());
    }
    let synced = kapi_dir.join(SYNCED);
    if rest.is_empty() {
        // Nothing was appended meanwhile: truncate in place, creating no
        // file (on ext4 without a journal, a new inode is found by scanning
        // past every inode freed in the last minutes: a file replaced per
        // commit taxes every file any writer creates). A crash leaves the
        // journal whole (its lines commit again, changing nothing) or
        // empty; it holds nothing else, because appends wait for the
        // journal lock we hold.
        super::fault::point("compact-written");
        OpenOptions::new()
            .write(true)
            .open(&p)
            .and_then(|f| f.set_len(0))
            .map_err(io(&p))?;
        let _ = std::fs::remove_file(&synced);
        super::fault::point("compacted");
        return Ok(());
    }
    let new = kapi_dir.join("journal.new");
    // Lines a writer reported as kept in the journal were synced to disk:
    // their new home is synced before it replaces the old one.
    let durable = synced.exists();
    std::fs::write(&new, &rest)
        .and_then(|()| match durable {
            true => File::open(&new).and_then(|f| f.sync_all()),
            false => Ok(()),
        })
        .map_err(io(&new))?;
    super::fault::point("compact-written");
    std::fs::rename(&new, &p).map_err(io(&p))?;
    if durable {
        File::open(kapi_dir)
            .and_then(|d| d.sync_all())
            .map_err(io(kapi_dir))?;
    }
    super::fault::point("compacted");
    Ok(())
}

/// Keep lines no one can read out of the way (a crash tore them), so they
/// are reported, not lost.
pub fn set_aside(kapi_dir: &Path, lines: &[&[u8]]) -> Result<(), StoreError> {
    if lines.is_empty() {
        return Ok(());
    }
    let p = kapi_dir.join("journal.rejected");
    let mut f = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&p)
        .map_err(io(&p))?;
    for line in lines {
        f.write_all(line)
            .and_then(|()| f.write_all(b"\n"))
            .map_err(io(&p))?;
    }
    Ok(())
}
