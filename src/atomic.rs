//! Replacing a file whole or not at all: the bytes go to a new temporary
//! file beside it (`.<name>.kapi-tmp.<pid>`, created new, so a link planted
//! at that name is never followed), which is renamed over the file. Readers
//! see the old file or the new one, never half of either; on any failure
//! the temporary file is removed and the file is left as it was.
//!
//! Two durabilities ([`Durability`]): what people and other programs rely
//! on (the compiled artifacts, the rules files, `kapi store export`, the
//! workspace registry) is synced to disk before the rename; kapi's derived
//! caches under `.git/kapi/` (the segment cache, the fold checkpoint, the
//! newest-id and project caches) are not. A cache a crash loses or tears
//! costs a recomputation, never an answer: each one checks itself when read
//! (a checksum, or a check against the log) and is computed again when it
//! does not check out; and a sync on every append would cost more than the
//! cache saves.

use std::fs::{File, OpenOptions, Permissions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Whether a replacement is synced to disk before it is renamed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// Synced: a file a person or another program relies on.
    Synced,
    /// Not synced: a derived cache that checks itself when read.
    Derived,
}

/// Replace `path` with `bytes`, synced, giving the new file `permissions`
/// if any.
pub fn replace(path: &Path, bytes: &[u8], permissions: Option<Permissions>) -> std::io::Result<()> {
    replace_file(path, Durability::Synced, permissions, |out| {
        out.write_all(bytes)
    })
}

/// Replace the derived cache at `path` with what `write` writes, streamed
/// through a buffer (a large cache is never held whole in memory), not
/// synced ([`Durability::Derived`]).
pub fn replace_derived(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    replace_file(path, Durability::Derived, None, write)
}

/// The temporary file a replacement of `path` writes first.
fn temporary(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.kapi-tmp.{}", std::process::id()))
}

fn replace_file(
    path: &Path,
    durability: Durability,
    permissions: Option<Permissions>,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let tmp = temporary(path);
    // A temporary file this process left after a failure stands in the way
    // of `create_new`; removing it removes a link, never its target.
    let _ = std::fs::remove_file(&tmp);
    let result = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|f| {
            let mut out = BufWriter::with_capacity(1 << 16, f);
            write(&mut out)?;
            let f: File = out.into_inner().map_err(|e| e.into_error())?;
            if let Some(p) = permissions {
                f.set_permissions(p)?;
            }
            match durability {
                Durability::Synced => f.sync_all(),
                Durability::Derived => Ok(()),
            }
        })
        .and_then(|()| std::fs::rename(&tmp, path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_is_reported_and_leaves_the_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("AGENTS.md");
        std::fs::write(&file, "old and whole\n").unwrap();
        // Something that is not a file stands at the temporary name: the
        // write fails, says so, and the file keeps its bytes.
        let tmp = dir
            .path()
            .join(format!(".AGENTS.md.kapi-tmp.{}", std::process::id()));
        std::fs::create_dir(&tmp).unwrap();
        assert!(replace(&file, b"new\n", None).is_err());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "old and whole\n");
        std::fs::remove_dir(&tmp).unwrap();
        // A folder that does not exist: an error, nothing created.
        let missing = dir.path().join("no/such/file");
        assert!(replace(&missing, b"x", None).is_err());
        assert!(!dir.path().join("no").exists());
        replace(&file, b"new\n", None).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new\n");
    }

    #[test]
    fn a_derived_cache_is_streamed_in_whole_or_not_at_all() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cache");
        std::fs::write(&file, "old\n").unwrap();
        // A writer that fails half way leaves the old file and no
        // temporary one.
        let failed = replace_derived(&file, |out| {
            out.write_all(b"half")?;
            Err(std::io::Error::other("stopped"))
        });
        assert!(failed.is_err());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "old\n");
        assert!(!temporary(&file).exists());
        // Larger than the buffer: every byte arrives.
        let big = vec![b'x'; 3 << 16];
        replace_derived(&file, |out| out.write_all(&big)).unwrap();
        assert_eq!(std::fs::read(&file).unwrap(), big);
        // A link planted at the temporary name is removed, never followed.
        let target = dir.path().join("target");
        std::fs::write(&target, "theirs").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&target, temporary(&file)).unwrap();
        replace_derived(&file, |out| out.write_all(b"new\n")).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "theirs");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new\n");
    }
}
