//! The journal: how many writers append at once without queueing behind
//! each other's git writes (group commit).
//!
//! A writer mints its ids and appends its canonical lines to
//! `.git/kapi/journal` under a short lock (no git objects written, no file
//! created), then takes the commit lock. Whoever holds the commit lock
//! moves every line the journal holds into `refs/kapi/ops` in one commit
//! and empties the journal; a writer whose lines a previous holder already
//! committed returns at once. Every writer returns only after its lines are
//! on the ref, so the ref stays the log; the journal only shortens the
//! queue. A crash leaves lines in the journal, and the next writer commits
//! them (committing a line twice changes nothing: the union keeps one).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
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

/// Whether the journal bytes still hold any of `records`.
pub fn holds_any(journal: &[u8], records: &[crate::ops::record::Record]) -> bool {
    let text = String::from_utf8_lossy(journal);
    records
        .iter()
        .any(|r| text.contains(&format!("\"id\":\"{}\"", r.id)))
}

/// Append lines in one write (call under the journal lock).
pub fn append(kapi_dir: &Path, lines: &[String]) -> Result<(), StoreError> {
    let mut bytes = Vec::new();
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

/// Drop the first `committed` bytes, keeping what was appended since, in
/// place (call under the journal lock).
pub fn drop_prefix(kapi_dir: &Path, committed: usize) -> Result<(), StoreError> {
    let p = path(kapi_dir);
    let all = read(kapi_dir)?;
    let rest = all.get(committed..).unwrap_or_default();
    let mut f = OpenOptions::new().write(true).open(&p).map_err(io(&p))?;
    f.set_len(0).map_err(io(&p))?;
    f.seek(SeekFrom::Start(0)).map_err(io(&p))?;
    f.write_all(rest).map_err(io(&p))
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
