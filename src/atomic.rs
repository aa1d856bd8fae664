//! Replacing a file whole or not at all: the bytes go to a new temporary
//! file beside it (`.<name>.kapi-tmp.<pid>`, created new, so a link planted
//! at that name is never followed), which is synced and renamed over the
//! file. Readers see the old file or the new one, never half of either; on
//! any failure the temporary file is removed and the file is left as it was.
//! The compiled artifacts, the rules files and `kapi store export` all write
//! through here.

use std::fs::{OpenOptions, Permissions};
use std::io::Write;
use std::path::Path;

/// Replace `path` with `bytes`, giving the new file `permissions` if any.
pub fn replace(path: &Path, bytes: &[u8], permissions: Option<Permissions>) -> std::io::Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(format!(".{name}.kapi-tmp.{}", std::process::id()));
    // A temporary file this process left after a failure stands in the way
    // of `create_new`; removing it removes a link, never its target.
    let _ = std::fs::remove_file(&tmp);
    let result = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&tmp)
        .and_then(|mut f| {
            f.write_all(bytes)?;
            if let Some(p) = permissions {
                f.set_permissions(p)?;
            }
            f.sync_all()
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
}
