//! Safe reading of vault files: regular files only, opened without
//! following symlinks and without blocking, each read capped.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::path::Path;

/// No single file read is larger than this.
pub const READ_CAP: usize = 16 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("not a regular file")]
    NotRegular,
    #[error("larger than the {READ_CAP}-byte read cap")]
    TooLarge,
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Open `path` for reading if it is a regular file. Symlinks are refused
/// (`O_NOFOLLOW`) and FIFOs or devices never block the open (`O_NONBLOCK`);
/// the opened descriptor is then checked to be a regular file.
pub fn open_regular(path: &Path) -> Result<File, ReadError> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC);
    }
    let file = options.open(path).map_err(|e| {
        #[cfg(unix)]
        if e.raw_os_error() == Some(libc::ELOOP) {
            return ReadError::NotRegular;
        }
        ReadError::Io(e)
    })?;
    if !file.metadata()?.is_file() {
        return Err(ReadError::NotRegular);
    }
    Ok(file)
}

/// Read at most `limit` bytes from the start of `file` into `buf`.
pub fn read_prefix(file: &mut File, buf: &mut Vec<u8>, limit: usize) -> io::Result<()> {
    buf.clear();
    file.by_ref().take(limit as u64).read_to_end(buf)?;
    Ok(())
}

/// Continue reading `file` into `buf`, failing if the whole exceeds the cap.
pub fn read_rest(file: &mut File, buf: &mut Vec<u8>) -> Result<(), ReadError> {
    let room = READ_CAP.saturating_sub(buf.len()) as u64 + 1;
    file.by_ref().take(room).read_to_end(buf)?;
    if buf.len() > READ_CAP {
        return Err(ReadError::TooLarge);
    }
    Ok(())
}

/// Read a whole regular file under the cap.
pub fn read_capped(path: &Path) -> Result<Vec<u8>, ReadError> {
    let mut file = open_regular(path)?;
    let mut buf = Vec::new();
    read_rest(&mut file, &mut buf)?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_symlinks_dirs_and_fifos_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.md");
        std::fs::write(&file, "hello").unwrap();
        assert_eq!(read_capped(&file).unwrap(), b"hello");
        assert!(matches!(
            read_capped(dir.path()),
            Err(ReadError::NotRegular | ReadError::Io(_))
        ));
        #[cfg(unix)]
        {
            let link = dir.path().join("l.md");
            std::os::unix::fs::symlink(&file, &link).unwrap();
            assert!(matches!(read_capped(&link), Err(ReadError::NotRegular)));
            let fifo = dir.path().join("f.md");
            let status = std::process::Command::new("mkfifo").arg(&fifo).status();
            if status.is_ok_and(|s| s.success()) {
                assert!(matches!(read_capped(&fifo), Err(ReadError::NotRegular)));
            }
        }
    }
}
